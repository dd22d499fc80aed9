/** Unit tests of the React views: names shown as text, never as HTML; paths open notebooks; banners. */
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { act } from 'react';
import { describe, expect, it, vi } from 'vitest';

import { ErrorBanner, PausedBanner } from '../components/Banners';
import { DeviceList } from '../gpu/components/DeviceList';
import { GpuPanel } from '../gpu/components/GpuPanel';
import { Header } from '../gpu/components/Header';
import { ProcessList } from '../gpu/components/ProcessList';
import { appendPayload, emptyHistory } from '../gpu/history';
import { GpuModel } from '../gpu/model';
import { RequestError } from '../request';
import { FakeServer } from './fakeServer';
import { reactRoot } from './harness';

const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const trans = nullTranslator.load('jupyter_air');

const dom = reactRoot();

describe('views', () => {
  it('shows device and process names as text', () => {
    // Given a GPU and a process whose names hold HTML
    const server = new FakeServer(1);
    server.addSamples(2);
    const payload = server.payload();
    payload.devices[0].name = HOSTILE;
    const history = emptyHistory(1);
    appendPayload(history, payload);
    const processes = [{ gpu_index: 0, pid: 7, name: HOSTILE, used_memory_bytes: 1024 ** 3 }];
    // When rendered
    dom.render(
      <>
        <DeviceList trans={trans} devices={payload.devices} history={history} />
        <ProcessList
          trans={trans}
          devices={payload.devices}
          processes={processes}
          onOpenPath={() => undefined}
        />
      </>
    );
    // Then the names appear verbatim and no element was injected
    expect(dom.container.querySelector('img')).toBeNull();
    expect(dom.container.querySelector('.jp-Air-device-name')?.textContent).toBe(HOSTILE);
    expect(dom.container.querySelector('.jp-Air-process-name')?.textContent).toBe(HOSTILE);
    expect(dom.container.querySelector('.jp-Air-value-memory')?.textContent).toContain('80.0 GiB');
  });

  it('gives each GPU the colour of its chart line, repeating after the last colour', () => {
    // Given 9 GPUs
    const server = new FakeServer(9);
    server.addSamples(1);
    const payload = server.payload();
    const history = emptyHistory(9);
    appendPayload(history, payload);
    // When they are listed
    dom.render(<DeviceList trans={trans} devices={payload.devices} history={history} />);
    // Then GPUs 0-7 have their own swatch colour and GPU 8 reuses the first
    const swatches = Array.from(
      dom.container.querySelectorAll<HTMLElement>('.jp-Air-swatch'),
      node => node.style.background
    );
    expect(swatches[7]).toBe('var(--jp-Air-gpu-color-7)');
    expect(swatches[8]).toBe('var(--jp-Air-gpu-color-0)');
  });

  it('opens the notebook of a kernel process on click', () => {
    // Given a process that is a notebook kernel
    const server = new FakeServer(1);
    const devices = server.payload().devices;
    server.addSamples(1);
    const onOpenPath = vi.fn();
    const processes = [
      {
        gpu_index: 0,
        pid: 42,
        name: 'python',
        used_memory_bytes: 2048,
        kernel_id: 'k',
        path: 'train <1>.ipynb'
      }
    ];
    dom.render(
      <ProcessList trans={trans} devices={devices} processes={processes} onOpenPath={onOpenPath} />
    );
    // When its path is clicked
    const link = dom.container.querySelector<HTMLButtonElement>('.jp-Air-process-path');
    act(() => link?.click());
    // Then the notebook is opened
    expect(link?.textContent).toBe('train <1>.ipynb');
    expect(onOpenPath).toHaveBeenCalledWith('train <1>.ipynb');
  });

  it('shows the simulated badge and the state, and refreshes on click', () => {
    // Given a simulated source
    const onRefresh = vi.fn();
    dom.render(
      <Header
        trans={trans}
        node={HOSTILE}
        source="simulated"
        newestSampleMs={null}
        state="paused"
        onRefresh={onRefresh}
      />
    );
    // Then the badge, the node as text and the state are shown
    expect(dom.container.querySelector('.jp-Air-badge-simulated')?.textContent).toBe('simulated');
    expect(dom.container.querySelector('.jp-Air-node')?.textContent).toBe(HOSTILE);
    expect(dom.container.querySelector('.jp-Air-state')?.textContent).toBe('paused');
    // When Refresh is clicked, Then the callback runs
    act(() => dom.container.querySelector<HTMLElement>('.jp-Air-refresh')?.click());
    expect(onRefresh).toHaveBeenCalledTimes(1);
  });

  it('says after how long polling paused, in minutes when they are whole', () => {
    // Given polling paused after 30 seconds, then after 300
    dom.render(<PausedBanner trans={trans} timeoutSeconds={30} />);
    // Then the banner names the timeout and how to resume
    const banner = () => dom.container.querySelector('.jp-Air-paused')?.textContent;
    expect(banner()).toBe('Paused after 30 seconds of inactivity — Refresh to resume');
    dom.render(<PausedBanner trans={trans} timeoutSeconds={300} />);
    expect(banner()).toBe('Paused after 5 minutes of inactivity — Refresh to resume');
  });

  it('tells a missing server extension from a failing one, and when it retries', () => {
    // Given a 404 with a retry in 20 s
    const missing = new RequestError('jupyter-air/gpu answered 404', 'unavailable', 404);
    dom.render(
      <ErrorBanner
        trans={trans}
        error={missing}
        heading="Reading GPU data failed"
        retryInMs={20_000}
      />
    );
    // Then the banner says the extension is unavailable, with the message and the retry
    expect(
      dom.container.querySelector('.jp-Air-unavailable .jp-Air-banner-title')?.textContent
    ).toBe('Server extension unavailable');
    expect(dom.container.querySelector('.jp-Air-retry')?.textContent).toBe(
      'Retrying in 20 seconds.'
    );
    // Given a server error and no retry scheduled (paused)
    const failing = new RequestError('jupyter-air/gpu answered 500: boom', 'server', 500);
    dom.render(
      <ErrorBanner
        trans={trans}
        error={failing}
        heading="Reading GPU data failed"
        retryInMs={null}
      />
    );
    // Then it says reading failed, and nothing about retrying
    expect(dom.container.querySelector('.jp-Air-error .jp-Air-banner-title')?.textContent).toBe(
      'Reading GPU data failed'
    );
    expect(dom.container.querySelector('.jp-Air-retry')).toBeNull();
  });

  it('shows a version mismatch with both versions and what to do, and the panel still works', async () => {
    // Given a server extension of another version, on a node without GPU
    const server = new FakeServer();
    server.available = false;
    server.addSamples(1);
    server.version = '9.9.9';
    const model = new GpuModel({ request: server.request, frontendVersion: '0.1.0' });
    await model.refresh();
    // When the panel is rendered
    dom.render(
      <GpuPanel
        trans={trans}
        model={model}
        revision={1}
        themeKey={0}
        onOpenPath={() => undefined}
      />
    );
    // Then a non-blocking banner names both versions and the fix, next to the server's answer
    const banner = dom.container.querySelector('.jp-Air-version-mismatch');
    expect(banner?.getAttribute('role')).toBe('status');
    expect(banner?.textContent).toContain(
      'The jupyter_air server extension is 9.9.9 but this page runs 0.1.0.'
    );
    expect(banner?.textContent).toContain('Reload this page');
    expect(banner?.textContent).toContain('restart the Jupyter server');
    expect(dom.container.querySelector('.jp-Air-empty-title')?.textContent).toBe(
      'No GPU on this node'
    );
    model.dispose();
  });

  it('shows no version banner when the versions match', async () => {
    // Given a server extension of this page's version
    const server = new FakeServer();
    server.available = false;
    server.addSamples(1);
    server.version = '0.1.0';
    const model = new GpuModel({ request: server.request, frontendVersion: '0.1.0' });
    await model.refresh();
    // When the panel is rendered, Then there is no version banner
    dom.render(
      <GpuPanel
        trans={trans}
        model={model}
        revision={1}
        themeKey={0}
        onOpenPath={() => undefined}
      />
    );
    expect(dom.container.querySelector('.jp-Air-empty-title')?.textContent).toBe(
      'No GPU on this node'
    );
    expect(dom.container.querySelector('.jp-Air-version-mismatch')).toBeNull();
    model.dispose();
  });
});
