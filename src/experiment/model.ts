/** The Experiment panel's model: the followed notebook's runs and the `air` jobs, one poll of the server. */
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import type { Requester } from '../model';
import { Inactivity, pollFrequency, RequestQueue } from '../polling';
import { requestAPI, RequestError } from '../request';
import {
  ACTIVE_JOB_STATUSES,
  DEFAULT_EXPERIMENT_SETTINGS,
  IExperimentSettings,
  IJob,
  IJobsPayload,
  IRun,
  IRunsPayload
} from './tokens';

/** What the panel's header shows. */
export type ExperimentState = 'idle' | 'loading' | 'live' | 'paused' | 'unavailable' | 'error';

/** Runs asked for per page, and per incremental poll. */
const PAGE_SIZE = 50;
const CHANGES_LIMIT = 200;

/**
 * Holds the runs of the followed notebook and the `air` jobs; widgets subscribe to `changed`.
 *
 * It polls only while the panel is visible and something may change: a run or a job is active, or
 * the notebook's kernel is busy (a cell may be starting a run). After the first page of runs, a poll
 * asks only for the runs that changed (`since` = the oldest start among the runs still running, or the
 * newest start held), so a long list costs one small answer per poll. Requests never overlap. Polling
 * pauses after the inactivity timeout (panel hidden, or no activity in the page) like the GPU panel's,
 * and resumes on `refresh()` or when the panel is shown again.
 */
export class ExperimentModel implements IDisposable {
  constructor(options: ExperimentModel.IOptions = {}) {
    this._request = options.request ?? requestAPI;
    this._now = options.now ?? Date.now;
    this._settings = { ...DEFAULT_EXPERIMENT_SETTINGS, ...options.settings };
    this._inactivity = new Inactivity(this._now);
    this._poll = new Poll<void, RequestError, 'standby'>({
      auto: false,
      factory: () => this._tick(),
      frequency: this._frequency(),
      name: 'jupyter-air:experiment',
      standby: 'never'
    });
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  get settings(): IExperimentSettings {
    return this._settings;
  }

  set settings(settings: IExperimentSettings) {
    this._settings = { ...settings };
    this._poll.frequency = this._frequency();
  }

  /** Path of the followed notebook (as JupyterLab names it), or `null` when no notebook is open. */
  get notebookPath(): string | null {
    return this._notebookPath;
  }

  /** Follow another notebook: its runs replace the previous notebook's. */
  set notebookPath(path: string | null) {
    if (path === this._notebookPath) {
      return;
    }
    this._notebookPath = path;
    this._runs = [];
    this._runsPayload = null;
    this._nextPageToken = null;
    this._changed.emit();
    void this._wake(true);
  }

  /** The notebook's runs, newest first (children included; see `childrenOf`). */
  get runs(): IRun[] {
    return this._runs;
  }

  get jobs(): IJob[] {
    return this._jobs;
  }

  /** The latest answer about the notebook (its default experiment, the MLflow UI's address). */
  get runsPayload(): IRunsPayload | null {
    return this._runsPayload;
  }

  /** True when older runs can be loaded with `loadMore()`. */
  get hasMore(): boolean {
    return this._nextPageToken !== null;
  }

  get error(): RequestError | null {
    return this._error;
  }

  get state(): ExperimentState {
    if (this._error?.kind === 'unavailable') {
      return 'unavailable';
    }
    if (this._error) {
      return 'error';
    }
    if (this._pausedAfterSeconds !== null) {
      return 'paused';
    }
    if (!this._loaded) {
      return 'loading';
    }
    return this._polling ? 'live' : 'idle';
  }

  /** The inactivity timeout, in seconds, after which polling paused; `null` otherwise. */
  get pausedAfterSeconds(): number | null {
    return this._pausedAfterSeconds;
  }

  /** True while a run or a job is active, or the notebook's kernel is busy. */
  get active(): boolean {
    return (
      this._kernelBusy ||
      this._kernelSettled ||
      this._runs.some(run => run.status === 'RUNNING') ||
      this._jobs.some(job => ACTIVE_JOB_STATUSES.includes(job.status))
    );
  }

  /** Top-level runs: those whose parent is not among the runs held. */
  get topLevelRuns(): IRun[] {
    const held = new Set(this._runs.map(run => run.run_id));
    return this._runs.filter(run => !run.parent_run_id || !held.has(run.parent_run_id));
  }

  /** The runs nested in `runId`, newest first. */
  childrenOf(runId: string): IRun[] {
    return this._runs.filter(run => run.parent_run_id === runId);
  }

  /**
   * The MLflow UI page comparing `runIds`, or `null` when no MLflow UI is known for the store.
   */
  compareUrl(runIds: string[]): string | null {
    const root = this._runsPayload?.ui_url;
    if (!root || runIds.length === 0) {
      return null;
    }
    const chosen = this._runs.filter(run => runIds.includes(run.run_id));
    const experiments = [...new Set(chosen.map(run => run.experiment_id))].sort();
    const runs = JSON.stringify(chosen.map(run => run.run_id));
    return (
      `${root}#/compare-runs?runs=${encodeURIComponent(runs)}` +
      `&experiments=${encodeURIComponent(JSON.stringify(experiments))}`
    );
  }

  /** Tell the model whether the panel is visible; showing it reloads, hiding it stops polling. */
  setVisible(visible: boolean): void {
    if (visible === this._visible) {
      return;
    }
    this._visible = visible;
    if (!visible) {
      this._inactivity.hidden();
      return;
    }
    this._inactivity.shown();
    this._pausedAfterSeconds = null;
    void this._wake(true);
  }

  /** Whether the followed notebook's kernel is busy; once idle again, one more poll sees how it ended. */
  setKernelBusy(busy: boolean): void {
    if (busy === this._kernelBusy) {
      return;
    }
    this._kernelBusy = busy;
    this._kernelSettled = !busy;
    void this._wake(false);
  }

  /** Record pointer or keyboard activity in the page. */
  notifyActivity(): void {
    this._inactivity.activity();
  }

  /** Reload the runs (first page) and the jobs now, resuming polling if paused. */
  async refresh(): Promise<void> {
    if (this.isDisposed) {
      return;
    }
    this._inactivity.activity();
    const resumed = this._pausedAfterSeconds !== null;
    this._pausedAfterSeconds = null;
    if (resumed) {
      this._changed.emit();
    }
    await this._wake(true);
    // The tick scheduled above settles once its requests have been answered.
    await this._poll.tick.catch(() => undefined);
  }

  /** Load the next page of older runs. */
  async loadMore(): Promise<void> {
    const token = this._nextPageToken;
    const path = this._notebookPath;
    if (token === null || path === null) {
      return;
    }
    await this._serialized(async () => {
      const page = await this._get<IRunsPayload>(
        `runs?notebook=${encodeURIComponent(path)}&limit=${PAGE_SIZE}` +
          `&page_token=${encodeURIComponent(token)}`
      );
      if (path !== this._notebookPath) {
        return;
      }
      this._merge(page.runs);
      this._nextPageToken = page.next_page_token;
      this._changed.emit();
    });
  }

  /** Cancel an active job (the server answers once it has ended) and reload. */
  async cancelJob(jobRunId: string): Promise<void> {
    await this._serialized(async () => {
      await this._request(`jobs/${encodeURIComponent(jobRunId)}/cancel`, { method: 'POST' });
    });
    await this.refresh();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._poll.dispose();
    Signal.clearData(this);
  }

  private _frequency() {
    return pollFrequency(this._settings.pollIntervalSeconds * 1000);
  }

  private _inactive(): boolean {
    return this._inactivity.expired(this._settings.inactivityTimeoutSeconds * 1000);
  }

  /** Schedule a poll now (`full`: reload the first page rather than ask for changes). */
  private async _wake(full: boolean): Promise<void> {
    if (this.isDisposed || !this._visible || this._pausedAfterSeconds !== null) {
      return;
    }
    this._fullReload = this._fullReload || full;
    const phase = this._poll.state.phase;
    await (phase === 'stopped' || phase === 'constructed'
      ? this._poll.start()
      : this._poll.refresh());
  }

  /** The poll's factory: stop when hidden, idle or inactive, otherwise fetch. */
  private async _tick(): Promise<void> {
    if (!this._visible) {
      this._stopPolling();
      return;
    }
    if (this._inactive()) {
      this._pausedAfterSeconds = this._settings.inactivityTimeoutSeconds;
      this._stopPolling();
      return;
    }
    this._polling = true;
    const full = this._fullReload;
    this._fullReload = false;
    await this._serialized(() => this._fetch(full));
    if (!this.active) {
      this._stopPolling();
    }
  }

  private _stopPolling(): void {
    this._polling = false;
    void this._poll.stop();
    this._changed.emit();
  }

  /** Run requests one after another, never two at once. */
  private _serialized(fn: () => Promise<void>): Promise<void> {
    return this._queue.run(fn);
  }

  private async _get<T>(endpoint: string): Promise<T> {
    try {
      const answer = await this._request<T>(endpoint, { method: 'GET' });
      this._error = null;
      return answer;
    } catch (error) {
      this._error =
        error instanceof RequestError
          ? error
          : new RequestError(`Reading runs failed: ${error}`, 'server', null);
      this._changed.emit();
      throw this._error;
    }
  }

  /**
   * Read what may have changed: the runs while one runs or a cell runs (and once after), the jobs while
   * one is active or a cell runs (it may start one); both on a full reload.
   */
  private async _fetch(full: boolean): Promise<void> {
    const due = this._kernelBusy || this._kernelSettled;
    this._kernelSettled = false;
    const path = this._notebookPath;
    const runsRunning = this._runs.some(run => run.status === 'RUNNING');
    if (path !== null && (full || due || runsRunning || this._runsPayload === null)) {
      await this._fetchRuns(path, full || this._runsPayload === null);
    }
    const jobsActive = this._jobs.some(job => ACTIVE_JOB_STATUSES.includes(job.status));
    if (full || due || jobsActive || !this._loaded) {
      this._jobs = (await this._get<IJobsPayload>('jobs')).jobs;
    }
    this._loaded = true;
    this._changed.emit();
  }

  private async _fetchRuns(path: string, full: boolean): Promise<void> {
    const since = full ? null : this._since();
    const query = since === null ? `&limit=${PAGE_SIZE}` : `&since=${since}&limit=${CHANGES_LIMIT}`;
    const answer = await this._get<IRunsPayload>(
      `runs?notebook=${encodeURIComponent(path)}${query}`
    );
    if (path !== this._notebookPath) {
      return;
    }
    if (since === null) {
      this._runs = [];
      this._nextPageToken = answer.next_page_token;
    }
    this._runsPayload = answer;
    this._merge(answer.runs);
  }

  /**
   * Start of the runs to ask for again, in the server's clock: the start of the oldest run held as
   * running, or of the newest run held. Every new run, and every run that may have changed (ended,
   * logged metrics), started at or after it.
   */
  private _since(): number | null {
    if (this._runs.length === 0) {
      return null;
    }
    const starts = [
      this._runs[0].start_ms,
      ...this._runs.filter(run => run.status === 'RUNNING').map(run => run.start_ms)
    ];
    return Math.min(...starts);
  }

  /** Add or replace runs, newest first. */
  private _merge(runs: IRun[]): void {
    const byId = new Map(this._runs.map(run => [run.run_id, run]));
    runs.forEach(run => byId.set(run.run_id, run));
    this._runs = [...byId.values()].sort(
      (a, b) => b.start_ms - a.start_ms || a.run_id.localeCompare(b.run_id)
    );
  }

  private _changed = new Signal<this, void>(this);
  private _error: RequestError | null = null;
  private _fullReload = true;
  private _inactivity: Inactivity;
  private _jobs: IJob[] = [];
  private _kernelBusy = false;
  /** The kernel has just become idle: one more read sees how its runs ended. */
  private _kernelSettled = false;
  private _loaded = false;
  private _nextPageToken: string | null = null;
  private _notebookPath: string | null = null;
  private _now: () => number;
  private _pausedAfterSeconds: number | null = null;
  private _poll: Poll<void, RequestError, 'standby'>;
  private _polling = false;
  private _queue = new RequestQueue();
  private _request: Requester;
  private _runs: IRun[] = [];
  private _runsPayload: IRunsPayload | null = null;
  private _settings: IExperimentSettings;
  private _visible = false;
}

export namespace ExperimentModel {
  export interface IOptions {
    /** Replaces `requestAPI` (tests). */
    request?: Requester;
    settings?: Partial<IExperimentSettings>;
    /** Clock in epoch milliseconds (tests). */
    now?: () => number;
  }
}
