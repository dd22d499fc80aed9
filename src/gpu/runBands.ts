/** The runs on the GPU charts: a band under each chart for each run's time span, labelled on the first chart. */
import type { TranslationBundle } from '@jupyterlab/translation';
import type uPlot from 'uplot';

import type { IRun } from '../experiment/tokens';
import { formatElapsed } from '../format';

/** Label rows of overlapping runs, so nested runs' names do not cover each other. */
const LABEL_ROWS = 3;
const LABEL_ROW_PX = 14;
/** Labels of short runs may reach past their band, so that a few letters of the name show. */
const LABEL_MIN_PX = 64;

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
  const rowEnds: number[] = [];
  [...runs]
    .sort((a, b) => a.start_ms - b.start_ms)
    .forEach(run => {
      const startS = run.start_ms / 1000;
      const endS = run.end_ms === null ? max : run.end_ms / 1000;
      if (endS < min || startS > max) {
        return;
      }
      const left = Math.max(0, plot.valToPos(Math.max(startS, min), 'x'));
      const right = Math.min(width, plot.valToPos(Math.min(endS, max), 'x'));
      const band = document.createElement('div');
      band.className = `jp-Air-run-band jp-Air-status-${run.status}`;
      band.dataset.runId = run.run_id;
      band.style.left = `${left}px`;
      band.style.width = `${Math.max(2, right - left)}px`;
      plot.under.appendChild(band);
      if (!labelled) {
        return;
      }
      const labelWidth = Math.max(LABEL_MIN_PX, right - left);
      let row = rowEnds.findIndex(end => end <= left);
      if (row < 0) {
        row = Math.min(rowEnds.length, LABEL_ROWS - 1);
      }
      rowEnds[row] = left + labelWidth;
      const label = document.createElement('div');
      const name = run.run_name || run.run_id;
      label.className = `jp-Air-run-label jp-Air-status-${run.status}`;
      label.dataset.runId = run.run_id;
      label.textContent = name;
      label.title = trans.__(
        '%1 · %2 · %3 — click to open the run',
        name,
        run.status.toLowerCase(),
        formatElapsed((run.end_ms ?? max * 1000) - run.start_ms)
      );
      label.style.left = `${left}px`;
      label.style.top = `${row * LABEL_ROW_PX}px`;
      label.style.maxWidth = `${labelWidth}px`;
      label.addEventListener('click', () => onOpen(run));
      plot.over.appendChild(label);
    });
}
