/**
 * The demo's simulated GPUs are used by the notebooks that ran a `.distributed()` call: the panel lists the
 * kernel under its notebook, and the kernel left idle is announced as an idle GPU holder (after 3 s here).
 */
import { expect, galata, test } from '@jupyterlab/galata';

import { openNotebook, PANEL, PLUGIN_ID, SIDEBAR_TAB } from './helpers';

test.use({
  mockSettings: { ...galata.DEFAULT_SETTINGS, [PLUGIN_ID]: { idleHoldersIntervalSeconds: 2 } }
});

const CALL = `import os
from jupyter_air import distributed

@distributed(gpus=2, experiment="demo", run_name="ddp-demo")
def train(lr):
    import torch
    return (torch.ones(1) * lr).item()

train.distributed(0.1)
print("kernel", os.getpid())`;

test('a notebook that ran a call holds a simulated GPU, then is announced idle', async ({
  page,
  tmpPath
}, testInfo) => {
  test.setTimeout(300_000);
  // Given a notebook that runs a call on 2 ranks, then nothing more
  await openNotebook(page, `${tmpPath}/quickstart.ipynb`, [CALL]);
  await page.notebook.runCell(0);
  const printed = page.locator('.jp-OutputArea-output', { hasText: /\bkernel \d+/ });
  await expect(printed).toBeVisible({ timeout: 240_000 });
  const pid = Number(/kernel (\d+)/.exec((await printed.textContent()) ?? '')![1]);
  const gpu = pid % 2;

  // Then the GPU panel lists the kernel on the GPU its PID picks, 3 GiB, under its notebook
  await page.locator(SIDEBAR_TAB).click();
  const row = page.locator(`${PANEL} .jp-Air-process`, { hasText: String(pid) });
  await expect(row).toBeVisible({ timeout: 30_000 });
  await expect(row.locator('.jp-Air-process-path')).toHaveText(`${tmpPath}/quickstart.ipynb`);
  await expect(row.locator('.jp-Air-process-memory')).toHaveText('3.0 GiB');
  const group = page.locator(`${PANEL} .jp-Air-process-group[data-gpu-index="${gpu}"]`);
  await expect(group).toContainText(String(pid));

  // And once it has been idle 3 s, one notification names the notebook and the simulated memory it holds
  const toast = page.locator('.Toastify__toast', { hasText: 'has been idle since' });
  await expect(toast).toHaveCount(1, { timeout: 60_000 });
  await expect(toast).toContainText('The kernel of quickstart.ipynb has been idle since');
  await expect(toast).toContainText(`holding 3.0 GiB on GPU ${gpu}`);
  await expect(row.locator('.jp-Air-badge-idle')).toContainText('idle since', { timeout: 30_000 });
  await page
    .locator(PANEL)
    .locator('.jp-Air-processes')
    .screenshot({
      path: testInfo.outputPath('demo-idle-holder-panel.png'),
      style: '#react-toastify-container { visibility: hidden; }'
    });
  await toast.screenshot({ path: testInfo.outputPath('demo-idle-holder-notification.png') });

  // When "Shut down" is clicked, Then the kernel's simulated memory is free
  await toast.getByRole('button', { name: 'Shut down', exact: true }).click();
  await expect(row).toHaveCount(0, { timeout: 30_000 });
  await expect(toast).toHaveCount(0);
});
