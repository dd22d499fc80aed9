/** A run link opened by a logged-out browser: through Jupyter's login, to the run's page in the MLflow UI. */
import { expect, test } from '@playwright/test';
import { execFileSync } from 'child_process';

import { LINKS_AIR_HOME, LINKS_TOKEN } from '../playwright.config';

/** Record a run in the server's store, as a notebook call does; returns its run and experiment ids. */
function createRun(): { runId: string; experimentId: string } {
  const code = [
    'from jupyter_air.tracking.store import client, ensure_experiment',
    'experiment = ensure_experiment("links")',
    'run = client().create_run(experiment, run_name="linked-run")',
    'client().log_metric(run.info.run_id, "train_loss", 0.25)',
    'client().set_terminated(run.info.run_id)',
    'print(run.info.run_id, experiment)'
  ].join('\n');
  const out = execFileSync(process.env.JUPYTER_AIR_UI_PYTHON ?? 'python', ['-c', code], {
    env: { ...process.env, AIR_HOME: LINKS_AIR_HOME, MLFLOW_TRACKING_URI: '' }
  });
  const [runId, experimentId] = out.toString().trim().split(' ');
  return { runId, experimentId };
}

test('a run link opened logged out goes through the login to the run page', async ({
  browser,
  baseURL
}) => {
  test.setTimeout(180_000);
  // Given a run, and a browser with no Jupyter session (no cookie, no token)
  const { runId, experimentId } = createRun();
  const context = await browser.newContext();
  const page = await context.newPage();

  // When the link the cell printed is opened
  await page.goto(`${baseURL}/jupyter-air/runs/${runId}/open`);

  // Then Jupyter asks to log in first, keeping the link to come back to
  await expect(page).toHaveURL(/\/login\?next=.*jupyter-air%2Fruns%2F[0-9a-f]{32}%2Fopen/);
  await page.locator('#password_input').fill(LINKS_TOKEN);
  await page.locator('#password_input').press('Enter');

  // And after the login it lands on the run's page in the MLflow UI, not MLflow's home page
  const runPage = `/mlflow/#/experiments/${experimentId}/runs/${runId}\\?workflowType=machine_learning`;
  await expect(page).toHaveURL(new RegExp(runPage), {
    timeout: 120_000
  });
  await expect(page.getByText('linked-run').first()).toBeVisible({ timeout: 60_000 });
  // And the UI shows it in its model-training view (runs, model metrics), not its GenAI view
  await expect(page.getByRole('tab', { name: 'Model metrics' })).toBeVisible();
  await expect(page.getByText('Evaluation runs')).toHaveCount(0);
  await expect(page.getByRole('link', { name: 'Runs', exact: true }).first()).toBeVisible();
  await page.screenshot({ path: test.info().outputPath('run-page-after-login.png') });
  await context.close();
});
