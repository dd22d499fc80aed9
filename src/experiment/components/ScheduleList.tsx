/** The schedules: name, the expression in words and its time zone, next fire, the last run, Pause/Resume, Run now. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { expressionInWords, formatInZone, lastRunUrl } from '../schedules';
import type { ISchedule, IScheduleDriver, ScheduleAction } from '../tokens';
import { StalledSchedules } from './StalledSchedules';

export interface IScheduleListProps {
  schedules: ISchedule[];
  /** Pause or resume at once; Run now is the caller's to confirm. */
  onAct: (schedule: ISchedule, action: ScheduleAction) => void;
  /** Whether a driver fires them: a line says so while none does. */
  driver?: IScheduleDriver | null;
  trans: TranslationBundle;
}

export function ScheduleList(props: IScheduleListProps): JSX.Element {
  const { schedules, onAct, trans } = props;
  return (
    <ul className="jp-Air-schedules">
      <StalledSchedules driver={props.driver ?? null} trans={trans} />
      {schedules.map(schedule => {
        const paused = schedule.pause_status === 'PAUSED';
        const next = schedule.next_fire_ms;
        return (
          <li
            key={schedule.name}
            className="jp-Air-schedule"
            data-schedule={schedule.name}
            data-status={schedule.pause_status}
          >
            <div className="jp-Air-run-main">
              <span className="jp-Air-schedule-name" title={schedule.name}>
                {schedule.name}
              </span>
              {paused ? <span className="jp-Air-badge">{trans.__('paused')}</span> : null}
              <span className="jp-Air-schedule-actions">
                <button
                  className="jp-Air-schedule-pause jp-mod-styled"
                  onClick={() => onAct(schedule, paused ? 'resume' : 'pause')}
                  title={
                    paused
                      ? trans.__(
                          'Fire again from the next due time (missed ones are not caught up)'
                        )
                      : trans.__('Stop firing until resumed (running jobs go on)')
                  }
                >
                  {paused ? trans.__('Resume') : trans.__('Pause')}
                </button>
                <button
                  className="jp-Air-schedule-run jp-mod-styled"
                  onClick={() => onAct(schedule, 'run-now')}
                  title={trans.__('Start its job once now, paused or not (asks first)')}
                >
                  {trans.__('Run now')}
                </button>
              </span>
            </div>
            <div
              className="jp-Air-run-details"
              title={`${schedule.quartz_cron_expression} (${schedule.timezone_id})`}
            >
              <span className="jp-Air-schedule-words">
                {expressionInWords(schedule.quartz_cron_expression)}
              </span>
              <span className="jp-Air-schedule-zone">{schedule.timezone_id}</span>
            </div>
            <div className="jp-Air-run-details">
              <span className="jp-Air-schedule-next">
                {next === null
                  ? trans.__('next: none while paused')
                  : trans.__('next %1', formatInZone(next, schedule.timezone_id))}
              </span>
              <LastRun schedule={schedule} trans={trans} />
            </div>
          </li>
        );
      })}
    </ul>
  );
}

/** The last fire: its job's status, linked to the job's latest run; or why no job started; or "never fired". */
function LastRun(props: { schedule: ISchedule; trans: TranslationBundle }): JSX.Element {
  const { schedule, trans } = props;
  const fire = schedule.last_fire;
  const job = schedule.last_job;
  if (fire === null) {
    return <span className="jp-Air-schedule-last">{trans.__('never fired')}</span>;
  }
  const when = formatInZone(fire.scheduled_ms, schedule.timezone_id);
  if (job === null) {
    return (
      <span className="jp-Air-schedule-last" title={fire.reason ?? ''}>
        {trans.__('last %1: %2', when, fire.outcome.toLowerCase())}
      </span>
    );
  }
  const url = lastRunUrl(schedule);
  const status = (
    <span className={`jp-Air-status-text jp-Air-status-${job.status}`}>
      {job.status.toLowerCase()}
    </span>
  );
  return (
    <span className="jp-Air-schedule-last" title={trans.__('Job %1', job.job_run_id)}>
      <span className={`jp-Air-status-dot jp-Air-status-${job.status}`} />{' '}
      {trans.__('last %1:', when)}{' '}
      {url ? (
        <a
          className="jp-Air-schedule-run-link"
          href={url}
          target="_blank"
          rel="noopener noreferrer"
          title={trans.__('Open the last run in the MLflow UI')}
        >
          {status}
        </a>
      ) : (
        status
      )}
    </span>
  );
}
