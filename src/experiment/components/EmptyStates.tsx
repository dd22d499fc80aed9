/** What the Experiment panel says where a section has nothing to list: how runs, jobs and schedules get there. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

/** Code a person types, shown as code and never translated. */
const CODE = {
  distributed: 'train.distributed(…)',
  decorator: '@distributed',
  cellMagic: '%%air_distributed',
  runMagic: '%%air_run',
  airRun: 'air run -f workload.yaml',
  schedule: 'schedule:'
};

export function EmptyRuns(props: {
  notebook: string | null;
  experiment: string | null;
  trans: TranslationBundle;
}): JSX.Element {
  const { notebook, experiment, trans } = props;
  return (
    <div className="jp-Air-empty jp-Air-runs-empty">
      <div className="jp-Air-empty-title">
        {notebook === null
          ? trans.__('Open a notebook to see its runs')
          : trans.__('No runs from this notebook yet')}
      </div>
      <div className="jp-Air-empty-reason">{trans.__('Its runs show here when it')}</div>
      <ul className="jp-Air-empty-how">
        <li>
          {trans.__('calls a function decorated with %1:', CODE.decorator)}{' '}
          <code>{CODE.distributed}</code>
        </li>
        <li>
          {trans.__('runs a cell with')} <code>{CODE.cellMagic}</code> {trans.__('or')}{' '}
          <code>{CODE.runMagic}</code>
        </li>
        {experiment !== null ? (
          <li>
            {trans.__('or logs runs to its experiment')} <code>{experiment}</code>
          </li>
        ) : null}
      </ul>
      <div className="jp-Air-empty-reason">
        {trans.__('Jobs started with')} <code>{CODE.airRun}</code>{' '}
        {trans.__('show under Workloads.')}
      </div>
    </div>
  );
}

export function EmptyJobs(props: { trans: TranslationBundle }): JSX.Element {
  const { trans } = props;
  return (
    <div className="jp-Air-empty-reason">
      {trans.__('No air jobs yet. Start one from a terminal:')} <code>{CODE.airRun}</code>{' '}
      {trans.__('or right-click a YAML file in the file browser: Run workload…')}
    </div>
  );
}

export function EmptySchedules(props: { trans: TranslationBundle }): JSX.Element {
  const { trans } = props;
  return (
    <div className="jp-Air-empty-reason">
      {trans.__('No schedules. A workload file with a %1 block creates one with', CODE.schedule)}{' '}
      <code>{CODE.airRun}</code>
    </div>
  );
}
