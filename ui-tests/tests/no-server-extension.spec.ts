/** The GPU panel on a server where the jupyter_air server extension is not enabled. */
import { expect, test } from '@jupyterlab/galata';

import { openFromPalette, PANEL } from './helpers';

test('says the server extension is unavailable, distinct from no GPU', async ({ page }) => {
  // Given a server without the extension's routes
  const answer = await page.request.get('/jupyter-air/gpu');
  expect(answer.status()).toBe(404);
  // When the panel opens
  await openFromPalette(page);
  const panel = page.locator(PANEL);
  // Then it says the server extension is unavailable and how to fix it, not "no GPU"
  await expect(panel.locator('.jp-Air-unavailable .jp-Air-banner-title')).toHaveText(
    'Server extension unavailable'
  );
  await expect(panel.locator('.jp-Air-unavailable')).toContainText('answered 404');
  await expect(panel.locator('.jp-Air-unavailable')).toContainText(
    'Install the jupyter_air Python package'
  );
  await expect(panel.locator('.jp-Air-state')).toHaveText('server extension unavailable');
  await expect(panel.locator('.jp-Air-empty')).toHaveCount(0);
});
