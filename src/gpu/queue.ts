/** The GPU queue of this machine shown in the GPU panel: asked for once per new GPU sample, only while it shows. */
import { GpuFollower } from './follower';

/** One piece of work's claim on GPUs: a job of `air` or a notebook's call, as `GET gpu/queue` answers. */
export interface IGpuClaim {
  claim_id: string;
  kind: 'job' | 'call';
  user: string;
  /** What its user knows it by: a job's id, a call's function. */
  label: string;
  count: number;
  /** Whose GPUs: '' for this machine's, else a Ray cluster's ('Ray cluster <address>'), which Ray places. */
  pool: string;
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
export class GpuQueue extends GpuFollower {
  /** The work holding this machine's GPUs. */
  get held(): IHeldClaim[] {
    return this._payload.held;
  }

  /** The work waiting, in the order it will start. */
  get queued(): IQueuedClaim[] {
    return this._payload.queued;
  }

  protected onGpuChanged(): void {
    const newest = this.gpu.newestSampleMs;
    if (!this.gpu.isVisibleTo('panel') || newest === null) {
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
      const answer = await this.request<IGpuQueuePayload>('gpu/queue', { method: 'GET' });
      if (!this.isDisposed) {
        this._payload = answer;
        this.emitChanged();
      }
    } catch (error) {
      // The queue shown stays as it was; the next GPU poll asks again.
      this._askedForNewest = null;
      console.warn('jupyter-air: reading the GPU queue failed.', error);
    }
  }

  private _askedForNewest: number | null = null;
  private _inflight = false;
  private _payload: IGpuQueuePayload = { held: [], queued: [] };
}
