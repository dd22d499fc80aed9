/** Which node of the Ray cluster the panel shows: every node (the overview) or one node's details. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import type { INodeSummary, NodeState } from '../tokens';

/** The word shown for a node's state. */
export function nodeStateLabel(state: NodeState, trans: TranslationBundle): string {
  const labels: Record<NodeState, string> = {
    live: trans.__('live'),
    starting: trans.__('starting'),
    unreachable: trans.__('unreachable')
  };
  return labels[state];
}

/** `gpu-07 · 10.0.0.7 · 3f9f12`: hostnames alone may repeat (several nodes on one machine). */
export function nodeLabel(node: INodeSummary): string {
  return `${node.hostname || node.ip} · ${node.ip} · ${node.id.slice(0, 6)}`;
}

export interface INodeSelectorProps {
  nodes: INodeSummary[];
  selected: string | null;
  onSelect: (nodeId: string | null) => void;
  /** Why the cluster cannot be reached (the panel then shows this server's own node), else `null`. */
  clusterError: string | null;
  trans: TranslationBundle;
}

export function NodeSelector(props: INodeSelectorProps): JSX.Element {
  const { nodes, selected, onSelect, clusterError, trans } = props;
  const ALL = '';
  return (
    <div className="jp-Air-nodeSelector">
      <label className="jp-Air-nodeSelector-label">
        <span>{trans.__('Node')}</span>
        <select
          className="jp-Air-nodeSelect jp-mod-styled"
          value={selected ?? ALL}
          onChange={event => onSelect(event.target.value === ALL ? null : event.target.value)}
          title={trans.__('Show every node of the Ray cluster, or one node in detail')}
        >
          <option value={ALL}>{trans.__('All nodes (%1)', nodes.length)}</option>
          {nodes.map(node => (
            <option key={node.id} value={node.id}>
              {node.state === 'live'
                ? nodeLabel(node)
                : `${nodeLabel(node)} (${nodeStateLabel(node.state, trans)})`}
            </option>
          ))}
        </select>
      </label>
      {clusterError ? (
        <div className="jp-Air-nodeSelector-error" role="alert">
          {trans.__('Ray cluster unreachable; showing this server’s node. %1', clusterError)}
        </div>
      ) : null}
    </div>
  );
}
