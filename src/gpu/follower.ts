/** The skeleton of what follows the GPU model instead of polling (the charts' runs, the GPU queue). */
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { requestAPI, Requester } from '../request';
import type { IGpuModel } from './tokens';

/**
 * Reacts to each change of the GPU model (`onGpuChanged`), reads with `request`, and tells its views through
 * `changed`; it never polls on its own, so it reads nothing while the GPU model is paused.
 */
export abstract class GpuFollower implements IDisposable {
  constructor(options: GpuFollower.IOptions) {
    this.gpu = options.gpu;
    this.request = options.request ?? requestAPI;
    this.gpu.changed.connect(this.onGpuChanged, this);
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.gpu.changed.disconnect(this.onGpuChanged, this);
    Signal.clearData(this);
  }

  /** Called after each change of the GPU model. */
  protected abstract onGpuChanged(): void;

  protected emitChanged(): void {
    this._changed.emit();
  }

  protected readonly gpu: IGpuModel;
  protected readonly request: Requester;
  private _changed = new Signal<this, void>(this);
  private _disposed = false;
}

export namespace GpuFollower {
  export interface IOptions {
    gpu: IGpuModel;
    /** Replaces `requestAPI` (tests). */
    request?: Requester;
  }
}
