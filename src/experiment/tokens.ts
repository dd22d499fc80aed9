/** Identifiers, settings and REST payload types of the Experiment panel and the Logs view. */

export const EXPERIMENT_PLUGIN_ID = 'jupyter-air:experiment';
export const EXPERIMENT_PANEL_ID = 'jupyter-air-experiment-panel';

export namespace ExperimentCommandIDs {
  export const openExperimentPanel = 'jupyter-air:open-experiment-panel';
  export const refreshExperimentPanel = 'jupyter-air:refresh-experiment-panel';
  export const openJobLogs = 'jupyter-air:open-job-logs';
  export const runWorkload = 'jupyter-air:run-workload';
}

/** The id of the Logs tab of a log, so opening it again shows the open tab. */
export function logWidgetId(jobRunId: string, attempt: number, node: number): string {
  return `jupyter-air-logs-${jobRunId}-${attempt}-${node}`;
}

/** User settings of the Experiment panel (see schema/experiment.json). */
export interface IExperimentSettings {
  /** Seconds between two polls while something runs. */
  pollIntervalSeconds: number;
  /** Seconds hidden or without activity before polling pauses. */
  inactivityTimeoutSeconds: number;
}

export const DEFAULT_EXPERIMENT_SETTINGS: IExperimentSettings = {
  pollIntervalSeconds: 5,
  inactivityTimeoutSeconds: 300
};

/** Run statuses of MLflow. */
export type RunStatus = 'RUNNING' | 'SCHEDULED' | 'FINISHED' | 'FAILED' | 'KILLED';

/** One MLflow run as `GET jupyter-air/runs` describes it. */
export interface IRun {
  run_id: string;
  run_name: string | null;
  experiment_id: string;
  experiment_name: string | null;
  status: RunStatus;
  start_ms: number;
  end_ms: number | null;
  /** `distributed`, `magic` (notebook calls), `job` (an `air` job's attempt), or null for other runs. */
  source: string | null;
  function: string | null;
  job_run_id: string | null;
  attempt: number | null;
  world_size: number | null;
  gpus: number | null;
  nodes: string[];
  /** Latest values of up to 8 metrics, by name. */
  metrics: Record<string, number>;
  metrics_count: number;
  params_count: number;
  parent_run_id: string | null;
  notebook_path: string | null;
  error: string | null;
  /** GPU energy of the run, summed over GPUs and nodes (null: none measured, e.g. no GPU). */
  energy_watt_hours: number | null;
  /** True when the run's GPU figures came from the simulated source. */
  gpus_simulated: boolean;
  /** Opens the run in the MLflow UI; null when no UI serving the store is known. */
  url: string | null;
}

/** Answer of `GET jupyter-air/runs?notebook=`. */
export interface IRunsPayload {
  node: string;
  ui_url: string | null;
  default_experiment: string;
  runs: IRun[];
  next_page_token: string | null;
}

/** Answer of `GET jupyter-air/runs?from=&to=`. */
export interface IRunWindowPayload {
  node: string;
  from_ms: number;
  to_ms: number;
  ui_url: string | null;
  runs: IRun[];
  truncated: boolean;
}

/** One node of an attempt of a multi-node job. */
export interface IJobNode {
  /** The node's index in the job (0 is the first): the `node` of its log. */
  node: number;
  hostname: string | null;
  ip: string | null;
  ray_node_id: string | null;
  /** How the node's command ended; `null` while it runs. */
  exit_code: number | null;
}

/** One attempt of an `air` job. */
export interface IJobAttempt {
  attempt: number;
  status: RunStatus;
  mlflow_run_id: string | null;
  mlflow_run_url: string | null;
  /** Opens the attempt's run from this page. */
  url: string | null;
  started_ms: number;
  ended_ms: number | null;
  exit_code: number | null;
  error: string | null;
  /** Every node of the attempt (servers before multi-node jobs leave it out). */
  nodes?: IJobNode[];
}

/** Job statuses of `air`. */
export type JobStatus = 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELED' | 'TIMED_OUT';

/** One `air` job (the shape of `air list -o json`, with attempts and nodes). */
export interface IJob {
  job_run_id: string;
  status: JobStatus;
  experiment_name: string;
  experiment_id: string | null;
  user: string;
  executor: string;
  submitted_ms: number;
  started_ms: number | null;
  ended_ms: number | null;
  duration_seconds: number | null;
  num_attempts: number;
  max_retries: number;
  mlflow_run_id: string | null;
  num_accelerators: number;
  gpus: number[];
  exit_code: number | null;
  error: string | null;
  num_nodes: number;
  /** How it was started, e.g. `notebook` for the job of a remote notebook call (older servers leave it out). */
  source?: string | null;
  attempts: IJobAttempt[];
}

/** Body of `POST jupyter-air/jobs`: the workload file to submit, relative to the server's root. */
export interface ISubmitWorkload {
  path: string;
}

/** Answer of `GET jupyter-air/jobs`. */
export interface IJobsPayload {
  jobs: IJob[];
}

/** Answer of `GET jupyter-air/jobs/<id>/logs`. */
export interface ILogChunk {
  job_run_id: string;
  job_status: JobStatus;
  attempt: number;
  attempt_status: RunStatus;
  node: number;
  offset: number;
  next_offset: number;
  size_bytes: number;
  /** True once the attempt has ended and everything was read. */
  complete: boolean;
  text: string;
}

/** One due time of a schedule and what became of it. */
export interface IScheduleFire {
  scheduled_ms: number;
  fired_ms: number;
  /** `SUBMITTED`, `SKIPPED` or `FAILED` (see `reason`); `SUBMITTING` while its job is being submitted. */
  outcome: string;
  job_run_id: string | null;
  reason: string | null;
  /** Due times this fire stands for (more than 1: a catch-up of missed ones). */
  windows: number;
  /** Fired by Run now rather than by time. */
  manual: boolean;
}

/** One schedule (the shape of `air schedules list -o json`, with its last fire and that fire's job). */
export interface ISchedule {
  name: string;
  quartz_cron_expression: string;
  /** The IANA time zone its expression is read in. */
  timezone_id: string;
  pause_status: 'PAUSED' | 'UNPAUSED';
  catchup: string;
  max_concurrent_runs: number;
  /** Its next due time; null while paused (or once its expression has no more). */
  next_fire_ms: number | null;
  experiment_name: string;
  last_fire: IScheduleFire | null;
  /** The last fire's job (null: none started, or it was forgotten). */
  last_job: IJob | null;
}

/**
 * Answer of `POST jupyter-air/jobs` for a workload with a `schedule:`: the schedule it created or
 * updated (as `air schedules get -o json` shows it); nothing runs now.
 */
export interface IKeptSchedule {
  created: boolean;
  schedule: Pick<
    ISchedule,
    'name' | 'pause_status' | 'next_fire_ms' | 'timezone_id' | 'quartz_cron_expression'
  >;
}

/** Answer of `POST jupyter-air/jobs`: the new job, or the schedule a workload with a `schedule:` made. */
export type SubmitAnswer = IJob | IKeptSchedule;

/** Whether a driver (this server's job check, `air scheduler`, the team's job service) fires the schedules. */
export interface IScheduleDriver {
  /** When one last ticked (epoch ms); null: none has yet. */
  last_tick_ms: number | null;
  /** An unpaused schedule's next fire time passed over a minute ago: no driver runs. */
  stalled: boolean;
}

/** Answer of `GET jupyter-air/schedules`. */
export interface ISchedulesPayload {
  schedules: ISchedule[];
  /** Absent from a job service that does not say. */
  driver?: IScheduleDriver;
}

/** What can be done to a schedule: `POST jupyter-air/schedules/<name>/<action>`. */
export type ScheduleAction = 'pause' | 'resume' | 'run-now';

/** Answer of `POST jupyter-air/schedules/<name>/run-now`: the fire, and its job when one was submitted. */
export interface IRunNowAnswer {
  fire: IScheduleFire;
  job: IJob | null;
}

/** Job statuses that may still change. */
export const ACTIVE_JOB_STATUSES: JobStatus[] = ['PENDING', 'RUNNING'];
