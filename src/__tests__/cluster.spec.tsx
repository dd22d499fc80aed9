/** The panel across a Ray cluster: the model's node choice and request, the overview and the selector. */
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { act } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { ClusterOverview } from '../gpu/components/ClusterOverview';
import { GpuPanel } from '../gpu/components/GpuPanel';
import { GpuModel } from '../gpu/model';
import type { Requester } from '../request';
import { IGpuPayload, INodeSummary } from '../gpu/tokens';
import { FakeServer, START_MS } from './fakeServer';
import { reactRoot } from './harness';

const trans = nullTranslator.load('jupyter_air');
const HOSTILE = '<img src=x onerror="window.__pwned=1">';

function node(id: string, overrides: Partial<INodeSummary> = {}): INodeSummary {
  return {
    id,
    hostname: `host-${id}`,
    ip: '10.0.0.1',
    state: 'live',
    reason: null,
    last_seen_ms: START_MS,
    gpu_count: 1,
    source: 'simulated',
    available: true,
    is_server_node: false,
    gpus: [
      {
        index: 0,
        name: 'Simulated GPU',
        utilization_percent: 42,
        memory_used_bytes: 1024 ** 3,
        memory_total_bytes: 80 * 1024 ** 3,
        temperature_celsius: 61
      }
    ],
    ...overrides
  };
}

const NODES: INodeSummary[] = [
  node('aaaa11', { is_server_node: true }),
  node('bbbb22', { state: 'unreachable', reason: 'no answer within 1 s', gpus: [] })
];

/** The fake server of a cluster: every answer lists the nodes; `?node=` picks whose samples come back. */
function clusterRequest(plain: FakeServer): Requester {
  return async <T,>(endpoint: string, init?: RequestInit): Promise<T> => {
    const answer = await plain.request<T>(endpoint, init);
    if (endpoint === 'version') {
      return answer;
    }
    const chosen = /node=([^&]+)/.exec(endpoint)?.[1] ?? NODES[0].id;
    const state = NODES.find(n => n.id === chosen)?.state ?? 'unreachable';
    return {
      ...(answer as IGpuPayload),
      ...(state === 'live' ? {} : { available: false, reason: 'Node is unreachable: no answer.' }),
      node: `host-${chosen}`,
      node_id: chosen,
      node_state: state,
      nodes: NODES,
      cluster: { address: 'ray://head:10001', error: null }
    } as T;
  };
}

let server: FakeServer;
let model: GpuModel;

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeServer(1);
  server.addSamples(3);
  model = new GpuModel({ request: clusterRequest(server) });
  model.setVisible(true);
});

afterEach(() => {
  model.dispose();
  vi.useRealTimers();
});

describe('GpuModel with a cluster', () => {
  it('shows every node until one is chosen, then asks for that node in its one request per poll', async () => {
    // Given a panel polling a cluster server
    await vi.advanceTimersByTimeAsync(0);
    expect(model.nodes.map(n => n.id)).toEqual(['aaaa11', 'bbbb22']);
    expect(model.selectedNode).toBeNull();

    // When node bbbb22 is chosen
    model.selectNode('bbbb22');
    await vi.advanceTimersByTimeAsync(0);

    // Then its history is asked for at once with ?node=, from scratch, and later polls ask for newer samples
    const polls = server.requests.filter(r => r.startsWith('GET gpu'));
    expect(polls[polls.length - 1]).toBe('GET gpu?node=bbbb22');
    expect(model.payload?.node_id).toBe('bbbb22');
    server.addSamples(1);
    await vi.advanceTimersByTimeAsync(10_000);
    const newest = server.timestamps[server.timestamps.length - 2];
    expect(server.requests[server.requests.length - 1]).toBe(`GET gpu?node=bbbb22&since=${newest}`);
    expect(model.history.timestampsMs).toEqual(server.timestamps);

    // and going back to every node drops the node from the request
    model.selectNode(null);
    await vi.advanceTimersByTimeAsync(0);
    expect(server.requests[server.requests.length - 1]).toBe('GET gpu');
  });

  it('drops an answer about the node shown before another was chosen', async () => {
    // Given a slow server, and a poll for every node in flight
    server.delayMs = 500;
    await vi.advanceTimersByTimeAsync(0);
    // When node bbbb22 is chosen before that answer arrives
    model.selectNode('bbbb22');
    await vi.advanceTimersByTimeAsync(2_000);
    // Then what is shown is bbbb22's answer, never the earlier one
    expect(model.payload?.node_id).toBe('bbbb22');
  });
});

describe('cluster views', () => {
  const dom = reactRoot();

  it('shows an unreachable node without numbers, with when it was last seen, and names as text', () => {
    // Given a live node whose hostname holds HTML, and an unreachable node
    const nodes = [
      node('aaaa11', { hostname: HOSTILE }),
      node('bbbb22', { state: 'unreachable', reason: 'no answer within 1 s', gpus: [] })
    ];
    const chosen: string[] = [];
    // When the overview is rendered
    act(() =>
      dom.root.render(
        <ClusterOverview nodes={nodes} onSelect={id => chosen.push(id)} trans={trans} />
      )
    );
    // Then the live node shows its GPU's values, the unreachable one says so and shows no value at all
    const rows = dom.container.querySelectorAll('.jp-Air-nodeRow');
    expect(rows[0].textContent).toContain('42%');
    expect(rows[0].textContent).toContain('61 °C');
    expect(rows[1].getAttribute('data-state')).toBe('unreachable');
    expect(rows[1].textContent).toContain('unreachable');
    expect(rows[1].textContent).toContain('No answer; last seen');
    expect(rows[1].textContent).not.toMatch(/\d+%|°C/);
    // names are text, never HTML
    expect(dom.container.querySelector('img')).toBeNull();
    expect(rows[0].textContent).toContain(HOSTILE);
    // and clicking a node chooses it
    act(() => (rows[1].querySelector('button') as HTMLButtonElement).click());
    expect(chosen).toEqual(['bbbb22']);
  });

  it('puts a node selector above the overview, and one node in detail once chosen', async () => {
    // Given a model that has heard from the cluster server (charts need a canvas: a GPU-less answer)
    server.available = false;
    await vi.advanceTimersByTimeAsync(0);
    const panel = () => (
      <GpuPanel
        model={model}
        revision={0}
        themeKey={0}
        onOpenPath={() => undefined}
        trans={trans}
      />
    );
    act(() => dom.root.render(panel()));
    // Then the overview lists both nodes, the selector offers them, and no single node's devices show
    const select = dom.container.querySelector('select.jp-Air-nodeSelect') as HTMLSelectElement;
    expect([...select.options].map(o => o.value)).toEqual(['', 'aaaa11', 'bbbb22']);
    expect(dom.container.querySelectorAll('.jp-Air-nodeRow')).toHaveLength(2);
    expect(dom.container.querySelector('.jp-Air-devices')).toBeNull();

    // When a node is chosen in the selector
    act(() => {
      select.value = 'bbbb22';
      select.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await vi.advanceTimersByTimeAsync(0);
    act(() => dom.root.render(panel()));

    // Then the panel shows that node alone, as it shows a lone server today: here, that it does not answer
    expect(model.selectedNode).toBe('bbbb22');
    expect(dom.container.querySelectorAll('.jp-Air-nodeRow')).toHaveLength(0);
    expect(dom.container.querySelector('.jp-Air-node')?.textContent).toBe('host-bbbb22');
    expect(dom.container.querySelector('.jp-Air-empty-title')?.textContent).toBe(
      'Node unreachable'
    );
    expect(dom.container.querySelector('.jp-Air-empty-reason')?.textContent).toContain('no answer');
    expect(dom.container.querySelector('.jp-Air-devices')).toBeNull();
  });
});
