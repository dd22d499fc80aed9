/**
 * Run workload… from the file browser's context menu, against a real server: a refused file lists its
 * errors, a valid one starts an `air` job that a notification names, shown in the Experiment panel with its log.
 */
import { expect, test } from '@jupyterlab/galata';

const EXPERIMENT_PANEL = '#jupyter-air-experiment-panel';
const RUN_WORKLOAD = '.lm-Menu-item[data-command="jupyter-air:run-workload"]';

/** Prints a line every half second for a minute. */
const STEPS = `import time
for i in range(120):
    print(f"workload step {i}", flush=True)
    time.sleep(0.5)
`;

const GOOD = `experiment_name: ui-run-workload
command: python steps.py
compute: {num_accelerators: 0}
`;

/** A misspelt key and a count that is not one: two errors at once. */
const BAD = `experiment_name: ui-bad-workload
comand: python steps.py
max_retries: many
`;

test('Run workload… starts a YAML file as a job and follows it; a bad file lists every error', async ({
  page,
  tmpPath
}, testInfo) => {
  test.setTimeout(180_000);
  // Given a folder with a valid workload file, a bad one and a script
  await page.contents.uploadContent(STEPS, 'text', `${tmpPath}/steps.py`);
  await page.contents.uploadContent(GOOD, 'text', `${tmpPath}/train.yaml`);
  await page.contents.uploadContent(BAD, 'text', `${tmpPath}/bad.yaml`);
  await page.filebrowser.openDirectory(tmpPath);
  const item = (name: string) =>
    page.locator('.jp-DirListing-item', { has: page.locator(`text="${name}"`) });

  // When a Python file is right-clicked, Then Run workload… is not offered
  await item('steps.py').click({ button: 'right' });
  await expect(page.locator('.lm-Menu').first()).toBeVisible();
  await expect(page.locator(RUN_WORKLOAD)).toHaveCount(0);
  await page.keyboard.press('Escape');

  // When Run workload… is chosen on the bad file
  await item('bad.yaml').click({ button: 'right' });
  await page.locator(RUN_WORKLOAD).click();
  // Then a dialog lists each of its errors, naming the file, and no job starts
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-Dialog-header')).toContainText('Workload not started');
  const errors = dialog.locator('.jp-Air-workload-error');
  await expect(errors.first()).toBeVisible();
  expect(await errors.count()).toBeGreaterThanOrEqual(2);
  await expect(errors.first()).toContainText('bad.yaml');
  await dialog
    .locator('.jp-Dialog-content')
    .screenshot({ path: testInfo.outputPath('workload-errors.png') });
  await dialog.locator('.jp-mod-accept').click();

  // When Run workload… is chosen on the valid file, and Open in panel in the notification that names its job
  await item('train.yaml').click({ button: 'right' });
  await page.locator(RUN_WORKLOAD).click();
  const toast = page.locator('.Toastify__toast', { hasText: 'started from train.yaml' });
  await toast.locator('.jp-toast-button', { hasText: 'Open in panel' }).click();
  // Then the Experiment panel shows the new job, marked
  const panel = page.locator(EXPERIMENT_PANEL);
  await expect(panel).toBeVisible();
  const job = panel.locator('.jp-Air-job.jp-mod-revealed');
  await expect(job).toHaveCount(1, { timeout: 30_000 });
  await expect(job.locator('.jp-Air-run-experiment')).toHaveText('ui-run-workload');
  // And its Logs opens its log, which fills
  await job.locator('.jp-Air-job-logs').first().click({ timeout: 30_000 });
  const log = page.locator('.jp-Air-log-widget .jp-Air-log-text');
  await expect(log).toContainText('workload step 3', { timeout: 60_000 });
  await page
    .locator(`${EXPERIMENT_PANEL} .jp-Air-jobs-section`)
    .screenshot({ path: testInfo.outputPath('workload-started.png') });

  // And it can be cancelled from the panel like any job
  await job.locator('.jp-Air-job-cancel').click();
  await page.locator('.jp-Dialog .jp-mod-warn', { hasText: 'Cancel job' }).click();
  await expect(job).toHaveAttribute('data-status', 'CANCELED', { timeout: 60_000 });

  // When Access… is opened on the job, Then it lists this user as its owner
  await job.locator('.jp-Air-job-permissions').click();
  const access = page.locator('.jp-Dialog');
  await expect(access.locator('.jp-Dialog-header')).toContainText('Who may use job-');
  await expect(access.locator('.jp-Air-access-grants tr').first()).toContainText('IS_OWNER');
  await expect(access).toContainText('Your level: IS_OWNER');
  // When a colleague is given Can View (a single-user server has no other user)
  await access.locator('input[aria-label="User or group name"]').fill('bob');
  await access.locator('select[aria-label="Level"]').selectOption('CAN_VIEW');
  await access
    .locator('.jp-Dialog-content')
    .screenshot({ path: testInfo.outputPath('job-access.png') });
  await access.locator('.jp-mod-accept').click();
  // Then the server's reason is shown, and nothing changed
  const refused = page.locator('.jp-Dialog');
  await expect(refused.locator('.jp-Dialog-header')).toContainText('not changed');
  await expect(refused).toContainText("unknown user 'bob'");
  await refused
    .locator('.jp-Dialog-content')
    .screenshot({ path: testInfo.outputPath('job-access-refused.png') });
  await refused.locator('.jp-Dialog-footer button').first().click();
});
