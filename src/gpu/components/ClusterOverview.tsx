/** "All nodes": one row per node of the Ray cluster with each GPU's utilization, memory and temperature. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatBytes, formatClock, formatValue } from '../../format';
import type { INodeSummary } from '../tokens';
import { nodeLabel, nodeStateLabel } from './NodeSelector';

export interface IClusterOverviewProps {
  nodes: INodeSummary[];
  onSelect: (nodeId: string) => void;
  trans: TranslationBundle;
}

function NodeGpus(props: { node: INodeSummary; trans: TranslationBundle }): JSX.Element {
  const { node, trans } = props;
  if (node.state !== 'live') {
    // No values at all: a node that does not answer must never read as idle.
    const seen = node.last_seen_ms === null ? trans.__('never') : formatClock(node.last_seen_ms);
    return (
      <div className="jp-Air-nodeRow-absent" title={node.reason ?? ''}>
        {node.state === 'starting'
          ? trans.__('Sampler starting…')
          : trans.__('No answer; last seen %1', seen)}
      </div>
    );
  }
  if (node.gpus.length === 0) {
    return <div className="jp-Air-nodeRow-absent">{trans.__('No GPU on this node')}</div>;
  }
  return (
    <ul className="jp-Air-nodeRow-gpus">
      {node.gpus.map(gpu => (
        <li key={gpu.index} className="jp-Air-nodeRow-gpu" title={gpu.name ?? ''}>
          <span className="jp-Air-nodeRow-gpuIndex">{trans.__('GPU %1', gpu.index)}</span>
          <span className="jp-Air-value-utilization">
            {formatValue(gpu.utilization_percent, '%')}
          </span>
          <span className="jp-Air-value-memory">
            {formatBytes(gpu.memory_used_bytes)} / {formatBytes(gpu.memory_total_bytes)}
          </span>
          <span className="jp-Air-value-temperature">
            {formatValue(gpu.temperature_celsius, ' °C')}
          </span>
        </li>
      ))}
    </ul>
  );
}

export function ClusterOverview(props: IClusterOverviewProps): JSX.Element {
  const { nodes, onSelect, trans } = props;
  return (
    <ul className="jp-Air-nodes">
      {nodes.map(node => (
        <li
          key={node.id}
          className={`jp-Air-nodeRow jp-Air-nodeRow-${node.state}`}
          data-node-id={node.id}
          data-state={node.state}
        >
          <button
            className="jp-Air-nodeRow-name"
            title={trans.__('Show this node in detail')}
            onClick={() => onSelect(node.id)}
          >
            {nodeLabel(node)}
            {node.is_server_node ? (
              <span className="jp-Air-badge">{trans.__('this server')}</span>
            ) : null}
          </button>
          <span className={`jp-Air-nodeState jp-Air-nodeState-${node.state}`}>
            {nodeStateLabel(node.state, trans)}
          </span>
          <NodeGpus node={node} trans={trans} />
        </li>
      ))}
    </ul>
  );
}
