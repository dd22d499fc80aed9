/** Header of the GPU panel: node, source, newest sample time, state and Refresh. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatClock } from '../../format';
import type { GpuState } from '../tokens';

/** The word shown for each state. */
function stateLabel(state: GpuState, trans: TranslationBundle): string {
  const labels: Record<GpuState, string> = {
    loading: trans.__('loading'),
    live: trans.__('live'),
    paused: trans.__('paused'),
    'no-gpu': trans.__('no GPU'),
    unavailable: trans.__('server extension unavailable'),
    error: trans.__('error')
  };
  return labels[state];
}

export interface IHeaderProps {
  node: string | null;
  source: string | null;
  newestSampleMs: number | null;
  state: GpuState;
  onRefresh: () => void;
  trans: TranslationBundle;
  /** Icon shown in the Refresh button. */
  refreshIcon?: React.ReactNode;
}

export function Header(props: IHeaderProps): JSX.Element {
  const { node, source, newestSampleMs, state, onRefresh, trans, refreshIcon } = props;
  return (
    <div className="jp-Air-header">
      <div className="jp-Air-header-main">
        <span className="jp-Air-node" title={trans.__('Node the server runs on')}>
          {node ?? '–'}
        </span>
        {source === 'simulated' ? (
          <span
            className="jp-Air-badge jp-Air-badge-simulated"
            title={trans.__(
              'These numbers are simulated for demonstration; they are not read from a GPU.'
            )}
          >
            {trans.__('simulated')}
          </span>
        ) : source ? (
          <span
            className="jp-Air-badge jp-Air-badge-source"
            title={trans.__('Where the server reads GPU data')}
          >
            {source}
          </span>
        ) : null}
        <span className={`jp-Air-state jp-Air-state-${state}`} data-state={state}>
          {stateLabel(state, trans)}
        </span>
        <button
          className="jp-Air-refresh jp-mod-styled"
          title={trans.__('Fetch the newest values now (resumes polling)')}
          onClick={onRefresh}
        >
          {refreshIcon}
          <span>{trans.__('Refresh')}</span>
        </button>
      </div>
      <div className="jp-Air-header-time" title={trans.__('Time of the newest sample')}>
        {trans.__('Newest sample:')}{' '}
        <span className="jp-Air-newest">{formatClock(newestSampleMs)}</span>
      </div>
    </div>
  );
}
