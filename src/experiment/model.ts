/** The Experiment panel's model: the followed notebook's runs, the `air` jobs and schedules, one poll of the server. */
import { PollingModel } from '../pollingModel';
import type { Requester } from '../request';
import { NotebookRuns } from './notebookRuns';
import { compareUrl, topLevelRuns } from './runs';
import {
  ACTIVE_JOB_STATUSES,
  DEFAULT_EXPERIMENT_SETTINGS,
  IExperimentSettings,
  IJob,
  IJobsPayload,
  IRun,
  IRunNowAnswer,
  IRunsPayload,
  ISchedule,
  ISchedulesPayload,
  ISubmitWorkload,
  ScheduleAction,
  SubmitAnswer
} from './tokens';

/** What the panel's header shows. */
export type ExperimentState = 'idle' | 'loading' | 'live' | 'paused' | 'unavailable' | 'error';

/**
 * Holds the runs of the followed notebook (`NotebookRuns`), the `air` jobs and schedules (see `PollingModel` for
 * when it pauses).
 *
 * It polls while the panel is visible. Each poll reads the jobs and the schedules (a job started from a
 * terminal, or fired by a schedule, shows within one interval); the runs only while something may change them:
 * a run is running, or the notebook's kernel is busy (a cell may be starting a run), and once after.
 */
export class ExperimentModel extends PollingModel {
  constructor(options: ExperimentModel.IOptions = {}) {
    const settings = { ...DEFAULT_EXPERIMENT_SETTINGS, ...options.settings };
    super({
      ...options,
      name: 'jupyter-air:experiment',
      intervalMs: settings.pollIntervalSeconds * 1000
    });
    this._settings = settings;
  }

  get settings(): IExperimentSettings {
    return this._settings;
  }

  set settings(settings: IExperimentSettings) {
    this._settings = { ...settings };
    this.setIntervalMs(settings.pollIntervalSeconds * 1000);
  }

  /** Path of the followed notebook (as JupyterLab names it), or `null` when no notebook is open. */
  get notebookPath(): string | null {
    return this._notebook.path;
  }

  /** Follow another notebook: its runs replace the previous notebook's. */
  set notebookPath(path: string | null) {
    if (!this._notebook.follow(path)) {
      return;
    }
    this.emitChanged();
    void this._wake(true);
  }

  /** The notebook's runs, newest first (children included; see `childrenOf`). */
  get runs(): IRun[] {
    return this._notebook.runs;
  }

  get jobs(): IJob[] {
    return this._jobs;
  }

  /** The schedules, by name, and whether a driver fires them (undefined: the server does not say). */
  get schedules(): ISchedule[] {
    return this._schedules.schedules;
  }

  get scheduleDriver(): ISchedulesPayload['driver'] {
    return this._schedules.driver;
  }

  /** The latest answer about the notebook (its default experiment, the MLflow UI's address). */
  get runsPayload(): IRunsPayload | null {
    return this._notebook.payload;
  }

  /** True when older runs can be loaded with `loadMore()`. */
  get hasMore(): boolean {
    return this._notebook.hasMore;
  }

  get state(): ExperimentState {
    if (this.problem) {
      return this.problem;
    }
    if (!this._loaded) {
      return 'loading';
    }
    return this.polling ? 'live' : 'idle';
  }

  /** True while a run or a job is active, or the notebook's kernel is busy. */
  get active(): boolean {
    return (
      this._kernelBusy ||
      this._kernelSettled ||
      this._notebook.running ||
      this._jobs.some(job => ACTIVE_JOB_STATUSES.includes(job.status))
    );
  }

  /** Top-level runs: those whose parent is not among the runs held. */
  get topLevelRuns(): IRun[] {
    return topLevelRuns(this._notebook.runs);
  }

  /** The runs nested in `runId`, newest first. */
  childrenOf(runId: string): IRun[] {
    return this._notebook.runs.filter(run => run.parent_run_id === runId);
  }

  /** The MLflow UI page comparing `runIds`, or `null` when no MLflow UI is known for the store. */
  compareUrl(runIds: string[]): string | null {
    return compareUrl(this._notebook.payload?.ui_url ?? null, this._notebook.runs, runIds);
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

  /** Load the next page of older runs. */
  async loadMore(): Promise<void> {
    if (!this._notebook.hasMore) {
      return;
    }
    await this.serialized(async () => {
      if (await this._notebook.readOlder(this._reader)) {
        this.emitChanged();
      }
    });
  }

  /** The job the panel shows a person (just submitted from this page), or `null`. */
  get revealedJob(): string | null {
    return this._revealedJob;
  }

  /**
   * Submit the workload file at `path` (relative to the server's root) as an `air` job: listed at once,
   * and shown (`revealedJob`); a workload with a `schedule:` becomes a schedule instead (reloaded into
   * `schedules`). Rejects with the server's `RequestError`, every error of the file in its `errors`; a
   * refused file is not the panel's failure, so `error` stays as it was.
   */
  async submitWorkload(path: string): Promise<SubmitAnswer> {
    const body: ISubmitWorkload = { path };
    // A string body alone would be sent as text/plain.
    const headers = { 'Content-Type': 'application/json' };
    const answer = await this.serialized(() =>
      this.request<SubmitAnswer>('jobs', { method: 'POST', headers, body: JSON.stringify(body) })
    );
    if ('schedule' in answer) {
      await this.refresh();
      return answer;
    }
    this._jobs = [answer, ...this._jobs.filter(held => held.job_run_id !== answer.job_run_id)];
    this._revealedJob = answer.job_run_id;
    this.emitChanged();
    return answer;
  }

  /** Cancel an active job (the server answers once it has ended) and reload. */
  async cancelJob(jobRunId: string): Promise<void> {
    await this.serialized(async () => {
      await this.request(`jobs/${encodeURIComponent(jobRunId)}/cancel`, { method: 'POST' });
    });
    await this.refresh();
  }

  /**
   * Pause, resume or fire now (`run-now`, paused or not) the schedule `name`, then reload; answers the
   * server's answer (`IRunNowAnswer` for a fire, whose job is then shown: `revealedJob`). Rejects with the server's `RequestError` (e.g. 409 while
   * its jobs already run at its `max_concurrent_runs`).
   */
  async actOnSchedule<T>(name: string, action: ScheduleAction): Promise<T> {
    const endpoint = `schedules/${encodeURIComponent(name)}/${action}`;
    const answer = await this.serialized(() => this.request<T>(endpoint, { method: 'POST' }));
    const fired = (answer as Partial<IRunNowAnswer>).job;
    this._revealedJob = fired ? fired.job_run_id : this._revealedJob;
    await this.refresh();
    return answer;
  }

  protected get inactivityTimeoutSeconds(): number {
    return this._settings.inactivityTimeoutSeconds;
  }

  /** Polling goes on while the panel is visible. */
  protected due(): boolean {
    return this.visible;
  }

  /** A panel shown again reloads the first page of runs and the jobs. */
  protected onShown(): void {
    this._fullReload = true;
  }

  /**
   * Read what may have changed: the runs while one runs or a cell runs (and once after), or on a full reload or
   * a refresh; the jobs and schedules every time.
   */
  protected async fetch(refresh: boolean): Promise<void> {
    const full = refresh || this._fullReload;
    this._fullReload = false;
    const due = this._kernelBusy || this._kernelSettled;
    this._kernelSettled = false;
    const notebook = this._notebook;
    if (notebook.path !== null && (full || due || notebook.running || notebook.unread)) {
      await notebook.read(this._reader, full);
    }
    this._jobs = (await this._get<IJobsPayload>('jobs')).jobs;
    this._schedules = await this._get<ISchedulesPayload>('schedules');
    this._loaded = true;
    this.emitChanged();
  }

  /** Poll now if due (`full`: reload the first page rather than ask for changes). */
  private _wake(full: boolean): Promise<void> {
    this._fullReload = this._fullReload || full;
    return this.wake();
  }

  private _get<T>(endpoint: string): Promise<T> {
    return this.read<T>(endpoint, { method: 'GET' }, 'Reading runs');
  }

  private _reader = <T>(endpoint: string): Promise<T> => this._get<T>(endpoint);

  private _fullReload = true;
  private _jobs: IJob[] = [];
  private _kernelBusy = false;
  /** The kernel has just become idle: one more read sees how its runs ended. */
  private _kernelSettled = false;
  private _loaded = false;
  private _notebook = new NotebookRuns();
  private _revealedJob: string | null = null;
  private _schedules: ISchedulesPayload = { schedules: [] };
  private _settings: IExperimentSettings;
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
