/**
 * The Experiment panel's Schedules against a real server: a schedule recorded from a terminal shows without
 * Refresh, in words and in its time zone; Pause and Resume act at once; Run now asks, then starts its job;
 * Run workload… on a file with a schedule records it.
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import { EXPERIMENT_AIR_HOME, UI_ROOT } from '../playwright.config';
import { airCommand, widenLeftSidebar } from './helpers';

const EXPERIMENT_PANEL = '#jupyter-air-experiment-panel';
const LEFT_TAB = `.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="jupyter-air-experiment-panel"]`;
const NAME = 'ui-nightly-eval';

const NIGHTLY = `experiment_name: ${NAME}
command: python -c "print('evaluated')"
compute: {num_accelerators: 0}
schedule:
  quartz_cron_expression: "0 0 2 ? * 2-6"
  timezone_id: Europe/Lisbon
`;

test('lists a schedule from a terminal, pauses and resumes it, and runs it now once confirmed', async ({
  page
}, testInfo) => {
  test.setTimeout(180_000);
  // Given the Experiment panel open in a 250 px sidebar, and a weekday nightly schedule recorded from a terminal
  await page.locator(LEFT_TAB).click();
  const panel = page.locator(EXPERIMENT_PANEL);
  await expect(panel).toBeVisible();
  await widenLeftSidebar(page, 250);
  const folder = fs.mkdtempSync(path.join(UI_ROOT, 'schedule-'));
  fs.writeFileSync(path.join(folder, 'nightly.yaml'), NIGHTLY);
  airCommand(EXPERIMENT_AIR_HOME, folder, 'run', '-f', 'nightly.yaml');
  const air = (...args: string[]) =>
    JSON.parse(airCommand(EXPERIMENT_AIR_HOME, folder, ...args, '-o', 'json'));

  // Then the panel lists it without Refresh: in words, its time zone, its next fire there, never fired
  const row = panel.locator(`.jp-Air-schedule[data-schedule="${NAME}"]`);
  await expect(row).toBeVisible({ timeout: 30_000 });
  await expect(row.locator('.jp-Air-schedule-words')).toHaveText('At 02:00, Monday through Friday');
  await expect(row.locator('.jp-Air-schedule-zone')).toHaveText('Europe/Lisbon');
  await expect(row.locator('.jp-Air-schedule-next')).toContainText('02:00');
  await expect(row.locator('.jp-Air-schedule-last')).toHaveText('never fired');

  // When Pause is clicked, Then it is paused with no next fire, as `air schedules get` says too
  await row.locator('.jp-Air-schedule-pause').click();
  await expect(row).toHaveAttribute('data-status', 'PAUSED');
  await expect(row.locator('.jp-Air-badge')).toHaveText('paused');
  await expect(row.locator('.jp-Air-schedule-next')).toHaveText('next: none while paused');
  expect(air('schedules', 'get', NAME).pause_status).toBe('PAUSED');

  // When Run now is clicked and the question dismissed, Then nothing fired
  await row.locator('.jp-Air-schedule-run').click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-Dialog-header')).toHaveText(`Run schedule ${NAME} now?`);
  await dialog.locator('.jp-mod-reject').click();
  expect(air('schedules', 'get', NAME).fires).toEqual([]);

  // When Run now is clicked and confirmed
  await row.locator('.jp-Air-schedule-run').click();
  await dialog.locator('.jp-mod-accept').click();
  // Then its job starts, shown under Workloads, and the schedule's last run follows it to its end
  const fired = () =>
    air('schedules', 'get', NAME).fires.map((f: { job_run_id: string }) => f.job_run_id);
  await expect.poll(fired, { timeout: 30_000 }).toEqual([expect.stringMatching(/^job-/)]);
  const job = panel.locator(`.jp-Air-job[data-job-id="${fired()[0]}"]`);
  await expect(job).toHaveClass(/jp-mod-revealed/);
  const last = row.locator('.jp-Air-schedule-last');
  await expect(last.locator('a')).toHaveText('succeeded', { timeout: 60_000 });
  await expect(last.locator('a')).toHaveAttribute(
    'href',
    /\/jupyter-air\/runs\/[0-9a-f]{32}\/open$/
  );
  // And it is still paused: Run now does not change its timetable
  await expect(row).toHaveAttribute('data-status', 'PAUSED');

  // When Resume is clicked, Then it fires again from its next weekday 02:00
  await row.locator('.jp-Air-schedule-pause').click();
  await expect(row).toHaveAttribute('data-status', 'UNPAUSED');
  await expect(row.locator('.jp-Air-schedule-next')).toContainText('02:00');
  await panel
    .locator('.jp-Air-schedules-section')
    .screenshot({ path: testInfo.outputPath('experiment-schedules.png') });
  airCommand(EXPERIMENT_AIR_HOME, folder, 'schedules', 'delete', NAME);
});

test('Run workload… on a file with a schedule records it, says so, and lists it', async ({
  page,
  tmpPath
}, testInfo) => {
  test.setTimeout(120_000);
  // Given a workload file with a paused schedule in the file browser
  const name = 'ui-weekly-report';
  const weekly = NIGHTLY.replace(NAME, name).replace(
    'timezone_id',
    'pause_status: PAUSED\n  timezone_id'
  );
  await page.contents.uploadContent(weekly, 'text', `${tmpPath}/weekly.yaml`);
  await page.filebrowser.openDirectory(tmpPath);

  // When Run workload… is chosen on it
  await page
    .locator('.jp-DirListing-item', { has: page.locator('text="weekly.yaml"') })
    .click({ button: 'right' });
  await page.locator('.lm-Menu-item[data-command="jupyter-air:run-workload"]').click();

  // Then a notification says the schedule was created and nothing runs now
  const toast = page.locator('.Toastify__toast', { hasText: `Schedule ${name} created` });
  await expect(toast).toBeVisible({ timeout: 30_000 });
  await expect(toast).toContainText('nothing runs now; it is paused: resume it under Schedules');
  await toast.screenshot({ path: testInfo.outputPath('schedule-run-workload.png') });
  // And its Open in panel shows the Experiment panel, which lists it, paused, and no job started
  await toast.locator('.jp-toast-button', { hasText: 'Open in panel' }).click();
  const row = page.locator(`${EXPERIMENT_PANEL} .jp-Air-schedule[data-schedule="${name}"]`);
  await expect(row).toHaveAttribute('data-status', 'PAUSED', { timeout: 30_000 });
  const folder = fs.mkdtempSync(path.join(UI_ROOT, 'schedule-'));
  const listed = JSON.parse(
    airCommand(EXPERIMENT_AIR_HOME, folder, 'list', '--all-status', '-o', 'json')
  );
  expect(listed.filter((j: { experiment_name: string }) => j.experiment_name === name)).toEqual([]);
  airCommand(EXPERIMENT_AIR_HOME, folder, 'schedules', 'delete', name);
});
