/** Unit tests of the run card's view and its Stop request: names as text, states, failure, Stop. */
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { act } from 'react';
import { describe, expect, it, vi } from 'vitest';

import { formatElapsed } from '../format';
import { RequestError } from '../request';
import { RunCard } from '../runcard/RunCard';
import { requestStop } from '../runcard/stop';
import { ICardData, StopState } from '../runcard/tokens';
import { reactRoot } from './harness';

const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const STARTED_MS = 1_764_420_000_000;
const trans = nullTranslator.load('jupyter_air');

function card(changes: Partial<ICardData> = {}): ICardData {
  return {
    run: {
      id: 'abc123',
      name: 'baseline',
      url: '/lab/jupyter-air/runs/abc123/open',
      experiment_name: 'mnist',
      experiment_url: '/lab/jupyter-air/experiments/1/open'
    },
    kind: 'distributed',
    world_size: 2,
    nodes: 1,
    gpus: ['0', '1'],
    job_run_id: null,
    status: 'RUNNING',
    started_ms: STARTED_MS,
    ended_ms: null,
    reason: null,
    failure: null,
    energy: null,
    metrics: [
      { key: 'train_loss', value: 0.25, value_text: '0.25', step: 4, spark: 'M0,1L100,19' }
    ],
    rows: [
      { name: 'rank 0', state: 'running', exitcode: null, line: 'epoch 1' },
      { name: 'rank 1', state: 'running', exitcode: null, line: 'epoch 1' }
    ],
    output: '[rank 0] epoch 1\n[rank 1] epoch 1',
    dropped_lines: 0,
    stoppable: true,
    ...changes
  };
}

const dom = reactRoot();

function render(
  data: ICardData,
  stop: StopState = { phase: 'idle' },
  onStop = () => {},
  onCopy: (text: string) => void = () => {}
): void {
  act(() =>
    dom.root.render(
      <RunCard
        data={data}
        nowMs={STARTED_MS + 65_000}
        stop={stop}
        onStop={onStop}
        onCopy={onCopy}
        trans={trans}
      />
    )
  );
}

function text(selector: string): string | null | undefined {
  return dom.container.querySelector(selector)?.textContent;
}

describe('RunCard', () => {
  it('shows a running call: links, status, elapsed time, placement, metrics and ranks', () => {
    // Given a running 2-rank call on 2 GPUs, 65 s after it started
    render(card());
    // Then the header links to the experiment and run, and counts the time itself
    const links = [...dom.container.querySelectorAll('.jp-Air-runCard-header a')];
    expect(links.map(a => [a.textContent, a.getAttribute('href')])).toEqual([
      ['mnist', '/lab/jupyter-air/experiments/1/open'],
      ['baseline', '/lab/jupyter-air/runs/abc123/open']
    ]);
    expect(text('.jp-Air-runCard-status')).toBe('running');
    expect(text('.jp-Air-runCard-elapsed')).toBe('1m 05s');
    expect(text('.jp-Air-runCard-header')).toContain('2 ranks on 1 node · GPUs 0, 1');
    // And the metric's latest value, step and sparkline, and each rank's state and last line
    const metric = dom.container.querySelector('[data-metric="train_loss"]')!;
    expect([...metric.querySelectorAll('td')].map(td => td.textContent)).toEqual([
      'train_loss',
      '0.25',
      '4',
      ''
    ]);
    expect(metric.querySelector('path')?.getAttribute('d')).toBe('M0,1L100,19');
    expect(text('.jp-Air-runCard-ranks')).toBe('rank 0runningepoch 1rank 1runningepoch 1');
    expect(text('.jp-Air-runCard-output summary')).toBe('Output of every rank');
  });

  it('renders names, lines and output as text, never as HTML', () => {
    // Given an experiment, a run, a metric and output lines whose text holds markup
    const data = card({ output: HOSTILE, metrics: [] });
    data.run.experiment_name = HOSTILE;
    data.run.name = HOSTILE;
    data.run.url = null;
    data.rows[0].line = HOSTILE;
    // When rendered
    render(data);
    // Then no element came from the names, and they show as typed
    expect(dom.container.querySelector('img')).toBeNull();
    expect(text('.jp-Air-runCard-header b')).toBe(HOSTILE);
    expect(text('.jp-Air-runCard-output pre')).toBe(HOSTILE);
    expect(text('.jp-Air-runCard-hint')).toContain('no MLflow UI known for this store');
  });

  it('offers Stop while running, then shows that it is stopping, or why it could not', () => {
    // Given a running card, When Stop is clicked, Then the action is called
    const onStop = vi.fn();
    render(card(), { phase: 'idle' }, onStop);
    const button = () =>
      dom.container.querySelector<HTMLButtonElement>('button.jp-Air-runCard-stop');
    act(() => button()!.click());
    expect(onStop).toHaveBeenCalledTimes(1);
    // When the request is on its way, Then the button says so and cannot be clicked again
    render(card(), { phase: 'stopping' }, onStop);
    expect(button()!.disabled).toBe(true);
    expect(button()!.textContent).toBe('Stopping…');
    // When the server refused, Then its message is shown and Stop can be tried again
    render(card(), { phase: 'error', message: 'runs/abc123/stop answered 409: ended' }, onStop);
    expect(text('.jp-Air-runCard-stopError')).toBe('runs/abc123/stop answered 409: ended');
    expect(button()!.disabled).toBe(false);
    // And a card that cannot be stopped, or that ended, has no Stop button
    render(card({ stoppable: false }));
    expect(button()).toBeNull();
    render(card({ status: 'FINISHED', ended_ms: STARTED_MS + 4200 }));
    expect(button()).toBeNull();
    expect(text('.jp-Air-runCard-elapsed')).toBe('4.2s');
  });

  it('turns red for a failure, naming node, rank, exit code and root cause', () => {
    // Given a call that failed on rank 1
    render(
      card({
        status: 'FAILED',
        ended_ms: STARTED_MS + 3000,
        failure: { message: 'ValueError: boom', node: 0, rank: 1, exitcode: 1 },
        rows: [
          { name: 'rank 0', state: 'stopped', exitcode: null, line: 'epoch 1' },
          { name: 'rank 1', state: 'failed', exitcode: 1, line: 'Traceback' }
        ]
      })
    );
    // Then the card is marked failed and says where and why
    expect(dom.container.querySelector('.jp-Air-runCard-failed')).not.toBeNull();
    expect(text('.jp-Air-runCard-failure')).toBe(
      'Failed on node 0, rank 1, exit code 1: ValueError: boom'
    );
    expect(text('.jp-Air-runCard-rank-failed')).toBe('failed (exit code 1)');
    expect(text('.jp-Air-runCard-rank-stopped')).toBe('stopped');
  });

  it('shows why a killed run ended, and the output lines left out of the cell', () => {
    render(
      card({
        status: 'KILLED',
        ended_ms: STARTED_MS + 1000,
        reason: 'stopped with the Stop button',
        kind: 'kernel',
        rows: [],
        dropped_lines: 12
      })
    );
    expect(text('.jp-Air-runCard-status')).toBe('killed');
    expect(text('.jp-Air-runCard-reason')).toBe('stopped with the Stop button');
    expect(text('.jp-Air-runCard-header')).toContain('in this kernel');
    expect(text('.jp-Air-runCard-output summary')).toBe(
      "Output of every rank; 12 earlier line(s) only in the run's logs/ artifacts"
    );
  });

  it('shows the GPU energy of a run that ended, saying when its GPUs were simulated', () => {
    render(card());
    expect(text('.jp-Air-runCard-energy')).toBeUndefined();
    const ended = { status: 'FINISHED' as const, ended_ms: STARTED_MS + 5000 };
    render(card({ ...ended, energy: { watt_hours: 0.86861, simulated: false } }));
    expect(text('.jp-Air-runCard-energy')).toBe('GPU energy 0.869 Wh');
    render(card({ ...ended, energy: { watt_hours: 1234.5, simulated: true } }));
    expect(text('.jp-Air-runCard-energy')).toBe('GPU energy 1.23 kWh (simulated GPUs)');
  });
});

describe('RunCard of a remote call', () => {
  it('shows its job id with Copy and the line that follows it again', () => {
    // Given a running card of a call that runs as a job
    const copied: string[] = [];
    render(
      card({ job_run_id: 'job-3f9a1c2b7d4e' }),
      { phase: 'idle' },
      () => {},
      text => copied.push(text)
    );

    // Then the job line names the job and how to attach to it
    const line = dom.container.querySelector('.jp-Air-runCard-job');
    expect(line?.textContent).toContain('job job-3f9a1c2b7d4e');
    expect(line?.textContent).toContain('%air_attach job-3f9a1c2b7d4e');

    // When Copy is clicked, Then the job id goes to the clipboard
    act(() => (line?.querySelector('button') as HTMLButtonElement).click());
    expect(copied).toEqual(['job-3f9a1c2b7d4e']);
  });

  it('shows no job line for a call in the kernel', () => {
    render(card());
    expect(dom.container.querySelector('.jp-Air-runCard-job')).toBeNull();
  });
});

describe('requestStop', () => {
  it('posts to the run’s stop route and reports that the run is stopping', async () => {
    // Given a server that accepts the request
    const calls: [string, RequestInit | undefined][] = [];
    const request = async <T,>(endpoint: string, init?: RequestInit): Promise<T> => {
      calls.push([endpoint, init]);
      return { run_id: 'abc', stop_requested: true } as T;
    };
    // When Stop is requested for a run id, Then one POST goes to its route
    expect(await requestStop(request, 'abc_1-2')).toEqual({ phase: 'stopping' });
    expect(calls).toEqual([['runs/abc_1-2/stop', { method: 'POST' }]]);
  });

  it('reports the server’s message when it refuses', async () => {
    const request = async <T,>(): Promise<T> => {
      throw new RequestError(
        'jupyter-air/runs/abc/stop answered 409: nothing to stop',
        'server',
        409
      );
    };
    expect(await requestStop(request, 'abc')).toEqual({
      phase: 'error',
      message: 'jupyter-air/runs/abc/stop answered 409: nothing to stop'
    });
  });
});

describe('formatElapsed', () => {
  it('says durations as the Python side does', () => {
    expect([4250, 65000, 7384000].map(formatElapsed)).toEqual(['4.3s', '1m 05s', '2h 03m 04s']);
  });
});
