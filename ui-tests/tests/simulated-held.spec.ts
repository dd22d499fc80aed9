/**
 * Ray nodes held for a next call, in the GPU panel: a notebook's kernel keeping nodes, and the keeper of nodes
 * parked by remote calls (marked so); Release of the parked ones ends their keeper and its row.
 */
import { expect, galata, test } from '@jupyterlab/galata';

import { openNotebook, PANEL, PLUGIN_ID, SIDEBAR_TAB } from './helpers';

test.use({
  mockSettings: { ...galata.DEFAULT_SETTINGS, [PLUGIN_ID]: { idleHoldersIntervalSeconds: 2 } }
});

// The registrations a kernel's kept call and a remote call's keeper write (no cluster: the keeper's cluster
// address answers nothing, so its Release ends it after one failed try to reach it).
const HOLD = `import json, subprocess, sys
from jupyter_air.cluster.held import Held

nodes = [{"node": 0, "hostname": "gpu-07", "ip": "10.0.0.7", "ray_node_id": "a" * 56},
         {"node": 1, "hostname": "gpu-08", "ip": "10.0.0.8", "ray_node_id": "b" * 56}]
held = Held(nodes, "1 CPU, 2 GPU", "127.0.0.1:6379", 300)
spec = {"address": "127.0.0.1:1", "names": ["air-parked-demo-0-0", "air-parked-demo-0-1"], "nodes": nodes,
        "share": "1 CPU, 2 GPU", "seconds": 300}
keeper = subprocess.Popen([sys.executable, "-m", "jupyter_air.cluster.keeper", json.dumps(spec)])
print("keeper", keeper.pid)`;

// A short folder of its own (not Galata's per-test one), so that the screenshot for the docs reads well.
const FOLDER = 'held-nodes';

test('the panel lists kept and parked Ray nodes, and Release ends the parked ones', async ({
  page
}, testInfo) => {
  test.setTimeout(180_000);
  // Given a notebook whose kernel keeps 2 nodes, and the keeper of 2 nodes its remote calls parked
  await page.contents.createDirectory(FOLDER);
  await openNotebook(page, `${FOLDER}/train.ipynb`, [HOLD, 'held.close(); keeper.wait(30)']);
  await page.notebook.runCell(0);
  const printed = page.locator('.jp-OutputArea-output', { hasText: /\bkeeper \d+/ });
  await expect(printed).toBeVisible({ timeout: 60_000 });
  const keeper = /keeper (\d+)/.exec((await printed.textContent()) ?? '')![1];

  // When the GPU panel is opened
  await page.locator(SIDEBAR_TAB).click();

  // Then both are listed under the notebook, with their nodes; only the keeper's is marked parked
  const rows = page.locator(`${PANEL} .jp-Air-held`);
  await expect(rows).toHaveCount(2, { timeout: 30_000 });
  const parked = page.locator(`${PANEL} .jp-Air-held[data-pid="${keeper}"]`);
  await expect(parked).toContainText('parked by remote calls');
  await expect(parked).toContainText('gpu-07, gpu-08');
  await expect(parked.locator('.jp-Air-process-path')).toHaveText(`${FOLDER}/train.ipynb`);
  await expect(rows.filter({ hasText: 'parked by remote calls' })).toHaveCount(1);
  await page
    .locator(`${PANEL} .jp-Air-held-nodes`)
    .screenshot({ path: testInfo.outputPath('held-nodes.png') });

  // When its Release is clicked
  await parked.locator('.jp-Air-held-release').click();

  // Then the keeper ends (its try to free the nodes on the unreachable cluster fails) and its row goes
  await expect(parked).toHaveCount(0, { timeout: 60_000 });
  await page.notebook.runCell(1);
  await expect(rows).toHaveCount(0, { timeout: 30_000 });
  await page.notebook.close(true);
  await page.contents.deleteDirectory(FOLDER);
});
