/** A notebook trains with @distributed on 2 CPU ranks; the cell links to its MLflow run, which opens. */
import { expect, test } from '@jupyterlab/galata';

import { openNotebook } from './helpers';

const EXPERIMENT = '<b>mnist</b> ddp';

const TRAIN = `from jupyter_air import distributed

@distributed(gpus=2, experiment=${JSON.stringify(EXPERIMENT)}, run_name="baseline")
def train(lr):
    import torch, torch.distributed as dist
    dist.init_process_group("gloo")
    t = torch.ones(1) * (dist.get_rank() + 1)
    dist.all_reduce(t)
    print(f"all_reduce sum = {t.item()}")
    return t.item() * lr

train.distributed(0.1)`;

test('a distributed call links to its MLflow run, which opens in the MLflow UI', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(240_000);
  // Given a notebook that trains on 2 ranks in an experiment whose name holds HTML
  await openNotebook(page, `${tmpPath}/train.ipynb`, [TRAIN]);
  // When the cell runs
  await page.notebook.runCell(0);
  // Then its output shows every rank's lines and the finished run, names as text
  const status = page.locator('.jp-Air-runCard-header');
  await expect(status).toContainText('finished', { timeout: 180_000 });
  await expect(
    page.locator('.jp-OutputArea-output', { hasText: '[rank 1] all_reduce sum = 3.0' })
  ).toBeVisible();
  const experimentLink = status.locator('a').first();
  const runLink = status.locator('a', { hasText: 'baseline' });
  await expect(experimentLink).toHaveText(EXPERIMENT);
  await expect(status.locator('b')).toHaveCount(0);
  const cell = page.locator('.jp-Cell').first();
  await cell.screenshot({ path: test.info().outputPath('distributed-run-output.png') });
  // And the run link is this Jupyter server's route that opens the run in the MLflow UI
  const href = await runLink.getAttribute('href');
  expect(href).toMatch(/\/jupyter-air\/runs\/[0-9a-f]{32}\/open$/);
  // When the link is opened, Then MLflow's UI (started on first use) shows the run
  const mlflow = await page.context().newPage();
  await mlflow.goto(new URL(href!, page.url()).toString(), { timeout: 150_000 });
  await expect(mlflow.getByText('baseline').first()).toBeVisible({ timeout: 60_000 });
  await mlflow.screenshot({ path: test.info().outputPath('mlflow-run.png') });
});
