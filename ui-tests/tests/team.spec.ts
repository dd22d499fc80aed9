/**
 * Job permissions in a team's real JupyterHub (team_server.py): bob logs in, gets his own JupyterLab, and opens the
 * Logs view of alice's job; it shows why he may not read it, then its log once alice grants him Can View.
 */
import { expect, test } from '@playwright/test';
import type { Page } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

import { TEAM_DIR } from '../playwright.config';

const EXPERIMENT_PANEL = '#jupyter-air-experiment-panel';
const LEFT_TAB = '.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="jupyter-air-experiment-panel"]';

const WORKLOAD = `experiment_name: team-ui
command: echo epoch 1 loss 0.42
compute:
  num_accelerators: 0
`;

interface ITeam {
  url: string;
  password: string;
  tokens: Record<'alice' | 'bob' | 'carol' | 'hubadmin', string>;
}

/** team.json, written by team_server.py a few seconds after the hub first answers (it makes the tokens then). */
async function readTeam(): Promise<ITeam> {
  const file = path.join(TEAM_DIR!, 'team.json');
  await expect.poll(() => fs.existsSync(file), { timeout: 120_000 }).toBe(true);
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** Call the team's job service (through the hub's proxy) with a user's API token. */
async function airJobs(
  team: ITeam,
  token: string,
  route: string,
  init: { method?: string; body?: unknown } = {}
): Promise<{ status: number; body: any }> {
  const answer = await fetch(`${team.url}/services/air-jobs/${route}`, {
    method: init.method ?? 'GET',
    headers: { Authorization: `token ${token}`, 'Content-Type': 'application/json' },
    body: init.body === undefined ? undefined : JSON.stringify(init.body)
  });
  const text = await answer.text();
  return { status: answer.status, body: text ? JSON.parse(text) : {} };
}

/**
 * Serve JupyterLab's page with `exposeAppInBrowser` in its page config, as Galata's server configuration does, so
 * that the test can run JupyterLab commands (`window.jupyterapp`); the hub spawns users' servers with its own.
 */
async function exposeApp(page: Page, labPath: string): Promise<void> {
  await page.route(
    url => url.pathname === labPath,
    async route => {
      const response = await route.fetch({ maxRedirects: 0 });
      const html = await response.text();
      const config =
        /(<script id="jupyter-config-data" type="application\/json">)([^]*?)(<\/script>)/;
      const found = html.match(config);
      if (response.status() !== 200 || !found) {
        await route.fulfill({ response });
        return;
      }
      const data = { ...JSON.parse(found[2]), exposeAppInBrowser: true };
      await route.fulfill({
        response,
        body: html.replace(config, `$1${JSON.stringify(data)}$3`)
      });
    }
  );
}

/** Close JupyterLab's question about Jupyter news (Galata's servers turn it off) so that it covers nothing. */
async function dismissNews(page: Page): Promise<void> {
  const news = page.locator('.Toastify__toast', { hasText: 'Jupyter news' });
  try {
    await news.waitFor({ timeout: 20_000 });
  } catch {
    return; // not asked: bob's JupyterLab settings already hold an answer
  }
  await news.locator('.jp-Notification-Toast-Close').click();
  await expect(news).toHaveCount(0);
}

test("bob is refused the log of alice's job in his JupyterLab, then reads it once she grants him Can View", async ({
  page
}, testInfo) => {
  test.setTimeout(300_000);
  const team = await readTeam();
  const { alice } = team.tokens;

  // Given alice's workload file on the team's file system, submitted through the job service and ended
  const work = fs.mkdtempSync(path.join(TEAM_DIR!, 'alice-work-'));
  const file = path.join(work, 'train.yaml');
  fs.writeFileSync(file, WORKLOAD);
  const submitted = await airJobs(team, alice, 'jobs', {
    method: 'POST',
    body: { workload: WORKLOAD, path: file, label: path.basename(file) }
  });
  expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
  const job: string = submitted.body.job_run_id;
  await expect
    .poll(async () => (await airJobs(team, alice, `jobs/${job}`)).body.status, {
      timeout: 120_000,
      intervals: [500]
    })
    .toBe('SUCCEEDED');

  // When bob logs into the hub with the team's password
  await page.goto(`${team.url}/hub/login`);
  await page.locator('#username_input').fill('bob');
  await page.locator('#password_input').fill(team.password);
  await page.locator('#login_submit').click();
  // Then the hub spawns his JupyterLab and takes him there
  await page.waitForURL(/\/user\/bob\/lab/, { timeout: 180_000 });
  await expect(page.locator('#jp-main-dock-panel')).toBeVisible({ timeout: 120_000 });
  // (reloaded with an empty workspace, and with the app reachable from the test)
  await exposeApp(page, '/user/bob/lab');
  await page.goto(`${team.url}/user/bob/lab?reset`);
  await page.waitForFunction(() => (window as any).jupyterapp?.started, undefined, {
    timeout: 120_000
  });
  await page.evaluate(() => (window as any).jupyterapp.restored);
  await dismissNews(page);
  // And his Experiment panel lists no job: alice's is not his to see
  await page.locator(LEFT_TAB).click();
  const jobs = page.locator(`${EXPERIMENT_PANEL} .jp-Air-jobs-section`);
  const row = jobs.locator(`.jp-Air-job[data-job-id="${job}"]`);
  await expect(jobs).toContainText('No air jobs yet');
  await expect(row).toHaveCount(0);

  // When he opens the Logs view of alice's job, whose id she told him
  await page.evaluate(
    jobRunId =>
      (window as any).jupyterapp.commands.execute('jupyter-air:open-job-logs', {
        jobRunId,
        attempt: -1,
        node: 0
      }),
    job
  );
  // Then it says that he may not read it, whose job it is and whom to ask, and shows no line
  const view = page.locator('.jp-Air-log-widget');
  const banner = view.locator('.jp-Air-banner.jp-Air-error');
  await expect(banner).toContainText(
    `You do not have permission to read the logs of job ${job} (alice's). Ask a user with Can Manage ` +
      'permission on it, or an admin, to grant you at least Can View on the job.',
    { timeout: 30_000 }
  );
  await expect(view.locator('.jp-Air-log-text')).toHaveText('');
  await page.screenshot({ path: testInfo.outputPath('team-logs-denied.png') });

  // When alice grants him Can View on the job
  const granted = await airJobs(team, alice, `jobs/${job}/permissions`, {
    method: 'PUT',
    body: { user: 'bob', level: 'CAN_VIEW' }
  });
  expect(granted.status, JSON.stringify(granted.body)).toBe(200);
  // Then the Logs view reads the log at its next retry, and the error is gone
  await expect(view.locator('.jp-Air-log-text')).toContainText('epoch 1 loss 0.42', {
    timeout: 60_000
  });
  await expect(banner).toHaveCount(0);
  await expect(view.locator('.jp-Air-log-state')).toHaveText('complete');
  // And his Experiment panel now lists her job
  await expect(row).toBeVisible({ timeout: 60_000 });
  await expect(row).toHaveAttribute('data-status', 'SUCCEEDED');
  await page.screenshot({ path: testInfo.outputPath('team-logs-granted.png') });
});
