/** Unit tests of the Experiment panel's views: names as text, nesting, Compare, Logs, Cancel, empty state. */
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { act } from 'react';
import { describe, expect, it, vi } from 'vitest';

import { ExperimentPanel } from '../experiment/components/ExperimentPanel';
import { JobList } from '../experiment/components/JobList';
import { RunList } from '../experiment/components/RunList';
import { ExperimentModel } from '../experiment/model';
import { PanelState } from '../experiment/panelState';
import { FakeRunsServer, makeJob, makeRun, T0 } from './fakeRuns';
import { reactRoot } from './harness';

const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const trans = nullTranslator.load('jupyter_air');

const dom = reactRoot();

async function loadedModel(server: FakeRunsServer): Promise<ExperimentModel> {
  const model = new ExperimentModel({ request: server.request });
  model.notebookPath = 'train.ipynb';
  model.setVisible(true);
  await model.refresh();
  return model;
}

/** Render the panel over `model`; every action does nothing unless given. */
function renderPanel(
  model: ExperimentModel,
  onOpenUrl: (url: string) => void = () => undefined,
  onShare?: (experiment: string) => void
): void {
  dom.render(
    <ExperimentPanel
      model={model}
      state={new PanelState(null)}
      revision={1}
      onOpenUrl={onOpenUrl}
      onOpenLogs={() => undefined}
      onCancelJob={() => undefined}
      onScheduleAction={() => undefined}
      onCopy={() => undefined}
      onShare={onShare}
      trans={trans}
    />
  );
}

describe('Experiment views', () => {
  it('shows run, experiment, metric and job names as text, children under their parent', () => {
    // Given runs whose names hold HTML, one nested in the other, and a job in such an experiment
    const parent = { ...makeRun('p', T0), run_name: HOSTILE, experiment_name: HOSTILE };
    const child = { ...makeRun('c', T0 + 1), parent_run_id: 'p', metrics: { [HOSTILE]: 1.5 } };
    const job = { ...makeJob('job-1'), experiment_name: HOSTILE };
    // When rendered
    dom.render(
      <>
        <RunList
          runs={[parent]}
          childrenOf={id => (id === 'p' ? [child] : [])}
          selected={new Set()}
          onToggle={() => undefined}
          nowMs={T0 + 10_000}
          trans={trans}
        />
        <JobList
          jobs={[job]}
          nowMs={T0}
          onOpenLogs={() => undefined}
          onCancel={() => undefined}
          onCopy={() => undefined}
          trans={trans}
        />
      </>
    );
    // Then no element was made from the names, which read as typed
    expect(dom.container.querySelector('img')).toBeNull();
    expect(dom.container.querySelector('.jp-Air-run-name')?.textContent).toBe(HOSTILE);
    expect(dom.container.querySelectorAll('.jp-Air-run-experiment')[0].textContent).toBe(HOSTILE);
    // And the child is listed inside its parent's entry, its duration shown
    const nested = dom.container.querySelector('[data-run-id="p"] [data-run-id="c"]');
    expect(nested?.querySelector('.jp-Air-metric-key')?.textContent).toBe(HOSTILE);
    expect(dom.container.querySelector('[data-run-id="p"] .jp-Air-run-duration')?.textContent).toBe(
      '5.0s'
    );
  });

  it("shows each run's GPU energy, labelled when its GPUs were simulated, and nothing unmeasured", () => {
    // Given a run measured on real GPUs, one on simulated GPUs, and one without GPU energy
    const runs = [
      { ...makeRun('real', T0), energy_watt_hours: 0.86861 },
      { ...makeRun('sim', T0 + 1), energy_watt_hours: 1234.5, gpus_simulated: true },
      makeRun('none', T0 + 2)
    ];
    // When rendered
    dom.render(
      <RunList
        runs={runs}
        childrenOf={() => []}
        selected={new Set()}
        onToggle={() => undefined}
        nowMs={T0 + 10_000}
        trans={trans}
      />
    );
    // Then each measured run shows its energy in units, the simulated one says so, the other shows none
    const energy = (id: string) =>
      dom.container.querySelector(`[data-run-id="${id}"] .jp-Air-run-energy`)?.textContent;
    expect(energy('real')).toBe('0.869 Wh');
    expect(energy('sim')).toBe('1.23 kWh simulated');
    expect(energy('none')).toBeUndefined();
  });

  it('offers Cancel for active jobs only, and opens the log of an attempt', () => {
    const onOpenLogs = vi.fn();
    const onCancel = vi.fn();
    const running = makeJob('job-run');
    const done = makeJob('job-done', 'SUCCEEDED');
    dom.render(
      <JobList
        jobs={[running, done]}
        nowMs={T0}
        onOpenLogs={onOpenLogs}
        onCancel={onCancel}
        onCopy={() => undefined}
        trans={trans}
      />
    );
    expect(dom.container.querySelectorAll('.jp-Air-job-cancel')).toHaveLength(1);
    act(() => (dom.container.querySelector('.jp-Air-job-cancel') as HTMLButtonElement).click());
    expect(onCancel).toHaveBeenCalledWith(running);
    const logs = dom.container.querySelector('[data-job-id="job-done"] .jp-Air-job-logs');
    act(() => (logs as HTMLButtonElement).click());
    expect(onOpenLogs).toHaveBeenCalledWith('job-done', 0, 0);
  });

  it('says why a pending job waits and who holds its GPUs, as text, and no error for it', () => {
    // Given a job waiting in the GPU queue behind a job of a user whose name holds HTML
    const reason = `waiting for GPUs: 1st in line for 1 GPU; held by ${HOSTILE}'s job job-a since 10:02 (GPU 0,1)`;
    const waiting = { ...makeJob('job-wait', 'PENDING'), error: reason };
    // When rendered
    dom.render(
      <JobList
        jobs={[waiting]}
        nowMs={T0}
        onOpenLogs={() => undefined}
        onCancel={() => undefined}
        onCopy={() => undefined}
        trans={trans}
      />
    );
    // Then its place in line reads as typed (whole in the tooltip), and it is not shown as an error
    const line = dom.container.querySelector('[data-job-id="job-wait"] .jp-Air-job-waiting');
    expect(line?.textContent).toBe(reason);
    expect(line?.getAttribute('title')).toBe(reason);
    expect(dom.container.querySelector('img')).toBeNull();
    expect(dom.container.querySelector('.jp-Air-run-error')).toBeNull();
  });

  it('lets a cut job id or experiment name be read whole (tooltip) and the id be copied', () => {
    // Given a job of an experiment with a long name, and a run in another long-named experiment
    const longName = 'image-classification/resnet50-imagenet-ablation-lr-warmup-' + HOSTILE;
    const job = { ...makeJob('job-3f9a1c2b7d4e', 'SUCCEEDED'), experiment_name: longName };
    const run = { ...makeRun('r1', T0), experiment_name: longName, run_name: 'a-run-' + HOSTILE };
    const onCopy = vi.fn();
    dom.render(
      <>
        <RunList
          runs={[run]}
          childrenOf={() => []}
          selected={new Set()}
          onToggle={() => undefined}
          nowMs={T0}
          trans={trans}
        />
        <JobList
          jobs={[job]}
          nowMs={T0}
          onOpenLogs={() => undefined}
          onCancel={() => undefined}
          onCopy={onCopy}
          trans={trans}
        />
      </>
    );
    // Then hovering the id, the names and the experiments tells them whole, as text
    const jobRow = dom.container.querySelector('[data-job-id="job-3f9a1c2b7d4e"]')!;
    expect(jobRow.querySelector('.jp-Air-job-id')?.getAttribute('title')).toBe('job-3f9a1c2b7d4e');
    expect(jobRow.querySelector('.jp-Air-run-experiment')?.getAttribute('title')).toBe(
      `Experiment: ${longName}`
    );
    const runRow = dom.container.querySelector('[data-run-id="r1"]')!;
    expect(runRow.querySelector('.jp-Air-run-experiment')?.getAttribute('title')).toBe(
      `Experiment: ${longName}`
    );
    expect(runRow.querySelector('.jp-Air-run-name')?.getAttribute('title')).toContain(
      'a-run-' + HOSTILE
    );
    expect(dom.container.querySelector('img')).toBeNull();
    // When Copy next to the id is clicked, Then the id goes to the clipboard
    act(() => (jobRow.querySelector('.jp-Air-copy') as HTMLButtonElement).click());
    expect(onCopy).toHaveBeenCalledWith('job-3f9a1c2b7d4e');
  });

  it('compares two selected runs in the MLflow UI', async () => {
    // Given a panel with three runs
    const server = new FakeRunsServer();
    server.runs.set('train.ipynb', [makeRun('a', T0), makeRun('b', T0 + 1), makeRun('c', T0 + 2)]);
    const model = await loadedModel(server);
    const onOpenUrl = vi.fn();
    renderPanel(model, onOpenUrl);
    const compare = () => dom.container.querySelector('.jp-Air-compare') as HTMLButtonElement;
    const select = (id: string) =>
      act(() =>
        (
          dom.container.querySelector(`[data-run-id="${id}"] .jp-Air-run-select`) as HTMLElement
        ).click()
      );
    // When one run is selected, Then Compare is off; when two are, it opens MLflow's compare view
    select('a');
    expect(compare().disabled).toBe(true);
    select('c');
    expect(compare().disabled).toBe(false);
    expect(compare().textContent).toBe('Compare (2)');
    act(() => compare().click());
    expect(onOpenUrl).toHaveBeenCalledWith(model.compareUrl(['a', 'c']));
    expect(onOpenUrl.mock.calls[0][0]).toContain('#/compare-runs?runs=');
    model.dispose();
  });

  it('lists the runs by GPU energy when asked, unmeasured ones last, and newest first again', async () => {
    // Given runs with 2 Wh, 30 Wh, none, and 5 Wh of GPU energy (newest last here)
    const server = new FakeRunsServer();
    server.runs.set('train.ipynb', [
      { ...makeRun('small', T0), energy_watt_hours: 2 },
      { ...makeRun('large', T0 + 1), energy_watt_hours: 30 },
      { ...makeRun('cpu', T0 + 2), energy_watt_hours: null },
      { ...makeRun('mid', T0 + 3), energy_watt_hours: 5 }
    ]);
    const model = await loadedModel(server);
    renderPanel(model);
    const listed = () =>
      [...dom.container.querySelectorAll('.jp-Air-run')].map(row =>
        row.getAttribute('data-run-id')
      );
    const order = dom.container.querySelector('.jp-Air-run-order') as HTMLSelectElement;
    const choose = (value: string) =>
      act(() => {
        order.value = value;
        order.dispatchEvent(new Event('change', { bubbles: true }));
      });
    expect(listed()).toEqual(['mid', 'cpu', 'large', 'small']);
    // When "Most GPU energy first" is chosen, Then the runs are listed by energy, the unmeasured one last
    choose('energy');
    expect(listed()).toEqual(['large', 'mid', 'small', 'cpu']);
    // When "Newest first" is chosen again, Then the runs are back in their order
    choose('newest');
    expect(listed()).toEqual(['mid', 'cpu', 'large', 'small']);
    model.dispose();
  });

  it("offers Share on the notebook's experiment only where the tracking server can share", async () => {
    // Given a notebook whose default experiment is /Users/alice/train
    const server = new FakeRunsServer();
    server.runs.set('train.ipynb', [makeRun('a', T0)]);
    const model = await loadedModel(server);
    const share = () => dom.container.querySelector('.jp-Air-share') as HTMLButtonElement | null;
    // When the server cannot share (no onShare), Then there is no Share button
    renderPanel(model);
    expect(share()).toBeNull();
    // When it can, Then the experiment is named in the header and Share asks to share that one
    const onShare = vi.fn();
    renderPanel(model, undefined, onShare);
    expect(dom.container.querySelector('.jp-Air-experiment-name')?.textContent).toBe(
      '/Users/alice/train'
    );
    act(() => share()!.click());
    expect(onShare).toHaveBeenCalledWith('/Users/alice/train');
    model.dispose();
  });

  it('explains how runs and jobs get there when there are none', async () => {
    const server = new FakeRunsServer();
    const model = await loadedModel(server);
    renderPanel(model);
    const text = dom.container.textContent ?? '';
    expect(text).toContain('No runs from this notebook yet');
    for (const code of ['train.distributed(…)', '%%air_run', '/Users/alice/train', 'air run']) {
      expect(text).toContain(code);
    }
    model.dispose();
  });
});
