/** Unit tests of what follows the GPU model: the runs shaded on its charts, and the status bar readout. */
import { nullTranslator } from '@jupyterlab/translation';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { GpuModel } from '../gpu/model';
import { busiestGpu, readout } from '../gpu/readout';
import { RunTimeline } from '../gpu/timeline';
import { FakeRunsServer, makeRun } from './fakeRuns';
import { FakeServer } from './fakeServer';
import { advance } from './harness';

const SECOND = 1000;
const trans = nullTranslator.load('jupyter_air');

let server: FakeRunsServer;

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeRunsServer();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('RunTimeline', () => {
  it('asks for the runs of the charts once per new GPU sample, only while the panel shows', async () => {
    // Given a GPU model whose panel is shown, and a timeline following it
    const gpuServer = new FakeServer(2, 2000);
    gpuServer.addSamples(5);
    const gpu = new GpuModel({
      request: async <T>(endpoint: string, init?: RequestInit) =>
        (endpoint.startsWith('runs')
          ? server.request<T>(endpoint, init)
          : gpuServer.request<T>(endpoint, init)) as T,
      settings: { pollIntervalSeconds: 2, inactivityTimeoutSeconds: 10_000 }
    });
    server.windowRuns = [makeRun('a', gpuServer.timestamps[1])];
    const timeline = new RunTimeline({ gpu, request: server.request });
    gpu.setVisible(true);
    await advance(0);
    // Then it asked for the window of the samples held
    const first = gpuServer.timestamps;
    expect(server.requests).toEqual([`GET runs?from=${first[0]}&to=${first[4]}`]);
    expect(timeline.runs.map(r => r.run_id)).toEqual(['a']);
    // When three polls bring one sample each and one brings none
    for (let i = 0; i < 3; i++) {
      gpuServer.addSamples(1);
      await advance(2 * SECOND);
    }
    await advance(2 * SECOND);
    // Then one request followed each new sample, asking from the end of the previous answer
    const ts = gpuServer.timestamps;
    expect(server.requests.slice(1)).toEqual([
      `GET runs?from=${ts[4]}&to=${ts[5]}`,
      `GET runs?from=${ts[5]}&to=${ts[6]}`,
      `GET runs?from=${ts[6]}&to=${ts[7]}`
    ]);
    expect(timeline.runs.map(r => r.run_id)).toEqual(['a']);
    // When only the status bar shows the GPUs (the panel is hidden), Then the charts' runs are not read
    gpu.setVisible(true, 'status-bar');
    gpu.setVisible(false);
    gpuServer.addSamples(3);
    await advance(6 * SECOND);
    expect(server.calls).toHaveLength(4);
    timeline.dispose();
    gpu.dispose();
  });
});

describe('GPU status bar readout', () => {
  it('shows the busiest GPU: utilization, memory used of total, temperature', async () => {
    // Given 3 GPUs, GPU 1 at 37 % with 12 GiB of 80 used, the others idle
    const gpuServer = new FakeServer(3);
    gpuServer.addSamples(2);
    const request = async <T>(endpoint: string, init?: RequestInit): Promise<T> => {
      const answer = await gpuServer.request<T>(endpoint, init);
      const gpus = (answer as { gpus?: Record<string, number[][]> }).gpus;
      if (gpus) {
        gpus.utilization_percent = gpus.utilization_percent.map((s, i) =>
          s.map(() => (i === 1 ? 37 : 0))
        );
        gpus.memory_used_bytes = gpus.memory_used_bytes.map((s, i) =>
          s.map(() => (i === 1 ? 12 : 0.5) * 1024 ** 3)
        );
      }
      return answer;
    };
    const gpu = new GpuModel({ request });
    // When the readout shows
    gpu.setVisible(true, 'status-bar');
    await advance(0);
    // Then it is about GPU 1
    expect(busiestGpu(gpu)).toBe(1);
    expect(readout(gpu, 1, trans)).toBe('GPU 1 37% · 12/80 GiB · 50 °C');
    expect(readout(gpu, 0, trans)).toBe('GPU 0 0% · 0.5/80 GiB · 50 °C');
    gpu.dispose();
  });

  it('gives the GPU panel the newest samples at once when it opens while the readout polls', async () => {
    const gpuServer = new FakeServer(1, 10_000);
    gpuServer.addSamples(1);
    const gpu = new GpuModel({ request: gpuServer.request });
    gpu.setVisible(true, 'status-bar');
    await advance(SECOND);
    const before = gpuServer.calls.length;
    gpu.setVisible(true);
    await advance(0);
    expect(gpuServer.calls.length).toBe(before + 1);
    gpu.dispose();
  });

  it('keeps the GPU model polling while shown, even with the GPU panel closed', async () => {
    const gpuServer = new FakeServer(1, 10_000);
    gpuServer.addSamples(1);
    const gpu = new GpuModel({ request: gpuServer.request });
    gpu.setVisible(true, 'status-bar');
    await advance(30 * SECOND);
    expect(gpuServer.requests.filter(r => r.startsWith('GET gpu')).length).toBeGreaterThanOrEqual(
      3
    );
    expect(gpu.isVisibleTo('panel')).toBe(false);
    gpu.dispose();
  });
});
