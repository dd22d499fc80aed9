/** The line atop the schedules when none fires: no driver has run since when, and how to start one. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IScheduleDriver } from '../tokens';

/** The command that drives the schedules, shown as code and never translated. */
const DRIVER_COMMAND = 'air scheduler';

/** A list item (the schedules are a list) while `driver` says a schedule waits past its fire time; else nothing. */
export function StalledSchedules(props: {
  driver: IScheduleDriver | null;
  trans: TranslationBundle;
}): JSX.Element | null {
  const { driver, trans } = props;
  if (driver === null || !driver.stalled) {
    return null;
  }
  const since =
    driver.last_tick_ms === null
      ? trans.__('Not firing: no driver has run yet.')
      : trans.__(
          'Not firing: no driver has run since %1.',
          new Date(driver.last_tick_ms).toLocaleString()
        );
  return (
    <li className="jp-Air-banner jp-Air-schedules-stalled" role="status">
      {since} {trans.__('To start one, run')} <code>{DRIVER_COMMAND}</code>{' '}
      {trans.__("in a terminal, or see the server's log: its job checks fire them.")}
    </li>
  );
}
