/**
 * The Experiment panel and the Logs view, against a real server with simulated GPUs: notebooks train on
 * 2 CPU ranks and run `%%air_run` cells, `air run` starts jobs from a notebook and from a terminal.
 */
import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import type { Page } from '@playwright/test';
import * as fs from 'fs';
import * as path from 'path';

import { EXPERIMENT_AIR_HOME, UI_ROOT } from '../playwright.config';
import { airCommand } from './helpers';
import { openNotebook } from './helpers';

const EXPERIMENT_PANEL = '#jupyter-air-experiment-panel';
const LEFT_TAB = '.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="jupyter-air-experiment-panel"]';
/** The top-level runs of the Runs section (a nested call is listed inside its parent's entry). */
const TOP_RUNS = '.jp-Air-runs-section > .jp-Air-section-body > .jp-Air-runs > .jp-Air-run';

const TRAIN = `%load_ext jupyter_air
from jupyter_air import distributed

@distributed(gpus=2, run_name="ddp-baseline")
def train(lr):
    import os, time, mlflow, torch, torch.distributed as dist
    dist.init_process_group("gloo")
    t = torch.ones(1) * (dist.get_rank() + 1)
    dist.all_reduce(t)
    time.sleep(8)
    if dist.get_rank() == 0:
        with mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"]):
            mlflow.log_metric("train_loss", 0.125)
    return t.item() * lr

train.distributed(0.1)`;

/** A %%air_run cell with a distributed call nested in its run. */
const CELL_RUN = `%%air_run --run-name cell-run
import mlflow
mlflow.log_metric("accuracy", 0.875)

@distributed(gpus=2, run_name="nested-call")
def evaluate():
    import torch.distributed as dist
    dist.init_process_group("gloo")
    return dist.get_rank()

evaluate.distributed()`;

/** Plain MLflow in the notebook: the kernel's MLflow tracks into the same store as the calls. */
const PLAIN_MLFLOW = `import mlflow
with mlflow.start_run(run_name="plain-mlflow"):
    mlflow.log_metric("val_loss", 0.5)`;

/** A cell that submits an `air` job printing a line every half second for two minutes. */
const SUBMIT_JOB = `import pathlib, subprocess, sys, textwrap
pathlib.Path("steps.py").write_text(textwrap.dedent('''
    import time
    for i in range(240):
        print(f"step {i} loss {1 / (i + 1):.4f}", flush=True)
        time.sleep(0.5)
'''))
pathlib.Path("workload.yaml").write_text(
    "experiment_name: ui-logs\\n"
    f"command: {sys.executable} steps.py\\n"
    "compute: {num_accelerators: 0}\\n"
    "mlflow_run_name: steps\\n"
)
job = subprocess.run([sys.executable, "-m", "jupyter_air.cli", "run", "-f", "workload.yaml"],
                     capture_output=True, text=True, check=True).stdout.strip()
print(job)`;

async function openExperimentPanel(page: IJupyterLabPageFixture): Promise<void> {
  await page.locator(LEFT_TAB).click();
  await expect(page.locator(EXPERIMENT_PANEL)).toBeVisible();
}

/** The row of a run in the Experiment panel, by its name. */
function runRow(page: Page, name: string) {
  return page.locator(`${EXPERIMENT_PANEL} .jp-Air-run`, {
    has: page.locator(':scope > .jp-Air-run-main .jp-Air-run-name', { hasText: name })
  });
}

test.describe('Experiment panel', () => {
  test('shows the notebook runs live, nested by source, and compares them in MLflow', async ({
    page,
    tmpPath
  }, testInfo) => {
    test.setTimeout(420_000);
    // Given a notebook that trains on 2 ranks, then runs a %%air_run cell, and the panel open
    await openNotebook(page, `${tmpPath}/experiment.ipynb`, [TRAIN, CELL_RUN, PLAIN_MLFLOW]);
    await openExperimentPanel(page);
    const panel = page.locator(EXPERIMENT_PANEL);
    await expect(panel.locator('.jp-Air-notebook')).toHaveText('experiment.ipynb');
    await expect(panel.locator('.jp-Air-runs-empty')).toContainText('%%air_run');

    // When the training cell runs
    void page.notebook.runCell(0);
    // Then its run shows up running, then finished, with its source and last metric
    const ddp = runRow(page, 'ddp-baseline');
    await expect(ddp).toHaveAttribute('data-status', 'RUNNING', { timeout: 180_000 });
    await expect(ddp.locator('.jp-Air-status-dot').first()).toHaveClass(/jp-Air-status-RUNNING/);
    await expect(ddp).toHaveAttribute('data-status', 'FINISHED', { timeout: 180_000 });
    await expect(ddp.locator('.jp-Air-source-badge').first()).toHaveText('distributed');
    await expect(ddp.locator('.jp-Air-metric').first()).toHaveText('train_loss 0.125');
    await expect(ddp.locator('.jp-Air-run-duration').first()).toHaveText(/^\d+\.\ds$/);
    // And no GPU energy: its ranks ran on CPUs, whatever GPUs the node has
    await expect(ddp.locator('.jp-Air-run-energy')).toHaveCount(0);

    // When the %%air_run cell, which makes a distributed call of its own, runs
    await page.notebook.runCell(1);
    // Then its run is listed above the first one, as a cell run, with the nested call under it
    const cell = runRow(page, 'cell-run');
    await expect(cell).toHaveAttribute('data-status', 'FINISHED', { timeout: 180_000 });
    await expect(cell.locator('.jp-Air-source-badge').first()).toHaveText('cell');
    const nested = cell.locator('.jp-Air-runs .jp-Air-run');
    await expect(nested.locator('.jp-Air-run-name')).toHaveText(['nested-call']);
    await expect(nested).toHaveAttribute('data-status', 'FINISHED');
    // And the GPU energy its end logged (the kernel's visible GPUs), labelled as the simulated GPUs' it is
    await expect(cell.locator('.jp-Air-run-energy').first()).toHaveText(/^[\d.]+ k?Wh simulated$/);

    // When a cell logs a run with plain MLflow
    await page.notebook.runCell(2);
    // Then that run is the notebook's too, listed beside the calls
    const plain = runRow(page, 'plain-mlflow');
    await expect(plain).toHaveAttribute('data-status', 'FINISHED', { timeout: 60_000 });
    await expect(plain.locator('.jp-Air-metric').first()).toHaveText('val_loss 0.5');
    await expect(panel.locator(TOP_RUNS)).toHaveCount(3);
    await panel.screenshot({ path: testInfo.outputPath('experiment-panel.png') });

    // When the runs are ordered by GPU energy, Then they are listed by the energy each shows, most first
    const topRuns = panel.locator(TOP_RUNS);
    const listed = () =>
      topRuns.evaluateAll(rows =>
        rows.map(row => {
          const energy = row.querySelector(':scope > .jp-Air-run-details .jp-Air-run-energy');
          const [value, unit] = (energy?.textContent ?? '').split(' ');
          return {
            name: row.querySelector('.jp-Air-run-name')?.textContent ?? '',
            wh: energy ? parseFloat(value) * (unit === 'kWh' ? 1000 : 1) : -1
          };
        })
      );
    const newest = (await listed()).map(run => run.name);
    await panel.locator('.jp-Air-run-order').selectOption('energy');
    const byEnergy = await listed();
    expect(byEnergy.map(run => run.name).sort()).toEqual([...newest].sort());
    expect(byEnergy.map(run => run.wh)).toEqual(byEnergy.map(run => run.wh).sort((a, b) => b - a));
    await panel.screenshot({ path: testInfo.outputPath('experiment-energy-order.png') });
    await panel.locator('.jp-Air-run-order').selectOption('newest');
    await expect(topRuns.locator(':scope > .jp-Air-run-main .jp-Air-run-name')).toHaveText(newest);

    // When both are selected and Compare is clicked
    await ddp.locator('.jp-Air-run-select').first().check();
    await cell.locator('.jp-Air-run-select').first().check();
    const compare = panel.locator('.jp-Air-compare');
    await expect(compare).toHaveText('Compare (2)');
    const popup = page.context().waitForEvent('page');
    await compare.click();
    // Then MLflow's compare view of the two runs opens
    const mlflow = await popup;
    expect(decodeURIComponent(mlflow.url())).toMatch(
      /\/mlflow\/#\/compare-runs\?runs=\["[0-9a-f]{32}","[0-9a-f]{32}"\]/
    );
    await expect(mlflow.getByText(/Comparing 2 Runs/).first()).toBeVisible({ timeout: 150_000 });
    await mlflow.screenshot({ path: testInfo.outputPath('mlflow-compare.png') });
    await mlflow.close();
  });

  test('is labelled, found in the palette, and lists a job started from a terminal without Refresh', async ({
    page
  }, testInfo) => {
    test.setTimeout(180_000);
    // Given JupyterLab open with no notebook
    const tab = page.locator(LEFT_TAB);
    // Then the Experiment panel's tab says its name, and its tooltip what it holds
    await expect(tab.locator('.lm-TabBar-tabLabel')).toHaveText('Experiment');
    await expect(tab).toHaveAttribute('title', /MLflow runs.*air jobs/);
    // When "air jobs" is typed in the command palette, Then it offers the panel, which opens
    await page.keyboard.press('Control+Shift+C');
    await page.locator('.lm-CommandPalette-input').fill('air jobs');
    const item = page.locator('.lm-CommandPalette-item', { hasText: 'Open Experiment panel' });
    await item.first().click();
    const panel = page.locator(EXPERIMENT_PANEL);
    await expect(panel).toBeVisible();
    await expect(panel.locator('.jp-Air-state')).toHaveText('live');
    await page
      .locator('.jp-SideBar.jp-mod-left')
      .screenshot({ path: testInfo.outputPath('left-sidebar-tabs.png') });

    // When a job of a long-named experiment is started from a terminal
    const folder = fs.mkdtempSync(path.join(UI_ROOT, 'terminal-'));
    const experiment = 'terminal-started-resnet50-imagenet-ablation-warmup-cosine';
    fs.writeFileSync(
      path.join(folder, 'workload.yaml'),
      `experiment_name: ${experiment}\ncommand: sleep 120\ncompute: {num_accelerators: 0}\n`
    );
    const jobId = airCommand(EXPERIMENT_AIR_HOME, folder, 'run', '-f', 'workload.yaml');
    expect(jobId).toMatch(/^job-[0-9a-f]{12}$/);
    // Then the panel lists it without Refresh, its id whole at the default width
    const job = panel.locator(`.jp-Air-job[data-job-id="${jobId}"]`);
    await expect(job).toBeVisible({ timeout: 30_000 });
    const id = job.locator('.jp-Air-job-id');
    await expect(id).toHaveText(jobId);
    expect(await id.evaluate(node => node.scrollWidth <= node.clientWidth)).toBe(true);
    // And the experiment's whole name is in its tooltip
    await expect(job.locator('.jp-Air-run-experiment')).toHaveAttribute(
      'title',
      `Experiment: ${experiment}`
    );
    // When Copy is clicked, Then the id is on the clipboard
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await job.locator('.jp-Air-copy').click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(jobId);
    await panel
      .locator('.jp-Air-jobs-section')
      .screenshot({ path: testInfo.outputPath('terminal-job.png') });
    airCommand(EXPERIMENT_AIR_HOME, folder, 'cancel', jobId);
  });

  test('follows an air job in the Logs view and cancels it from the panel', async ({
    page,
    tmpPath
  }, testInfo) => {
    test.setTimeout(240_000);
    // Given a job started with `air run` from a notebook, and the panel open
    await openNotebook(page, `${tmpPath}/jobs.ipynb`, [SUBMIT_JOB]);
    await openExperimentPanel(page);
    await page.notebook.runCell(0);
    const jobId = ((await page.notebook.getCellTextOutput(0)) ?? [''])[0].trim();
    expect(jobId).toMatch(/^job-[0-9a-f]{12}$/);
    const job = page.locator(`${EXPERIMENT_PANEL} .jp-Air-job[data-job-id="${jobId}"]`);
    await expect(job).toHaveAttribute('data-status', 'RUNNING', { timeout: 60_000 });
    await expect(job.locator('.jp-Air-attempt')).toHaveCount(1);
    await expect(job.locator('.jp-Air-attempt a')).toHaveAttribute(
      'href',
      /\/jupyter-air\/runs\/[0-9a-f]{32}\/open$/
    );

    // When its Logs are opened
    await job.locator('.jp-Air-job-logs').click();
    // Then a main-area tab follows the log as it grows
    const view = page.locator('.jp-Air-log-widget');
    const text = view.locator('.jp-Air-log-text');
    await expect(text).toContainText('step 2 loss', { timeout: 30_000 });
    const lines = async () => ((await text.textContent()) ?? '').split('\n').length;
    const seen = await lines();
    await expect.poll(lines, { timeout: 30_000 }).toBeGreaterThan(seen + 4);
    await expect(view.locator('.jp-Air-log-state')).toHaveText('following…');
    await view.getByText('Jump to end').click();
    await view.screenshot({ path: testInfo.outputPath('job-logs.png') });
    // And Download gives the whole log file
    const download = page.waitForEvent('download');
    await view.getByText('Download').click();
    expect((await download).suggestedFilename()).toBe(`${jobId}-attempt_0-node_0.log`);

    // And where the job id and Cancel do not fit side by side (the panel's scrollbar takes room from them),
    // Cancel goes under the id, whole in the list
    const jobs = page.locator(`${EXPERIMENT_PANEL} .jp-Air-jobs-section`);
    await jobs.evaluate(element => ((element as HTMLElement).style.width = '200px'));
    const list = await jobs.boundingBox();
    const cancel = await job.locator('.jp-Air-job-cancel').boundingBox();
    await job.screenshot({ path: testInfo.outputPath('job-running-narrow.png') });
    expect(cancel!.x + cancel!.width).toBeLessThanOrEqual(list!.x + list!.width);
    await jobs.evaluate(element => ((element as HTMLElement).style.width = ''));

    // When Cancel is clicked in the panel and confirmed
    await job.locator('.jp-Air-job-cancel').click();
    await page.locator('.jp-Dialog .jp-mod-warn', { hasText: 'Cancel job' }).click();
    // Then the job ends CANCELED, its attempt KILLED, and the Logs view has read the whole log
    await expect(job).toHaveAttribute('data-status', 'CANCELED', { timeout: 60_000 });
    await expect(
      job.locator('.jp-Air-attempt .jp-Air-status-text.jp-Air-status-KILLED')
    ).toHaveText('killed');
    await expect(view.locator('.jp-Air-log-state')).toHaveText('complete', { timeout: 30_000 });
    await page
      .locator(`${EXPERIMENT_PANEL} .jp-Air-jobs-section`)
      .screenshot({ path: testInfo.outputPath('experiment-workloads.png') });
  });
});
