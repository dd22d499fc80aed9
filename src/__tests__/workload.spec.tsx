/** Unit tests of workloads from the panel: submitting a file, its errors, every node's log, a run's job log. */
import { ServerConnection } from '@jupyterlab/services';
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { act } from 'react';
import { describe, expect, it, vi } from 'vitest';

import { JobList } from '../experiment/components/JobList';
import { RunList } from '../experiment/components/RunList';
import { WorkloadErrors } from '../experiment/components/WorkloadErrors';
import { ExperimentModel } from '../experiment/model';
import { scheduleKept } from '../experiment/schedules';
import type { IJob } from '../experiment/tokens';
import { requestAPI, RequestError } from '../request';
import { FakeRunsServer, makeJob, makeRun, makeSchedule, T0 } from './fakeRuns';
import { reactRoot } from './harness';

const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const trans = nullTranslator.load('jupyter_air');

const dom = reactRoot();

/** A job of two nodes whose first attempt failed on node 1, the second still running. */
function twoNodeJob(): IJob {
  const job = { ...makeJob('job-multi', 'RUNNING'), num_nodes: 2, num_attempts: 2 };
  const node = (index: number, exit: number | null) => ({
    node: index,
    hostname: index === 0 ? 'gpu-07' : HOSTILE,
    ip: `10.0.0.${7 + index}`,
    ray_node_id: `ray-${index}`,
    exit_code: exit
  });
  job.attempts = [
    { ...job.attempts[0], attempt: 0, status: 'FAILED', nodes: [node(1, 1), node(0, 0)] },
    { ...job.attempts[0], attempt: 1, status: 'RUNNING', nodes: [node(0, null), node(1, null)] }
  ];
  return job;
}

describe('Submitting a workload file', () => {
  it('posts its path, lists the new job first and shows it', async () => {
    // Given a panel with one older job, and a valid workload file on the server
    const server = new FakeRunsServer();
    server.jobs = [makeJob('job-old', 'SUCCEEDED')];
    server.workloads.set('experiments/train.yaml', makeJob('job-new', 'PENDING'));
    const model = new ExperimentModel({ request: server.request });
    model.setVisible(true);
    await model.refresh();
    // When the file is submitted
    const job = (await model.submitWorkload('experiments/train.yaml')) as IJob;
    // Then the path went as JSON in one POST, and the new job is listed first and shown
    expect(server.calls.filter(c => c.method === 'POST')).toEqual([
      { endpoint: 'jobs', method: 'POST', body: '{"path":"experiments/train.yaml"}' }
    ]);
    expect(job.job_run_id).toBe('job-new');
    expect(model.jobs.map(j => j.job_run_id)).toEqual(['job-new', 'job-old']);
    expect(model.revealedJob).toBe('job-new');
    model.dispose();
  });

  it('makes a schedule of a workload with a schedule: listed under Schedules, no job shown', async () => {
    // Given a workload file with a schedule on the server
    const server = new FakeRunsServer();
    server.jobs = [makeJob('job-old', 'SUCCEEDED')];
    const kept = {
      created: true,
      schedule: { ...makeSchedule('nightly'), pause_status: 'PAUSED' as const }
    };
    server.workloads.set('nightly.yaml', kept);
    const model = new ExperimentModel({ request: server.request });
    model.setVisible(true);
    await model.refresh();
    // When it is submitted
    const answer = await model.submitWorkload('nightly.yaml');
    // Then the answer is the schedule, now listed; the jobs and the shown job are as they were
    expect(answer).toEqual(kept);
    expect(model.schedules.map(s => s.name)).toEqual(['nightly']);
    expect(model.jobs.map(j => j.job_run_id)).toEqual(['job-old']);
    expect(model.revealedJob).toBeNull();
    // And the notification says nothing runs now, and how to make it fire
    expect(scheduleKept(kept, trans)).toBe(
      'Schedule nightly created: nothing runs now; it is paused: resume it under Schedules to fire it.'
    );
    const unpaused = { created: false, schedule: makeSchedule('nightly') };
    expect(scheduleKept(unpaused, trans)).toMatch(
      /^Schedule nightly updated: nothing runs now; next fire \S.* \(Europe\/Lisbon\)\.$/
    );
    model.dispose();
  });

  it('gives every error of a refused file to the caller, and the panel stays as it was', async () => {
    // Given a workload file with two errors
    const server = new FakeRunsServer();
    server.jobs = [makeJob('job-old', 'SUCCEEDED')];
    const errors = ['bad.yaml:3: command: field required', `bad.yaml:5: ${HOSTILE}`];
    server.workloads.set('bad.yaml', errors);
    const model = new ExperimentModel({ request: server.request });
    model.setVisible(true);
    await model.refresh();
    // When it is submitted
    const failure = await model.submitWorkload('bad.yaml').then(
      () => null,
      (error: unknown) => error
    );
    // Then it is refused with both errors, and the panel reports no failure of its own
    expect(failure).toBeInstanceOf(RequestError);
    expect((failure as RequestError).status).toBe(400);
    expect((failure as RequestError).errors).toEqual(errors);
    expect(model.error).toBeNull();
    expect(model.jobs.map(j => j.job_run_id)).toEqual(['job-old']);
    expect(model.revealedJob).toBeNull();
    model.dispose();
  });

  it("goes through Jupyter's request: its XSRF header, a JSON body", async () => {
    // Given the page's XSRF cookie and a server that starts the job
    document.cookie = '_xsrf=xsrf-of-this-page';
    const seen: Request[] = [];
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://localhost:8888/',
      fetch: (async (request: Request) => {
        seen.push(request);
        return new Response(JSON.stringify(makeJob('job-new', 'PENDING')), { status: 201 });
      }) as unknown as typeof fetch
    });
    const model = new ExperimentModel({ request: (e, init) => requestAPI(e, init, settings) });
    // When a file is submitted
    await model.submitWorkload('train.yaml');
    // Then one POST went to jupyter-air/jobs with Jupyter's headers
    const post = seen.find(r => r.method === 'POST')!;
    expect(new URL(post.url).pathname).toBe('/jupyter-air/jobs');
    expect(post.headers.get('X-XSRFToken')).toBe('xsrf-of-this-page');
    expect(post.headers.get('Content-Type')).toBe('application/json');
    expect(await post.json()).toEqual({ path: 'train.yaml' });
    model.dispose();
  });

  it('lists every error of the file as text in the dialog', () => {
    // Given the errors of a refused file, one holding HTML
    const errors = ['bad.yaml:3: command: field required', `bad.yaml:5: ${HOSTILE}`];
    // When the dialog's body is rendered
    dom.render(<WorkloadErrors path="bad.yaml" message="refused" errors={errors} trans={trans} />);
    // Then each error is a line of its own, read as typed
    const lines = [...dom.container.querySelectorAll('.jp-Air-workload-error')].map(
      li => li.textContent
    );
    expect(lines).toEqual(errors);
    expect(dom.container.querySelector('img')).toBeNull();
    expect(dom.container.textContent).toContain('bad.yaml has 2 errors:');
  });
});

describe('Jobs on several nodes, and runs of jobs', () => {
  it('lists every node of each attempt, with its host, how it ended, and its own Logs', () => {
    // Given a two-node job in its second attempt
    const onOpenLogs = vi.fn();
    dom.render(
      <JobList
        jobs={[twoNodeJob()]}
        nowMs={T0}
        onOpenLogs={onOpenLogs}
        onCancel={() => undefined}
        onCopy={() => undefined}
        trans={trans}
        revealed="job-multi"
      />
    );
    // Then each attempt lists nodes 0 and 1 in order, hosts as text, exit codes of the ended ones
    const attempt = (n: number) => dom.container.querySelector(`[data-attempt="${n}"]`)!;
    const nodes = (n: number) =>
      [...attempt(n).querySelectorAll('.jp-Air-job-node')].map(node => [
        node.querySelector('.jp-Air-job-node-index')?.textContent,
        node.querySelector('.jp-Air-job-node-host')?.textContent,
        node.querySelector('.jp-Air-job-node-exit')?.textContent ?? null
      ]);
    expect(nodes(0)).toEqual([
      ['node 0', 'gpu-07', 'exit 0'],
      ['node 1', HOSTILE, 'exit 1']
    ]);
    expect(nodes(1)).toEqual([
      ['node 0', 'gpu-07', null],
      ['node 1', HOSTILE, null]
    ]);
    expect(dom.container.querySelector('img')).toBeNull();
    expect(attempt(0).querySelector('.jp-mod-failed')?.textContent).toBe('exit 1');
    // When node 1's Logs of the second attempt is clicked, Then that node's log opens
    const logs = attempt(1).querySelector('[data-node="1"] .jp-Air-job-logs') as HTMLElement;
    act(() => logs.click());
    expect(onOpenLogs).toHaveBeenCalledWith('job-multi', 1, 1);
    // And the job just submitted is marked
    expect(
      dom.container.querySelector('.jp-Air-job.jp-mod-revealed')?.getAttribute('data-job-id')
    ).toBe('job-multi');
  });

  it("gives a run backed by a job a Logs button that opens that job's log", () => {
    // Given a job's run (attempt 2) and a notebook call's run
    const jobRun = { ...makeRun('of-job', T0), source: 'job', job_run_id: 'job-abc', attempt: 2 };
    const plain = makeRun('plain', T0 + 1);
    const onOpenLogs = vi.fn();
    dom.render(
      <RunList
        runs={[plain, jobRun]}
        childrenOf={() => []}
        selected={new Set()}
        onToggle={() => undefined}
        nowMs={T0}
        onOpenLogs={onOpenLogs}
        trans={trans}
      />
    );
    // Then only the job's run offers Logs, which opens that attempt's log
    expect(dom.container.querySelectorAll('.jp-Air-run-logs')).toHaveLength(1);
    act(() =>
      (
        dom.container.querySelector('[data-run-id="of-job"] .jp-Air-run-logs') as HTMLElement
      ).click()
    );
    expect(onOpenLogs).toHaveBeenCalledWith('job-abc', 2, 0);
  });
});
