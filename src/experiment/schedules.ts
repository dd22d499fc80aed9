/** How the Experiment panel words a schedule: its Quartz expression in words, its fire times in its time zone. */
import cronstrue from 'cronstrue';

import type { TranslationBundle } from '@jupyterlab/translation';

import type { IKeptSchedule, ISchedule } from './tokens';

/**
 * The Quartz expression in English words (cronstrue), e.g. `0 0 2 * * ?` → "At 02:00"; the expression
 * itself when cronstrue cannot read it. Quartz numbers days of the week 1-7 from Sunday.
 */
export function expressionInWords(expression: string): string {
  try {
    return cronstrue.toString(expression, {
      dayOfWeekStartIndexZero: false,
      use24HourTimeFormat: true,
      throwExceptionOnParseError: true
    });
  } catch {
    return expression;
  }
}

/** `epochMs` as a date and time in `timeZone` (the schedule's, as its expression reads), e.g. "Dec 3, 02:00". */
export function formatInZone(epochMs: number, timeZone: string): string {
  try {
    return new Intl.DateTimeFormat(undefined, {
      timeZone,
      month: 'short',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      second: epochMs % 60_000 === 0 ? undefined : '2-digit',
      hourCycle: 'h23'
    }).format(epochMs);
  } catch {
    return new Date(epochMs).toISOString();
  }
}

/** The link of a schedule's last run: its job's latest attempt's run (null: no run yet, or no UI known). */
export function lastRunUrl(schedule: ISchedule): string | null {
  const attempts = schedule.last_job?.attempts ?? [];
  return attempts.length > 0 ? attempts[attempts.length - 1].url : null;
}

/** What a notification says of a schedule that Run made or changed: nothing runs now, and when it fires. */
export function scheduleKept(answer: IKeptSchedule, trans: TranslationBundle): string {
  const { schedule, created } = answer;
  const next =
    schedule.pause_status === 'PAUSED' || schedule.next_fire_ms === null
      ? trans.__('it is paused: resume it under Schedules to fire it')
      : trans.__(
          'next fire %1 (%2)',
          formatInZone(schedule.next_fire_ms, schedule.timezone_id),
          schedule.timezone_id
        );
  return created
    ? trans.__('Schedule %1 created: nothing runs now; %2.', schedule.name, next)
    : trans.__('Schedule %1 updated: nothing runs now; %2.', schedule.name, next);
}
