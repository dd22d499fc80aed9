/** The GPU panel against a real server whose GPU source is `none`. */
import { expect, test } from '@jupyterlab/galata';

import { openFromPalette, PANEL } from './helpers';

test('shows the no-GPU empty state with the server reason', async ({ page }) => {
  // Given a server with no GPU, whose reason is in its answer
  const answer = await page.request.get('/jupyter-air/gpu');
  expect(answer.status()).toBe(200);
  const body = await answer.json();
  expect(body.available).toBe(false);
  expect(body.reason).toBeTruthy();
  // When the panel opens
  await openFromPalette(page);
  const panel = page.locator(PANEL);
  // Then the empty state shows that reason, the host row is still there, and no GPU is listed
  await expect(panel.locator('.jp-Air-empty-title')).toHaveText('No GPU on this node');
  await expect(panel.locator('.jp-Air-empty-reason')).toHaveText(body.reason);
  await expect(panel.locator('.jp-Air-state')).toHaveText('no GPU');
  await expect(panel.locator('.jp-Air-host-cpu')).toHaveText(/^CPU \d+%$/);
  await expect(panel.locator('.jp-Air-device')).toHaveCount(0);
  await expect(panel.locator('.jp-Air-unavailable')).toHaveCount(0);
  await expect(panel.locator('.jp-Air-badge-simulated')).toHaveCount(0);
});
