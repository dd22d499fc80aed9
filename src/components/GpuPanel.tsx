/** The whole GPU resources view, rendered from the model's current state. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { latestValue } from '../history';
import type { IRun } from '../experiment/tokens';
import type { GpuModel } from '../model';
import { ErrorBanner, PausedBanner, VersionBanner } from './Banners';
import { ChartsView } from './ChartsView';
import { DeviceList } from './DeviceList';
import { Header } from './Header';
import { HostRow } from './HostRow';
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
}

export function GpuPanel(props: IGpuPanelProps): JSX.Element {
  const { model, revision, themeKey, onOpenPath, trans, refreshIcon, runs, onOpenRun } = props;
  const payload = model.payload;
  const history = model.history;
  const state = model.state;
  const error = model.error;
  const devices = model.devices;
  const pausedAfterSeconds = model.pausedAfterSeconds;
  const onRefresh = () => void model.refresh();

  return (
    <div className="jp-Air-panel-body">
      <Header
        node={payload?.node ?? null}
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
          retryInMs={pausedAfterSeconds === null ? model.retryInMs : null}
          trans={trans}
        />
      ) : null}
      {payload ? (
        <HostRow
          cpuPercent={latestValue(history.hostCpuPercent)}
          memoryUsedBytes={latestValue(history.hostMemoryUsedBytes)}
          memoryTotalBytes={payload.host?.memory_total_bytes ?? null}
          trans={trans}
        />
      ) : null}
      {payload && !payload.available ? (
        <div className="jp-Air-empty">
          <div className="jp-Air-empty-title">{trans.__('No GPU on this node')}</div>
          <div className="jp-Air-empty-reason">
            {payload.reason ?? trans.__('The server reports no GPU.')}
          </div>
        </div>
      ) : null}
      {!payload && !error ? (
        <div className="jp-Air-loading">{trans.__('Loading GPU data…')}</div>
      ) : null}
      {devices.length > 0 ? (
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
    </div>
  );
}
