/** Compact row with the host's CPU and memory use. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatBytes, formatValue } from '../../format';

export interface IHostRowProps {
  cpuPercent: number | null;
  memoryUsedBytes: number | null;
  memoryTotalBytes: number | null;
  trans: TranslationBundle;
}

export function HostRow(props: IHostRowProps): JSX.Element {
  const { trans } = props;
  return (
    <div className="jp-Air-host">
      <span className="jp-Air-host-label">{trans.__('Host')}</span>
      <span className="jp-Air-host-cpu">
        {trans.__('CPU %1', formatValue(props.cpuPercent, '%'))}
      </span>
      <span className="jp-Air-host-memory">
        {trans.__(
          'Memory %1 / %2',
          formatBytes(props.memoryUsedBytes),
          formatBytes(props.memoryTotalBytes)
        )}
      </span>
    </div>
  );
}
