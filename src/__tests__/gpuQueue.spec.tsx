/** Unit tests of the GPU queue in the GPU panel: read once per new GPU sample while shown, names shown as text. */
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { GpuQueueView } from '../gpu/components/GpuQueueView';
import { GpuModel } from '../gpu/model';
import { GpuQueue, IGpuQueuePayload } from '../gpu/queue';
import { FakeServer } from './fakeServer';
import { advance, reactRoot } from './harness';

const SECOND = 1000;
const HOSTILE = '<img src=x onerror="window.__pwned=1">';
const trans = nullTranslator.load('jupyter_air');
const dom = reactRoot();

/** What a job and a call are known by (the job's id, the call's function). */
const JOB_ID = 'job-a';
const FUNCTION = 'train';
const CLUSTER_JOB_ID = 'job-c';

const QUEUE: IGpuQueuePayload = {
  held: [
    {
      claim_id: 'job-a',
      kind: 'job',
      user: 'alice',
      label: JOB_ID,
      count: 2,
      pool: '',
      gpus: [0, 1],
      granted_ms: 0
    },
    {
      claim_id: 'job-c',
      kind: 'job',
      user: 'carol',
      label: CLUSTER_JOB_ID,
      count: 4,
      pool: 'Ray cluster 127.0.0.1:6379',
      gpus: [],
      granted_ms: 0
    }
  ],
  queued: [
    {
      claim_id: 'call-b',
      kind: 'call',
      user: HOSTILE,
      label: FUNCTION,
      count: 1,
      pool: '',
      position: 1,
      submitted_ms: 0,
      reason: "1st in line for 1 GPU; held by alice's job job-a since 10:02 (GPU 0,1)"
    }
  ]
};

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('GpuQueue', () => {
  it('reads the queue once per new GPU sample, only while the panel shows', async () => {
    // Given a GPU model whose panel is shown, and the queue following it
    const gpuServer = new FakeServer(2, 2000);
    gpuServer.addSamples(3);
    const asked: string[] = [];
    const request = async <T,>(endpoint: string, init?: RequestInit): Promise<T> => {
      if (endpoint === 'gpu/queue') {
        asked.push(endpoint);
        return QUEUE as T;
      }
      return gpuServer.request<T>(endpoint, init);
    };
    const gpu = new GpuModel({
      request,
      settings: { pollIntervalSeconds: 2, inactivityTimeoutSeconds: 10_000 }
    });
    const queue = new GpuQueue({ gpu, request });
    gpu.setVisible(true);
    await advance(0);
    // Then it was read once, and holds the holders and the waiting work
    expect(asked).toHaveLength(1);
    expect(queue.held.map(c => c.gpus)).toEqual([[0, 1], []]);
    expect(queue.queued.map(c => [c.position, c.label])).toEqual([[1, 'train']]);
    // When a poll brings a new sample and another brings none, Then it was read once more
    gpuServer.addSamples(1);
    await advance(2 * SECOND);
    await advance(2 * SECOND);
    expect(asked).toHaveLength(2);
    // When the panel is hidden (the status bar still shows the GPUs), Then it is not read
    gpu.setVisible(true, 'status-bar');
    gpu.setVisible(false);
    gpuServer.addSamples(2);
    await advance(4 * SECOND);
    expect(asked).toHaveLength(2);
    queue.dispose();
    gpu.dispose();
  });

  it('shows who holds which GPUs and who waits in order, names as text, the reason in the tooltip', () => {
    dom.render(<GpuQueueView held={QUEUE.held} queued={QUEUE.queued} trans={trans} />);
    const held = dom.container.querySelector('[data-claim-id="job-a"]');
    expect(held?.querySelector('.jp-Air-queue-gpus')?.textContent).toBe('GPUs 0,1');
    expect(held?.querySelector('.jp-Air-queue-what')?.textContent).toBe("alice's job job-a");
    const cluster = dom.container.querySelector('[data-claim-id="job-c"] .jp-Air-queue-gpus');
    expect(cluster?.textContent).toBe('4 GPUs of Ray cluster 127.0.0.1:6379'); // Ray places them
    const waiting = dom.container.querySelector('[data-claim-id="call-b"]');
    expect(waiting?.querySelector('.jp-Air-queue-what')?.textContent).toBe(
      `${HOSTILE}'s call train`
    );
    expect(waiting?.querySelector('.jp-Air-queue-position')?.textContent).toBe('1.');
    expect(waiting?.getAttribute('title')).toBe(QUEUE.queued[0].reason);
    expect(dom.container.querySelector('img')).toBeNull();
  });
});
