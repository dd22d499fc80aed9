/** An in-memory stand-in for the runs and jobs routes, behind the models' request seam. */
import { RequestError } from '../request';
import {
  IJob,
  IKeptSchedule,
  ILogChunk,
  IRun,
  IRunsPayload,
  IRunWindowPayload,
  ISchedule,
  IScheduleDriver,
  JobStatus,
  RunStatus
} from '../experiment/tokens';

export const T0 = 1_764_420_000_000;

export function makeRun(id: string, startMs: number, status: RunStatus = 'FINISHED'): IRun {
  return {
    run_id: id,
    run_name: `run ${id}`,
    experiment_id: '1',
    experiment_name: '/Users/alice/train',
    status,
    start_ms: startMs,
    end_ms: status === 'RUNNING' ? null : startMs + 5000,
    source: 'distributed',
    function: 'train',
    job_run_id: null,
    attempt: null,
    world_size: 2,
    gpus: 2,
    nodes: ['node-1'],
    metrics: { loss: 0.25 },
    metrics_count: 1,
    params_count: 2,
    parent_run_id: null,
    notebook_path: '/home/alice/train.ipynb',
    error: null,
    energy_watt_hours: null,
    gpus_simulated: false,
    url: `/jupyter-air/runs/${id}/open`
  };
}

export function makeJob(id: string, status: JobStatus = 'RUNNING'): IJob {
  return {
    job_run_id: id,
    status,
    experiment_name: 'my-training',
    experiment_id: '2',
    user: 'alice',
    executor: 'local',
    submitted_ms: T0,
    started_ms: T0 + 1000,
    ended_ms: status === 'RUNNING' || status === 'PENDING' ? null : T0 + 9000,
    duration_seconds: 8,
    num_attempts: 1,
    max_retries: 0,
    mlflow_run_id: `run-of-${id}`,
    num_accelerators: 0,
    gpus: [],
    exit_code: null,
    error: null,
    num_nodes: 1,
    attempts: [
      {
        attempt: 0,
        status: status === 'RUNNING' ? 'RUNNING' : 'FINISHED',
        mlflow_run_id: `run-of-${id}`,
        mlflow_run_url: null,
        url: `/jupyter-air/runs/run-of-${id}/open`,
        started_ms: T0 + 1000,
        ended_ms: null,
        exit_code: null,
        error: null
      }
    ]
  };
}

export function makeSchedule(name: string, lastJob: IJob | null = null): ISchedule {
  const fire = lastJob && {
    scheduled_ms: T0,
    fired_ms: T0 + 4,
    outcome: 'SUBMITTED',
    job_run_id: lastJob.job_run_id,
    reason: null,
    windows: 1,
    manual: false
  };
  return {
    name,
    quartz_cron_expression: '0 0 2 * * ?',
    timezone_id: 'Europe/Lisbon',
    pause_status: 'UNPAUSED',
    catchup: 'once',
    max_concurrent_runs: 1,
    next_fire_ms: T0 + 86_400_000,
    experiment_name: name,
    last_fire: fire,
    last_job: lastJob
  };
}

/** Runs per notebook path, jobs, schedules and logs; records every request. */
export class FakeRunsServer {
  runs = new Map<string, IRun[]>();
  jobs: IJob[] = [];
  /** The bytes of each job's log (ASCII in these tests, so characters are bytes). */
  logs = new Map<string, string>();
  /** Attempts that have ended, by job. */
  ended = new Set<string>();
  windowRuns: IRun[] = [];
  schedules: ISchedule[] = [];
  /** What `GET schedules` says of the driver (absent while undefined, as from an older server). */
  driver: IScheduleDriver | undefined = undefined;
  /** Run now answers 409 with this while set (the schedule's job already runs). */
  busy: string | null = null;
  /**
   * What `POST jobs` answers for each workload path: the job it starts (then listed by `GET jobs`), or
   * the errors of the file (a 400); a path not here answers 400 "no such file".
   */
  workloads = new Map<string, IJob | IKeptSchedule | string[]>();
  calls: { endpoint: string; method: string; body?: string }[] = [];
  inFlight = 0;
  maxInFlight = 0;
  delayMs = 0;
  failWith: RequestError | null = null;

  get requests(): string[] {
    return this.calls.map(c => `${c.method} ${c.endpoint}`);
  }

  request = async <T>(endpoint: string, init?: RequestInit): Promise<T> => {
    const method = init?.method ?? 'GET';
    const body = typeof init?.body === 'string' ? init.body : undefined;
    this.calls.push(body === undefined ? { endpoint, method } : { endpoint, method, body });
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.delayMs > 0) {
        await new Promise(resolve => setTimeout(resolve, this.delayMs));
      }
      if (this.failWith) {
        throw this.failWith;
      }
      return this.answer(endpoint, method, body) as T;
    } finally {
      this.inFlight -= 1;
    }
  };

  private answer(endpoint: string, method: string, body?: string): unknown {
    const [path, query = ''] = endpoint.split('?');
    const params = new URLSearchParams(query);
    if (path === 'jobs' && method === 'POST') {
      return this.submit(JSON.parse(body ?? '{}').path);
    }
    if (path === 'runs' && params.has('notebook')) {
      return this.notebookRuns(params);
    }
    if (path === 'runs') {
      const answer: IRunWindowPayload = {
        node: 'node-1',
        from_ms: Number(params.get('from')),
        to_ms: Number(params.get('to')),
        ui_url: '/mlflow/',
        runs: this.windowRuns,
        truncated: false
      };
      return answer;
    }
    if (path === 'jobs') {
      return { jobs: this.jobs };
    }
    if (path === 'schedules') {
      return { schedules: this.schedules, driver: this.driver };
    }
    const action = /^schedules\/([^/]+)\/(pause|resume|run-now)$/.exec(path);
    if (action && method === 'POST') {
      return this.actOn(decodeURIComponent(action[1]), action[2]);
    }
    const cancel = /^jobs\/([^/]+)\/cancel$/.exec(path);
    if (cancel && method === 'POST') {
      const job = this.jobs.find(j => j.job_run_id === decodeURIComponent(cancel[1]));
      if (job) {
        job.status = 'CANCELED';
      }
      return job;
    }
    const logs = /^jobs\/([^/]+)\/logs$/.exec(path);
    if (logs) {
      return this.logChunk(decodeURIComponent(logs[1]), params);
    }
    throw new RequestError(`jupyter-air/${path} answered 404`, 'unavailable', 404);
  }

  private actOn(name: string, action: string): unknown {
    const schedule = this.schedules.find(s => s.name === name);
    if (!schedule) {
      throw new RequestError(
        `jupyter-air/schedules answered 404: no schedule '${name}'`,
        'server',
        404
      );
    }
    if (action !== 'run-now') {
      schedule.pause_status = action === 'pause' ? 'PAUSED' : 'UNPAUSED';
      schedule.next_fire_ms = action === 'pause' ? null : T0 + 86_400_000;
      return schedule;
    }
    if (this.busy) {
      throw new RequestError(`jupyter-air/schedules answered 409: ${this.busy}`, 'server', 409);
    }
    const job = makeJob(`job-of-${name}-${this.jobs.length}`, 'PENDING');
    this.jobs = [job, ...this.jobs];
    Object.assign(schedule, makeSchedule(name, job), { pause_status: schedule.pause_status });
    return { fire: { ...schedule.last_fire!, manual: true }, job };
  }

  private submit(path: string): IJob | IKeptSchedule {
    const answer = this.workloads.get(path) ?? [`${path}: no such file`];
    if (Array.isArray(answer)) {
      const message = `${path} is not a valid workload (${answer.length} errors).`;
      throw new RequestError(`jupyter-air/jobs answered 400: ${message}`, 'server', 400, answer);
    }
    if ('schedule' in answer) {
      this.schedules = [...this.schedules, makeSchedule(answer.schedule.name)];
    } else {
      this.jobs = [answer, ...this.jobs];
    }
    return answer;
  }

  private notebookRuns(params: URLSearchParams): IRunsPayload {
    const all = [...(this.runs.get(params.get('notebook') ?? '') ?? [])].sort(
      (a, b) => b.start_ms - a.start_ms
    );
    const since = params.get('since');
    const limit = Number(params.get('limit') ?? 50);
    const from = Number(params.get('page_token') ?? 0);
    const matching = since === null ? all : all.filter(r => r.start_ms >= Number(since));
    const page = matching.slice(from, from + limit);
    return {
      node: 'node-1',
      ui_url: '/mlflow/',
      default_experiment: '/Users/alice/train',
      runs: page,
      next_page_token: from + limit < matching.length ? String(from + limit) : null
    };
  }

  private logChunk(jobRunId: string, params: URLSearchParams): ILogChunk {
    const text = this.logs.get(jobRunId) ?? '';
    const offset = Number(params.get('offset') ?? 0);
    const finished = this.ended.has(jobRunId);
    const rest = text.slice(offset);
    const cut = finished ? rest.length : rest.lastIndexOf('\n') + 1;
    const next = offset + cut;
    return {
      job_run_id: jobRunId,
      job_status: finished ? 'SUCCEEDED' : 'RUNNING',
      attempt: 0,
      attempt_status: finished ? 'FINISHED' : 'RUNNING',
      node: Number(params.get('node') ?? 0),
      offset,
      next_offset: next,
      size_bytes: text.length,
      complete: finished && next === text.length,
      text: rest.slice(0, cut)
    };
  }
}
