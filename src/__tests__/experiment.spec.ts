/** Unit tests of the Experiment panel's model: the notebook's runs and the jobs, when it polls, errors. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { ExperimentModel } from '../experiment/model';
import { RequestError } from '../request';
import { FakeRunsServer, makeJob, makeRun, T0 } from './fakeRuns';
import { advance } from './harness';

const SECOND = 1000;
const NOTEBOOK = 'work/train.ipynb';

let server: FakeRunsServer;
let model: ExperimentModel;

/** Create the model under test (disposed after each test). */
function makeModel(settings: Partial<ExperimentModel.IOptions['settings']> = {}): void {
  model = new ExperimentModel({ request: server.request, settings });
}

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeRunsServer();
});

afterEach(() => {
  model?.dispose();
  vi.useRealTimers();
  vi.restoreAllMocks();
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
    // Then it read the first page of runs, the jobs and the schedules, newest run first
    expect(server.requests).toEqual([
      `GET runs?notebook=${encodeURIComponent(NOTEBOOK)}&limit=50`,
      'GET jobs',
      'GET schedules'
    ]);
    expect(model.runs.map(r => r.run_id)).toEqual(['b', 'a']);
    expect(model.jobs.map(j => j.job_run_id)).toEqual(['job-1']);
    // And with nothing running it reads only the jobs and schedules, once per poll interval (5 s)
    await advance(60 * SECOND);
    expect(server.requests.slice(3)).toEqual(
      Array.from({ length: 12 }, () => ['GET jobs', 'GET schedules']).flat()
    );
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
    // Then after the first load only the jobs and schedules were read, one request each per poll
    expect(server.requests.filter(r => r.startsWith('GET runs'))).toHaveLength(1);
    expect(server.requests.filter(r => r === 'GET jobs').length).toBeGreaterThanOrEqual(4);
    expect(server.calls.length - count).toBe(24);
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
    // Given back-off delays drawn at mid-range (they are random between the interval and three times the
    // previous delay: drawn low several times in a row, they kept the polls near one a second)
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
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
