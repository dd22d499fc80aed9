/** The GPU panel's layout at a narrow (250 px, about JupyterLab's default) and a wide (500 px) sidebar. */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';

import { PANEL, SIDEBAR_TAB, widenRightSidebar } from './helpers';

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

for (const width of [250, 500]) {
  test(`the panel lays out at a ${width} px sidebar: names whole, legend entries whole`, async ({
    page
  }, testInfo) => {
    // Given the panel open in a right sidebar `width` px wide
    await page.locator(SIDEBAR_TAB).click();
    const panel = page.locator(PANEL);
    await expect(panel.locator('.jp-Air-chart canvas')).toHaveCount(3);
    await widenRightSidebar(page, width);
    await expect
      .poll(async () => Math.round((await panel.boundingBox())?.width ?? 0))
      .toBeGreaterThanOrEqual(width - 4);
    expect((await panel.boundingBox())?.width ?? 0).toBeLessThanOrEqual(width + 4);
    // When the charts have redrawn at that width with a hovered sample in their legends
    const chart = panel.locator('.jp-Air-chart .u-over').first();
    await expect(panel.locator('.u-legend .u-series').first()).toBeVisible();
    const box = await chart.boundingBox();
    await page.mouse.move(box!.x + box!.width - 20, box!.y + box!.height / 2);
    // Then no GPU name, value or heading is cut off, nothing scrolls sideways, no legend entry breaks
    expect(
      await cutOff(panel.locator('.jp-Air-device-title > *, .jp-Air-device-values > span'))
    ).toEqual([]);
    expect(await cutOff(panel.locator('.jp-Air-header-main > *'))).toEqual([]);
    expect(await cutOff(panel)).toEqual([]);
    expect(await brokenLegendEntries(panel)).toEqual([]);
    for (const canvas of await panel.locator('.jp-Air-chart canvas').all()) {
      expect((await canvas.boundingBox())!.width).toBeLessThanOrEqual(width);
    }
    await panel.screenshot({ path: testInfo.outputPath(`gpu-panel-${width}px.png`) });
  });
}
