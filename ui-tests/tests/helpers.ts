/** Selectors and helpers shared by the browser tests. */
import type { IJupyterLabPageFixture } from '@jupyterlab/galata';
import type { Locator, Page, Request } from '@playwright/test';
import { execFileSync } from 'child_process';

export const PANEL_ID = 'jupyter-air-gpu-panel';
export const PANEL = `#${PANEL_ID}`;
export const SIDEBAR_TAB = `.jp-SideBar.jp-mod-right .lm-TabBar-tab[data-id="${PANEL_ID}"]`;
export const PLUGIN_ID = 'jupyter-air:plugin';

/** Record every request the page makes to the GPU routes, in order. */
export function recordGpuRequests(page: Page): Request[] {
  const seen: Request[] = [];
  page.on('request', request => {
    if (new URL(request.url()).pathname.includes('/jupyter-air/gpu')) {
      seen.push(request);
    }
  });
  return seen;
}

export function isRefresh(request: Request): boolean {
  return (
    request.method() === 'POST' &&
    new URL(request.url()).pathname.endsWith('/jupyter-air/gpu/refresh')
  );
}

export function isPoll(request: Request): boolean {
  return request.method() === 'GET' && new URL(request.url()).pathname.endsWith('/jupyter-air/gpu');
}

/**
 * Whether a saved workspace (the body of its PUT) has the right sidebar open on `widgetId`: other
 * saves, made before the panel was opened, list the panel among the sidebar's widgets too.
 */
export function rightSidebarShows(body: string | null, widgetId: string): boolean {
  try {
    const right = JSON.parse(body ?? '')?.data?.['layout-restorer:data']?.right;
    return right?.current === widgetId && right?.collapsed === false;
  } catch {
    return false;
  }
}

/** Open the panel through the command palette. */
export async function openFromPalette(page: Page): Promise<void> {
  await page.keyboard.press('Control+Shift+C');
  const input = page.locator('.lm-CommandPalette-input');
  await input.fill('Open GPU resources');
  await page.locator('.lm-CommandPalette-item', { hasText: 'Open GPU resources' }).first().click();
}

/** The current values of every GPU, as shown. */
export async function shownValues(panel: Locator): Promise<string[]> {
  return panel.locator('.jp-Air-device-values').allTextContents();
}

/** Drag the handle between the main area and the right sidebar so the sidebar is `width` px wide. */
export async function widenRightSidebar(page: Page, width: number): Promise<void> {
  const handles = page.locator('#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)');
  const handle = handles.last();
  const box = await handle.boundingBox();
  const viewport = page.viewportSize();
  if (!box || !viewport) {
    throw new Error('The right sidebar handle is not on the page.');
  }
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width / 2, y);
  await page.mouse.down();
  await page.mouse.move(viewport.width - width - 33, y, { steps: 5 });
  await page.mouse.up();
}

/** Drag the handle between the left sidebar and the main area so the left sidebar's panel is `width` px wide. */
export async function widenLeftSidebar(page: Page, width: number): Promise<void> {
  const handle = page
    .locator('#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)')
    .first();
  const box = await handle.boundingBox();
  const tabs = await page.locator('.jp-SideBar.jp-mod-left').boundingBox();
  if (!box || !tabs) {
    throw new Error('The left sidebar handle is not on the page.');
  }
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + box.width / 2, y);
  await page.mouse.down();
  await page.mouse.move(tabs.x + tabs.width + width + box.width / 2, y, { steps: 5 });
  await page.mouse.up();
}

/**
 * Write a notebook of code cells at `path` and open it. Typing code into a cell lets the editor's
 * auto-indent rewrite it when the machine is slow; a saved file is exactly what the test says.
 */
export async function openNotebook(
  page: IJupyterLabPageFixture,
  path: string,
  sources: string[]
): Promise<void> {
  const notebook = {
    cells: sources.map(source => ({
      cell_type: 'code',
      execution_count: null,
      metadata: {},
      outputs: [],
      source
    })),
    metadata: {
      kernelspec: { name: 'python3', display_name: 'Python 3 (ipykernel)', language: 'python' }
    },
    nbformat: 4,
    nbformat_minor: 5
  };
  await page.contents.uploadContent(JSON.stringify(notebook), 'text', path);
  await page.notebook.openByPath(path);
  await page.notebook.activate(path.split('/').pop()!);
}

/** Run `air <args>` in `cwd` on AIR_HOME `home`, as a terminal of the server's user would; what it printed. */
export function airCommand(home: string, cwd: string, ...args: string[]): string {
  const python = process.env.JUPYTER_AIR_UI_PYTHON ?? 'python';
  return execFileSync(python, ['-m', 'jupyter_air.cli', ...args], {
    cwd,
    env: { ...process.env, AIR_HOME: home, MLFLOW_TRACKING_URI: '' }
  })
    .toString()
    .trim();
}
