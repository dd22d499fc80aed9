/** The Ray nodes notebooks keep for their next call: which notebook, which nodes, since and until when, Release. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatClock } from '../../format';
import type { INodeHolder } from '../holders';
import { NotebookLink } from './NotebookLink';

export interface IHeldNodesProps {
  holders: INodeHolder[];
  onRelease: (pid: number) => void;
  onOpenPath: (path: string) => void;
  trans: TranslationBundle;
}

export function HeldNodes(props: IHeldNodesProps): JSX.Element {
  const { holders, onRelease, onOpenPath, trans } = props;
  return (
    <div className="jp-Air-held-nodes">
      <div className="jp-Air-section-title">{trans.__('Ray nodes kept by notebooks')}</div>
      <ul className="jp-Air-held-list">
        {holders.map(holder => (
          <li key={holder.pid} className="jp-Air-held" data-pid={holder.pid}>
            <div className="jp-Air-run-main">
              {holder.path ? (
                <NotebookLink path={holder.path} onOpenPath={onOpenPath} trans={trans} />
              ) : (
                <span>{trans.__('process %1', holder.pid)}</span>
              )}
              <button
                className="jp-Air-held-release jp-mod-styled jp-mod-warn"
                title={trans.__(
                  'Close its actors now, freeing these nodes (as release_nodes() would)'
                )}
                onClick={() => onRelease(holder.pid)}
              >
                {trans.__('Release')}
              </button>
            </div>
            <div className="jp-Air-run-details">
              <span className="jp-Air-held-hosts">
                {holder.nodes.map(n => n.hostname ?? n.ip ?? String(n.node)).join(', ')}
              </span>
              {holder.share ? <span>{holder.share}</span> : null}
              {holder.parked ? <span>{trans.__('parked by remote calls')}</span> : null}
              <span>
                {holder.until_ms
                  ? trans.__(
                      'since %1, until %2',
                      formatClock(holder.since_ms),
                      formatClock(holder.until_ms)
                    )
                  : trans.__('since %1', formatClock(holder.since_ms))}
              </span>
            </div>
          </li>
        ))}
      </ul>
    </div>
  );
}
