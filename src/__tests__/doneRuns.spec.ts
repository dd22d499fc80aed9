/** Unit tests of "runs done while you were away": which ended runs are notified, once, and how. */
import { nullTranslator } from '@jupyterlab/translation';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { DoneRuns } from '../experiment/doneRuns';
import type { IRun } from '../experiment/tokens';
import { makeRun, T0 } from './fakeRuns';
import { advance } from './harness';

const trans = nullTranslator.load('jupyter_air');
const MINUTE = 60_000;

let runs: IRun[];
let asked: string[];
let shown: { message: string; type: string; actions: string[] }[];
let watch: DoneRuns;

function ended(id: string, minutes: number, status: IRun['status'] = 'FINISHED'): IRun {
  const run = makeRun(id, T0 - minutes * MINUTE, status);
  return {
    ...run,
    end_ms: T0,
    notebook_path: '/home/alice/work/train.ipynb',
    metrics: { loss: 0.25, acc: 0.9 }
  };
}

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(T0 - 10 * MINUTE);
  runs = [];
  asked = [];
  shown = [];
  watch = new DoneRuns({
    notifications: {
      emit: (message, type, options) => {
        shown.push({ message, type, actions: (options?.actions ?? []).map(a => a.label) });
        return String(shown.length);
      }
    },
    isOurs: run => run.notebook_path?.endsWith('/work/train.ipynb') ?? false,
    trans,
    request: async <T>(endpoint: string): Promise<T> => {
      asked.push(endpoint);
      return { node: 'n', from_ms: 0, to_ms: 0, ui_url: null, runs, truncated: false } as T;
    },
    intervalSeconds: 30
  });
});

afterEach(() => {
  watch.dispose();
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

describe('Runs done while away', () => {
  it('notify once a run of ours that ran past the threshold, with status, duration, first metric and link', async () => {
    // Given runs that ended: ours after 5 and 1 minutes, another notebook's, one nested, one still running
    runs = [
      ended('long', 5),
      ended('short', 1),
      { ...ended('theirs', 5), notebook_path: '/home/bob/other.ipynb' },
      { ...ended('nested', 5), parent_run_id: 'long' },
      { ...ended('failed', 3, 'FAILED'), metrics: {} },
      { ...ended('running', 5, 'RUNNING'), end_ms: null }
    ];
    // When the watch reads twice
    await advance(50);
    await advance(30_000);
    // Then only our long top-level runs are notified, once each
    expect(shown).toEqual([
      {
        message: 'run long finished after 5m 00s — loss: 0.25',
        type: 'success',
        actions: ['Open run']
      },
      { message: 'run failed failed after 3m 00s', type: 'error', actions: ['Open run'] }
    ]);
    // And each read asks for the window since the previous one, a minute earlier for a late server clock
    expect(asked[1]).toMatch(/^runs\?from=\d+&to=\d+$/);
    const [from, to] = asked[1].match(/\d+/g)!.map(Number);
    expect(to - from).toBe(30_000 + MINUTE);
  });

  it('stays silent with a threshold of 0, and asks nothing', async () => {
    watch.thresholdMinutes = 0;
    runs = [ended('long', 50)];
    await advance(60_000);
    expect(asked).toEqual([]);
    expect(shown).toEqual([]);
  });

  it('also shows a browser notification while the tab is hidden, when allowed', async () => {
    // Given browser notifications allowed and the tab hidden
    const made: (string | undefined)[][] = [];
    class BrowserNotification {
      static permission = 'granted';
      onclick: (() => void) | null = null;
      constructor(title: string, options?: { body?: string }) {
        made.push([title, options?.body]);
      }
    }
    vi.stubGlobal('Notification', BrowserNotification);
    vi.spyOn(document, 'hidden', 'get').mockReturnValue(true);
    watch.browserNotifications = true;
    runs = [ended('long', 5)];
    // When the run is seen
    await advance(50);
    // Then the browser shows it too
    expect(made).toEqual([['run long finished after 5m 00s', 'loss: 0.25']]);
  });
});
