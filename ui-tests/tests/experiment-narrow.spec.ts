/**
 * The Experiment panel in a 250 px sidebar (about JupyterLab's default) against a real server: sections collapse to
 * a header with their count, a schedule's long name shows whole and its Run now stays on one line; and Run
 * workload… with the panel closed says which job it started, with a Logs button.
 */
import { expect, test } from '@jupyterlab/galata';
import type { Locator } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

import { EXPERIMENT_AIR_HOME, UI_ROOT } from '../playwright.config';
import { airCommand, widenLeftSidebar } from './helpers';

const EXPERIMENT_PANEL = '#jupyter-air-experiment-panel';
const LEFT_TAB = `.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="jupyter-air-experiment-panel"]`;
const RUN_WORKLOAD = '.lm-Menu-item[data-command="jupyter-air:run-workload"]';
const WIDTH = 250;

/** A schedule named as long as they get, firing every minute: paused, so that it never fires here. */
const LONG_NAME = 'every-minute-feature-store-refresh';
const EVERY_MINUTE = `experiment_name: ${LONG_NAME}
command: python -c "print('refreshed')"
compute: {num_accelerators: 0}
schedule:
  quartz_cron_expression: "0 * * ? * *"
  timezone_id: UTC
  pause_status: PAUSED
`;

const HELLO = `experiment_name: ui-narrow-hello
command: python -c "print('hello')"
compute: {num_accelerators: 0}
`;

/** Prints a line every half second for a minute. */
const STEPS = `import time
for i in range(120):
    print(f"workload step {i}", flush=True)
    time.sleep(0.5)
`;

/** Elements whose content is wider than their box (cut off, or hidden behind an ellipsis). */
async function cutOff(elements: Locator): Promise<string[]> {
  return elements.evaluateAll(nodes =>
    nodes.filter(n => n.scrollWidth > n.clientWidth + 1).map(n => n.textContent ?? '')
  );
}

test(`at a ${WIDTH} px sidebar, sections collapse to their count; a schedule's name is whole, Run now one line`, async ({
  page
}, testInfo) => {
  test.setTimeout(120_000);
  // Given a job and an every-minute schedule with a long name, recorded from a terminal
  const folder = fs.mkdtempSync(path.join(UI_ROOT, 'narrow-'));
  fs.writeFileSync(path.join(folder, 'hello.yaml'), HELLO);
  fs.writeFileSync(path.join(folder, 'every-minute.yaml'), EVERY_MINUTE);
  airCommand(EXPERIMENT_AIR_HOME, folder, 'run', '-f', 'hello.yaml');
  airCommand(EXPERIMENT_AIR_HOME, folder, 'run', '-f', 'every-minute.yaml');
  // And the Experiment panel open in a 250 px left sidebar
  await page.locator(LEFT_TAB).click();
  const panel = page.locator(EXPERIMENT_PANEL);
  await expect(panel).toBeVisible();
  await widenLeftSidebar(page, WIDTH);
  await expect
    .poll(async () => Math.round((await panel.boundingBox())?.width ?? 0))
    .toBeGreaterThanOrEqual(WIDTH - 4);
  expect((await panel.boundingBox())?.width ?? 0).toBeLessThanOrEqual(WIDTH + 4);
  const row = panel.locator(`.jp-Air-schedule[data-schedule="${LONG_NAME}"]`);
  await expect(row).toBeVisible({ timeout: 30_000 });

  // Then the schedule's name shows whole, and says itself on hover too
  const name = row.locator('.jp-Air-schedule-name');
  await expect(name).toHaveText(LONG_NAME);
  await expect(name).toHaveAttribute('title', LONG_NAME);
  expect(await cutOff(name)).toEqual([]);
  const panelBox = (await panel.boundingBox())!;
  const nameBox = (await name.boundingBox())!;
  expect(nameBox.x + nameBox.width).toBeLessThanOrEqual(panelBox.x + panelBox.width);
  // And Run now is one line, as high as the one-word Resume next to it, both inside the panel
  const runNow = (await row.locator('.jp-Air-schedule-run').boundingBox())!;
  const resume = (await row.locator('.jp-Air-schedule-pause').boundingBox())!;
  expect(runNow.height).toBeLessThanOrEqual(resume.height + 1);
  expect(runNow.x + runNow.width).toBeLessThanOrEqual(panelBox.x + panelBox.width);
  // And nothing in the panel scrolls sideways
  expect(await cutOff(panel)).toEqual([]);

  // And each section's header counts what it lists
  const jobs = panel.locator('.jp-Air-jobs-section');
  await expect(jobs.locator('.jp-Air-job').first()).toBeVisible();
  const listed = await jobs.locator('.jp-Air-job').count();
  const count = jobs.locator('.jp-Air-section-count');
  await expect(count).toHaveText(String(listed));
  const schedules = await panel.locator('.jp-Air-schedule').count();
  await expect(panel.locator('.jp-Air-schedules-section .jp-Air-section-count')).toHaveText(
    String(schedules)
  );
  // When Workloads' header is clicked
  const toggle = jobs.locator('.jp-Air-section-toggle');
  await toggle.click();
  // Then its jobs are hidden, its header keeps the count, and the schedules come up right under it
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await expect(jobs.locator('.jp-Air-jobs')).toBeHidden();
  await expect(count).toBeVisible();
  await expect(count).toHaveText(String(listed));
  expect((await jobs.boundingBox())!.height).toBeLessThan(40);
  await expect(row).toBeInViewport();
  // And the browser keeps it collapsed for the next page
  expect(
    await page.evaluate(() => localStorage.getItem('jupyter-air:experiment-collapsed-sections'))
  ).toBe('["workloads"]');
  await page.mouse.move(0, 0);
  await panel.screenshot({ path: testInfo.outputPath('experiment-sections-250px.png') });
  await panel
    .locator('.jp-Air-schedules-section')
    .screenshot({ path: testInfo.outputPath('experiment-schedules-250px.png') });
  // When it is clicked again, Then the jobs show again
  await toggle.click();
  await expect(jobs.locator('.jp-Air-job').first()).toBeVisible();
  airCommand(EXPERIMENT_AIR_HOME, folder, 'schedules', 'delete', LONG_NAME);
});

test('Run workload… with the Experiment panel closed names the job in a notification; its Logs opens the log', async ({
  page,
  tmpPath
}, testInfo) => {
  test.setTimeout(120_000);
  // Given a workload file in the file browser, the Experiment panel not shown
  await page.contents.uploadContent(STEPS, 'text', `${tmpPath}/steps.py`);
  await page.contents.uploadContent(
    'experiment_name: ui-notified-workload\ncommand: python steps.py\ncompute: {num_accelerators: 0}\n',
    'text',
    `${tmpPath}/train.yaml`
  );
  await page.filebrowser.openDirectory(tmpPath);
  const panel = page.locator(EXPERIMENT_PANEL);
  await expect(panel).toBeHidden();

  // When Run workload… is chosen on it
  await page
    .locator('.jp-DirListing-item', { has: page.locator('text="train.yaml"') })
    .click({ button: 'right' });
  await page.locator(RUN_WORKLOAD).click();

  // Then a notification names the job started from the file, with Logs and Open in panel
  const toast = page.locator('.Toastify__toast', { hasText: 'started from' });
  await expect(toast).toBeVisible({ timeout: 30_000 });
  const jobRunId = /job-[0-9a-z]+/.exec((await toast.textContent()) ?? '')?.[0] ?? '';
  expect(jobRunId).not.toBe('');
  await expect(toast).toContainText(`Job ${jobRunId} started from train.yaml.`);
  await expect(toast.locator('.jp-toast-button')).toHaveText(['Logs', 'Open in panel']);
  // And the file browser stays where it was
  await expect(page.locator('#filebrowser')).toBeVisible();
  await expect(panel).toBeHidden();
  await toast.screenshot({ path: testInfo.outputPath('run-workload-notification.png') });

  // When its Logs is clicked, Then that job's log opens and fills
  await toast.locator('.jp-toast-button', { hasText: 'Logs' }).click();
  const log = page.locator(`#jupyter-air-logs-${jobRunId}--1-0 .jp-Air-log-text`);
  await expect(log).toContainText('workload step 3', { timeout: 60_000 });
  const folder = fs.mkdtempSync(path.join(UI_ROOT, 'narrow-'));
  airCommand(EXPERIMENT_AIR_HOME, folder, 'cancel', jobRunId);
});
