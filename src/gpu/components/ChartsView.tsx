/** React host of the uPlot charts: creates them once per GPU count and theme, updates in place. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { GpuCharts, readTheme } from '../charts';
import type { IRun } from '../../experiment/tokens';
import type { IGpuHistory } from '../tokens';

export interface IChartsViewProps {
  gpuCount: number;
  history: IGpuHistory;
  /** Changes whenever the JupyterLab theme changes, to re-read its colours. */
  themeKey: number;
  /** Bumped by the model on every change, so the charts redraw. */
  revision: number;
  windowMs: number;
  maxGapMs: number;
  trans: TranslationBundle;
  /** Runs whose time span is shaded on the charts, and what a click on one's label does. */
  runs?: IRun[];
  onOpenRun?: (run: IRun) => void;
}

export function ChartsView(props: IChartsViewProps): JSX.Element {
  const { gpuCount, history, themeKey, revision, windowMs, maxGapMs, trans, runs, onOpenRun } =
    props;
  const hostRef = React.useRef<HTMLDivElement>(null);
  const chartsRef = React.useRef<GpuCharts | null>(null);

  React.useEffect(() => {
    const host = hostRef.current;
    if (!host || gpuCount === 0) {
      return;
    }
    const charts = new GpuCharts({
      host,
      gpuCount,
      theme: readTheme(host),
      trans,
      width: host.clientWidth,
      windowMs
    });
    chartsRef.current = charts;
    charts.update(history, windowMs, maxGapMs);
    charts.setRuns(runs ?? [], run => onOpenRun?.(run));
    const observer = new ResizeObserver(entries => {
      const width = entries[0]?.contentRect.width ?? 0;
      if (width > 0) {
        charts.resize(width);
      }
    });
    observer.observe(host);
    return () => {
      observer.disconnect();
      charts.dispose();
      chartsRef.current = null;
    };
  }, [gpuCount, themeKey]);

  React.useEffect(() => {
    chartsRef.current?.update(history, windowMs, maxGapMs);
  }, [revision, windowMs, maxGapMs]);

  React.useEffect(() => {
    chartsRef.current?.setRuns(runs ?? [], run => onOpenRun?.(run));
  }, [runs]);

  return <div className="jp-Air-charts" ref={hostRef} />;
}
