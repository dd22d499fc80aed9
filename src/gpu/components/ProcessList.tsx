/** The compute processes on each GPU; a notebook kernel's path opens the notebook; idle holders are marked. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatBytes, formatClock } from '../../format';
import { IGpuDevice, IGpuProcess } from '../tokens';
import { NotebookLink } from './NotebookLink';

export interface IProcessListProps {
  devices: IGpuDevice[];
  processes: IGpuProcess[];
  onOpenPath: (path: string) => void;
  trans: TranslationBundle;
}

export function ProcessList(props: IProcessListProps): JSX.Element {
  const { devices, processes, onOpenPath, trans } = props;
  return (
    <div className="jp-Air-processes">
      <div className="jp-Air-section-title">{trans.__('Processes')}</div>
      {devices.map(device => {
        const own = processes.filter(p => p.gpu_index === device.index);
        return (
          <div key={device.index} className="jp-Air-process-group" data-gpu-index={device.index}>
            <div className="jp-Air-process-gpu">{trans.__('GPU %1', device.index)}</div>
            {own.length === 0 ? (
              <div className="jp-Air-process-none">{trans.__('No compute processes')}</div>
            ) : (
              <table className="jp-Air-process-table">
                <tbody>
                  {own.map(p => (
                    <tr key={p.pid} className="jp-Air-process">
                      <td className="jp-Air-process-pid">{p.pid}</td>
                      <td className="jp-Air-process-name">
                        {p.path ? (
                          <NotebookLink path={p.path} onOpenPath={onOpenPath} trans={trans} />
                        ) : (
                          p.name
                        )}
                        {p.idle_since_ms ? (
                          <span
                            className="jp-Air-badge jp-Air-badge-idle"
                            title={trans.__(
                              'Its kernel has executed nothing since %1 while this GPU stayed at 0 %: shut it down to free the memory',
                              formatClock(p.idle_since_ms)
                            )}
                          >
                            {trans.__('idle since %1', formatClock(p.idle_since_ms))}
                          </span>
                        ) : null}
                      </td>
                      <td className="jp-Air-process-memory">{formatBytes(p.used_memory_bytes)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
        );
      })}
    </div>
  );
}
