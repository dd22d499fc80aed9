/** GPU use in the GPU panel: GPU-hours, energy and cost per user, experiment or day over the last 7 days. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { IUsagePayload, IUsageRow, UsageGroup } from '../usage';
import { USAGE_GROUPS } from '../usage';

export interface IGpuUsageViewProps {
  by: UsageGroup;
  payload: IUsagePayload | null;
  onBy: (by: UsageGroup) => void;
  trans: TranslationBundle;
}

export function GpuUsageView(props: IGpuUsageViewProps): JSX.Element {
  const { by, payload, onBy, trans } = props;
  const names: Record<UsageGroup, string> = {
    user: trans.__('User'),
    experiment: trans.__('Experiment'),
    day: trans.__('Day')
  };
  const priced = !!payload && (payload.prices.gpu_hour > 0 || payload.prices.kwh > 0);
  const row = (r: IUsageRow, className: string) => (
    <tr key={`${className}-${r.key}`} className={className} data-key={r.key}>
      <td className="jp-Air-usage-key">{r.key}</td>
      <td>{r.gpu_hours.toFixed(r.gpu_hours < 1 ? 3 : 2)}</td>
      <td>{r.energy_wh.toFixed(1)}</td>
      {priced ? <td>{r.cost.toFixed(2)}</td> : null}
    </tr>
  );
  return (
    <div className="jp-Air-gpu-usage">
      <div className="jp-Air-section-title">
        {trans.__('GPU use, last 7 days, by')}{' '}
        <select
          className="jp-Air-usage-by"
          aria-label={trans.__('Group GPU use by')}
          value={by}
          onChange={event => onBy(event.target.value as UsageGroup)}
        >
          {USAGE_GROUPS.map(group => (
            <option key={group} value={group}>
              {names[group].toLowerCase()}
            </option>
          ))}
        </select>
      </div>
      {payload === null ? (
        <div className="jp-Air-usage-note">{trans.__('Reading the runs…')}</div>
      ) : payload.rows.length === 0 ? (
        <div className="jp-Air-usage-note">{trans.__('No run used a GPU in these 7 days.')}</div>
      ) : (
        <table className="jp-Air-usage-table">
          <thead>
            <tr>
              <th>{names[payload.by]}</th>
              <th title={trans.__('GPUs times hours, within the window')}>{trans.__('GPU-h')}</th>
              <th title={trans.__('Measured GPU energy, watt-hours')}>{trans.__('Wh')}</th>
              {priced ? <th>{trans.__('Cost')}</th> : null}
            </tr>
          </thead>
          <tbody>
            {payload.rows.map(r => row(r, 'jp-Air-usage-row'))}
            {row({ ...payload.total, key: trans.__('total') }, 'jp-Air-usage-total')}
          </tbody>
        </table>
      )}
      {payload && payload.total.simulated_energy_wh > 0 ? (
        <div className="jp-Air-usage-note">
          {trans.__(
            '%1 Wh measured on simulated GPUs: not counted.',
            payload.total.simulated_energy_wh.toFixed(1)
          )}
        </div>
      ) : null}
    </div>
  );
}
