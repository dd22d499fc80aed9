/** Unit tests of the Experiment panel's models: runs and jobs, the Logs view, the GPU timeline, the readout. */
import { nullTranslator } from '@jupyterlab/translation';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { LogModel } from '../experiment/logModel';
import { ExperimentModel } from '../experiment/model';
import { RunTimeline } from '../gpu/timeline';
import { GpuModel } from '../gpu/model';
import { RequestError } from '../request';
import { busiestGpu, readout } from '../gpu/readout';
import { FakeServer } from './fakeServer';
import { FakeRunsServer, makeJob, makeRun, T0 } from './fakeRuns';

const SECOND = 1000;
const NOTEBOOK = 'work/train.ipynb';
const trans = nullTranslator.load('jupyter_air');

let server: FakeRunsServer;
let model: ExperimentModel;

/** Create the model under test (disposed after each test). */
function makeModel(settings: Partial<ExperimentModel.IOptions['settings']> = {}): void {
  model = new ExperimentModel({ request: server.request, settings });
}

async function advance(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeRunsServer();
});

afterEach(() => {
  model?.dispose();
  vi.useRealTimers();
});

describe('ExperimentModel', () => {
  it('reads nothing while hidden, then the notebook runs and the jobs once shown', async () => {
    // Given a notebook with two finished runs and a finished job
    server.runs.set(NOTEBOOK, [makeRun('a', T0), makeRun('b', T0 + 10_000)]);
    server.jobs = [makeJob('job-1', 'SUCCEEDED')];
    makeModel();
    model.notebookPath = NOTEBOOK;
    await advance(10 * SECOND);
    expect(server.requests).toEqual([]);
    // When the panel is shown
    model.setVisible(true);
    await advance(0);
    // Then it read the first page of runs and the jobs, newest run first
    expect(server.requests).toEqual([
      `GET runs?notebook=${encodeURIComponent(NOTEBOOK)}&limit=50`,
      'GET jobs'
    ]);
    expect(model.runs.map(r => r.run_id)).toEqual(['b', 'a']);
    expect(model.jobs.map(j => j.job_run_id)).toEqual(['job-1']);
    // And with nothing running it reads only the job list, once per poll interval (5 s)
    await advance(60 * SECOND);
    expect(server.requests.slice(2)).toEqual(Array.from({ length: 12 }, () => 'GET jobs'));
    // When the panel is hidden, Then it reads nothing more
    model.setVisible(false);
    await advance(5 * SECOND);
    const count = server.calls.length;
    await advance(60 * SECOND);
    expect(server.calls).toHaveLength(count);
    expect(model.state).toBe('idle');
  });

  it('shows a job started from a terminal within one poll interval, without Refresh', async () => {
    // Given the panel shown, with nothing running
    server.runs.set(NOTEBOOK, [makeRun('a', T0)]);
    makeModel({ pollIntervalSeconds: 5 });
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    await advance(30 * SECOND);
    expect(model.jobs).toEqual([]);
    // When `air run` starts a job from a terminal
    server.jobs = [makeJob('job-from-terminal')];
    await advance(5 * SECOND);
    // Then the panel lists it, running
    expect(model.jobs.map(j => [j.job_run_id, j.status])).toEqual([
      ['job-from-terminal', 'RUNNING']
    ]);
    expect(model.state).toBe('live');
  });

  it('reads the runs while one is running, asking only for changes, until it has ended', async () => {
    // Given a notebook with an old finished run and a running one
    const running = makeRun('live', T0 + 20_000, 'RUNNING');
    server.runs.set(NOTEBOOK, [makeRun('old', T0), running]);
    makeModel({ pollIntervalSeconds: 3 });
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    await advance(0);
    expect(model.state).toBe('live');
    // When two poll intervals pass
    await advance(6 * SECOND);
    // Then each poll asked for what changed since the running run started
    const polls = server.requests.filter(r => r.startsWith('GET runs'));
    expect(polls.slice(1)).toEqual([
      `GET runs?notebook=${encodeURIComponent(NOTEBOOK)}&since=${T0 + 20_000}&limit=200`,
      `GET runs?notebook=${encodeURIComponent(NOTEBOOK)}&since=${T0 + 20_000}&limit=200`
    ]);
    // When the run finishes
    running.status = 'FINISHED';
    running.end_ms = T0 + 30_000;
    await advance(3 * SECOND);
    // Then the panel shows it finished, and reads the runs no more (only the job list)
    expect(model.runs.find(r => r.run_id === 'live')?.status).toBe('FINISHED');
    const runReads = () => server.requests.filter(r => r.startsWith('GET runs')).length;
    const count = runReads();
    await advance(60 * SECOND);
    expect(runReads()).toBe(count);
  });

  it('while only a job is active, reads only the jobs', async () => {
    // Given a notebook whose runs have all ended, and a running job
    server.runs.set(NOTEBOOK, [makeRun('done', T0)]);
    server.jobs = [makeJob('job-1')];
    makeModel({ pollIntervalSeconds: 5 });
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    await advance(0);
    // When three poll intervals pass and the job ends
    await advance(15 * SECOND);
    server.jobs[0].status = 'SUCCEEDED';
    await advance(5 * SECOND);
    const count = server.calls.length;
    await advance(60 * SECOND);
    // Then after the first load only the jobs were read, one request per poll
    expect(server.requests.filter(r => r.startsWith('GET runs'))).toHaveLength(1);
    expect(server.requests.filter(r => r === 'GET jobs').length).toBeGreaterThanOrEqual(4);
    expect(server.calls.length - count).toBe(12);
    expect(model.jobs[0].status).toBe('SUCCEEDED');
  });

  it('reads the runs while a cell of the notebook runs, and once more when it is done', async () => {
    // Given a shown panel with nothing running
    server.runs.set(NOTEBOOK, []);
    makeModel({ pollIntervalSeconds: 3 });
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    await advance(0);
    const before = server.calls.length;
    // When a cell runs for 9 s and starts a run that ends with it
    model.setKernelBusy(true);
    await advance(SECOND);
    server.runs.set(NOTEBOOK, [makeRun('cell', T0, 'RUNNING')]);
    await advance(8 * SECOND);
    server.runs.get(NOTEBOOK)![0].status = 'FINISHED';
    model.setKernelBusy(false);
    await advance(0);
    // Then it polled during the cell and saw the run end right after
    expect(server.calls.length - before).toBeGreaterThanOrEqual(8);
    expect(model.runs.map(r => [r.run_id, r.status])).toEqual([['cell', 'FINISHED']]);
    // And then reads the runs no more
    const runReads = () => server.requests.filter(r => r.startsWith('GET runs')).length;
    const count = runReads();
    await advance(60 * SECOND);
    expect(runReads()).toBe(count);
  });

  it('follows another notebook: its runs replace the previous ones', async () => {
    server.runs.set(NOTEBOOK, [makeRun('a', T0)]);
    server.runs.set('other.ipynb', [makeRun('z', T0)]);
    makeModel();
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    await advance(0);
    // When the user switches to another notebook
    model.notebookPath = 'other.ipynb';
    await advance(0);
    // Then only that notebook's runs are held
    expect(model.runs.map(r => r.run_id)).toEqual(['z']);
    expect(server.requests).toContain('GET runs?notebook=other.ipynb&limit=50');
  });

  it('pauses after the inactivity timeout and resumes on refresh', async () => {
    server.runs.set(NOTEBOOK, [makeRun('live', T0, 'RUNNING')]);
    makeModel({ pollIntervalSeconds: 3, inactivityTimeoutSeconds: 30 });
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    await advance(0);
    // When 30 s pass without activity
    await advance(33 * SECOND);
    const count = server.calls.length;
    await advance(60 * SECOND);
    // Then polling stopped and the panel says so
    expect(server.calls).toHaveLength(count);
    expect(model.state).toBe('paused');
    expect(model.pausedAfterSeconds).toBe(30);
    // When Refresh is clicked, Then it reads again and is live
    const done = model.refresh();
    await advance(0);
    await done;
    expect(server.calls.length).toBeGreaterThan(count);
    expect(model.state).toBe('live');
  });

  it('never has two requests in flight', async () => {
    // Given a slow server, a running run among many, and a running job
    const runs = Array.from({ length: 80 }, (_, i) => makeRun(`r${i}`, T0 + i * 1000));
    server.runs.set(NOTEBOOK, [...runs, makeRun('live', T0 + 99_000, 'RUNNING')]);
    server.jobs = [makeJob('job-1')];
    server.delayMs = 2 * SECOND;
    makeModel({ pollIntervalSeconds: 1, inactivityTimeoutSeconds: 10_000 });
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    // When polls, Refresh, older pages, a cancel and cells running all come at once
    for (let i = 0; i < 10; i++) {
      void model.refresh();
      void model.loadMore();
      if (i === 3) {
        void model.cancelJob('job-1');
      }
      model.setKernelBusy(i % 2 === 0);
      await advance(700);
    }
    // Then the requests went one at a time
    await advance(20 * SECOND);
    expect(server.calls.length).toBeGreaterThan(6);
    expect(server.maxInFlight).toBe(1);
  });

  it('nests children under their parent, and builds the MLflow compare link', async () => {
    const parent = makeRun('parent', T0);
    const child = { ...makeRun('child', T0 + 1000), parent_run_id: 'parent', experiment_id: '7' };
    const orphan = { ...makeRun('orphan', T0 + 2000), parent_run_id: 'elsewhere' };
    server.runs.set(NOTEBOOK, [parent, child, orphan]);
    makeModel();
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    await advance(0);
    expect(model.topLevelRuns.map(r => r.run_id)).toEqual(['orphan', 'parent']);
    expect(model.childrenOf('parent').map(r => r.run_id)).toEqual(['child']);
    const url = model.compareUrl(['parent', 'child']);
    expect(url).toBe(
      '/mlflow/#/compare-runs?runs=' +
        encodeURIComponent('["child","parent"]') +
        '&experiments=' +
        encodeURIComponent('["1","7"]')
    );
  });

  it('loads older runs page by page', async () => {
    server.runs.set(
      NOTEBOOK,
      Array.from({ length: 120 }, (_, i) => makeRun(`r${i}`, T0 + i * 1000))
    );
    makeModel();
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    await advance(0);
    expect(model.runs).toHaveLength(50);
    expect(model.hasMore).toBe(true);
    await model.loadMore();
    await model.loadMore();
    expect(model.runs).toHaveLength(120);
    expect(model.hasMore).toBe(false);
    expect(new Set(model.runs.map(r => r.run_id)).size).toBe(120);
  });

  it('cancels a job and reads the jobs again', async () => {
    server.jobs = [makeJob('job-1')];
    makeModel();
    model.setVisible(true);
    await advance(0);
    const done = model.cancelJob('job-1');
    await advance(0);
    await done;
    expect(server.requests).toContain('POST jobs/job-1/cancel');
    expect(model.jobs[0].status).toBe('CANCELED');
  });

  it('shows a failing server and backs off', async () => {
    server.runs.set(NOTEBOOK, [makeRun('live', T0, 'RUNNING')]);
    makeModel({ pollIntervalSeconds: 1, inactivityTimeoutSeconds: 10_000 });
    model.notebookPath = NOTEBOOK;
    model.setVisible(true);
    await advance(0);
    server.failWith = new RequestError('jupyter-air/runs answered 500: boom', 'server', 500);
    await advance(60 * SECOND);
    expect(model.state).toBe('error');
    expect(model.error?.message).toContain('boom');
    // Back-off: far fewer than one request a second
    expect(server.calls.length).toBeLessThan(20);
  });
});

describe('LogModel', () => {
  it('follows a growing log by offset, whole lines only, and stops once it is complete', async () => {
    // Given a running job with two lines written, the third being written
    server.logs.set('job-1', 'one\ntwo\nthr');
    const log = new LogModel({ jobRunId: 'job-1', request: server.request, intervalMs: SECOND });
    log.setVisible(true);
    await advance(0);
    expect(log.lines).toEqual(['one', 'two']);
    // When more output arrives, with a progress bar redrawing itself
    server.logs.set('job-1', 'one\ntwo\nthree\n10%\r50%\r100%\n');
    await advance(SECOND);
    // Then only the new part was asked for, and the bar shows its last state
    expect(server.requests[1]).toBe('GET jobs/job-1/logs?attempt=0&node=0&offset=8');
    expect(log.lines).toEqual(['one', 'two', 'three', '100%']);
    // When the attempt ends with a last unfinished line
    server.logs.set('job-1', 'one\ntwo\nthree\n10%\r50%\r100%\nbye');
    server.ended.add('job-1');
    await advance(SECOND);
    const count = server.calls.length;
    await advance(30 * SECOND);
    // Then it has every line and asks no more
    expect(log.lines).toEqual(['one', 'two', 'three', '100%', 'bye']);
    expect(log.complete).toBe(true);
    expect(server.calls).toHaveLength(count);
    log.dispose();
  });

  it('asks for the latest attempt first, then keeps to the one it got', async () => {
    server.logs.set('job-1', 'a\n');
    const log = new LogModel({ jobRunId: 'job-1', request: server.request, intervalMs: SECOND });
    log.setVisible(true);
    await advance(SECOND);
    expect(server.requests[0]).toBe('GET jobs/job-1/logs?attempt=-1&node=0&offset=0');
    expect(server.requests[1]).toBe('GET jobs/job-1/logs?attempt=0&node=0&offset=2');
    log.dispose();
  });

  it('pauses while its tab stays hidden, and reads on at once when shown again', async () => {
    // Given a log being followed every second, with a 30-second inactivity timeout
    server.logs.set('job-1', 'one\n');
    const log = new LogModel({
      jobRunId: 'job-1',
      request: server.request,
      intervalMs: SECOND,
      inactivityTimeoutSeconds: 30
    });
    log.setVisible(true);
    await advance(0);
    // When its tab is hidden for 40 s while the user works elsewhere
    log.setVisible(false);
    for (let t = 0; t < 40; t += 5) {
      log.notifyActivity();
      await advance(5 * SECOND);
    }
    const count = server.calls.length;
    await advance(60 * SECOND);
    // Then it stopped reading, and says so
    expect(server.calls).toHaveLength(count);
    expect(log.pausedAfterSeconds).toBe(30);
    // When the tab is shown again and the log has grown
    server.logs.set('job-1', 'one\ntwo\n');
    log.setVisible(true);
    await advance(0);
    // Then it read the new line at once
    expect(server.calls).toHaveLength(count + 1);
    expect(log.lines).toEqual(['one', 'two']);
    expect(log.paused).toBe(false);
    log.dispose();
  });

  it('keeps at most the last lines it may', async () => {
    server.logs.set('job-1', Array.from({ length: 30 }, (_, i) => `line ${i}\n`).join(''));
    server.ended.add('job-1');
    const log = new LogModel({ jobRunId: 'job-1', request: server.request, maxLines: 10 });
    log.setVisible(true);
    await advance(0);
    expect(log.lines).toEqual(Array.from({ length: 10 }, (_, i) => `line ${i + 20}`));
    expect(log.droppedLines).toBe(20);
    log.dispose();
  });
});

describe('RunTimeline', () => {
  it('asks for the runs of the charts once per new GPU sample, only while the panel shows', async () => {
    // Given a GPU model whose panel is shown, and a timeline following it
    const gpuServer = new FakeServer(2, 2000);
    gpuServer.addSamples(5);
    const gpu = new GpuModel({
      request: async <T>(endpoint: string, init?: RequestInit) =>
        (endpoint.startsWith('runs')
          ? server.request<T>(endpoint, init)
          : gpuServer.request<T>(endpoint, init)) as T,
      settings: { pollIntervalSeconds: 2, inactivityTimeoutSeconds: 10_000 }
    });
    server.windowRuns = [makeRun('a', gpuServer.timestamps[1])];
    const timeline = new RunTimeline({ gpu, request: server.request });
    gpu.setVisible(true);
    await advance(0);
    // Then it asked for the window of the samples held
    const first = gpuServer.timestamps;
    expect(server.requests).toEqual([`GET runs?from=${first[0]}&to=${first[4]}`]);
    expect(timeline.runs.map(r => r.run_id)).toEqual(['a']);
    // When three polls bring one sample each and one brings none
    for (let i = 0; i < 3; i++) {
      gpuServer.addSamples(1);
      await advance(2 * SECOND);
    }
    await advance(2 * SECOND);
    // Then one request followed each new sample, asking from the end of the previous answer
    const ts = gpuServer.timestamps;
    expect(server.requests.slice(1)).toEqual([
      `GET runs?from=${ts[4]}&to=${ts[5]}`,
      `GET runs?from=${ts[5]}&to=${ts[6]}`,
      `GET runs?from=${ts[6]}&to=${ts[7]}`
    ]);
    expect(timeline.runs.map(r => r.run_id)).toEqual(['a']);
    // When only the status bar shows the GPUs (the panel is hidden), Then the charts' runs are not read
    gpu.setVisible(true, 'status-bar');
    gpu.setVisible(false);
    gpuServer.addSamples(3);
    await advance(6 * SECOND);
    expect(server.calls).toHaveLength(4);
    timeline.dispose();
    gpu.dispose();
  });
});

describe('GPU status bar readout', () => {
  it('shows the busiest GPU: utilization, memory used of total, temperature', async () => {
    // Given 3 GPUs, GPU 1 at 37 % with 12 GiB of 80 used, the others idle
    const gpuServer = new FakeServer(3);
    gpuServer.addSamples(2);
    const request = async <T>(endpoint: string, init?: RequestInit): Promise<T> => {
      const answer = await gpuServer.request<T>(endpoint, init);
      const gpus = (answer as { gpus?: Record<string, number[][]> }).gpus;
      if (gpus) {
        gpus.utilization_percent = gpus.utilization_percent.map((s, i) =>
          s.map(() => (i === 1 ? 37 : 0))
        );
        gpus.memory_used_bytes = gpus.memory_used_bytes.map((s, i) =>
          s.map(() => (i === 1 ? 12 : 0.5) * 1024 ** 3)
        );
      }
      return answer;
    };
    const gpu = new GpuModel({ request });
    // When the readout shows
    gpu.setVisible(true, 'status-bar');
    await advance(0);
    // Then it is about GPU 1
    expect(busiestGpu(gpu)).toBe(1);
    expect(readout(gpu, 1, trans)).toBe('GPU 1 37% · 12/80 GiB · 50 °C');
    expect(readout(gpu, 0, trans)).toBe('GPU 0 0% · 0.5/80 GiB · 50 °C');
    gpu.dispose();
  });

  it('gives the GPU panel the newest samples at once when it opens while the readout polls', async () => {
    const gpuServer = new FakeServer(1, 10_000);
    gpuServer.addSamples(1);
    const gpu = new GpuModel({ request: gpuServer.request });
    gpu.setVisible(true, 'status-bar');
    await advance(SECOND);
    const before = gpuServer.calls.length;
    gpu.setVisible(true);
    await advance(0);
    expect(gpuServer.calls.length).toBe(before + 1);
    gpu.dispose();
  });

  it('keeps the GPU model polling while shown, even with the GPU panel closed', async () => {
    const gpuServer = new FakeServer(1, 10_000);
    gpuServer.addSamples(1);
    const gpu = new GpuModel({ request: gpuServer.request });
    gpu.setVisible(true, 'status-bar');
    await advance(30 * SECOND);
    expect(gpuServer.requests.filter(r => r.startsWith('GET gpu')).length).toBeGreaterThanOrEqual(
      3
    );
    expect(gpu.isVisibleTo('panel')).toBe(false);
    gpu.dispose();
  });
});
