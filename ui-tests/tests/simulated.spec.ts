/** The GPU panel against a real server with the simulated source (2 GPUs). */
import { expect, galata, test } from '@jupyterlab/galata';

import {
  isPoll,
  isRefresh,
  openFromPalette,
  PANEL,
  PANEL_ID,
  PLUGIN_ID,
  recordGpuRequests,
  rightSidebarShows,
  shownValues,
  SIDEBAR_TAB,
  widenRightSidebar
} from './helpers';

test.describe('GPU panel, simulated GPUs', () => {
  test('opens from the right sidebar and shows two simulated GPUs', async ({ page }) => {
    // Given JupyterLab with the simulated source
    const panel = page.locator(PANEL);
    // When the GPU tab of the right sidebar is clicked
    await page.locator(SIDEBAR_TAB).click();
    // Then the panel shows two GPUs with numbers, the simulated badge, charts and the host row
    await expect(panel).toBeVisible();
    await expect(panel.locator('.jp-Air-device')).toHaveCount(2);
    await expect(panel.locator('.jp-Air-badge-simulated')).toHaveText('simulated');
    await expect(panel.locator('.jp-Air-state')).toHaveText('live');
    await expect(panel.locator('.jp-Air-value-utilization').first()).toHaveText(/^\d+%$/);
    await expect(panel.locator('.jp-Air-value-memory').first()).toHaveText(/GiB \/ .*GiB/);
    await expect(panel.locator('.jp-Air-value-temperature').first()).toHaveText(/^\d+ °C$/);
    await expect(panel.locator('.jp-Air-chart')).toHaveCount(3);
    await expect(panel.locator('.jp-Air-chart canvas')).toHaveCount(3);
    await expect(panel.locator('.jp-Air-host-cpu')).toHaveText(/^CPU \d+%$/);
    await expect(panel.locator('.jp-Air-newest')).toHaveText(/\d\d:\d\d:\d\d/);
  });

  test('opens from the command palette and is restored after a reload', async ({ page }) => {
    // Given the panel is closed
    expect(await page.sidebar.isTabOpen(PANEL_ID)).toBe(false);
    // When "Open GPU resources" runs from the command palette
    const layoutSaved = page.waitForRequest(
      request =>
        request.method() === 'PUT' &&
        request.url().includes('/lab/api/workspaces') &&
        rightSidebarShows(request.postData(), PANEL_ID)
    );
    await openFromPalette(page);
    // Then the panel is open with its GPUs
    await expect(page.locator(PANEL)).toBeVisible();
    await expect(page.locator(`${PANEL} .jp-Air-device`)).toHaveCount(2);
    // When the page is reloaded once the layout has been saved
    await layoutSaved;
    await page.reload();
    // Then the panel is open again
    await expect(page.locator(PANEL)).toBeVisible();
    await expect(page.locator(`${PANEL} .jp-Air-device`)).toHaveCount(2);
  });

  test('a kernel process links to its notebook, which opens on click', async ({
    page,
    tmpPath
  }) => {
    // Given a notebook whose name holds HTML, and a GPU process that is its kernel. The simulated
    // source lists only processes that ran a `.distributed()` call (simulated-holders.spec.ts), so the
    // process is added to the real server's answers.
    const name = '<i>train.ipynb';
    const notebook = `${tmpPath}/${name}`;
    const empty = { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 };
    await page.contents.uploadContent(JSON.stringify(empty), 'text', notebook);
    await page.route(/\/jupyter-air\/gpu(\?|$)/, async route => {
      const response = await route.fetch();
      const body = await response.json();
      body.processes = [
        {
          gpu_index: 1,
          pid: 4242,
          name: 'python',
          used_memory_bytes: 2 * 1024 ** 3,
          kernel_id: 'k',
          path: notebook
        }
      ];
      await route.fulfill({ response, json: body });
    });
    const panel = page.locator(PANEL);
    await page.locator(SIDEBAR_TAB).click();
    // Then the process is listed under GPU 1 with its memory and its notebook path as text
    const group = panel.locator('.jp-Air-process-group[data-gpu-index="1"]');
    const link = group.locator('.jp-Air-process-path');
    await expect(link).toHaveText(notebook);
    await expect(group.locator('.jp-Air-process-memory')).toHaveText('2.0 GiB');
    await expect(panel.locator('i')).toHaveCount(0);
    // When the path is clicked, Then the notebook opens in the main area
    await link.click();
    await expect(
      page.locator('.lm-DockPanel-tabBar .lm-TabBar-tab', { hasText: name })
    ).toBeVisible();
    await expect(page.locator('.jp-NotebookPanel')).toBeVisible();
  });

  test.describe('with a long poll interval', () => {
    test.use({
      mockSettings: { ...galata.DEFAULT_SETTINGS, [PLUGIN_ID]: { pollIntervalSeconds: 600 } }
    });

    test('Refresh fetches new numbers at once', async ({ page }) => {
      // Given an open panel that will not poll again for 10 minutes
      const panel = page.locator(PANEL);
      await page.locator(SIDEBAR_TAB).click();
      await expect(panel.locator('.jp-Air-device')).toHaveCount(2);
      const before = await shownValues(panel);
      const newestBefore = await panel.locator('.jp-Air-newest').textContent();
      // When Refresh is clicked (after the server's next sample is due)
      await page.waitForTimeout(2500);
      const answered = page.waitForResponse(response => isRefresh(response.request()));
      await panel.locator('.jp-Air-refresh').click();
      const response = await answered;
      // Then the server answered with a new sample and the numbers shown change
      expect(response.status()).toBe(200);
      const body = await response.json();
      expect(body.source).toBe('simulated');
      expect(body.timestamps_ms.length).toBeGreaterThan(0);
      await expect.poll(() => shownValues(panel)).not.toEqual(before);
      await expect(panel.locator('.jp-Air-newest')).not.toHaveText(newestBefore ?? '');
    });
  });

  test.describe('with a short inactivity timeout', () => {
    test.use({
      mockSettings: {
        ...galata.DEFAULT_SETTINGS,
        [PLUGIN_ID]: { pollIntervalSeconds: 1, inactivityTimeoutSeconds: 7 }
      }
    });

    test('pauses polling after inactivity and Refresh resumes it', async ({ page }) => {
      // Given an open panel polling every 2 s (the 1-second setting is clamped to the server's sampling)
      const requests = recordGpuRequests(page);
      const panel = page.locator(PANEL);
      await page.locator(SIDEBAR_TAB).click();
      await expect(panel.locator('.jp-Air-device')).toHaveCount(2);
      await expect
        .poll(() => requests.filter(isPoll).length, { timeout: 10_000 })
        .toBeGreaterThanOrEqual(3);
      // When nobody touches the page for the 7-second timeout
      // Then polling pauses and says so
      await expect(panel.locator('.jp-Air-paused')).toHaveText(
        'Paused after 7 seconds of inactivity — Refresh to resume',
        { timeout: 20_000 }
      );
      await expect(panel.locator('.jp-Air-state')).toHaveText('paused');
      // And no poll or refresh is made while paused (the idle-holder reads keep their own low rate)
      const sampling = () => requests.filter(r => isPoll(r) || isRefresh(r)).length;
      const whilePaused = requests.length;
      const sampledWhilePaused = sampling();
      await page.waitForTimeout(5000);
      expect(sampling()).toBe(sampledWhilePaused);
      // When Refresh is clicked
      await panel.locator('.jp-Air-refresh').click();
      // Then a refresh is posted, the pause message goes, and polling resumes
      await expect.poll(() => requests.slice(whilePaused).filter(isRefresh).length).toBe(1);
      await expect(panel.locator('.jp-Air-paused')).toHaveCount(0);
      await expect(panel.locator('.jp-Air-state')).toHaveText('live');
      await expect
        .poll(() => requests.slice(whilePaused).filter(isPoll).length, { timeout: 10_000 })
        .toBeGreaterThanOrEqual(2);
    });
  });

  test.describe('polling every second', () => {
    test.use({
      mockSettings: { ...galata.DEFAULT_SETTINGS, [PLUGIN_ID]: { pollIntervalSeconds: 1 } }
    });

    test('screenshots in the light and the dark theme', async ({ page }, testInfo) => {
      // Given the panel open in a wider sidebar, with several samples charted
      const panel = page.locator(PANEL);
      await page.locator(SIDEBAR_TAB).click();
      await expect(panel.locator('.jp-Air-device')).toHaveCount(2);
      await widenRightSidebar(page, 480);
      await page.waitForTimeout(8000);
      const hover = async () => {
        const plot = await panel.locator('.jp-Air-chart-utilization .u-over').boundingBox();
        if (plot) {
          await page.mouse.move(plot.x + plot.width * 0.9, plot.y + plot.height / 2);
        }
      };
      await hover();
      // When it is captured in the light theme, then in the dark theme
      const light = testInfo.outputPath('gpu-panel-light.png');
      await panel.screenshot({ path: light });
      await testInfo.attach('gpu-panel-light', { path: light, contentType: 'image/png' });
      await page.theme.setDarkTheme();
      await expect(page.locator('body')).toHaveAttribute('data-jp-theme-light', 'false');
      await page.waitForTimeout(1000);
      await hover();
      const dark = testInfo.outputPath('gpu-panel-dark.png');
      await panel.screenshot({ path: dark });
      await testInfo.attach('gpu-panel-dark', { path: dark, contentType: 'image/png' });
      // Then the series colours follow the dark theme and the charts were redrawn with them
      const color = await panel.evaluate(node =>
        getComputedStyle(node).getPropertyValue('--jp-Air-gpu-color-0').trim()
      );
      expect(color).toBe('#6cb4f0');
      await expect(panel.locator('.jp-Air-chart canvas')).toHaveCount(3);
    });
  });
});
