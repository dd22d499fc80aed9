/**
 * Sharing the notebook's experiment from the Experiment panel, against a team's real MLflow server with its
 * authentication app (JupyterLab tracks there as alice): Share asks whom and how much, and bob can then read it.
 */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';
import * as path from 'path';

import { SHARING_DIR } from '../playwright.config';
import { openNotebook } from './helpers';

const EXPERIMENT_PANEL = '#jupyter-air-experiment-panel';
const LEFT_TAB = '.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="jupyter-air-experiment-panel"]';

/** A tracked cell: its run creates the notebook's experiment on the tracking server, owned by alice. */
const CELL = `%%air_run --run-name baseline
import mlflow
mlflow.log_metric("accuracy", 0.9)`;

test("shares the notebook's experiment with bob, who can then read it", async ({
  page,
  tmpPath
}, testInfo) => {
  test.setTimeout(180_000);
  const mlflow = JSON.parse(fs.readFileSync(path.join(SHARING_DIR!, 'mlflow.json'), 'utf8'));
  const asBob = {
    Authorization: 'Basic ' + Buffer.from(`bob:${mlflow.bob_password}`).toString('base64')
  };
  // Given a notebook whose tracked cell ran, and the Experiment panel open on it
  await openNotebook(page, `${tmpPath}/share.ipynb`, ['%load_ext jupyter_air', CELL]);
  await page.notebook.runCell(0);
  await page.locator(LEFT_TAB).click();
  const panel = page.locator(EXPERIMENT_PANEL);
  await page.notebook.runCell(1);
  await expect(panel.locator('.jp-Air-run[data-status="FINISHED"]')).toHaveCount(1, {
    timeout: 120_000
  });
  const experiment = (await panel.locator('.jp-Air-experiment-name').textContent())!;
  expect(experiment).toMatch(/^\/Users\/.+\/share$/);
  const readable = async () =>
    (
      await page.request.get(`${mlflow.uri}/api/2.0/mlflow/experiments/get-by-name`, {
        params: { experiment_name: experiment },
        headers: asBob
      })
    ).status();
  expect(await readable()).toBe(403);

  // When Share… is clicked, bob is named with "Can read and log runs", and the dialog is confirmed
  await panel.locator('.jp-Air-share').click();
  const dialog = page.locator('.jp-Dialog');
  await expect(dialog.locator('.jp-Dialog-header')).toHaveText(`Share ${experiment}`);
  await dialog.locator('input').fill('bob');
  await dialog.locator('select').selectOption('EDIT');
  await dialog.screenshot({ path: testInfo.outputPath('share-dialog.png') });
  await dialog.getByRole('button', { name: 'Share' }).click();

  // Then JupyterLab says so, and bob can read the experiment on the tracking server
  await expect(
    page.locator('.Toastify__toast', { hasText: `bob has EDIT on ${experiment}` })
  ).toBeVisible();
  expect(await readable()).toBe(200);

  // When the grant is taken back from the same dialog, Then bob is refused again
  await panel.locator('.jp-Air-share').click();
  await dialog.locator('input').fill('bob');
  await dialog.locator('select').selectOption('');
  await dialog.getByRole('button', { name: 'Share' }).click();
  await expect(
    page.locator('.Toastify__toast', { hasText: `bob no longer has a grant on ${experiment}` })
  ).toBeVisible();
  expect(await readable()).toBe(403);
});
