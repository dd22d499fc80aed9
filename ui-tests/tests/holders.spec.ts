/**
 * Idle GPU holders against a real server with the tests' fake NVML: a notebook's kernel that holds GPU memory
 * and executes nothing is marked in the GPU panel, and its notification's "Shut down" ends it.
 */
import { expect, galata, test } from '@jupyterlab/galata';
import * as fs from 'fs';

import { HOLDERS_NVML_FILE } from '../playwright.config';
import { openNotebook, PANEL, PLUGIN_ID, SIDEBAR_TAB } from './helpers';

test.use({
  mockSettings: { ...galata.DEFAULT_SETTINGS, [PLUGIN_ID]: { idleHoldersIntervalSeconds: 2 } }
});

test.afterEach(() => fs.rmSync(HOLDERS_NVML_FILE, { force: true }));

test('marks a kernel idle on GPU memory and shuts it down from its notification', async ({
  page,
  tmpPath
}, testInfo) => {
  test.setTimeout(120_000);
  // Given a notebook whose kernel then holds 2 GiB on GPU 0 (the fake NVML says so) and runs nothing more
  await openNotebook(page, `${tmpPath}/holder.ipynb`, ['import os\nprint(os.getpid())']);
  await page.notebook.runCell(0);
  const pid = Number(((await page.notebook.getCellTextOutput(0)) ?? [''])[0].trim());
  expect(pid).toBeGreaterThan(0);
  fs.writeFileSync(HOLDERS_NVML_FILE, JSON.stringify([[pid, 2 * 1024 ** 3]]));
  const kernels = async () =>
    ((await (await page.request.get('/api/kernels')).json()) as { id: string }[]).map(k => k.id);
  const [kernelId] = await kernels();

  // When it has been idle for the server's threshold (3 s here)
  // Then one notification names its notebook and the memory it holds, with its actions
  const toast = page.locator('.Toastify__toast', { hasText: 'has been idle since' });
  await expect(toast).toHaveCount(1, { timeout: 30_000 });
  await expect(toast).toContainText('The kernel of holder.ipynb has been idle since');
  await expect(toast).toContainText('holding 2.0 GiB on GPU 0');
  for (const label of ['Shut down', 'Restart', 'Dismiss']) {
    await expect(toast.getByRole('button', { name: label })).toBeVisible();
  }
  // And the GPU panel marks its process as idle
  await page.locator(SIDEBAR_TAB).click();
  const row = page.locator(`${PANEL} .jp-Air-process`, { hasText: String(pid) });
  await expect(row.locator('.jp-Air-badge-idle')).toContainText('idle since', { timeout: 30_000 });
  await page
    .locator(PANEL)
    .locator('.jp-Air-processes')
    .screenshot({
      path: testInfo.outputPath('idle-holder-panel.png'),
      // The toast floats over the sidebar's bottom; the picture is of the panel.
      style: '#react-toastify-container { visibility: hidden; }'
    });
  await toast.screenshot({ path: testInfo.outputPath('idle-holder-notification.png') });

  // When "Shut down" is clicked
  await toast.getByRole('button', { name: 'Shut down', exact: true }).click();
  // Then the kernel is gone, and no notification of it is left
  await expect.poll(kernels, { timeout: 30_000 }).not.toContain(kernelId);
  await expect(toast).toHaveCount(0);
});
