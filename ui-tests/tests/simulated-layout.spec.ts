/**
 * The GPU panel's layout at a narrow (250 px, about JupyterLab's default) and a wide (500 px) sidebar,
 * with 12 overlapping runs shaded and labelled on the charts (layoutRuns.ts).
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { PANEL, SIDEBAR_TAB, widenRightSidebar } from './helpers';
import { createRuns, misplacedLabels, RUNS, seedRuns } from './layoutRuns';

test.beforeAll(async ({ playwright }, testInfo) => {
  test.setTimeout(120_000);
  await seedRuns(playwright, testInfo);
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

for (const width of [250, 500]) {
  test(`the panel lays out at a ${width} px sidebar: names whole, legends in lines, run labels apart`, async ({
    page
  }, testInfo) => {
    // Given the panel open in a right sidebar `width` px wide, with 12 overlapping runs on its charts
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
