/**
 * The GPU panel's layout at a narrow (250 px, about JupyterLab's default) and a wide (500 px) sidebar,
 * with overlapping runs shaded and labelled on the charts.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';
import { execFileSync } from 'child_process';

import { SIMULATED_AIR_HOME } from '../playwright.config';
import { PANEL, SIDEBAR_TAB, widenRightSidebar } from './helpers';

const HOSTILE = '<img src=x onerror="window.__pwned=1">';

/**
 * Runs with long names, nested and overlapping, two still running: name, start and end in seconds
 * before the newest GPU sample.
 */
const RUNS: [string, number, number | null][] = [
  ['preprocess-imagenet-shards-train-split', 14, 3],
  [`resnet50-lr-sweep-warmup-cosine ${HOSTILE}`, 12, null],
  ['eval-top5-accuracy-holdout-set', 10, 8],
  ['nested-call-rank0-gloo-allreduce', 9, 6],
  ['checkpoint-upload-to-bucket', 7, 5],
  ['tokenizer-warmup-and-cache-fill', 4, null]
];

/** Record runs in the server's store as notebook calls do (`once`: unless the experiment has runs already). */
function createRuns(
  runs: { name: string; start_ms: number; end_ms: number | null }[],
  once = false
): void {
  const code = [
    'import json, sys',
    'from jupyter_air.tracking.store import client, ensure_experiment',
    'experiment = ensure_experiment("layout")',
    '# A worker started again after a failed test finds them recorded already.',
    'if sys.argv[2] == "once" and client().search_runs([experiment], max_results=1):',
    '    sys.exit(0)',
    'for r in json.loads(sys.argv[1]):',
    '    tags = {"air.source": "magic"}',
    '    run = client().create_run(experiment, start_time=r["start_ms"], tags=tags, run_name=r["name"])',
    '    if r["end_ms"] is not None:',
    '        client().set_terminated(run.info.run_id, end_time=r["end_ms"])'
  ].join('\n');
  const args = ['-c', code, JSON.stringify(runs), once ? 'once' : 'always'];
  execFileSync(process.env.JUPYTER_AIR_UI_PYTHON ?? 'python', args, {
    env: { ...process.env, AIR_HOME: SIMULATED_AIR_HOME, MLFLOW_TRACKING_URI: '' }
  });
}

test.beforeAll(async ({ playwright }, testInfo) => {
  test.setTimeout(120_000);
  // The server samples every 2 s: wait until it holds the 16 s the runs span, then record them.
  const http = await playwright.request.newContext({ baseURL: testInfo.project.use.baseURL });
  let timestamps: number[] = [];
  await expect
    .poll(
      async () => {
        const answer = await http.get('/jupyter-air/gpu');
        timestamps = (await answer.json()).timestamps_ms;
        return timestamps[timestamps.length - 1] - timestamps[0];
      },
      { timeout: 60_000, intervals: [2000] }
    )
    .toBeGreaterThan(16_000);
  await http.dispose();
  // Within the GPU samples the server holds: the charts ask for the runs active since their oldest one.
  const newest = timestamps[timestamps.length - 1];
  const runs = RUNS.map(([name, start, end]) => ({
    name,
    start_ms: newest - start * 1000,
    end_ms: end === null ? null : newest - end * 1000
  }));
  createRuns(runs, true);
});

/** Elements whose content is wider than their box (cut off, or hidden behind an ellipsis). */
async function cutOff(elements: Locator): Promise<string[]> {
  return elements.evaluateAll(nodes =>
    nodes.filter(n => n.scrollWidth > n.clientWidth + 1).map(n => n.textContent ?? '')
  );
}

/** Legend entries broken over several lines (an entry's label and value must stay together). */
async function brokenLegendEntries(panel: Locator): Promise<string[]> {
  return panel.locator('.u-legend .u-series').evaluateAll(rows =>
    rows
      .filter(row => {
        const lineHeight = parseFloat(getComputedStyle(row).lineHeight) || 16;
        return row.getBoundingClientRect().height > lineHeight * 1.6;
      })
      .map(row => row.textContent ?? '')
  );
}

/** Each chart's legend as lines of entries (the entries whose tops are level share a line). */
async function legendLines(panel: Locator): Promise<string[][][]> {
  return panel.locator('.u-legend').evaluateAll(legends =>
    legends.map(legend => {
      const lines = new Map<number, string[]>();
      legend.querySelectorAll('.u-series').forEach(entry => {
        const top = Math.round(entry.getBoundingClientRect().top);
        const name = entry.querySelector('.u-label')?.textContent ?? '';
        lines.set(top, [...(lines.get(top) ?? []), name]);
      });
      return [...lines.entries()].sort((a, b) => a[0] - b[0]).map(([, names]) => names);
    })
  );
}

/** Run labels that reach out of their chart, or cover another label. */
async function misplacedLabels(panel: Locator): Promise<string[]> {
  return panel.locator('.jp-Air-chart-utilization .u-over').evaluate(over => {
    const plot = over.getBoundingClientRect();
    const labels = [...over.querySelectorAll('.jp-Air-run-label')].map(label => ({
      name: label.textContent ?? '',
      box: label.getBoundingClientRect()
    }));
    const outside = labels
      .filter(({ box }) => box.left < plot.left - 0.5 || box.right > plot.right + 0.5)
      .map(({ name }) => `outside: ${name}`);
    const covering = labels.flatMap((a, i) =>
      labels
        .slice(i + 1)
        .filter(
          b =>
            a.box.left < b.box.right - 0.5 &&
            b.box.left < a.box.right - 0.5 &&
            a.box.top < b.box.bottom - 0.5 &&
            b.box.top < a.box.bottom - 0.5
        )
        .map(b => `covering: ${a.name} / ${b.name}`)
    );
    return [...outside, ...covering];
  });
}

for (const width of [250, 500]) {
  test(`the panel lays out at a ${width} px sidebar: names whole, legends in lines, run labels apart`, async ({
    page
  }, testInfo) => {
    // Given the panel open in a right sidebar `width` px wide, with six overlapping runs on its charts
    await page.locator(SIDEBAR_TAB).click();
    const panel = page.locator(PANEL);
    await expect(panel.locator('.jp-Air-chart canvas')).toHaveCount(3);
    await widenRightSidebar(page, width);
    await expect
      .poll(async () => Math.round((await panel.boundingBox())?.width ?? 0))
      .toBeGreaterThanOrEqual(width - 4);
    expect((await panel.boundingBox())?.width ?? 0).toBeLessThanOrEqual(width + 4);
    const bands = panel.locator('.jp-Air-chart-utilization .jp-Air-run-band');
    // (The server's first read of its MLflow store may take a while on a busy machine.)
    await expect(bands.nth(RUNS.length - 1)).toBeAttached({ timeout: 90_000 });
    await expect(panel.locator('.jp-Air-run-label').first()).toBeVisible();
    // And a run that has just started, at the charts' right edge
    const edge = `just-started-at-${width}px`;
    createRuns([{ name: edge, start_ms: Date.now() - 1000, end_ms: null }]);
    // (the newest run is labelled first, so its label always shows)
    await expect(panel.locator('.jp-Air-run-label', { hasText: edge })).toBeVisible({
      timeout: 30_000
    });
    await expect(panel.locator('.u-legend .u-series').first()).toBeVisible();
    // When no sample is hovered, Then each legend has the time on a line, and the two GPUs on the next
    const expected = [['Time'], ['GPU 0', 'GPU 1']];
    expect.soft(await legendLines(panel)).toEqual([expected, expected, expected]);
    // When a sample is hovered
    const chart = panel.locator('.jp-Air-chart .u-over').first();
    const box = await chart.boundingBox();
    await page.mouse.move(box!.x + box!.width - 20, box!.y + box!.height - 10);
    // Then no GPU name, value or heading is cut off, nothing scrolls sideways, no legend entry breaks
    expect(
      await cutOff(panel.locator('.jp-Air-device-title > *, .jp-Air-device-values > span'))
    ).toEqual([]);
    expect.soft(await cutOff(panel.locator('.jp-Air-header-main > *'))).toEqual([]);
    expect.soft(await cutOff(panel)).toEqual([]);
    expect.soft(await brokenLegendEntries(panel)).toEqual([]);
    expect.soft(await legendLines(panel)).toEqual([expected, expected, expected]);
    for (const canvas of await panel.locator('.jp-Air-chart canvas').all()) {
      expect.soft((await canvas.boundingBox())!.width).toBeLessThanOrEqual(width);
    }
    // And the runs' labels stay inside the chart, off each other, their names as text
    expect.soft(await misplacedLabels(panel)).toEqual([]);
    expect.soft(await panel.locator('.jp-Air-run-label').count()).toBeGreaterThanOrEqual(3);
    expect.soft(await panel.locator('.jp-Air-charts img').count()).toBe(0);
    await panel.screenshot({ path: testInfo.outputPath(`gpu-panel-${width}px.png`) });
  });
}
