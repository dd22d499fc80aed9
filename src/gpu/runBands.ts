/** The runs on the GPU charts: a band under each chart for each run's time span, labelled on the first chart. */
import type { TranslationBundle } from '@jupyterlab/translation';
import type uPlot from 'uplot';

import type { IRun } from '../experiment/tokens';
import { formatElapsed } from '../format';

/** Label rows of overlapping runs, so nested runs' names do not cover each other. */
export const LABEL_ROWS = 3;
const LABEL_ROW_PX = 14;
/** A run starting this close to the right edge has its label moved left, so that a few letters show. */
export const LABEL_MIN_PX = 64;
/** A label narrower than this is left out (its run is still shaded); a few letters and the ellipsis. */
export const LABEL_SHOWN_PX = 28;

/** Where a label goes: its row, left edge and width in pixels. */
export interface ILabelPlace {
  row: number;
  left: number;
  width: number;
}

/**
 * Place the labels of runs whose bands start at `starts` (pixels from the plot's left edge, oldest first) in a plot `width` pixels wide: never past its edges, never
 * over another label. The newest runs are placed first, each in the row where it has most room; a label
 * may reach past its band up to where a newer one in its row starts (or the edge), and is left out
 * (`null`) when less than `LABEL_SHOWN_PX` of it would show in any row.
 */
export function placeLabels(starts: number[], width: number): (ILabelPlace | null)[] {
  /** Per row, where the leftmost label placed so far starts. */
  const rowStarts: number[] = Array.from({ length: LABEL_ROWS }, () => width);
  const places: (ILabelPlace | null)[] = starts.map(() => null);
  for (let i = starts.length - 1; i >= 0; i--) {
    const start = Math.max(0, Math.min(starts[i], width - LABEL_MIN_PX));
    let best: ILabelPlace | null = null;
    for (let row = 0; row < LABEL_ROWS; row++) {
      const room = rowStarts[row] - start;
      if (room >= LABEL_SHOWN_PX && (best === null || room > best.width)) {
        best = { row, left: start, width: room };
      }
    }
    if (best !== null) {
      rowStarts[best.row] = best.left;
      places[i] = best;
    }
  }
  return places;
}

/**
 * Place one band per run under the plot (the canvas is transparent) and, on the first chart, a
 * label over it; elements of runs no longer shown are removed.
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
  if (min === undefined || max === undefined || min === null || max === null) {
    return;
  }
  const width = plot.over.clientWidth;
  const shown = [...runs]
    .sort((a, b) => a.start_ms - b.start_ms)
    .map(run => ({ run, startS: run.start_ms / 1000, endS: (run.end_ms ?? max * 1000) / 1000 }))
    .filter(({ startS, endS }) => endS >= min && startS <= max)
    .map(({ run, startS, endS }) => ({
      run,
      left: Math.max(0, plot.valToPos(Math.max(startS, min), 'x')),
      right: Math.min(width, plot.valToPos(Math.min(endS, max), 'x'))
    }));
  shown.forEach(({ run, left, right }) => {
    const band = document.createElement('div');
    band.className = `jp-Air-run-band jp-Air-status-${run.status}`;
    band.dataset.runId = run.run_id;
    band.style.left = `${left}px`;
    band.style.width = `${Math.max(2, right - left)}px`;
    plot.under.appendChild(band);
  });
  if (!labelled) {
    return;
  }
  placeLabels(
    shown.map(band => band.left),
    width
  ).forEach((place, i) => {
    if (place === null) {
      return;
    }
    const run = shown[i].run;
    const name = run.run_name || run.run_id;
    const label = document.createElement('div');
    label.className = `jp-Air-run-label jp-Air-status-${run.status}`;
    label.dataset.runId = run.run_id;
    label.textContent = name;
    label.title = trans.__(
      '%1 · %2 · %3 — click to open the run',
      name,
      run.status.toLowerCase(),
      formatElapsed((run.end_ms ?? max * 1000) - run.start_ms)
    );
    label.style.left = `${place.left}px`;
    label.style.top = `${place.row * LABEL_ROW_PX}px`;
    label.style.maxWidth = `${place.width}px`;
    label.addEventListener('click', () => onOpen(run));
    plot.over.appendChild(label);
  });
}
