/** The runs on the GPU charts: a band per run under each chart, named on hover; labels on the first. */
import type { TranslationBundle } from '@jupyterlab/translation';
import type uPlot from 'uplot';

import type { IRun } from '../experiment/tokens';
import { formatElapsed } from '../format';
import { IMoreLabel, layoutRunLabels } from './runLabels';

const LABEL_ROW_PX = 14;

/** A run's band, in pixels from the plot's left edge, and what hovering it says. */
interface IShownRun {
  run: IRun;
  left: number;
  right: number;
  about: string;
}

/** The bands each chart drew last, read when the pointer moves over it. */
const drawnBands = new WeakMap<uPlot, IShownRun[]>();

/**
 * Place one band per run under the plot (the canvas is transparent) and, on the first chart, the
 * labels that fit over them; elements of runs no longer shown are removed.
 */
export function drawRuns(
  plot: uPlot,
  runs: IRun[],
  onOpen: (run: IRun) => void,
  labelled: boolean,
  trans: TranslationBundle
): void {
  const { min, max } = plot.scales.x;
  plot.under.querySelectorAll('.jp-Air-run-band').forEach(node => node.remove());
  plot.over.querySelectorAll('.jp-Air-run-label').forEach(node => node.remove());
  drawnBands.delete(plot);
  if (min === undefined || max === undefined || min === null || max === null) {
    return;
  }
  const width = plot.over.clientWidth;
  const shown: IShownRun[] = [...runs]
    .sort((a, b) => a.start_ms - b.start_ms)
    .map(run => ({ run, startS: run.start_ms / 1000, endS: (run.end_ms ?? max * 1000) / 1000 }))
    .filter(({ startS, endS }) => endS >= min && startS <= max)
    .map(({ run, startS, endS }) => ({
      run,
      left: Math.max(0, plot.valToPos(Math.max(startS, min), 'x')),
      right: Math.min(width, plot.valToPos(Math.min(endS, max), 'x')),
      about: trans.__(
        '%1 · %2 · %3',
        run.run_name || run.run_id,
        run.status.toLowerCase(),
        formatElapsed((run.end_ms ?? max * 1000) - run.start_ms)
      )
    }));
  drawnBands.set(plot, shown);
  shown.forEach(({ run, left, right }) => {
    const band = document.createElement('div');
    band.className = `jp-Air-run-band jp-Air-status-${run.status}`;
    band.dataset.runId = run.run_id;
    band.style.left = `${left}px`;
    band.style.width = `${Math.max(2, right - left)}px`;
    plot.under.appendChild(band);
  });
  if (labelled) {
    drawLabels(plot, shown, width, onOpen, trans);
  }
}

/**
 * Name, in the chart's tooltip, the runs whose bands are under the pointer (newest first), so that a run
 * without a label of its own is named too; called whenever the chart's cursor moves.
 */
export function nameRunsAt(plot: uPlot): void {
  const x = plot.cursor.left ?? -1;
  const under =
    x < 0
      ? []
      : (drawnBands.get(plot) ?? []).filter(
          band => band.left - 1 <= x && x <= Math.max(band.right, band.left + 2) + 1
        );
  const title = under
    .map(band => band.about)
    .reverse()
    .join('\n');
  if (title) {
    plot.over.title = title;
  } else {
    plot.over.removeAttribute('title');
  }
}

/** Label the runs whose names fit (see `layoutRunLabels`), and count the others in "+N" labels. */
function drawLabels(
  plot: uPlot,
  shown: IShownRun[],
  width: number,
  onOpen: (run: IRun) => void,
  trans: TranslationBundle
): void {
  const labels = shown.map(({ run, about }) => {
    const label = document.createElement('div');
    label.className = `jp-Air-run-label jp-Air-status-${run.status}`;
    label.dataset.runId = run.run_id;
    label.textContent = run.run_name || run.run_id;
    label.title = trans.__('%1 — click to open the run', about);
    label.addEventListener('click', () => onOpen(run));
    plot.over.appendChild(label);
    return label;
  });
  // Every label's whole width, measured in one layout (a rough width where nothing is laid out).
  const anchors = shown.map((band, i) => ({
    start: band.left,
    wanted:
      Math.ceil(labels[i].getBoundingClientRect().width) ||
      6 * (labels[i].textContent ?? '').length + 8
  }));
  const kept = new Set<HTMLElement>();
  layoutRunLabels(anchors, width).forEach(item => {
    const label = item.kind === 'run' ? labels[item.run] : moreLabel(item, shown, trans);
    label.style.left = `${item.left}px`;
    label.style.top = `${item.row * LABEL_ROW_PX}px`;
    label.style.maxWidth = `${item.width}px`;
    plot.over.appendChild(label);
    kept.add(label);
  });
  labels.filter(label => !kept.has(label)).forEach(label => label.remove());
}

/** A "+N" label whose tooltip names the runs it counts. */
function moreLabel(item: IMoreLabel, shown: IShownRun[], trans: TranslationBundle): HTMLElement {
  const runs = item.runs.map(i => shown[i]);
  const label = document.createElement('div');
  label.className = 'jp-Air-run-label jp-Air-run-more';
  label.dataset.runIds = runs.map(({ run }) => run.run_id).join(' ');
  label.textContent = `+${runs.length}`;
  label.title = [
    trans._n('%1 more run here:', '%1 more runs here:', runs.length),
    ...runs.map(({ about }) => about).reverse()
  ].join('\n');
  return label;
}
