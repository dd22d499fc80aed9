// Drives the chart-update benchmark in Chromium (Playwright from ui-tests/) and prints JSON.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = normalize(join(fileURLToPath(import.meta.url), '..', '..', '..'));
const require = createRequire(join(root, 'ui-tests', 'package.json'));
const { chromium } = require('@playwright/test');

const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css', '.html': 'text/html' };
const ORIGIN = 'http://bench.invalid';

/** Serve the repository's files; an extensionless import of lib/ gets `.js`, as a bundler would. */
async function serve(route) {
  let path = decodeURIComponent(new URL(route.request().url()).pathname);
  if (path.startsWith('/lib/') && !extname(path)) {
    path += '.js';
  }
  const file = normalize(join(root, path));
  if (!file.startsWith(root)) {
    return route.fulfill({ status: 403, body: 'outside the repository' });
  }
  try {
    const body = await readFile(file);
    await route.fulfill({ status: 200, body, contentType: TYPES[extname(file)] ?? 'application/octet-stream' });
  } catch {
    await route.fulfill({ status: 404, body: `not found: ${path}` });
  }
}

const query = process.argv[2] ?? '';
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run']
});
try {
  const page = await browser.newPage({ viewport: { width: 800, height: 900 } });
  await page.route(`${ORIGIN}/**`, serve);
  await page.goto(`${ORIGIN}/benchmarks/ui/index.html${query}`);
  const result = await page.evaluate(() => window.benchResult);
  if (process.env.BENCH_SCREENSHOT) {
    await page.locator('#host').screenshot({ path: process.env.BENCH_SCREENSHOT });
  }
  process.stdout.write(JSON.stringify(result) + '\n');
  if (result.error) {
    process.exitCode = 1;
  }
} finally {
  await browser.close();
}
