/** What the unit tests share: a React root in the page for each test, a fake clock, a GPU model on a fake server. */
import { act } from 'react';
import { createRoot, Root } from 'react-dom/client';
import { afterEach, beforeEach, vi } from 'vitest';

import { GpuModel } from '../gpu/model';
import { FakeServer } from './fakeServer';

/** A container in the page with its React root, made before each test of the file and removed after it. */
export interface IReactRoot {
  readonly container: HTMLDivElement;
  readonly root: Root;
  /** Render `element` into the root, its effects run. */
  render(element: JSX.Element): void;
}

export function reactRoot(): IReactRoot {
  let container = document.createElement('div');
  let root: Root | null = null;
  beforeEach(() => {
    (globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;
    container = document.createElement('div');
    document.body.appendChild(container);
    root = createRoot(container);
  });
  afterEach(() => {
    act(() => root?.unmount());
    container.remove();
  });
  return {
    get container() {
      return container;
    },
    get root() {
      return root as Root;
    },
    render(element: JSX.Element) {
      act(() => (root as Root).render(element));
    }
  };
}

/** Let the fake clock run `ms` milliseconds, and what its timers start settle. */
export async function advance(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

/** The GPU model under test on its fake server; a test may replace either. */
export interface IGpuHarness {
  server: FakeServer;
  model: GpuModel;
  /** Create the model with `settings` (disposed after the test) and show its panel. */
  makeModel(settings?: Partial<GpuModel.IOptions['settings']>): void;
  /** Click Refresh and let the fake clock run until it has been answered. */
  refresh(): Promise<void>;
}

/** For each test of the file: a fake clock and a fresh fake server (2 GPUs sampled every 10 s). */
export function gpuHarness(): IGpuHarness {
  const harness: IGpuHarness = {
    server: new FakeServer(),
    model: new GpuModel(),
    makeModel(settings = {}) {
      harness.model = new GpuModel({ request: harness.server.request, settings });
      harness.model.setVisible(true);
    },
    async refresh() {
      const done = harness.model.refresh();
      await advance(0);
      await done;
    }
  };
  beforeEach(() => {
    vi.useFakeTimers();
    harness.server = new FakeServer();
  });
  afterEach(() => {
    harness.model.dispose();
    vi.useRealTimers();
    vi.restoreAllMocks();
  });
  return harness;
}
