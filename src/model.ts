/** The GPU model: owns the one poll of the server, the history and the inactivity pause. */
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { appendPayload, capHistory, emptyHistory, IGpuHistory, newestTimestamp } from './history';
import { Inactivity, pollFrequency, RequestQueue } from './polling';
import { requestAPI, RequestError } from './request';
import {
  DEFAULT_SETTINGS,
  IGpuDevice,
  IGpuPayload,
  IGpuProcess,
  IGpuSettings,
  INodeSummary,
  IVersionPayload
} from './tokens';
import { FRONTEND_VERSION, sameVersion } from './version';

/** What the header shows. */
export type GpuState = 'loading' | 'live' | 'paused' | 'no-gpu' | 'unavailable' | 'error';

/** The request seam: `requestAPI` in the application, a fake in unit tests. */
export type Requester = <T>(endpoint: string, init?: RequestInit) => Promise<T>;

/** Samples further apart than this many sampling intervals show as a break in the charts. */
const GAP_INTERVALS = 2.5;

/** The smallest gap that breaks the charts' lines, whatever the sampling interval. */
const MIN_GAP_MS = 2500;

/**
 * Polls `jupyter-air/gpu` and keeps the history; widgets subscribe to `changed` and never fetch.
 *
 * Before the first poll it asks once for the server extension's version (`jupyter-air/version`).
 * The first poll loads the full history the server holds; later ones ask only for samples
 * newer than the newest held (`?since=`). Requests never overlap. Polling pauses after the
 * inactivity timeout (panel hidden, or no pointer/keyboard activity) and resumes on `refresh()`
 * or when the panel is shown again.
 */
export class GpuModel implements IDisposable {
  constructor(options: GpuModel.IOptions = {}) {
    this._request = options.request ?? requestAPI;
    this._frontendVersion = options.frontendVersion ?? FRONTEND_VERSION;
    this._now = options.now ?? Date.now;
    this._settings = { ...DEFAULT_SETTINGS, ...options.settings };
    this._inactivity = new Inactivity(this._now);
    this._poll = new Poll<void, RequestError, 'standby'>({
      auto: false,
      factory: () => this._tick(),
      frequency: this._frequency(),
      name: 'jupyter-air:gpu',
      standby: 'never'
    });
    this._poll.ticked.connect((_, state) => {
      const retry = state.phase === 'rejected' ? state.interval : null;
      if (retry !== this._retryInMs) {
        this._retryInMs = retry;
        this._changed.emit();
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

  get settings(): IGpuSettings {
    return this._settings;
  }

  /** Apply new settings; the new interval (clamped, see `pollIntervalMs`) applies from the next poll. */
  set settings(settings: IGpuSettings) {
    this._settings = { ...settings };
    this._poll.frequency = this._frequency();
    capHistory(this._history, this.chartWindowMs);
    this._changed.emit();
  }

  get state(): GpuState {
    if (this._error?.kind === 'unavailable') {
      return 'unavailable';
    }
    if (this._error) {
      return 'error';
    }
    if (this.paused) {
      return 'paused';
    }
    if (!this._payload) {
      return 'loading';
    }
    return this._payload.available ? 'live' : 'no-gpu';
  }

  /** True once polling stopped for inactivity. */
  get paused(): boolean {
    return this._pausedAfterSeconds !== null;
  }

  /** The inactivity timeout, in seconds, after which polling paused; `null` while polling. */
  get pausedAfterSeconds(): number | null {
    return this._pausedAfterSeconds;
  }

  /** The last request failure, cleared by the next success. */
  get error(): RequestError | null {
    return this._error;
  }

  /** Version of this frontend. */
  get frontendVersion(): string {
    return this._frontendVersion;
  }

  /** Version of the server extension, once it has answered; `null` before or if it could not tell. */
  get serverVersion(): string | null {
    return this._serverVersion;
  }

  /** True when the server extension runs another version than this frontend. */
  get versionMismatch(): boolean {
    return this._serverVersion !== null && !sameVersion(this._serverVersion, this._frontendVersion);
  }

  /** Milliseconds until the next attempt after a failure, or `null`. */
  get retryInMs(): number | null {
    return this._retryInMs;
  }

  /** The latest answer of the server (its history columns are merged into `history`). */
  get payload(): IGpuPayload | null {
    return this._payload;
  }

  get devices(): IGpuDevice[] {
    return this._payload?.devices ?? [];
  }

  get processes(): IGpuProcess[] {
    return this._payload?.processes ?? [];
  }

  get history(): IGpuHistory {
    return this._history;
  }

  /** Every node of the server's Ray cluster, as of the last answer; empty without a cluster. */
  get nodes(): INodeSummary[] {
    return this._nodes;
  }

  /** The cluster node whose details are shown; `null` for the "all nodes" overview (or no cluster). */
  get selectedNode(): string | null {
    return this._selectedNode;
  }

  /**
   * Show one cluster node's details (`null`: the overview of every node). Its history starts
   * afresh and is asked for at once, in the poll's one request (`gpu?node=<id>`).
   */
  selectNode(nodeId: string | null): void {
    if (nodeId === this._selectedNode || this.isDisposed) {
      return;
    }
    this._selectedNode = nodeId;
    this._history = emptyHistory(0);
    this._payload = null;
    this._changed.emit();
    if (this._started && !this.paused) {
      void this._poll.refresh();
    }
  }

  /**
   * Milliseconds between two polls: the setting, but never shorter than the server's sampling
   * interval once it is known (polling faster than the server samples only brings empty answers).
   */
  get pollIntervalMs(): number {
    const setting = this._settings.pollIntervalSeconds;
    const sampling = this._payload?.interval_seconds;
    const seconds =
      typeof sampling === 'number' && sampling > 0 ? Math.max(setting, sampling) : setting;
    return seconds * 1000;
  }

  /** Milliseconds of history kept and charted. */
  get chartWindowMs(): number {
    return this._settings.historyWindowMinutes * 60 * 1000;
  }

  /**
   * Two samples further apart than this many milliseconds are drawn with a break between them:
   * a few sampling intervals of the server (the poll interval until the server has answered).
   */
  get maxGapMs(): number {
    const seconds = this._payload?.interval_seconds ?? this._settings.pollIntervalSeconds;
    return Math.max(GAP_INTERVALS * seconds * 1000, MIN_GAP_MS);
  }

  /** Epoch milliseconds of the newest sample held, or `null`. */
  get newestSampleMs(): number | null {
    return newestTimestamp(this._history);
  }

  /** Whether the first request has been made. */
  get started(): boolean {
    return this._started;
  }

  /** Load the full history and start polling (once). */
  start(): Promise<void> {
    if (this._started || this.isDisposed) {
      return Promise.resolve();
    }
    this._started = true;
    this._inactivity.activity();
    this._checkVersion();
    return this._poll.start();
  }

  /** Fetch a fresh sample now (`POST gpu/refresh`), resuming polling if paused. */
  async refresh(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    if (this._viewers.size > 0) {
      this._inactivity.shown();
    } else {
      this._inactivity.activity();
    }
    this._refreshRequested = true;
    this._started = true;
    this._checkVersion();
    const resumed = this.paused;
    this._pausedAfterSeconds = null;
    if (resumed) {
      this._changed.emit();
    }
    const phase = this._poll.state.phase;
    await (phase === 'stopped' || phase === 'constructed'
      ? this._poll.start()
      : this._poll.refresh());
    // The tick scheduled above settles once its request has been answered.
    await this._poll.tick.catch(() => undefined);
  }

  /** Record pointer or keyboard activity in the page. */
  notifyActivity(): void {
    this._inactivity.activity();
  }

  /**
   * Tell the model whether a view of it is visible (`viewer`: the panel, the status bar item);
   * polling goes on while any is. Showing one while paused resumes polling.
   */
  setVisible(visible: boolean, viewer = 'panel'): void {
    if (visible === this._viewers.has(viewer)) {
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
    if (!this._started) {
      void this.start();
    } else if (this.paused) {
      void this.refresh();
    } else {
      // Already polling for another view: the one just shown gets the newest samples now.
      void this._poll.refresh();
    }
  }

  /** Whether the view `viewer` (default: the panel) is visible. */
  isVisibleTo(viewer = 'panel'): boolean {
    return this._viewers.has(viewer);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poll.dispose();
    Signal.clearData(this);
  }

  private _frequency() {
    return pollFrequency(this.pollIntervalMs);
  }

  private _inactive(): boolean {
    return this._inactivity.expired(this._settings.inactivityTimeoutSeconds * 1000);
  }

  /** The poll's factory: pause when inactive, otherwise fetch and merge. */
  private async _tick(): Promise<void> {
    const refresh = this._refreshRequested;
    this._refreshRequested = false;
    if (!refresh && this._inactive()) {
      this._pausedAfterSeconds = this._settings.inactivityTimeoutSeconds;
      void this._poll.stop();
      this._changed.emit();
      return;
    }
    await this._serialized(() => this._fetch(refresh));
  }

  /** Ask once for the server extension's version, queued before the first poll's request. */
  private _checkVersion(): void {
    if (this._versionRequested) {
      return;
    }
    this._versionRequested = true;
    void this._serialized(() => this._fetchVersion());
  }

  /**
   * Read the server extension's version. A 404 means the extension is missing (the state is
   * `unavailable` at once); other failures are left to the poll, which reports and retries them.
   */
  private async _fetchVersion(): Promise<void> {
    try {
      const answer = await this._request<IVersionPayload>('version', { method: 'GET' });
      const version = answer?.version;
      this._serverVersion = typeof version === 'string' && version.length > 0 ? version : null;
    } catch (error) {
      if (!(error instanceof RequestError && error.status === 404)) {
        return;
      }
      this._error = error;
    }
    this._changed.emit();
  }

  /** Run requests one after another, never two at once. */
  private _serialized(fn: () => Promise<void>): Promise<void> {
    return this._queue.run(fn);
  }

  private async _fetch(refresh: boolean): Promise<void> {
    const since = newestTimestamp(this._history);
    const node = this._selectedNode;
    const params = [
      ...(node === null ? [] : [`node=${encodeURIComponent(node)}`]),
      ...(since === null ? [] : [`since=${since}`])
    ];
    const query = params.length > 0 ? `?${params.join('&')}` : '';
    const endpoint = (refresh ? 'gpu/refresh' : 'gpu') + query;
    let payload: IGpuPayload;
    try {
      payload = await this._request<IGpuPayload>(
        endpoint,
        refresh ? { method: 'POST' } : { method: 'GET' }
      );
    } catch (error) {
      if (node !== null && error instanceof RequestError && error.status === 404) {
        this._selectedNode = null; // the node left the cluster: the next poll shows every node
      }
      this._error =
        error instanceof RequestError
          ? error
          : new RequestError(`Reading GPU data failed: ${error}`, 'server', null);
      this._changed.emit();
      throw this._error;
    }
    if (node !== this._selectedNode) {
      return; // asked before another node was chosen: the answer is not about the shown node
    }
    this._merge(payload);
    this._error = null;
    this._changed.emit();
  }

  private _merge(payload: IGpuPayload): void {
    const previous = this._payload;
    const sameSetup =
      previous !== null &&
      previous.node === payload.node &&
      previous.node_id === payload.node_id &&
      previous.source === payload.source &&
      previous.devices.length === payload.devices.length;
    if (!sameSetup) {
      this._history = emptyHistory(payload.devices.length);
    }
    appendPayload(this._history, payload);
    capHistory(this._history, this.chartWindowMs);
    this._payload = payload;
    this._nodes = payload.nodes ?? [];
    // The server's sampling interval may have changed; applies from the next poll.
    this._poll.frequency = this._frequency();
  }

  private _changed = new Signal<this, void>(this);
  private _error: RequestError | null = null;
  private _frontendVersion: string;
  private _history: IGpuHistory = emptyHistory(0);
  private _inactivity: Inactivity;
  private _nodes: INodeSummary[] = [];
  private _now: () => number;
  private _pausedAfterSeconds: number | null = null;
  private _payload: IGpuPayload | null = null;
  private _poll: Poll<void, RequestError, 'standby'>;
  private _queue = new RequestQueue();
  private _refreshRequested = false;
  private _request: Requester;
  private _retryInMs: number | null = null;
  private _selectedNode: string | null = null;
  private _serverVersion: string | null = null;
  private _settings: IGpuSettings;
  private _started = false;
  private _versionRequested = false;
  private _viewers = new Set<string>();
}

export namespace GpuModel {
  export interface IOptions {
    /** Replaces `requestAPI` (tests). */
    request?: Requester;
    /** Initial settings. */
    settings?: Partial<IGpuSettings>;
    /** Clock in epoch milliseconds (tests). */
    now?: () => number;
    /** Replaces this frontend's version from package.json (tests). */
    frontendVersion?: string;
  }
}
