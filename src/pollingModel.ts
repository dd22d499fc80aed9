/** The skeleton of the models that poll the server (GPU, Experiment, Logs): one poll, its pause, its errors. */
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { Inactivity, pollFrequency, RequestQueue } from './polling';
import { requestAPI, RequestError, Requester } from './request';

/**
 * A model that owns one `Poll` of the server; widgets subscribe to `changed` and never fetch.
 *
 * Views say whether they are visible (`setVisible`): showing one starts polling, or resumes it. A poll
 * reads what the subclass says (`fetch`), one request at a time, and polling goes on while the subclass
 * says it is due (`due`). It pauses after the inactivity timeout (every view hidden, or no pointer or
 * keyboard activity in the page, for that long) and resumes on `refresh()` or when a view is shown
 * again. While requests fail, it backs off up to 5 minutes and tells when it retries (`retryInMs`).
 */
export abstract class PollingModel implements IDisposable {
  constructor(options: PollingModel.IOptions) {
    this.request = options.request ?? requestAPI;
    this.now = options.now ?? Date.now;
    this._inactivity = new Inactivity(this.now);
    this._poll = new Poll<void, RequestError, 'standby'>({
      auto: false,
      factory: () => this._tick(),
      frequency: pollFrequency(options.intervalMs),
      name: options.name,
      standby: 'never'
    });
    this._poll.ticked.connect((_, state) => {
      const retry = state.phase === 'rejected' ? state.interval : null;
      if (retry !== this._retryInMs) {
        this._retryInMs = retry;
        this.emitChanged();
      }
    });
  }

  /** Emitted whenever the data or the state changes. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  /** The last request failure, cleared by the next success. */
  get error(): RequestError | null {
    return this._error;
  }

  /** True once polling stopped for inactivity, until `refresh()` or a view shown. */
  get paused(): boolean {
    return this._pausedAfterSeconds !== null;
  }

  /** The inactivity timeout, in seconds, after which polling paused; `null` while not paused. */
  get pausedAfterSeconds(): number | null {
    return this._pausedAfterSeconds;
  }

  /** What keeps the data from being current: the server extension missing, a failure, the pause; else `null`. */
  get problem(): 'unavailable' | 'error' | 'paused' | null {
    if (this._error) {
      return this._error.kind === 'unavailable' ? 'unavailable' : 'error';
    }
    return this.paused ? 'paused' : null;
  }

  /** Milliseconds until the next attempt after a failure, or `null`. */
  get retryInMs(): number | null {
    return this._retryInMs;
  }

  /** Whether polling has been started (by a view shown, or `refresh()`). */
  get started(): boolean {
    return this._started;
  }

  /** Whether the poll is running now (neither stopped as not due, nor paused). */
  get polling(): boolean {
    return this._polling;
  }

  /**
   * Tell the model whether the view `viewer` (default: the panel) is visible; polling goes on while
   * any is (and `due` says so). Showing one while paused resumes polling.
   */
  setVisible(visible: boolean, viewer = 'panel'): void {
    if (visible === this._viewers.has(viewer) || this.isDisposed) {
      return;
    }
    if (!visible) {
      this._viewers.delete(viewer);
      if (this._viewers.size === 0) {
        this._inactivity.hidden();
      }
      return;
    }
    this._viewers.add(viewer);
    this._inactivity.shown();
    this.onShown();
    void (this.paused ? this.refresh() : this.wake());
  }

  /** Whether the view `viewer` (default: the panel) is visible. */
  isVisibleTo(viewer = 'panel'): boolean {
    return this._viewers.has(viewer);
  }

  /** Record pointer or keyboard activity in the page. */
  notifyActivity(): void {
    this._inactivity.activity();
  }

  /** Read now (`fetch(true)`), resuming polling if paused; settles once answered. */
  async refresh(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    this._inactivity.activity();
    this._refreshRequested = true;
    if (this.paused) {
      this._pausedAfterSeconds = null;
      this.emitChanged();
    }
    await this._schedule();
    // The tick scheduled above settles once its requests have been answered.
    await this._poll.tick.catch(() => undefined);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poll.dispose();
    Signal.clearData(this);
  }

  /** Seconds without activity, or with every view hidden, after which polling pauses. */
  protected abstract get inactivityTimeoutSeconds(): number;

  /** One poll's reads; `refresh`: asked for by `refresh()` rather than by the timer. */
  protected abstract fetch(refresh: boolean): Promise<void>;

  /** Whether polling goes on; checked before and after each poll (default: until paused). */
  protected due(): boolean {
    return true;
  }

  /** Called when a view is shown, before polling resumes. */
  protected onShown(): void {
    // Nothing by default.
  }

  /** Whether any view is visible. */
  protected get visible(): boolean {
    return this._viewers.size > 0;
  }

  /** Milliseconds between two polls, from the next one on. */
  protected setIntervalMs(intervalMs: number): void {
    this._poll.frequency = pollFrequency(intervalMs);
  }

  /** Poll now, unless paused or not due: start the poll if stopped, else tick at once. */
  protected wake(): Promise<void> {
    if (this.isDisposed || this.paused || !this.due()) {
      return Promise.resolve();
    }
    return this._schedule();
  }

  /** Run requests one after another, never two at once. */
  protected serialized<T>(fn: () => Promise<T>): Promise<T> {
    return this._queue.run(fn);
  }

  /**
   * Call the server. A failure is kept as `error` (views show it; the next success clears it) and thrown,
   * so that the poll backs off; `what` names the reading in the message of an unexpected failure.
   */
  protected async read<T>(endpoint: string, init: RequestInit, what: string): Promise<T> {
    try {
      const answer = await this.request<T>(endpoint, init);
      this._error = null;
      return answer;
    } catch (error) {
      this.setError(
        error instanceof RequestError
          ? error
          : new RequestError(`${what} failed: ${error}`, 'server', null)
      );
      throw this._error;
    }
  }

  /** Report a failure (or clear it with `null`). */
  protected setError(error: RequestError | null): void {
    this._error = error;
    this.emitChanged();
  }

  protected emitChanged(): void {
    this._changed.emit();
  }

  /** The poll's factory: stop when not due, pause when inactive, otherwise fetch. */
  private async _tick(): Promise<void> {
    const refresh = this._refreshRequested;
    this._refreshRequested = false;
    if (!refresh && !this.due()) {
      this._stop();
      return;
    }
    const timeoutSeconds = this.inactivityTimeoutSeconds;
    if (!refresh && this._inactivity.expired(timeoutSeconds * 1000)) {
      this._pausedAfterSeconds = timeoutSeconds;
      this._stop();
      return;
    }
    this._polling = true;
    await this.serialized(() => this.fetch(refresh));
    if (!this.due()) {
      this._stop();
    }
  }

  private _schedule(): Promise<void> {
    this._started = true;
    const phase = this._poll.state.phase;
    return phase === 'stopped' || phase === 'constructed'
      ? this._poll.start()
      : this._poll.refresh();
  }

  private _stop(): void {
    this._polling = false;
    void this._poll.stop();
    this.emitChanged();
  }

  protected readonly now: () => number;
  protected readonly request: Requester;
  private _changed = new Signal<this, void>(this);
  private _error: RequestError | null = null;
  private _inactivity: Inactivity;
  private _pausedAfterSeconds: number | null = null;
  private _poll: Poll<void, RequestError, 'standby'>;
  private _polling = false;
  private _queue = new RequestQueue();
  private _refreshRequested = false;
  private _retryInMs: number | null = null;
  private _started = false;
  private _viewers = new Set<string>();
}

export namespace PollingModel {
  export interface IOptions {
    /** The poll's name (for debugging), e.g. `jupyter-air:gpu`. */
    name: string;
    /** Milliseconds between two polls at first (see `setIntervalMs`). */
    intervalMs: number;
    /** Replaces `requestAPI` (tests). */
    request?: Requester;
    /** Clock in epoch milliseconds (tests). */
    now?: () => number;
  }
}
