/** Compact row with the host's CPU and memory use. */
import * as React from 'react';

import { formatBytes, formatValue } from '../format';

export interface IHostRowProps {
  cpuPercent: number | null;
  memoryUsedBytes: number | null;
  memoryTotalBytes: number | null;
}

export function HostRow(props: IHostRowProps): JSX.Element {
  return (
    <div className="jp-Air-host">
      <span className="jp-Air-host-label">Host</span>
      <span className="jp-Air-host-cpu">CPU {formatValue(props.cpuPercent, '%')}</span>
      <span className="jp-Air-host-memory">
        Memory {formatBytes(props.memoryUsedBytes)} / {formatBytes(props.memoryTotalBytes)}
      </span>
    </div>
  );
}
