/** uPlot time-series charts (utilization, memory, temperature) with one line per GPU. */
import type { TranslationBundle } from '@jupyterlab/translation';
import uPlot from 'uplot';

import type { IRun } from '../experiment/tokens';
import { drawRuns, nameRunsAt } from './runBands';
import type { IGpuHistory } from './tokens';

/** Colours and fonts taken from the JupyterLab theme. */
export interface IChartTheme {
  axis: string;
  grid: string;
  font: string;
  series: string[];
}

/**
 * The series colours used when the theme does not set `--jp-Air-gpu-color-<i>` (style/base.css sets
 * one variable and one `.jp-Air-swatch-<i>` class per entry); GPUs beyond these reuse them.
 */
const FALLBACK_SERIES_COLORS = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#17becf'
];

/** Index of the series colour of a GPU, shared by the chart lines and the device swatches. */
export function seriesColorIndex(gpu: number): number {
  return gpu % FALLBACK_SERIES_COLORS.length;
}

const GIB = 1024 ** 3;
const formatMinutes = uPlot.fmtDate('{HH}:{mm}');
const formatSeconds = uPlot.fmtDate('{HH}:{mm}:{ss}');
const CHART_HEIGHT = 110;

interface IChartSpec {
  title: (trans: TranslationBundle) => string;
  className: string;
  unit: string;
  digits: number;
  range: uPlot.Range.MinMax | null;
  values: (history: IGpuHistory, gpu: number) => (number | null)[];
  scale?: number;
}

const SPECS: IChartSpec[] = [
  {
    title: trans => trans.__('Utilization'),
    className: 'jp-Air-chart-utilization',
    unit: '%',
    digits: 0,
    range: [0, 100],
    values: (h, gpu) => h.gpus.utilization_percent[gpu]
  },
  {
    title: trans => trans.__('Memory used'),
    className: 'jp-Air-chart-memory',
    unit: ' GiB',
    digits: 1,
    range: null,
    values: (h, gpu) => h.gpus.memory_used_bytes[gpu],
    scale: 1 / GIB
  },
  {
    title: trans => trans.__('Temperature'),
    className: 'jp-Air-chart-temperature',
    unit: ' °C',
    digits: 0,
    range: null,
    values: (h, gpu) => h.gpus.temperature_celsius[gpu]
  }
];

/** Read the chart theme from JupyterLab's CSS variables as seen from `node`. */
export function readTheme(node: HTMLElement): IChartTheme {
  const style = getComputedStyle(node);
  const read = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  return {
    axis: read('--jp-ui-font-color2', '#616161'),
    grid: read('--jp-border-color2', '#e0e0e0'),
    // Canvas fonts need a pixel size; JupyterLab's size variables are in `em`.
    font: `11px ${read('--jp-ui-font-family', 'sans-serif')}`,
    series: FALLBACK_SERIES_COLORS.map((color, i) => read(`--jp-Air-gpu-color-${i}`, color))
  };
}

/**
 * Column data for uPlot: x in epoch seconds, then one column per GPU.
 *
 * A `null` row is inserted where two samples are further apart than `maxGapMs`, so a pause in
 * sampling shows as a break in the lines instead of a straight segment.
 */
export function chartData(
  history: IGpuHistory,
  spec: Pick<IChartSpec, 'values' | 'scale'>,
  gpuCount: number,
  maxGapMs: number
): uPlot.AlignedData {
  const ts = history.timestampsMs;
  const xs: number[] = [];
  const columns: (number | null)[][] = Array.from({ length: gpuCount }, () => []);
  const sources = columns.map((_, gpu) => spec.values(history, gpu) ?? []);
  const scale = spec.scale ?? 1;
  for (let k = 0; k < ts.length; k++) {
    if (k > 0 && ts[k] - ts[k - 1] > maxGapMs) {
      xs.push((ts[k - 1] + ts[k]) / 2000);
      columns.forEach(column => column.push(null));
    }
    xs.push(ts[k] / 1000);
    for (let gpu = 0; gpu < gpuCount; gpu++) {
      const value = sources[gpu][k];
      columns[gpu].push(value === null || value === undefined ? null : value * scale);
    }
  }
  return [xs, ...columns];
}

/** Three synchronised uPlot charts for `gpuCount` GPUs, updated in place on every poll. */
export class GpuCharts {
  constructor(options: GpuCharts.IOptions) {
    this._host = options.host;
    this._gpuCount = options.gpuCount;
    this._theme = options.theme;
    this._trans = options.trans;
    this._windowMs = options.windowMs;
    this._create(options.width);
  }

  /** Replace the data of every chart (one poll's render). */
  update(history: IGpuHistory, windowMs: number, maxGapMs: number): void {
    this._windowMs = windowMs;
    this._plots.forEach((plot, i) => {
      const data = chartData(history, SPECS[i], this._gpuCount, maxGapMs);
      plot.batch(() => plot.setData(data));
    });
  }

  /**
   * Shade the time span of each run on every chart, labelled on the first one where names fit; hovering a
   * band or label tells the run, its status and duration, clicking a label calls `onOpen`.
   */
  setRuns(runs: IRun[], onOpen: (run: IRun) => void): void {
    this._runs = runs;
    this._onOpenRun = onOpen;
    this._plots.forEach((plot, i) => this._drawRuns(plot, i === 0));
  }

  resize(width: number): void {
    const w = Math.max(120, Math.floor(width));
    this._plots.forEach(plot => plot.setSize({ width: w, height: CHART_HEIGHT }));
  }

  dispose(): void {
    this._plots.forEach(plot => plot.destroy());
    this._plots = [];
    this._host.replaceChildren();
  }

  private _create(width: number): void {
    const sync = uPlot.sync(Private.nextSyncKey());
    this._plots = SPECS.map((spec, i) => {
      const first = i === 0;
      const section = document.createElement('div');
      section.className = `jp-Air-chart ${spec.className}`;
      const title = document.createElement('div');
      title.className = 'jp-Air-chart-title';
      title.textContent = spec.title(this._trans);
      section.appendChild(title);
      this._host.appendChild(section);
      const options = this._options(spec, width, sync.key);
      options.hooks = {
        draw: [u => this._drawRuns(u, first)],
        setCursor: [nameRunsAt]
      };
      const plot = new uPlot(options, [[]], section);
      sync.sub(plot);
      return plot;
    });
  }

  private _drawRuns(plot: uPlot, labelled: boolean): void {
    drawRuns(plot, this._runs, this._onOpenRun, labelled, this._trans);
  }

  private _options(spec: IChartSpec, width: number, syncKey: string): uPlot.Options {
    const theme = this._theme;
    const format = (v: number | null) =>
      v === null || v === undefined ? '–' : `${v.toFixed(spec.digits)}${spec.unit}`;
    const axis: uPlot.Axis = {
      stroke: theme.axis,
      font: theme.font,
      grid: { stroke: theme.grid, width: 1 },
      ticks: { stroke: theme.grid, width: 1 }
    };
    const series: uPlot.Series[] = [{ label: this._trans.__('Time'), value: '{HH}:{mm}:{ss}' }];
    for (let gpu = 0; gpu < this._gpuCount; gpu++) {
      series.push({
        label: this._trans.__('GPU %1', gpu),
        stroke: theme.series[seriesColorIndex(gpu)],
        width: 1.5,
        points: { show: false },
        value: (_u, v) => format(v)
      });
    }
    return {
      width: Math.max(120, Math.floor(width)),
      height: CHART_HEIGHT,
      cursor: {
        sync: { key: syncKey, scales: ['x', null] },
        y: false,
        drag: { x: false, y: false },
        points: { size: 6 }
      },
      legend: { live: true },
      scales: {
        x: {
          time: true,
          // The held samples, at most the history window, and at least one minute.
          range: (_u, min, max) =>
            max === null || min === null || !Number.isFinite(max)
              ? [min, max]
              : [Math.min(max - 60, Math.max(min, max - this._windowMs / 1000)), max]
        },
        y: {
          range: spec.range ?? ((_u, _min, max) => [0, max === null || max <= 0 ? 1 : max * 1.1])
        }
      },
      axes: [
        {
          ...axis,
          size: 28,
          // 24-hour clock; seconds only when ticks are less than a minute apart.
          values: (_u, ticks, _axis, _space, increment) =>
            ticks.map(t => (increment < 60 ? formatSeconds : formatMinutes)(new Date(t * 1000)))
        },
        {
          ...axis,
          size: 48,
          values: (_u, ticks) => ticks.map(t => `${+t.toFixed(spec.digits)}${spec.unit.trim()}`)
        }
      ],
      series
    };
  }

  private _gpuCount: number;
  private _host: HTMLElement;
  private _onOpenRun: (run: IRun) => void = () => undefined;
  private _plots: uPlot[] = [];
  private _runs: IRun[] = [];
  private _theme: IChartTheme;
  private _trans: TranslationBundle;
  private _windowMs: number;
}

export namespace GpuCharts {
  export interface IOptions {
    host: HTMLElement;
    gpuCount: number;
    theme: IChartTheme;
    trans: TranslationBundle;
    width: number;
    windowMs: number;
  }
}

namespace Private {
  let count = 0;

  /** A cursor-sync key of its own for each set of charts. */
  export function nextSyncKey(): string {
    count += 1;
    return `jp-Air-${count}`;
  }
}
