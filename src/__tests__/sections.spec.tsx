/** Unit tests of the Experiment panel's sections: their counts, collapsing (kept), revealing a job, Run workload…'s notice. */
import { nullTranslator } from '@jupyterlab/translation';
import { Signal } from '@lumino/signaling';
import * as React from 'react';
import { act } from 'react';
import { describe, expect, it, vi } from 'vitest';

import { ExperimentPanel } from '../experiment/components/ExperimentPanel';
import { ExperimentModel } from '../experiment/model';
import { PanelState, SECTIONS_STORAGE_KEY, SectionStorage } from '../experiment/panelState';
import { countLabel, ISectionCount, sectionCounts, SectionId } from '../experiment/sections';
import { submittedNotice } from '../experiment/workloadNotice';
import { FakeRunsServer, makeJob, makeRun, makeSchedule, T0 } from './fakeRuns';
import { reactRoot } from './harness';

const trans = nullTranslator.load('jupyter_air');
const dom = reactRoot();

/** A stand-in for `localStorage`. */
function memoryStorage(): SectionStorage & { items: Map<string, string> } {
  const items = new Map<string, string>();
  return {
    items,
    getItem: key => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value)
  };
}

describe('Section counts', () => {
  it('count top-level runs, jobs and schedules, and those running now', () => {
    // Given two top-level runs (one running, one with a nested call), older runs on the server, three jobs
    // (one pending, one running) and two schedules, one whose last job still runs
    const listed = {
      topLevelRuns: [makeRun('a', T0, 'RUNNING'), makeRun('b', T0 + 1)],
      hasMore: true,
      jobs: [makeJob('j1', 'PENDING'), makeJob('j2', 'RUNNING'), makeJob('j3', 'SUCCEEDED')],
      schedules: [
        makeSchedule('nightly', makeJob('j2', 'RUNNING')),
        makeSchedule('weekly', makeJob('j3', 'SUCCEEDED'))
      ]
    };
    // When counted for a followed notebook
    const counts = sectionCounts(listed, true);
    // Then each section has its count and how many run now; the runs say there are more
    expect(counts).toEqual({
      runs: { count: 2, more: true, active: 1 },
      workloads: { count: 3, more: false, active: 2 },
      schedules: { count: 2, more: false, active: 1 }
    });
    // And the header reads "2+", with the words on hover
    const label = (id: SectionId, counted: ISectionCount) => {
      const { text, title } = countLabel(id, counted, trans);
      return [text, title];
    };
    expect(label('runs', counts.runs)).toEqual(['2+', '2+ runs, 1 running']);
    expect(label('workloads', counts.workloads)).toEqual(['3', '3 jobs, 2 pending or running']);
    expect(label('schedules', { count: 1, more: false, active: 0 })).toEqual(['1', '1 schedule']);
    // And with no notebook followed, no runs are listed, so none are counted
    expect(sectionCounts(listed, false).runs).toEqual({ count: 0, more: false, active: 0 });
  });
});

describe('Collapsed sections', () => {
  it('are kept in the browser and read back by the next page', () => {
    // Given an empty storage
    const storage = memoryStorage();
    const state = new PanelState(storage);
    const changed = vi.fn();
    state.changed.connect(changed);
    expect(state.isCollapsed('workloads')).toBe(false);
    // When Workloads is collapsed twice over, and Schedules toggled twice
    state.setCollapsed('workloads', true);
    state.setCollapsed('workloads', true);
    state.toggle('schedules');
    state.toggle('schedules');
    // Then only Workloads is collapsed, each change told once, and a new page finds it so
    expect(state.isCollapsed('workloads')).toBe(true);
    expect(state.isCollapsed('schedules')).toBe(false);
    expect(changed).toHaveBeenCalledTimes(3);
    expect(JSON.parse(storage.items.get(SECTIONS_STORAGE_KEY)!)).toEqual(['workloads']);
    expect(new PanelState(storage).isCollapsed('workloads')).toBe(true);
  });

  it('start expanded when the storage holds nonsense or refuses to be used', () => {
    // Given a storage with a damaged value, and one that throws on every call
    const damaged = memoryStorage();
    damaged.items.set(SECTIONS_STORAGE_KEY, '{not json');
    const refusing: SectionStorage = {
      getItem: () => {
        throw new Error('SecurityError');
      },
      setItem: () => {
        throw new Error('QuotaExceededError');
      }
    };
    // When panels start on them, Then every section is expanded
    expect(new PanelState(damaged).isCollapsed('runs')).toBe(false);
    const state = new PanelState(refusing);
    expect(state.isCollapsed('runs')).toBe(false);
    // And collapsing still works for this page
    state.toggle('runs');
    expect(state.isCollapsed('runs')).toBe(true);
  });

  it('a job the model shows is marked; Open in panel expands Workloads on it, or shows the Schedules', () => {
    // Given Workloads and Schedules collapsed, and a model that shows a person the job they start
    const state = new PanelState(null);
    state.setCollapsed('workloads', true);
    state.setCollapsed('schedules', true);
    const model = { changed: new Signal<object, void>({}), revealedJob: null as string | null };
    state.follow(model);
    // When the model shows a new job
    model.revealedJob = 'job-1';
    model.changed.emit();
    // Then it is the job marked and scrolled to, and Workloads stays collapsed as the person left it
    expect(state.revealedJob).toBe('job-1');
    expect(state.jobRevealTick).toBe(1);
    expect(state.isCollapsed('workloads')).toBe(true);
    // When the model changes again with the same job, Then it is not scrolled to again
    model.changed.emit();
    expect(state.jobRevealTick).toBe(1);
    // When a notification's Open in panel reveals the job
    state.revealJob('job-1');
    // Then Workloads is expanded and the job scrolled to again
    expect(state.isCollapsed('workloads')).toBe(false);
    expect(state.jobRevealTick).toBe(2);
    // When another's Open in panel reveals the Schedules, twice
    state.revealSection('schedules');
    state.revealSection('schedules');
    // Then they are expanded and scrolled to each time, the job still the one marked
    expect(state.isCollapsed('schedules')).toBe(false);
    expect(state.sectionReveal).toEqual({ section: 'schedules', tick: 2 });
    expect(state.revealedJob).toBe('job-1');
  });

  it('the panel hides a collapsed section’s list and shows its count in the header', async () => {
    // Given a panel with two jobs (one running) and a schedule, its state kept in a storage
    const server = new FakeRunsServer();
    server.jobs = [makeJob('job-1', 'RUNNING'), makeJob('job-2', 'SUCCEEDED')];
    server.schedules = [makeSchedule('every-minute-feature-refresh')];
    const model = new ExperimentModel({ request: server.request });
    model.setVisible(true);
    await model.refresh();
    const storage = memoryStorage();
    const state = new PanelState(storage);
    const render = () =>
      dom.render(
        <ExperimentPanel
          model={model}
          state={state}
          revision={1}
          onOpenUrl={() => undefined}
          onOpenLogs={() => undefined}
          onCancelJob={() => undefined}
          onScheduleAction={() => undefined}
          onCopy={() => undefined}
          trans={trans}
        />
      );
    render();
    const section = (id: string) => dom.container.querySelector(`[data-section="${id}"]`)!;
    const toggle = section('workloads').querySelector('.jp-Air-section-toggle') as HTMLElement;
    const body = section('workloads').querySelector('.jp-Air-section-body') as HTMLElement;
    // Then each header counts its entries, the running job marked
    expect(section('workloads').querySelector('.jp-Air-section-count')?.textContent).toBe('2');
    expect(section('workloads').querySelector('.jp-Air-section-count')?.getAttribute('title')).toBe(
      '2 jobs, 1 pending or running'
    );
    expect(section('schedules').querySelector('.jp-Air-section-count')?.textContent).toBe('1');
    expect(toggle.getAttribute('aria-expanded')).toBe('true');
    expect(body.hidden).toBe(false);
    // When Workloads' header is clicked
    act(() => toggle.click());
    render();
    // Then its jobs are hidden, its header and count still shown, and the storage keeps it
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    expect(body.hidden).toBe(true);
    expect(section('workloads').classList).toContain('jp-mod-collapsed');
    expect(section('workloads').querySelector('.jp-Air-section-count')?.textContent).toBe('2');
    expect(section('schedules').querySelector('.jp-Air-section-body')?.hasAttribute('hidden')).toBe(
      false
    );
    expect(new PanelState(storage).isCollapsed('workloads')).toBe(true);
    // And a schedule's whole name is its title
    const name = dom.container.querySelector('.jp-Air-schedule-name')!;
    expect(name.getAttribute('title')).toBe('every-minute-feature-refresh');
    // When it is clicked again, Then the jobs show again
    act(() => toggle.click());
    render();
    expect(body.hidden).toBe(false);
    model.dispose();
  });
});

describe("Run workload…'s notification", () => {
  it("names the job, and its buttons open the job's log or show it in the panel", () => {
    // Given a file submitted as a job
    const handlers = { openLogs: vi.fn(), showJob: vi.fn(), showSchedules: vi.fn() };
    // When the notification is made
    const notice = submittedNotice(makeJob('job-3f9a'), 'experiments/train.yaml', handlers, trans);
    // Then it names the job and the file, with Logs then Open in panel
    expect(notice.message).toBe('Job job-3f9a started from train.yaml.');
    expect(notice.actions.map(action => action.label)).toEqual(['Logs', 'Open in panel']);
    // When each button is clicked, Then it acts on that job
    notice.actions.forEach(action => action.callback());
    expect(handlers.openLogs).toHaveBeenCalledWith('job-3f9a');
    expect(handlers.showJob).toHaveBeenCalledWith('job-3f9a');
    expect(handlers.showSchedules).not.toHaveBeenCalled();
  });

  it('says a schedule was made, and Open in panel shows the Schedules', () => {
    // Given a file whose workload has a schedule
    const handlers = { openLogs: vi.fn(), showJob: vi.fn(), showSchedules: vi.fn() };
    const kept = {
      created: true,
      schedule: { ...makeSchedule('nightly'), pause_status: 'PAUSED' as const }
    };
    // When the notification is made and its one button clicked
    const notice = submittedNotice(kept, 'nightly.yaml', handlers, trans);
    notice.actions.forEach(action => action.callback());
    // Then it says nothing runs now, and the button shows the schedules
    expect(notice.message).toMatch(/^Schedule nightly created: nothing runs now/);
    expect(notice.actions.map(action => action.label)).toEqual(['Open in panel']);
    expect(handlers.showSchedules).toHaveBeenCalledTimes(1);
    expect(handlers.openLogs).not.toHaveBeenCalled();
  });
});
