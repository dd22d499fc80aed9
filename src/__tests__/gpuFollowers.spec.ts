/** Unit tests of what follows the GPU model: the runs shaded on its charts, and the status bar readout. */
import { nullTranslator } from '@jupyterlab/translation';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { IRun } from '../experiment/tokens';
import { GpuModel } from '../gpu/model';
import { busiestGpu, readout } from '../gpu/readout';
import { RunTimeline } from '../gpu/timeline';
import type { Requester } from '../request';
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
    expect(server.requests).toEqual([`GET runs?from=${first[0]}&to=${first[4]}&node=node-1`]);
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
      `GET runs?from=${ts[4]}&to=${ts[5]}&node=node-1`,
      `GET runs?from=${ts[5]}&to=${ts[6]}&node=node-1`,
      `GET runs?from=${ts[6]}&to=${ts[7]}&node=node-1`
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

  it('shows the runs of the node chosen in a cluster, not those of the node shown before', async () => {
    // Given the charts of a cluster's first node (host-a), shaded with its runs
    const { gpu, timeline, gpuServer } = clusterTimeline();
    gpu.setVisible(true);
    await advance(0);
    const ts = gpuServer.timestamps;
    expect(server.requests).toEqual([`GET runs?from=${ts[0]}&to=${ts[4]}&node=host-a`]);
    expect(timeline.runs.map(r => r.run_id)).toEqual(['on-a']);
    // When node b is chosen
    gpu.selectNode('b');
    // Then host-a's runs leave the charts at once
    expect(timeline.runs).toEqual([]);
    // and once b's samples came, its runs of the whole window are asked for and shown alone
    await advance(0);
    expect(server.requests.slice(1)).toEqual([`GET runs?from=${ts[0]}&to=${ts[4]}&node=host-b`]);
    expect(timeline.runs.map(r => r.run_id)).toEqual(['on-b']);
    timeline.dispose();
    gpu.dispose();
  });

  it('drops an answer about the node shown before another was chosen, and asks for the new one', async () => {
    // Given a slow runs route, and the runs of host-a asked for
    const { gpu, timeline } = clusterTimeline();
    server.delayMs = 1000;
    gpu.setVisible(true);
    await advance(0);
    // When node b is chosen before that answer arrives
    gpu.selectNode('b');
    await advance(1000);
    // Then host-a's runs are never shown, and b's are asked for at once, one request at a time
    expect(timeline.runs).toEqual([]);
    await advance(1000);
    expect(server.requests.map(r => r.split('&node=')[1])).toEqual(['host-a', 'host-b']);
    expect(timeline.runs.map(r => r.run_id)).toEqual(['on-b']);
    expect(server.maxInFlight).toBe(1);
    timeline.dispose();
    gpu.dispose();
  });
});

/** A GPU model on a cluster of nodes `a` and `b` (hosts host-a, host-b), each with one run, and its timeline. */
function clusterTimeline(): { gpu: GpuModel; timeline: RunTimeline; gpuServer: FakeServer } {
  const gpuServer = new FakeServer(1, 2000);
  gpuServer.addSamples(5);
  const runsOf: Record<string, IRun[]> = {
    'host-a': [makeRun('on-a', gpuServer.timestamps[1])],
    'host-b': [makeRun('on-b', gpuServer.timestamps[2])]
  };
  const runs: Requester = async <T>(endpoint: string, init?: RequestInit) => {
    server.windowRuns = runsOf[new URLSearchParams(endpoint.split('?')[1]).get('node') ?? ''] ?? [];
    return server.request<T>(endpoint, init);
  };
  const gpus: Requester = async <T>(endpoint: string, init?: RequestInit) => {
    const answer = await gpuServer.request<T>(endpoint, init);
    const chosen = /node=([^&]+)/.exec(endpoint)?.[1] ?? 'a';
    return (
      endpoint === 'version' ? answer : { ...answer, node: `host-${chosen}`, node_id: chosen }
    ) as T;
  };
  const gpu = new GpuModel({
    request: gpus,
    settings: { pollIntervalSeconds: 2, inactivityTimeoutSeconds: 10_000 }
  });
  return { gpu, timeline: new RunTimeline({ gpu, request: runs }), gpuServer };
}

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
