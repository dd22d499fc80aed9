/**
 * Runs done while you were away, against a real server: a `%%air_run` cell of an open notebook that runs
 * past the threshold (3 s here) ends with one notification saying how it ended, its metric and its link.
 */
import { expect, galata, test } from '@jupyterlab/galata';

import { openNotebook } from './helpers';

test.use({
  mockSettings: {
    ...galata.DEFAULT_SETTINGS,
    'jupyter-air:experiment': { doneNotificationMinutes: 0.05 }
  }
});

const LONG_CELL = `%%air_run --run-name overnight-eval
import time, mlflow
mlflow.log_metric("eval_accuracy", 0.875)
time.sleep(5)`;

test('a long cell run that ends is notified, with its status, metric and run link', async ({
  page,
  tmpPath
}, testInfo) => {
  test.setTimeout(180_000);
  // Given an open notebook whose tracked cell runs for 5 s, past the 3-s threshold
  await openNotebook(page, `${tmpPath}/done.ipynb`, ['%load_ext jupyter_air', LONG_CELL]);
  await page.notebook.runCell(0);
  // When it runs and ends, with nobody looking at the Experiment panel
  await page.notebook.runCell(1);
  // Then, within the watch's 30-s read, one notification says it finished, with its metric and link
  const toast = page.locator('.Toastify__toast', { hasText: 'overnight-eval finished after' });
  await expect(toast).toHaveCount(1, { timeout: 60_000 });
  await expect(toast).toContainText('eval_accuracy: 0.875');
  await expect(toast.getByRole('button', { name: 'Open run' })).toBeVisible();
  await toast.screenshot({ path: testInfo.outputPath('run-done-notification.png') });
});
