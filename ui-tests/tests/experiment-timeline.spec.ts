/** Runs shaded on the GPU charts, and the status bar readout, against the Experiment panel's server. */
import { expect, galata, test } from '@jupyterlab/galata';

import { openNotebook, PLUGIN_ID, widenRightSidebar } from './helpers';

/** A %%air_run cell that lasts a few GPU samples. */
const TIMELINE_RUN = `%%air_run --run-name timeline-run
import time
time.sleep(8)`;

test.describe('with a 2-minute chart window', () => {
  // The charts span the window (or the server's history, if shorter): an 8 s run is then wide
  // enough to measure however long the server has been up.
  test.use({
    mockSettings: { ...galata.DEFAULT_SETTINGS, [PLUGIN_ID]: { historyWindowMinutes: 2 } }
  });

  test('runs are shaded on the GPU charts, and the status bar reads the GPUs', async ({
    page,
    tmpPath
  }, testInfo) => {
    test.setTimeout(180_000);
    // Given a run of a %%air_run cell that lasted a few GPU samples
    await openNotebook(page, `${tmpPath}/timeline.ipynb`, ['%load_ext jupyter_air', TIMELINE_RUN]);
    await page.notebook.run();
    // When the GPU panel is open
    await page
      .locator('.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="jupyter-air-gpu-panel"]')
      .click();
    const gpu = page.locator('#jupyter-air-gpu-panel');
    // Then the utilization chart labels the run's span, which is shaded on all three charts
    const label = gpu.locator('.jp-Air-chart-utilization .jp-Air-run-label', {
      hasText: 'timeline-run'
    });
    await expect(label).toBeVisible({ timeout: 60_000 });
    await expect(label).toHaveAttribute('title', /^timeline-run · finished · \d+\.\ds/);
    const runId = await label.getAttribute('data-run-id');
    await expect(gpu.locator(`.jp-Air-run-band[data-run-id="${runId}"]`)).toHaveCount(3);
    const band = await gpu
      .locator(`.jp-Air-run-band[data-run-id="${runId}"]`)
      .first()
      .boundingBox();
    expect(band?.width ?? 0).toBeGreaterThan(4);
    await widenRightSidebar(page, 480);
    await page.waitForTimeout(1000);
    await gpu.screenshot({ path: testInfo.outputPath('gpu-timeline.png') });
    // When the label is clicked, Then the run opens in the MLflow UI through this server's run link
    const popup = page.context().waitForEvent('page');
    await label.click();
    const opened = await popup;
    await opened.waitForURL(new RegExp(`/mlflow/#/experiments/\\d+/runs/${runId}`), {
      waitUntil: 'commit'
    });
    await opened.close();

    // And the status bar shows the busiest simulated GPU, and opens the GPU panel
    const readout = page.locator('.jp-Air-statusbar');
    await expect(readout).toHaveText(/^simGPU \d+ \d+% · [\d.]+\/\d+ GiB · \d+ °C$/);
    await page
      .locator('#jp-main-statusbar')
      .screenshot({ path: testInfo.outputPath('status-bar.png') });
  });
});
