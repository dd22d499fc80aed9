/** The GPU panel of a server watching a Ray cluster (a head and two workers, simulated GPUs on each). */
import { expect, test } from '@jupyterlab/galata';

import { PANEL, SIDEBAR_TAB, widenRightSidebar } from './helpers';

test('the node selector shows every node, then one node in detail, then every node again', async ({
  page
}) => {
  // Given JupyterLab whose server watches a 3-node Ray cluster
  const panel = page.locator(PANEL);
  await page.locator(SIDEBAR_TAB).click();
  await widenRightSidebar(page, 460);

  // When the panel opens, Then it shows every node, each live with its 2 simulated GPUs' values
  const rows = panel.locator('.jp-Air-nodeRow');
  await expect(rows).toHaveCount(3, { timeout: 60_000 });
  await expect(panel.locator('.jp-Air-nodeRow[data-state="live"]')).toHaveCount(3, {
    timeout: 60_000
  });
  await expect(panel.locator('.jp-Air-nodeRow-gpu')).toHaveCount(6);
  await expect(panel.locator('.jp-Air-nodeRow .jp-Air-value-utilization').first()).toHaveText(
    /^\d+%$/
  );
  await expect(panel.locator('.jp-Air-node')).toHaveText('All nodes');
  const select = panel.locator('select.jp-Air-nodeSelect');
  await expect(select.locator('option')).toHaveCount(4);
  await panel.screenshot({ path: test.info().outputPath('gpu-panel-nodes.png') });

  // When a worker node is clicked in the overview
  const worker = rows.filter({ hasNot: page.locator('.jp-Air-badge') }).first();
  const workerId = await worker.getAttribute('data-node-id');
  await worker.locator('.jp-Air-nodeRow-name').click();

  // Then the panel shows that node as it shows a lone server: its two GPUs, charts and host row
  await expect(select).toHaveValue(workerId ?? '');
  await expect(panel.locator('.jp-Air-device')).toHaveCount(2);
  await expect(panel.locator('.jp-Air-chart canvas')).toHaveCount(3);
  await expect(panel.locator('.jp-Air-nodeRow')).toHaveCount(0);
  await panel.screenshot({ path: test.info().outputPath('gpu-panel-node-detail.png') });

  // When "All nodes" is chosen in the selector, Then the overview is back
  const overview = page.waitForResponse(response =>
    /\/jupyter-air\/gpu(\?|$)/.test(response.url())
  );
  await select.selectOption('');
  await overview; // answered before the route below: a Refresh meanwhile would join that request
  await expect(rows).toHaveCount(3);
  await expect(panel.locator('.jp-Air-device')).toHaveCount(0);

  // When the server reports that worker unreachable (as it does once its node stops answering)
  await page.route(/\/jupyter-air\/gpu(\?|$)/, async route => {
    const response = await route.fetch();
    const body = await response.json();
    for (const node of body.nodes) {
      if (node.id === workerId) {
        Object.assign(node, { state: 'unreachable', reason: 'no answer within 1 s', gpus: [] });
      }
    }
    await route.fulfill({ response, json: body });
  });
  await panel.locator('.jp-Air-refresh').click();

  // Then its row says so, with when it was last seen, and shows no number at all
  const gone = panel.locator(`.jp-Air-nodeRow[data-node-id="${workerId}"]`);
  // (the Refresh's answer, or at the latest the next poll's)
  await expect(gone).toHaveAttribute('data-state', 'unreachable', { timeout: 30_000 });
  await expect(gone.locator('.jp-Air-nodeRow-absent')).toHaveText(
    /^No answer; last seen \d\d:\d\d:\d\d$/
  );
  await expect(gone.locator('.jp-Air-value-utilization')).toHaveCount(0);
  await expect(panel.locator('.jp-Air-nodeRow[data-state="live"]')).toHaveCount(2);
  await panel.screenshot({ path: test.info().outputPath('gpu-panel-nodes-unreachable.png') });
});
