/** Unit tests of idle GPU holders in JupyterLab: one notification per kernel with its actions, the panel's marks. */
import type { Notification } from '@jupyterlab/apputils';
import { nullTranslator } from '@jupyterlab/translation';
import * as React from 'react';
import { act } from 'react';
import { afterEach, beforeEach, describe, expect, it, Mock, vi } from 'vitest';

import { HeldNodes } from '../gpu/components/HeldNodes';
import { ProcessList } from '../gpu/components/ProcessList';
import { HolderNotifier, INotifications } from '../gpu/holderNotifier';
import { HoldersModel, IHoldersPayload, IIdleHolder, INodeHolder } from '../gpu/holders';
import { advance, reactRoot } from './harness';

const trans = nullTranslator.load('jupyter_air');
const GIB = 1024 ** 3;
const T0 = 1_764_420_000_000;
const dom = reactRoot();

function holder(
  kernel: string,
  gpu: number,
  path: string | null = `work/${kernel}.ipynb`,
  rayNode: string | null = null
): IIdleHolder {
  return {
    kernel_id: kernel,
    path,
    node: rayNode ? 'gpu-12' : 'gpu-07',
    node_id: rayNode,
    gpu_index: gpu,
    used_memory_bytes: 8 * GIB,
    pids: [4242],
    idle_since_ms: T0
  };
}

/** Records what is shown, and lets a test click an action of a shown notification. */
class Recorder implements INotifications {
  shown = new Map<
    string,
    { type: string; message: string; options?: Notification.IOptions<null> }
  >();
  warning(message: string, options?: Notification.IOptions<null>): string {
    return this._add('warning', message, options);
  }
  error(message: string, options?: Notification.IOptions<null>): string {
    return this._add('error', message, options);
  }
  dismiss(id?: string): void {
    this.shown.delete(id ?? '');
  }
  /** Click `label` on the notification whose message contains `text` (it closes, as JupyterLab's do). */
  click(text: string, label: string): void {
    const [id, shown] = [...this.shown].find(([, n]) => n.message.includes(text))!;
    this.shown.delete(id);
    shown.options!.actions!.find(a => a.label === label)!.callback(new MouseEvent('click'));
  }
  messages(type = 'warning'): string[] {
    return [...this.shown.values()].filter(n => n.type === type).map(n => n.message);
  }
  private _add(type: string, message: string, options?: Notification.IOptions<null>): string {
    const id = `n${++this._count}`;
    this.shown.set(id, { type, message, options });
    return id;
  }
  private _count = 0;
}

let payload: IHoldersPayload;
let requests: string[];
let model: HoldersModel;
let notifications: Recorder;
let kernels: {
  shutdown: Mock<(id: string) => Promise<void>>;
  restart: Mock<(id: string) => Promise<void>>;
};

beforeEach(() => {
  vi.useFakeTimers();
  payload = { enabled: true, node: 'gpu-07', checked_ms: T0, holders: [], node_holders: [] };
  requests = [];
  const request = async <T,>(endpoint: string, init?: RequestInit): Promise<T> => {
    requests.push(`${init?.method ?? 'GET'} ${endpoint}`);
    return structuredClone(payload) as T;
  };
  model = new HoldersModel({ request, intervalSeconds: 60 });
  notifications = new Recorder();
  kernels = {
    shutdown: vi.fn(async (_id: string) => undefined),
    restart: vi.fn(async (_id: string) => undefined)
  };
  new HolderNotifier(model, kernels, notifications, trans);
});

afterEach(() => {
  model.dispose();
  vi.useRealTimers();
});

describe('Idle GPU holder notifications', () => {
  it('show one notification per idle kernel, once, with its notebook, GPUs and actions', async () => {
    // Given a kernel idle on two GPUs (one of them another Ray node's, held by its actors) and another on one
    payload.holders = [
      holder('k1', 0),
      holder('k1', 1, undefined, 'f'.repeat(56)),
      holder('k2', 2, null)
    ];
    // When the holders are read, and read again a minute later
    await advance(50);
    await advance(60_000);
    // Then one notification per kernel, naming its notebook (or kernel) and each GPU it holds
    const messages = notifications.messages();
    expect(messages).toHaveLength(2);
    expect(messages[0]).toMatch(
      /^The kernel of k1\.ipynb has been idle since .+, holding 8\.0 GiB on GPU 0, 8\.0 GiB on GPU 1 of gpu-12$/
    );
    expect(messages[1]).toContain('The kernel of k2 has been idle');
    const actions = [...notifications.shown.values()][0].options?.actions?.map(a => a.label);
    expect(actions).toEqual(['Shut down', 'Restart', 'Dismiss']);
    expect(requests.filter(r => r === 'GET gpu/idle-holders')).toHaveLength(2);
  });

  it('go when the kernel works again, and come back for a later idle spell', async () => {
    payload.holders = [holder('k1', 0)];
    await advance(50);
    // When the kernel runs a cell (no longer listed)
    payload.holders = [];
    await advance(60_000);
    expect(notifications.messages()).toEqual([]);
    // When it is idle again
    payload.holders = [holder('k1', 0)];
    await advance(60_000);
    expect(notifications.messages()).toHaveLength(1);
  });

  it('Shut down ends the kernel and reads again; Dismiss is not asked again while it stays idle', async () => {
    payload.holders = [holder('k1', 0), holder('k2', 1)];
    await advance(50);
    // When Shut down is clicked on one, and Dismiss on the other
    notifications.click('k1', 'Shut down');
    notifications.click('k2', 'Dismiss');
    payload.holders = [holder('k2', 1)];
    await advance(50);
    // Then the first kernel is shut down and the holders read at once; the second is not shown again
    expect(kernels.shutdown).toHaveBeenCalledWith('k1');
    expect(requests).toHaveLength(2);
    await advance(60_000);
    expect(notifications.messages()).toEqual([]);
  });

  it('say when an action failed', async () => {
    payload.holders = [holder('k1', 0)];
    kernels.restart.mockRejectedValue(new Error('kernel k1 is gone'));
    await advance(50);
    notifications.click('k1', 'Restart');
    await advance(50);
    expect(kernels.restart).toHaveBeenCalledWith('k1');
    expect(notifications.messages('error')).toEqual([
      'Restart of the kernel of k1.ipynb failed: kernel k1 is gone'
    ]);
  });
});

describe('The GPU panel', () => {
  it('marks an idle holder in the process list', () => {
    const device = {
      index: 0,
      uuid: null,
      name: 'H100',
      memory_total_bytes: 80 * GIB,
      error: null
    };
    const processes = [
      {
        gpu_index: 0,
        pid: 1,
        name: 'python',
        used_memory_bytes: GIB,
        path: 'a.ipynb',
        idle_since_ms: T0
      },
      {
        gpu_index: 0,
        pid: 2,
        name: 'python',
        used_memory_bytes: GIB,
        path: 'b.ipynb',
        idle_since_ms: null
      }
    ];
    dom.render(
      <ProcessList
        devices={[device]}
        processes={processes}
        onOpenPath={() => undefined}
        trans={trans}
      />
    );
    const badges = dom.container.querySelectorAll('.jp-Air-badge-idle');
    expect(badges).toHaveLength(1);
    expect(badges[0].closest('tr')?.querySelector('.jp-Air-process-pid')?.textContent).toBe('1');
    expect(badges[0].textContent).toMatch(/^idle since /);
  });

  /** The panel's list of held nodes, on the model's last answer. */
  function renderHeldNodes(): void {
    dom.render(
      <HeldNodes
        holders={model.nodeHolders}
        onRelease={pid => void model.release(pid)}
        onOpenPath={() => undefined}
        trans={trans}
      />
    );
  }

  it('lists the Ray nodes a notebook keeps, and Release asks the server to free them', async () => {
    // Given a notebook keeping two nodes
    const kept: INodeHolder = {
      pid: 4242,
      kernel_id: 'k1',
      path: 'work/<b>ray</b>.ipynb',
      address: '127.0.0.1:6379',
      share: '1 CPU',
      nodes: [
        { node: 0, hostname: 'gpu-07', ip: '10.0.0.7', ray_node_id: 'a' },
        { node: 1, hostname: null, ip: '10.0.0.8', ray_node_id: 'b' }
      ],
      since_ms: T0,
      until_ms: T0 + 300_000
    };
    payload.node_holders = [kept];
    await advance(50);
    // When listed, and Release is clicked
    renderHeldNodes();
    const row = dom.container.querySelector('.jp-Air-held')!;
    expect(row.querySelector('.jp-Air-process-path')?.textContent).toBe('work/<b>ray</b>.ipynb');
    expect(row.querySelector('b')).toBeNull();
    expect(row.querySelector('.jp-Air-held-hosts')?.textContent).toBe('gpu-07, 10.0.0.8');
    expect(row.textContent).toMatch(/since .+, until /);
    expect(row.textContent).not.toMatch(/parked by remote calls/);
    act(() => row.querySelector<HTMLButtonElement>('.jp-Air-held-release')!.click());
    await advance(50);
    // Then the server is asked to release that process's nodes, and the list is read again
    expect(requests.slice(-2)).toEqual([
      'POST gpu/held-nodes/4242/release',
      'GET gpu/idle-holders'
    ]);
  });

  it('marks the nodes parked between remote calls, listed by their keeper', async () => {
    // Given the keeper of two nodes parked by remote calls of a notebook
    payload.node_holders = [
      {
        pid: 5150,
        kernel_id: null,
        path: 'work/train.ipynb',
        address: '127.0.0.1:6379',
        share: '1 CPU',
        nodes: [{ node: 0, hostname: 'gpu-07', ip: '10.0.0.7', ray_node_id: 'a' }],
        since_ms: T0,
        until_ms: T0 + 300_000,
        parked: true
      }
    ];
    await advance(50);
    // When listed
    renderHeldNodes();
    // Then the row says so, beside its notebook, and keeps its Release
    const row = dom.container.querySelector('.jp-Air-held[data-pid="5150"]')!;
    expect(row.textContent).toMatch(/parked by remote calls/);
    expect(row.querySelector('.jp-Air-process-path')?.textContent).toBe('work/train.ipynb');
    expect(row.querySelector('.jp-Air-held-release')).not.toBeNull();
  });
});
