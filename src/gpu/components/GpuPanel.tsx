/** The whole GPU resources view, rendered from the model's current state. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBanner, PausedBanner, VersionBanner } from '../../components/Banners';
import type { IRun } from '../../experiment/tokens';
import { latestValue } from '../history';
import type { INodeHolder } from '../holders';
import type { GpuModel } from '../model';
import type { IHeldClaim, IQueuedClaim } from '../queue';
import type { GpuUsage } from '../usage';
import { ChartsView } from './ChartsView';
import { ClusterOverview } from './ClusterOverview';
import { DeviceList } from './DeviceList';
import { GpuQueueView } from './GpuQueueView';
import { GpuUsageView } from './GpuUsageView';
import { Header } from './Header';
import { HeldNodes } from './HeldNodes';
import { HostRow } from './HostRow';
import { NodeSelector } from './NodeSelector';
import { ProcessList } from './ProcessList';

export interface IGpuPanelProps {
  model: GpuModel;
  revision: number;
  themeKey: number;
  onOpenPath: (path: string) => void;
  trans: TranslationBundle;
  /** Icon shown in the Refresh button. */
  refreshIcon?: React.ReactNode;
  /** Runs shaded on the charts (the run timeline), and what clicking one does. */
  runs?: IRun[];
  onOpenRun?: (run: IRun) => void;
  /** Notebooks keeping Ray nodes, and what Release does. */
  heldNodes?: INodeHolder[];
  onRelease?: (pid: number) => void;
  /** This machine's GPU queue: the work holding GPUs and the work waiting for them. */
  queue?: { held: IHeldClaim[]; queued: IQueuedClaim[] };
  /** GPU use over the last 7 days, per user, experiment or day. */
  usage?: GpuUsage;
}

export function GpuPanel(props: IGpuPanelProps): JSX.Element {
  const { model, revision, themeKey, onOpenPath, trans, refreshIcon, runs, onOpenRun } = props;
  const { heldNodes, onRelease, queue, usage } = props;
  const payload = model.payload;
  const history = model.history;
  const state = model.state;
  const error = model.error;
  const devices = model.devices;
  const pausedAfterSeconds = model.pausedAfterSeconds;
  const onRefresh = () => void model.refresh();
  // With a Ray cluster: a node selector, and every node at a glance until one is chosen.
  const cluster = model.nodes.length > 0 || !!payload?.cluster;
  const overview = model.nodes.length > 0 && model.selectedNode === null;
  const detail = overview ? null : payload;

  return (
    <div className="jp-Air-panel-body">
      <Header
        node={overview ? trans.__('All nodes') : (payload?.node ?? null)}
        source={payload?.source ?? null}
        newestSampleMs={model.newestSampleMs}
        state={state}
        onRefresh={onRefresh}
        trans={trans}
        refreshIcon={refreshIcon}
      />
      {model.versionMismatch && model.serverVersion !== null ? (
        <VersionBanner
          serverVersion={model.serverVersion}
          frontendVersion={model.frontendVersion}
          trans={trans}
        />
      ) : null}
      {pausedAfterSeconds !== null ? (
        <PausedBanner timeoutSeconds={pausedAfterSeconds} trans={trans} />
      ) : null}
      {error ? (
        <ErrorBanner
          error={error}
          heading={trans.__('Reading GPU data failed')}
          retryInMs={pausedAfterSeconds === null ? model.retryInMs : null}
          trans={trans}
        />
      ) : null}
      {cluster ? (
        <NodeSelector
          nodes={model.nodes}
          selected={model.selectedNode}
          onSelect={nodeId => model.selectNode(nodeId)}
          clusterError={payload?.cluster?.error ?? null}
          trans={trans}
        />
      ) : null}
      {overview ? (
        <ClusterOverview
          nodes={model.nodes}
          onSelect={nodeId => model.selectNode(nodeId)}
          trans={trans}
        />
      ) : null}
      {detail ? (
        <HostRow
          cpuPercent={latestValue(history.hostCpuPercent)}
          memoryUsedBytes={latestValue(history.hostMemoryUsedBytes)}
          memoryTotalBytes={detail.host?.memory_total_bytes ?? null}
          trans={trans}
        />
      ) : null}
      {detail && !detail.available ? (
        <div className="jp-Air-empty">
          <div className="jp-Air-empty-title">
            {detail.node_state === 'unreachable'
              ? trans.__('Node unreachable')
              : trans.__('No GPU on this node')}
          </div>
          <div className="jp-Air-empty-reason">
            {detail.reason ?? trans.__('The server reports no GPU.')}
          </div>
        </div>
      ) : null}
      {!payload && !error ? (
        <div className="jp-Air-loading">{trans.__('Loading GPU data…')}</div>
      ) : null}
      {detail && devices.length > 0 ? (
        <>
          <DeviceList devices={devices} history={history} trans={trans} />
          <ChartsView
            gpuCount={devices.length}
            history={history}
            revision={revision}
            themeKey={themeKey}
            windowMs={model.chartWindowMs}
            maxGapMs={model.maxGapMs}
            trans={trans}
            runs={runs}
            onOpenRun={onOpenRun}
          />
          <ProcessList
            devices={devices}
            processes={model.processes}
            onOpenPath={onOpenPath}
            trans={trans}
          />
        </>
      ) : null}
      {queue && queue.held.length + queue.queued.length > 0 ? (
        <GpuQueueView held={queue.held} queued={queue.queued} trans={trans} />
      ) : null}
      {usage ? (
        <GpuUsageView
          by={usage.by}
          payload={usage.payload}
          onBy={by => usage.setBy(by)}
          trans={trans}
        />
      ) : null}
      {heldNodes && heldNodes.length > 0 && onRelease ? (
        <HeldNodes
          holders={heldNodes}
          onRelease={onRelease}
          onOpenPath={onOpenPath}
          trans={trans}
        />
      ) : null}
    </div>
  );
}
