/** Unit tests of the Experiment panel's Schedules: read every poll, words and times, Pause/Resume, Run now. */
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { act } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { ScheduleList } from '../experiment/components/ScheduleList';
import { ExperimentModel } from '../experiment/model';
import { expressionInWords, formatInZone } from '../experiment/schedules';
import type { IRunNowAnswer, ISchedule, ScheduleAction } from '../experiment/tokens';
import { RequestError } from '../request';
import { FakeRunsServer, makeJob, makeSchedule, T0 } from './fakeRuns';
import { advance, reactRoot } from './harness';

const trans = nullTranslator.load('jupyter_air');
const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const dom = reactRoot();

let server: FakeRunsServer;
let model: ExperimentModel;

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeRunsServer();
  model = new ExperimentModel({ request: server.request });
});

afterEach(() => {
  model.dispose();
  vi.useRealTimers();
});

describe('Schedules', () => {
  it('are read with the jobs on every poll while the panel is shown', async () => {
    // Given a schedule, and a shown panel
    server.schedules = [makeSchedule('nightly-train')];
    model.setVisible(true);
    await advance(0);
    // When one fires from a terminal's `air scheduler` between two polls
    server.schedules = [makeSchedule('nightly-train', makeJob('job-7', 'RUNNING'))];
    await advance(5000);
    // Then the next poll shows its last job, with no reload asked
    expect(model.schedules.map(s => s.last_job?.job_run_id)).toEqual(['job-7']);
    expect(server.requests.filter(r => r === 'GET schedules')).toHaveLength(2);
  });

  it('are paused, resumed and run now by name, and a fired job is shown', async () => {
    // Given a schedule whose name has a slash, on a shown panel
    server.schedules = [makeSchedule('team/nightly')];
    model.setVisible(true);
    await advance(0);
    // When it is paused, then run now
    const pausing = model.actOnSchedule('team/nightly', 'pause');
    await advance(0);
    await pausing;
    const paused = { ...model.schedules[0] };
    const firing = model.actOnSchedule<IRunNowAnswer>('team/nightly', 'run-now');
    await advance(0);
    const fired = await firing;
    // Then each is one POST on the escaped name, and the panel reloaded after each
    expect(server.requests).toContain('POST schedules/team%2Fnightly/pause');
    expect(server.requests).toContain('POST schedules/team%2Fnightly/run-now');
    expect(paused.pause_status).toBe('PAUSED');
    expect(paused.next_fire_ms).toBeNull();
    // And the fired job is in the job list, shown to the person who fired it
    expect(fired.fire.manual).toBe(true);
    expect(model.jobs[0].job_run_id).toBe(fired.job?.job_run_id);
    expect(model.revealedJob).toBe(fired.job?.job_run_id);
    expect(model.schedules[0].last_job?.job_run_id).toBe(fired.job?.job_run_id);
  });

  it('rejects a run now refused by the server with its words, the panel still fine', async () => {
    // Given a schedule whose job already runs at its max_concurrent_runs
    server.schedules = [makeSchedule('nightly')];
    server.busy =
      'schedule nightly has 1 job active (job-1): max_concurrent_runs is 1; wait for it or `air cancel` it';
    model.setVisible(true);
    await advance(0);
    // When it is run now
    const refused = model.actOnSchedule('nightly', 'run-now').catch((error: unknown) => error);
    await advance(0);
    // Then the promise rejects with the server's message, and the panel keeps polling without an error
    const error = await refused;
    expect(error).toBeInstanceOf(RequestError);
    expect((error as RequestError).status).toBe(409);
    expect((error as RequestError).message).toContain('air cancel');
    expect(model.error).toBeNull();
  });

  it('says atop the list while no driver fires them, since when, and how to start one', async () => {
    // Given a schedule past its next fire, the driver last seen at T0, on a shown panel
    server.schedules = [makeSchedule('nightly')];
    server.driver = { last_tick_ms: T0, stalled: true };
    model.setVisible(true);
    await advance(0);
    const shown = () => {
      dom.render(
        <ScheduleList
          schedules={model.schedules}
          driver={model.scheduleDriver}
          onAct={() => undefined}
          trans={trans}
        />
      );
      return dom.container.querySelector<HTMLElement>('.jp-Air-schedules-stalled');
    };
    // When it is listed, Then one status line says since when no driver ran and names the command
    const stalled = shown();
    expect(stalled?.getAttribute('role')).toBe('status');
    expect(stalled?.textContent).toContain(
      `no driver has run since ${new Date(T0).toLocaleString()}`
    );
    expect(stalled?.querySelector('code')?.textContent).toBe('air scheduler');
    expect(dom.container.querySelectorAll('.jp-Air-schedule')).toHaveLength(1);
    // When no driver ever ran, Then it says so
    server.driver = { last_tick_ms: null, stalled: true };
    await advance(5000);
    expect(shown()?.textContent).toContain('no driver has run yet');
    // When a driver fires again, or a server does not say, Then the line is gone
    server.driver = { last_tick_ms: T0 + 10_000, stalled: false };
    await advance(5000);
    expect(shown()).toBeNull();
    server.driver = undefined;
    await advance(5000);
    expect(shown()).toBeNull();
  });

  it('words Quartz expressions with Sunday as day 1, and keeps one it cannot read', () => {
    expect(expressionInWords('0 0 2 * * ?')).toBe('At 02:00');
    expect(expressionInWords('*/10 * * * * ?')).toBe('Every 10 seconds');
    expect(expressionInWords('0 30 3 ? * 2-6')).toBe('At 03:30, Monday through Friday');
    expect(expressionInWords('not cron')).toBe('not cron');
  });

  it('shows fire times in the time zone the expression is read in', () => {
    // 2025-11-29 12:40 UTC: 12:40 in Lisbon, 09:40 in Sao Paulo, 21:40 in Tokyo
    expect(formatInZone(T0, 'Europe/Lisbon')).toContain('12:40');
    expect(formatInZone(T0, 'America/Sao_Paulo')).toContain('09:40');
    expect(formatInZone(T0 + 5000, 'Asia/Tokyo')).toContain('21:40:05');
  });

  it('lists name, words, zone, next fire and the last run, names as text, and asks for actions', () => {
    // Given a paused schedule with a hostile name whose last job ran, and one whose last fire was skipped
    const ran = {
      ...makeSchedule(HOSTILE, makeJob('job-1', 'SUCCEEDED')),
      pause_status: 'PAUSED' as const
    };
    ran.next_fire_ms = null;
    const skipped = makeSchedule('nightly');
    skipped.last_fire = {
      ...ran.last_fire!,
      outcome: 'SKIPPED',
      job_run_id: null,
      reason: 'job-0 still runs'
    };
    const acts: [string, ScheduleAction][] = [];
    const onAct = (s: ISchedule, action: ScheduleAction) => acts.push([s.name, action]);
    // When listed
    dom.render(<ScheduleList schedules={[ran, skipped]} onAct={onAct} trans={trans} />);
    const [first, second] = [...dom.container.querySelectorAll<HTMLElement>('.jp-Air-schedule')];
    // Then names read as typed, the expression in words with its zone, the paused one marked
    expect(dom.container.querySelector('img')).toBeNull();
    expect(first.querySelector('.jp-Air-schedule-name')?.textContent).toBe(HOSTILE);
    expect(first.querySelector('.jp-Air-schedule-words')?.textContent).toBe('At 02:00');
    expect(first.querySelector('.jp-Air-schedule-zone')?.textContent).toBe('Europe/Lisbon');
    expect(first.querySelector('.jp-Air-badge')?.textContent).toBe('paused');
    expect(first.querySelector('.jp-Air-schedule-next')?.textContent).toBe(
      'next: none while paused'
    );
    expect(second.querySelector('.jp-Air-schedule-next')?.textContent).toContain('12:40');
    // And the last run links to its job's run; a skipped fire says so with its reason
    const link = first.querySelector<HTMLAnchorElement>('.jp-Air-schedule-last a');
    expect(link?.getAttribute('href')).toBe('/jupyter-air/runs/run-of-job-1/open');
    expect(link?.textContent).toBe('succeeded');
    expect(second.querySelector('.jp-Air-schedule-last')?.textContent).toContain('skipped');
    expect(second.querySelector('.jp-Air-schedule-last')?.getAttribute('title')).toBe(
      'job-0 still runs'
    );
    // When Resume, Pause and Run now are clicked
    const click = (row: HTMLElement, selector: string) =>
      act(() => row.querySelector<HTMLButtonElement>(selector)!.click());
    click(first, '.jp-Air-schedule-pause');
    click(second, '.jp-Air-schedule-pause');
    click(second, '.jp-Air-schedule-run');
    // Then each asks its action of the right schedule
    expect(acts).toEqual([
      [HOSTILE, 'resume'],
      ['nightly', 'pause'],
      ['nightly', 'run-now']
    ]);
  });
});
