/** The GPU queue of this machine shown in the GPU panel: asked for once per new GPU sample, only while it shows. */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { requestAPI, Requester } from '../request';
import type { IGpuModel } from './tokens';

/** One piece of work's claim on GPUs: a job of `air` or a notebook's call, as `GET gpu/queue` answers. */
export interface IGpuClaim {
  claim_id: string;
  kind: 'job' | 'call';
  user: string;
  /** What its user knows it by: a job's id, a call's function. */
  label: string;
  count: number;
}

/** A claim holding GPUs, since `granted_ms`. */
export interface IHeldClaim extends IGpuClaim {
  gpus: number[];
  granted_ms: number;
}

/** A claim waiting, `position` in line (1: next), with why it waits. */
export interface IQueuedClaim extends IGpuClaim {
  position: number;
  submitted_ms: number;
  reason: string;
}

/** Answer of `GET jupyter-air/gpu/queue`. */
export interface IGpuQueuePayload {
  held: IHeldClaim[];
  queued: IQueuedClaim[];
}

/**
 * Follows the GPU model instead of polling: after a GPU poll that brought a newer sample, and only while the GPU
 * panel is visible, it asks once for the queue (never two requests at once), so it reads nothing while hidden.
 */
export class GpuQueue implements IDisposable {
  constructor(options: GpuQueue.IOptions) {
    this._gpu = options.gpu;
    this._request = options.request ?? requestAPI;
    this._gpu.changed.connect(this._onGpuChanged, this);
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The work holding this machine's GPUs. */
  get held(): IHeldClaim[] {
    return this._payload.held;
  }

  /** The work waiting, in the order it will start. */
  get queued(): IQueuedClaim[] {
    return this._payload.queued;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._gpu.changed.disconnect(this._onGpuChanged, this);
    Signal.clearData(this);
  }

  private _onGpuChanged(): void {
    const newest = this._gpu.newestSampleMs;
    if (!this._gpu.isVisibleTo('panel') || newest === null) {
      return;
    }
    if (this._inflight || newest === this._askedForNewest) {
      return;
    }
    this._askedForNewest = newest;
    this._inflight = true;
    void this._fetch().finally(() => {
      this._inflight = false;
    });
  }

  private async _fetch(): Promise<void> {
    try {
      const answer = await this._request<IGpuQueuePayload>('gpu/queue', { method: 'GET' });
      if (!this._disposed) {
        this._payload = answer;
        this._changed.emit();
      }
    } catch (error) {
      // The queue shown stays as it was; the next GPU poll asks again.
      this._askedForNewest = null;
      console.warn('jupyter-air: reading the GPU queue failed.', error);
    }
  }

  private _askedForNewest: number | null = null;
  private _changed = new Signal<this, void>(this);
  private _disposed = false;
  private _gpu: IGpuModel;
  private _inflight = false;
  private _payload: IGpuQueuePayload = { held: [], queued: [] };
  private _request: Requester;
}

export namespace GpuQueue {
  export interface IOptions {
    gpu: IGpuModel;
    /** Replaces `requestAPI` (tests). */
    request?: Requester;
  }
}
