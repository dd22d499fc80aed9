/** Unit tests of the run labels on the GPU charts: where they go, what is left out, and how runs are named. */
import { nullTranslator } from '@jupyterlab/translation';
import type uPlot from 'uplot';
import { describe, expect, it } from 'vitest';

import type { IRun } from '../experiment/tokens';
import { drawRuns, nameRunsAt } from '../gpu/runBands';
import { IRunAnchor, LABEL_SHOWN_PX, LabelItem, layoutRunLabels, MORE_PX } from '../gpu/runLabels';
import { makeRun } from './fakeRuns';

const trans = nullTranslator.load('jupyter_air');

/** The plot of a chart in a 250 px sidebar. */
const NARROW = 170;

/** What must hold for any layout: labels inside the plot and apart, readable, each run labelled or counted once. */
function expectSound(anchors: IRunAnchor[], width: number, items: LabelItem[]): void {
  const faults: string[] = [];
  items.forEach((a, i) => {
    if (a.left < 0 || a.left + a.width > width + 1e-9) {
      faults.push(`outside: ${JSON.stringify(a)}`);
    }
    const wanted = a.kind === 'run' ? Math.min(anchors[a.run].wanted, width) : 0;
    if (a.width < Math.min(wanted, LABEL_SHOWN_PX)) {
      faults.push(`cramped: ${JSON.stringify(a)}`);
    }
    items.slice(i + 1).forEach(b => {
      if (a.row === b.row && a.left + a.width > b.left + 1e-9 && b.left + b.width > a.left + 1e-9) {
        faults.push(`covering: ${JSON.stringify([a, b])}`);
      }
    });
  });
  expect(faults).toEqual([]);
  const counted = items.flatMap(item => (item.kind === 'run' ? [item.run] : item.runs));
  expect(counted.sort((a, b) => a - b)).toEqual(anchors.map((_, i) => i));
}

/** A deterministic pseudo-random sequence in [0, 1). */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

describe('layoutRunLabels', () => {
  it('labels each run at its band, whole, in the first row, when the names fit', () => {
    // Given three runs far apart in a wide plot, with names 60 px wide
    const anchors = [0, 150, 300].map(start => ({ start, wanted: 60 }));
    // When their labels are laid out
    const items = layoutRunLabels(anchors, 400);
    // Then every run has its whole label in the first row, where its band starts
    expect(items).toEqual([
      { kind: 'run', run: 2, row: 0, left: 300, width: 60 },
      { kind: 'run', run: 1, row: 0, left: 150, width: 60 },
      { kind: 'run', run: 0, row: 0, left: 0, width: 60 }
    ]);
  });

  it('puts a run nested in another in the second row, and moves a label at the right edge left', () => {
    // Given a run that just started at the right edge, nested in one that started with it
    const anchors = [
      { start: NARROW - 2, wanted: 120 },
      { start: NARROW - 2, wanted: 90 }
    ];
    // When their labels are laid out
    const items = layoutRunLabels(anchors, NARROW);
    // Then the newest is in the first row and the other under it, both moved left to show a few letters
    expect(items).toEqual([
      { kind: 'run', run: 1, row: 0, left: NARROW - 64, width: 64 },
      { kind: 'run', run: 0, row: 1, left: NARROW - 64, width: 64 }
    ]);
  });

  it('leaves out labels that would show only a few letters, and counts them in one "+N" near their bands', () => {
    // Given a sweep of 12 runs starting 11 px apart in a 250 px sidebar's plot, with names 100 px wide
    const anchors = Array.from({ length: 12 }, (_, i) => ({ start: 30 + 11 * i, wanted: 100 }));
    // When their labels are laid out
    const items = layoutRunLabels(anchors, NARROW);
    // Then the labels shown are readable and apart, and every run is labelled or counted once
    expectSound(anchors, NARROW, items);
    // And the newest run is labelled; the runs left out are in "+N" labels, fewer than the runs they count
    expect(items.some(item => item.kind === 'run' && item.run === 11)).toBe(true);
    const more = items.filter(item => item.kind === 'more');
    const left = more.flatMap(item => item.runs);
    expect(left.length).toBeGreaterThanOrEqual(6);
    expect(more.length).toBeLessThan(left.length / 2);
    more.forEach(item => expect(item.width).toBe(MORE_PX));
    // And a "+N" starts near the bands of the runs it counts
    for (const item of more) {
      const nearest = Math.min(...item.runs.map(run => Math.abs(anchors[run].start - item.left)));
      expect(nearest).toBeLessThanOrEqual(LABEL_SHOWN_PX + MORE_PX);
    }
  });

  it('makes room for a "+N" when runs that started before the window all share its left edge', () => {
    // Given five long runs that all began before the charts' window, in the narrowest plot
    const anchors = Array.from({ length: 5 }, () => ({ start: 0, wanted: 80 }));
    // When their labels are laid out
    const items = layoutRunLabels(anchors, 72);
    // Then a run's label gave way so that a "+N" counts the others
    expectSound(anchors, 72, items);
    expect(items.filter(item => item.kind === 'more')).toHaveLength(1);
  });

  it('keeps every layout sound, whatever the runs and the width', () => {
    const next = random(41);
    for (let n = 0; n < 400; n++) {
      // Given up to 20 runs anywhere in a plot 72 to 600 px wide, with names 10 to 200 px wide
      const width = 72 + Math.floor(next() * 528);
      const anchors = Array.from({ length: 1 + Math.floor(next() * 20) }, () => ({
        start: Math.floor(next() * (width + 30)) - 20,
        wanted: 10 + Math.floor(next() * 190)
      })).sort((a, b) => a.start - b.start);
      // When their labels are laid out
      const items = layoutRunLabels(anchors, width);
      // Then no two overlap, all are inside and readable, each run is labelled or counted once
      expectSound(anchors, width, items);
      // And the newest run is always labelled
      expect(items.some(item => item.kind === 'run' && item.run === anchors.length - 1)).toBe(true);
    }
  });
});

/** A uPlot stand-in: a plot `width` px wide showing the last `seconds` before `nowS`. */
function fakePlot(width: number, nowS: number, seconds: number): uPlot {
  const under = document.createElement('div');
  const over = document.createElement('div');
  Object.defineProperty(over, 'clientWidth', { value: width });
  const min = nowS - seconds;
  return {
    scales: { x: { min, max: nowS } },
    under,
    over,
    cursor: { left: -10 },
    valToPos: (value: number) => ((value - min) / seconds) * width
  } as unknown as uPlot;
}

/** A sweep of 12 runs, one every 4 s over the last minute, each lasting 10 s; the last two still run. */
function sweep(nowMs: number): IRun[] {
  return Array.from({ length: 12 }, (_, i) => {
    const id = String(i + 1).padStart(2, '0');
    const run = makeRun(`trial-${id}`, nowMs - 56_000 + 4000 * i, i >= 10 ? 'RUNNING' : 'FINISHED');
    return {
      ...run,
      run_name: `lr-sweep-trial-${id}`,
      end_ms: i >= 10 ? null : run.start_ms + 10_000
    };
  });
}

describe('drawRuns and nameRunsAt', () => {
  const nowMs = 1_800_000_000_000;

  it('labels what fits, counts the rest in "+N" labels that name them, and names a hovered band', () => {
    // Given a 250 px sidebar's chart over the last minute, with a sweep of 12 runs
    const plot = fakePlot(NARROW, nowMs / 1000, 60);
    const runs = sweep(nowMs);
    // When the runs are drawn with labels
    drawRuns(plot, runs, () => undefined, true, trans);
    // Then each run has a band, and is labelled or counted in exactly one "+N", which names it on hover
    expect(plot.under.querySelectorAll('.jp-Air-run-band')).toHaveLength(12);
    const labels = [...plot.over.querySelectorAll<HTMLElement>('.jp-Air-run-label')];
    const more = labels.filter(label => label.classList.contains('jp-Air-run-more'));
    const named = labels.flatMap(label =>
      (label.dataset.runId ?? label.dataset.runIds ?? '').split(' ')
    );
    expect(named.sort()).toEqual(runs.map(run => run.run_id).sort());
    expect(more.length).toBeGreaterThan(0);
    for (const label of more) {
      const ids = label.dataset.runIds!.split(' ');
      expect(label.textContent).toBe(`+${ids.length}`);
      ids.forEach(id => expect(label.title).toContain(`lr-sweep-${id} · `));
    }
    // When the pointer is over the band of a run without a label of its own
    const id = more[0].dataset.runIds!.split(' ')[0];
    const band = plot.under.querySelector<HTMLElement>(`.jp-Air-run-band[data-run-id="${id}"]`)!;
    plot.cursor.left = parseFloat(band.style.left) + 1;
    nameRunsAt(plot);
    // Then the chart's tooltip names it, with its status and duration
    expect(plot.over.title).toMatch(new RegExp(`(^|\\n)lr-sweep-${id} · finished · 10\\.0s`));
    // When the pointer leaves the chart, Then the tooltip goes
    plot.cursor.left = -10;
    nameRunsAt(plot);
    expect(plot.over.hasAttribute('title')).toBe(false);
  });

  it('draws no labels on the charts after the first', () => {
    // Given a chart that is not the first
    const plot = fakePlot(NARROW, nowMs / 1000, 60);
    // When the sweep is drawn without labels
    drawRuns(plot, sweep(nowMs), () => undefined, false, trans);
    // Then its bands are shaded and named on hover, with no labels
    expect(plot.under.querySelectorAll('.jp-Air-run-band')).toHaveLength(12);
    expect(plot.over.querySelectorAll('.jp-Air-run-label')).toHaveLength(0);
    plot.cursor.left = NARROW - 1;
    nameRunsAt(plot);
    expect(plot.over.title.split('\n')[0]).toMatch(/^lr-sweep-trial-12 · running · 12\.0s$/);
  });
});
