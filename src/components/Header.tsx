/** Header of the GPU panel: node, source, newest sample time, state and Refresh. */
import * as React from 'react';

import { formatClock } from '../format';
import type { GpuState } from '../model';

const STATE_LABELS: Record<GpuState, string> = {
  loading: 'loading',
  live: 'live',
  paused: 'paused',
  'no-gpu': 'no GPU',
  unavailable: 'server extension unavailable',
  error: 'error'
};

export interface IHeaderProps {
  node: string | null;
  source: string | null;
  newestSampleMs: number | null;
  state: GpuState;
  onRefresh: () => void;
  /** Icon shown in the Refresh button. */
  refreshIcon?: React.ReactNode;
}

export function Header(props: IHeaderProps): JSX.Element {
  const { node, source, newestSampleMs, state, onRefresh, refreshIcon } = props;
  return (
    <div className="jp-Air-header">
      <div className="jp-Air-header-main">
        <span className="jp-Air-node" title="Node the server runs on">
          {node ?? '–'}
        </span>
        {source === 'simulated' ? (
          <span
            className="jp-Air-badge jp-Air-badge-simulated"
            title="These numbers are simulated for demonstration; they are not read from a GPU."
          >
            simulated
          </span>
        ) : source ? (
          <span
            className="jp-Air-badge jp-Air-badge-source"
            title="Where the server reads GPU data"
          >
            {source}
          </span>
        ) : null}
        <span className={`jp-Air-state jp-Air-state-${state}`} data-state={state}>
          {STATE_LABELS[state]}
        </span>
        <button
          className="jp-Air-refresh jp-mod-styled"
          title="Fetch the newest values now (resumes polling)"
          onClick={onRefresh}
        >
          {refreshIcon}
          <span>Refresh</span>
        </button>
      </div>
      <div className="jp-Air-header-time" title="Time of the newest sample">
        Newest sample: <span className="jp-Air-newest">{formatClock(newestSampleMs)}</span>
      </div>
    </div>
  );
}
