/** Run labels on the GPU charts with 12 overlapping runs at a 250 px sidebar: apart, readable, every run named. */
import { expect, test } from '@jupyterlab/galata';

import { PANEL, SIDEBAR_TAB, widenRightSidebar } from './helpers';
import { misplacedLabels, RUNS, seedRuns } from './layoutRuns';

test.beforeAll(async ({ playwright }, testInfo) => {
  test.setTimeout(120_000);
  await seedRuns(playwright, testInfo);
});

test('12 runs at a 250 px sidebar: labels apart and readable, the rest in "+N", a hovered band names its run', async ({
  page
}, testInfo) => {
  // Given the panel open in a 250 px right sidebar, its charts shading 12 overlapping runs
  await page.locator(SIDEBAR_TAB).click();
  const panel = page.locator(PANEL);
  await expect(panel.locator('.jp-Air-chart canvas')).toHaveCount(3);
  await widenRightSidebar(page, 250);
  await expect
    .poll(async () => Math.round((await panel.boundingBox())?.width ?? 0))
    .toBeGreaterThanOrEqual(246);
  const chart = panel.locator('.jp-Air-chart-utilization');
  const bands = chart.locator('.jp-Air-run-band');
  await expect(bands.nth(RUNS.length - 1)).toBeAttached({ timeout: 90_000 });
  await expect(chart.locator('.jp-Air-run-label').first()).toBeVisible();

  // Then no two labels (nor "+N" labels) overlap, and none reaches out of the chart
  expect(await misplacedLabels(panel)).toEqual([]);
  // And each label shows its whole name or at least a few letters
  const cramped = await chart
    .locator('.jp-Air-run-label')
    .evaluateAll(labels =>
      labels
        .filter(label => label.clientWidth < Math.min(label.scrollWidth, 50))
        .map(label => `${label.textContent} (${label.clientWidth} px)`)
    );
  expect(cramped).toEqual([]);
  // And every run shaded is labelled or counted in one "+N", the same draw
  const { shaded, named } = await chart.evaluate(node => ({
    shaded: [...node.querySelectorAll<HTMLElement>('.jp-Air-run-band')].map(b => b.dataset.runId!),
    named: [...node.querySelectorAll<HTMLElement>('.jp-Air-run-label')].flatMap(label =>
      (label.dataset.runId ?? label.dataset.runIds ?? '').split(' ')
    )
  }));
  expect(shaded.length).toBeGreaterThanOrEqual(RUNS.length);
  expect(named.sort()).toEqual(shaded.sort());
  await expect(chart.locator('.jp-Air-run-more').first()).toHaveText(/^\+\d+$/);
  await chart.screenshot({ path: testInfo.outputPath('gpu-run-labels-250px.png') });

  // When the pointer rests on each run's band, below the labels
  const answer = await page.request.get(`/jupyter-air/runs?from=0&to=${Date.now()}`);
  const names = new Map<string, string>(
    ((await answer.json()).runs as { run_id: string; run_name: string }[]).map(run => [
      run.run_id,
      run.run_name
    ])
  );
  const plot = (await chart.locator('.u-over').boundingBox())!;
  const y = plot.y + plot.height - 6;
  for (const id of shaded) {
    const name = names.get(id)!;
    // Then the tooltip there names the run, with its status and duration (the charts move on as samples come)
    await expect
      .poll(
        async () => {
          const band = (await chart
            .locator(`.jp-Air-run-band[data-run-id="${id}"]`)
            .boundingBox())!;
          const x = band.x + Math.min(band.width / 2, Math.max(1, band.width - 2));
          await page.mouse.move(x, y);
          return page.evaluate(
            ([px, py]) =>
              document.elementFromPoint(px, py)?.closest('[title]')?.getAttribute('title') ?? '',
            [x, y]
          );
        },
        { message: `hovering the band of ${name}`, timeout: 15_000 }
      )
      .toMatch(new RegExp(`(^|\\n)${escapeRegExp(name)} · [a-z]+ · \\S+`));
  }
  expect(
    await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)
  ).toBeUndefined();
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
