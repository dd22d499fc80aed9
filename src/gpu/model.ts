/** The GPU model: polls `jupyter-air/gpu`, keeps the history, knows the server extension's version. */
import { PollingModel } from '../pollingModel';
import { RequestError, Requester } from '../request';
import { FRONTEND_VERSION, sameVersion } from '../version';
import { appendPayload, capHistory, emptyHistory, newestTimestamp } from './history';
import {
  DEFAULT_SETTINGS,
  GpuState,
  IGpuDevice,
  IGpuHistory,
  IGpuModel,
  IGpuPayload,
  IGpuProcess,
  IGpuSettings,
  INodeSummary,
  IVersionPayload
} from './tokens';

/** Samples further apart than this many sampling intervals show as a break in the charts. */
const GAP_INTERVALS = 2.5;

/** The smallest gap that breaks the charts' lines, whatever the sampling interval. */
const MIN_GAP_MS = 2500;

/**
 * Polls `jupyter-air/gpu` and keeps the history (see `PollingModel` for when it polls and pauses).
 *
 * Before the first poll it asks once for the server extension's version (`jupyter-air/version`).
 * The first poll loads the full history the server holds; later ones ask only for samples
 * newer than the newest held (`?since=`); `refresh()` asks the server to sample now
 * (`POST gpu/refresh`). Polling goes on while any view shows the GPUs (the panel, the status bar).
 */
export class GpuModel extends PollingModel implements IGpuModel {
  constructor(options: GpuModel.IOptions = {}) {
    const settings = { ...DEFAULT_SETTINGS, ...options.settings };
    super({ ...options, name: 'jupyter-air:gpu', intervalMs: settings.pollIntervalSeconds * 1000 });
    this._frontendVersion = options.frontendVersion ?? FRONTEND_VERSION;
    this._settings = settings;
  }

  get settings(): IGpuSettings {
    return this._settings;
  }

  /** Apply new settings; the new interval (clamped, see `pollIntervalMs`) applies from the next poll. */
  set settings(settings: IGpuSettings) {
    this._settings = { ...settings };
    this.setIntervalMs(this.pollIntervalMs);
    capHistory(this._history, this.chartWindowMs);
    this.emitChanged();
  }

  get state(): GpuState {
    if (this.problem) {
      return this.problem;
    }
    if (!this._payload) {
      return 'loading';
    }
    return this._payload.available ? 'live' : 'no-gpu';
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
    this.emitChanged();
    if (this.started) {
      void this.wake();
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

  protected get inactivityTimeoutSeconds(): number {
    return this._settings.inactivityTimeoutSeconds;
  }

  /** Ask for the version once, then for the samples after the newest held (all of them at first). */
  protected async fetch(refresh: boolean): Promise<void> {
    if (!this._versionRequested) {
      this._versionRequested = true;
      await this._fetchVersion();
    }
    const since = newestTimestamp(this._history);
    const node = this._selectedNode;
    const params = [
      ...(node === null ? [] : [`node=${encodeURIComponent(node)}`]),
      ...(since === null ? [] : [`since=${since}`])
    ];
    const query = params.length > 0 ? `?${params.join('&')}` : '';
    let payload: IGpuPayload;
    try {
      payload = await this.read<IGpuPayload>(
        (refresh ? 'gpu/refresh' : 'gpu') + query,
        { method: refresh ? 'POST' : 'GET' },
        'Reading GPU data'
      );
    } catch (error) {
      if (node !== null && error instanceof RequestError && error.status === 404) {
        this._selectedNode = null; // the node left the cluster: the next poll shows every node
      }
      throw error;
    }
    if (node !== this._selectedNode) {
      return; // asked before another node was chosen: the answer is not about the shown node
    }
    this._merge(payload);
    this.emitChanged();
  }

  /**
   * Read the server extension's version. A 404 means the extension is missing (the state is
   * `unavailable` at once); other failures are left to the poll, which reports and retries them.
   */
  private async _fetchVersion(): Promise<void> {
    try {
      const answer = await this.request<IVersionPayload>('version', { method: 'GET' });
      const version = answer?.version;
      this._serverVersion = typeof version === 'string' && version.length > 0 ? version : null;
      this.emitChanged();
    } catch (error) {
      if (error instanceof RequestError && error.status === 404) {
        this.setError(error);
      }
    }
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
    this.setIntervalMs(this.pollIntervalMs);
  }

  private _frontendVersion: string;
  private _history: IGpuHistory = emptyHistory(0);
  private _nodes: INodeSummary[] = [];
  private _payload: IGpuPayload | null = null;
  private _selectedNode: string | null = null;
  private _serverVersion: string | null = null;
  private _settings: IGpuSettings;
  private _versionRequested = false;
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
