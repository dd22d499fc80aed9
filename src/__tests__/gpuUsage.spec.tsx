/** Unit tests of GPU use in the GPU panel: read when shown, at most once a minute, names shown as text. */
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { GpuUsageView } from '../gpu/components/GpuUsageView';
import { GpuModel } from '../gpu/model';
import { GpuUsage, IUsagePayload, IUsageRow, USAGE_REFRESH_MS } from '../gpu/usage';
import { FakeServer } from './fakeServer';
import { advance, reactRoot } from './harness';

const SECOND = 1000;
const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const trans = nullTranslator.load('jupyter_air');
const dom = reactRoot();

function row(key: string, gpuHours: number, energyWh: number, cost = 0): IUsageRow {
  return { key, runs: 1, gpu_hours: gpuHours, energy_wh: energyWh, simulated_energy_wh: 0, cost };
}

function usage(by: IUsagePayload['by'], prices = { gpu_hour: 0, kwh: 0 }): IUsagePayload {
  return {
    by,
    since_ms: 0,
    until_ms: 7 * 24 * 3600 * SECOND,
    prices,
    rows: [row('bob', 64, 16530.7, 99.31), row(HOSTILE, 12.5, 3572.2, 19.46)],
    total: { ...row('total', 76.5, 20102.9, 118.77), runs: 2 }
  };
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('GpuUsage', () => {
  it('reads when the panel shows, then at most once a minute, and at once for another grouping', async () => {
    // Given a GPU model polled every 2 s whose panel is hidden, and the use following it
    const gpuServer = new FakeServer(2, 2000);
    gpuServer.addSamples(3);
    const asked: string[] = [];
    const request = async <T,>(endpoint: string, init?: RequestInit): Promise<T> => {
      if (endpoint.startsWith('usage')) {
        asked.push(endpoint);
        return usage(endpoint.endsWith('day') ? 'day' : 'user') as T;
      }
      return gpuServer.request<T>(endpoint, init);
    };
    const gpu = new GpuModel({
      request,
      settings: { pollIntervalSeconds: 2, inactivityTimeoutSeconds: 10_000 }
    });
    const use = new GpuUsage({ gpu, request });
    gpu.setVisible(true, 'status-bar');
    await advance(4 * SECOND);
    // Then nothing is read while only the status bar shows the GPUs
    expect(asked).toEqual([]);
    // When the panel shows, Then the use by user is read once
    gpu.setVisible(true);
    await advance(0);
    expect(asked).toEqual(['usage?by=user']);
    expect(use.payload?.rows.map(r => r.key)).toEqual(['bob', HOSTILE]);
    // When polls bring new samples for 30 s, Then it is not read again; after a minute, it is
    for (let i = 0; i < 15; i++) {
      gpuServer.addSamples(1);
      await advance(2 * SECOND);
    }
    expect(asked).toHaveLength(1);
    for (let i = 0; i < 16; i++) {
      gpuServer.addSamples(1);
      await advance(2 * SECOND);
    }
    expect(asked).toHaveLength(2);
    expect(USAGE_REFRESH_MS).toBe(60 * SECOND);
    // When the grouping changes to day, Then it is read at once, by day
    use.setBy('day');
    expect(use.payload).toBeNull();
    await advance(0);
    expect(asked[asked.length - 1]).toBe('usage?by=day');
    expect(use.by).toBe('day');
    expect(use.payload?.by).toBe('day');
    use.dispose();
    gpu.dispose();
  });

  it('shows GPU-hours, energy and the total per group, names as text, the cost only when priced', () => {
    // Given use at no price, When it is shown, Then there is no cost column and names are text
    const onBy = vi.fn();
    dom.render(<GpuUsageView by="user" payload={usage('user')} onBy={onBy} trans={trans} />);
    const cells = (key: string) =>
      Array.from(dom.container.querySelectorAll(`tr[data-key="${key}"] td`)).map(
        c => c.textContent
      );
    expect(cells('bob')).toEqual(['bob', '64.00', '16530.7']);
    const second = dom.container.querySelectorAll('.jp-Air-usage-row:nth-child(2) td');
    expect(Array.from(second).map(c => c.textContent)).toEqual([HOSTILE, '12.50', '3572.2']);
    expect(dom.container.querySelector('img')).toBeNull();
    expect(cells('total')).toEqual(['total', '76.50', '20102.9']);
    // Given prices, Then each row has its cost
    dom.render(
      <GpuUsageView
        by="user"
        payload={usage('user', { gpu_hour: 1.5, kwh: 0.2 })}
        onBy={onBy}
        trans={trans}
      />
    );
    expect(cells('bob')).toEqual(['bob', '64.00', '16530.7', '99.31']);
    // When another grouping is chosen, Then it is asked for
    const select = dom.container.querySelector('select') as HTMLSelectElement;
    select.value = 'experiment';
    select.dispatchEvent(new Event('change', { bubbles: true }));
    expect(onBy).toHaveBeenCalledWith('experiment');
  });

  it('says when no run used a GPU, and counts no energy of simulated GPUs', () => {
    const empty = {
      ...usage('day'),
      rows: [],
      total: { ...row('total', 0, 0), simulated_energy_wh: 12.5 }
    };
    dom.render(<GpuUsageView by="day" payload={empty} onBy={() => undefined} trans={trans} />);
    expect(dom.container.textContent).toContain('No run used a GPU in these 7 days.');
    expect(dom.container.textContent).toContain('12.5 Wh measured on simulated GPUs: not counted.');
  });
});
