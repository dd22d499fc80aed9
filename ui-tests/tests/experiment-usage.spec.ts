/**
 * GPU use in the GPU panel against a real server (the demo's simulated GPUs): a job that held a GPU counts for its
 * user and its experiment, read from the runs that `air usage` reads; names show as text.
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import { EXPERIMENT_AIR_HOME, UI_ROOT } from '../playwright.config';
import { airCommand, PANEL, SIDEBAR_TAB } from './helpers';

const EXPERIMENT = '<b>usage</b> demo';

test('the GPU panel shows GPU use per user and per experiment, from the runs', async ({
  page
}, testInfo) => {
  test.setTimeout(120_000);
  // Given a job that held one of the demo's GPUs for about 2 seconds, run from a terminal
  const folder = fs.mkdtempSync(path.join(UI_ROOT, 'usage-'));
  fs.writeFileSync(
    path.join(folder, 'gpu.yaml'),
    `experiment_name: ${JSON.stringify(EXPERIMENT)}\ncommand: sleep 2\ncompute: {num_accelerators: 1}\n`
  );
  // (a terminal of this server has its simulated GPU source, as the demo's terminals do)
  process.env.JUPYTER_AIR_GPU_SOURCE = 'simulated';
  try {
    airCommand(EXPERIMENT_AIR_HOME, folder, 'run', '-f', 'gpu.yaml', '--watch');
  } finally {
    delete process.env.JUPYTER_AIR_GPU_SOURCE;
  }
  // When the GPU panel opens
  await page.locator(SIDEBAR_TAB).click();
  const usage = page.locator(PANEL).locator('.jp-Air-gpu-usage');
  // Then its GPU use lists the user's GPU-hours and the total
  await expect(usage.locator('.jp-Air-usage-total')).toBeVisible({ timeout: 30_000 });
  await expect(usage.locator('.jp-Air-usage-row').first().locator('td').nth(1)).toHaveText(
    /^\d+\.\d{3}$/
  );
  // When it is grouped by experiment, Then the job's experiment is a row, its name as text
  await usage.locator('select').selectOption('experiment');
  const row = usage.locator('.jp-Air-usage-row', { hasText: EXPERIMENT });
  await expect(row).toBeVisible({ timeout: 30_000 });
  await expect(usage.locator('b')).toHaveCount(0);
  expect(Number(await row.locator('td').nth(1).textContent())).toBeGreaterThan(0);
  await usage.screenshot({ path: testInfo.outputPath('gpu-usage-panel.png') });
});
