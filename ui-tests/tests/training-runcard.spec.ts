/** The live run card: metrics update while 2 gloo ranks train, and Stop ends the busy cell's run KILLED. */
import { expect, test } from '@jupyterlab/galata';
import * as fs from 'fs';

import { openNotebook } from './helpers';

const TRAIN = `from jupyter_air import distributed

@distributed(gpus=2, experiment="run-card", run_name="stoppable")
def train():
    import os, time, mlflow, torch.distributed as dist
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"])
    step = 0
    while True:  # only Stop ends this loop
        step += 1
        if rank == 0:
            mlflow.log_metrics({"train_loss": 1.0 / step, "accuracy_ratio": 1 - 1.0 / (step + 1)}, step=step)
        print(f"step {step}", flush=True)
        time.sleep(0.5)

train.distributed()`;

const STATUS = `from jupyter_air.tracking.store import client as store
client = store()
run = client.search_runs([client.get_experiment_by_name("run-card").experiment_id])[0]
print("status", run.info.status, "|", run.data.tags["air.error"])`;

/** Text of a /proc file, or null when the process is gone or not readable. */
function procText(pid: string, file: string): string | null {
  try {
    return fs.readFileSync(`/proc/${pid}/${file}`, 'utf-8');
  } catch {
    return null;
  }
}

/** The parent's PID in a `/proc/<pid>/stat` text. */
function parentOf(stat: string): string {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
}

/**
 * The ranks of the calls of `notebook`'s kernel: the children of the call processes of its fork server.
 * The kernel's environment names the notebook (`JPY_SESSION_NAME`); its fork server is either its child
 * (`-m jupyter_air.training.forkserver`) or forked by AIR_HOME's zygote and named `airfork-<kernel pid>`.
 */
function rankProcesses(notebook: string): number[] {
  const pids = fs.readdirSync('/proc').filter(entry => /^\d+$/.test(entry));
  const parent = new Map<string, string>();
  for (const pid of pids) {
    const stat = procText(pid, 'stat');
    if (stat) {
      parent.set(pid, parentOf(stat));
    }
  }
  const kernels = pids.filter(
    pid =>
      (procText(pid, 'environ')?.split('\0') ?? []).some(
        v => v.startsWith('JPY_SESSION_NAME=') && v.endsWith(notebook)
      ) && procText(pid, 'cmdline')?.includes('ipykernel')
  );
  const forkServers = pids.filter(pid =>
    kernels.some(
      kernel =>
        procText(pid, 'comm')?.trim() === `airfork-${kernel}` ||
        (parent.get(pid) === kernel && procText(pid, 'cmdline')?.includes('training.forkserver'))
    )
  );
  const calls = pids.filter(pid => forkServers.includes(parent.get(pid) ?? ''));
  return pids.filter(pid => calls.includes(parent.get(pid) ?? '')).map(Number);
}

test('Stop on the live run card stops a busy distributed call: run KILLED, no worker left', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(300_000);
  // Given a notebook whose cell trains on 2 gloo ranks forever, logging a metric on rank 0
  const notebook = `${tmpPath}/card.ipynb`;
  await openNotebook(page, notebook, [TRAIN, STATUS]);
  // When the cell runs
  await page.notebook.runCell(0, { wait: false });
  // Then the live card (the widget view, not a static snapshot) shows the metric and the ranks' lines
  const card = page.locator('.jp-Air-runCardWidget .jp-Air-runCard');
  const loss = card.locator('[data-metric="train_loss"] .jp-Air-runCard-value');
  await expect(loss).toBeVisible({ timeout: 180_000 });
  await expect(card.locator('.jp-Air-runCard-status')).toHaveText('running');
  await expect(card.locator('.jp-Air-runCard-ranks')).toContainText('rank 1');
  await expect(card.locator('.jp-Air-runCard-ranks')).toContainText('step');
  // And the metric keeps updating while the cell is busy
  const first = await loss.textContent();
  await expect(loss).not.toHaveText(first!, { timeout: 30_000 });
  await expect(
    card.locator('[data-metric="train_loss"] .jp-Air-runCard-spark path')
  ).toHaveAttribute('d', /L/);
  await expect(page.locator('.jp-Cell').first().locator('.jp-InputPrompt')).toContainText('*');
  expect(rankProcesses(notebook).length).toBeGreaterThanOrEqual(2);
  await page
    .locator('.jp-Cell')
    .first()
    .screenshot({ path: test.info().outputPath('run-card.png') });

  // When Stop is clicked while the cell is still running
  await card.locator('button.jp-Air-runCard-stop').click();

  // Then the cell ends with RunStopped, and its card shows the run killed, with the reason
  const cell = page.locator('.jp-Cell').first();
  await expect(cell.locator('.jp-OutputArea-output', { hasText: 'RunStopped' })).toBeVisible({
    timeout: 60_000
  });
  const final = cell.locator('.jp-Air-runCard');
  await expect(final.locator('.jp-Air-runCard-status')).toHaveText('killed');
  await expect(final).toContainText('stopped with the Stop button');
  await expect(final.locator('button')).toHaveCount(0);
  // And no process of the call is left
  await expect.poll(() => rankProcesses(notebook), { timeout: 20_000 }).toEqual([]);
  await cell.screenshot({ path: test.info().outputPath('run-card-stopped.png') });
  // And the MLflow run ended KILLED with the reason
  await page.notebook.runCell(1);
  await expect(page.locator('.jp-Cell').nth(1).locator('.jp-OutputArea-output')).toContainText(
    'status KILLED | stopped with the Stop button'
  );
});
