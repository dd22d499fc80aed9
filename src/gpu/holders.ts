/**
 * Who holds GPUs without using them: kernels idle on GPU memory and notebooks keeping Ray nodes, read from
 * `GET jupyter-air/gpu/idle-holders` at a low rate whether or not a panel is open (never resuming sampling).
 */
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { pollFrequency } from '../polling';
import { requestAPI, Requester } from '../request';
import { DEFAULT_SETTINGS } from './tokens';

/**
 * A kernel of this server that executed nothing for the threshold while holding GPU memory at 0 %: itself or
 * its children on this server's node (`node_id` null), or its Ray job's actors on Ray node `node_id`.
 */
export interface IIdleHolder {
  kernel_id: string;
  path: string | null;
  node: string;
  node_id: string | null;
  gpu_index: number;
  used_memory_bytes: number;
  pids: number[];
  idle_since_ms: number;
}

/** One Ray node kept by a notebook for its next call. */
export interface IHeldNode {
  node: number;
  hostname: string | null;
  ip: string | null;
  ray_node_id: string | null;
}

/** A process (a notebook's kernel, or the keeper of nodes parked by remote calls) keeping Ray nodes;
 * `POST gpu/held-nodes/<pid>/release` frees them. */
export interface INodeHolder {
  pid: number;
  /** True for the keeper of node actors parked between remote calls (`path`: the notebook of the last one). */
  parked?: boolean;
  kernel_id: string | null;
  path: string | null;
  address: string | null;
  share: string | null;
  nodes: IHeldNode[];
  since_ms: number;
  until_ms: number | null;
}

/** Answer of `GET jupyter-air/gpu/idle-holders`. */
export interface IHoldersPayload {
  enabled: boolean;
  node: string;
  checked_ms: number | null;
  holders: IIdleHolder[];
  node_holders: INodeHolder[];
}

/** The latest holders; polls while the page is visible (a hidden tab reads again once shown). */
export class HoldersModel implements IDisposable {
  constructor(options: HoldersModel.IOptions = {}) {
    this._request = options.request ?? requestAPI;
    this._poll = new Poll({
      factory: () => this._read(),
      frequency: pollFrequency(
        (options.intervalSeconds ?? DEFAULT_SETTINGS.idleHoldersIntervalSeconds) * 1000
      ),
      name: 'jupyter-air:holders',
      standby: 'when-hidden'
    });
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  /** The idle GPU holders as the server's last check found them. */
  get holders(): IIdleHolder[] {
    return this._payload?.holders ?? [];
  }

  /** The notebooks keeping Ray nodes, oldest first. */
  get nodeHolders(): INodeHolder[] {
    return this._payload?.node_holders ?? [];
  }

  set intervalSeconds(seconds: number) {
    this._poll.frequency = pollFrequency(seconds * 1000);
  }

  /** Read now. */
  refresh(): Promise<void> {
    return this._poll.refresh();
  }

  /** Ask the kernel `pid` to free the Ray nodes it keeps, then read again. */
  async release(pid: number): Promise<void> {
    await this._request(`gpu/held-nodes/${pid}/release`, { method: 'POST' });
    await this.refresh();
  }

  dispose(): void {
    this._poll.dispose();
    Signal.clearData(this);
  }

  private async _read(): Promise<void> {
    this._payload = await this._request<IHoldersPayload>('gpu/idle-holders', { method: 'GET' });
    this._changed.emit();
  }

  private _changed = new Signal<this, void>(this);
  private _payload: IHoldersPayload | null = null;
  private _poll: Poll;
  private _request: Requester;
}

export namespace HoldersModel {
  export interface IOptions {
    /** Replaces `requestAPI` (tests). */
    request?: Requester;
    intervalSeconds?: number;
  }
}
