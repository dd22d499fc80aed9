/** Unit tests of the GPU model: failures and back-off, chart rules, the server extension's version. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import { GpuModel } from '../gpu/model';
import { RequestError } from '../request';
import { FRONTEND_VERSION } from '../version';
import { FakeServer } from './fakeServer';

const SECOND = 1000;

let server: FakeServer;
let model: GpuModel;

/** Create the model under test (disposed after each test) and show its panel. */
function makeModel(settings: Partial<GpuModel.IOptions['settings']> = {}): void {
  model = new GpuModel({ request: server.request, settings });
  model.setVisible(true);
}

async function advance(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
}

/** Click Refresh and let the fake clock run until it has been answered. */
async function refresh(): Promise<void> {
  const done = model.refresh();
  await advance(0);
  await done;
}

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeServer();
});

afterEach(() => {
  model?.dispose();
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('GpuModel errors', () => {
  it('reports a missing server extension and backs off', async () => {
    // Given a server whose routes answer 404, and back-off delays drawn at mid-range (they are
    // random between the interval and three times the previous delay)
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    server.failWith = new RequestError('not installed (404)', 'unavailable', 404);
    makeModel({ inactivityTimeoutSeconds: 100_000 });
    // When 5 minutes pass
    await advance(0);
    expect(model.state).toBe('unavailable');
    expect(model.error?.message).toContain('404');
    await advance(300 * SECOND);
    // Then it kept polling, but far less often than every 10 s, and told when it retries
    const polls = server.calls.filter(call => call.endpoint.startsWith('gpu'));
    expect(polls.length).toBeGreaterThan(1);
    expect(polls.length).toBeLessThan(10);
    expect(model.retryInMs).toBeGreaterThanOrEqual(10 * SECOND);
  });

  it('keeps the history through a server error and recovers', async () => {
    // Given a loaded model
    server.addSamples(3);
    makeModel({ inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    // When the server fails once with a 500
    server.failWith = new RequestError('jupyter-air/gpu answered 500: boom', 'server', 500);
    await advance(10 * SECOND);
    // Then the error is shown and the history kept
    expect(model.state).toBe('error');
    expect(model.error?.message).toContain('500');
    expect(model.history.timestampsMs).toHaveLength(3);
    // When the server recovers with new samples
    server.failWith = null;
    server.addSamples(2);
    await refresh();
    // Then the error is cleared and nothing is missing
    expect(model.state).toBe('live');
    expect(model.error).toBeNull();
    expect(model.history.timestampsMs).toEqual(server.timestamps);
  });

  it('turns an unexpected rejection into a shown error instead of throwing', async () => {
    // Given a request seam that rejects with a plain error
    const request = vi.fn().mockRejectedValue(new TypeError('boom'));
    model = new GpuModel({ request });
    model.setVisible(true);
    await advance(0);
    // Then the model reports it
    expect(model.state).toBe('error');
    expect(model.error?.message).toContain('boom');
  });

  it('never has two requests in flight', async () => {
    // Given answers that take 4 s
    server.addSamples(1);
    server.delayMs = 4 * SECOND;
    makeModel({ inactivityTimeoutSeconds: 100_000, pollIntervalSeconds: 1 });
    // When the user clicks Refresh while polls are under way
    await advance(6 * SECOND);
    for (let i = 0; i < 10; i++) {
      void model.refresh();
      await advance(2500);
    }
    await advance(20 * SECOND);
    // Then requests were made, one at a time
    expect(server.calls.length).toBeGreaterThan(3);
    expect(server.maxInFlight).toBe(1);
    expect(model.history.timestampsMs).toEqual(server.timestamps);
  });
});

describe('GpuModel chart rules', () => {
  it('charts the history window of the settings', () => {
    // Given a 30-minute history window, Then the charts span 30 minutes
    makeModel({ historyWindowMinutes: 30 });
    expect(model.chartWindowMs).toBe(30 * 60 * SECOND);
  });

  it('breaks the lines after two and a half sampling intervals of the server', async () => {
    // Given a poll interval of 2 s and a server sampling every 10 s
    server.addSamples(1);
    makeModel({ pollIntervalSeconds: 2 });
    // Before the server answers, the gap follows the poll interval, and is never under 2.5 s
    expect(model.maxGapMs).toBe(5 * SECOND);
    // When the server has answered
    await advance(0);
    // Then the gap follows the server's sampling interval
    expect(model.maxGapMs).toBe(25 * SECOND);
  });

  it('never breaks the lines for gaps under 2.5 s', async () => {
    // Given a server sampling every half second
    server = new FakeServer(2, 500);
    server.addSamples(1);
    makeModel({ pollIntervalSeconds: 1 });
    // When it has answered, Then the gap is 2.5 s rather than 1.25 s
    await advance(0);
    expect(model.maxGapMs).toBe(2500);
  });
});

describe('GpuModel version check', () => {
  it('asks for the server version once, before the first poll', async () => {
    // Given a server that answers slowly, so that overlapping requests would show
    server.addSamples(1);
    server.delayMs = 3 * SECOND;
    makeModel({ inactivityTimeoutSeconds: 100_000 });
    // When it polls for a minute, and Refresh is clicked
    await advance(60 * SECOND);
    void model.refresh();
    await advance(10 * SECOND);
    // Then the version was asked first and only once, and no two requests overlapped
    expect(server.requests[0]).toBe('GET version');
    expect(server.requests.filter(r => r === 'GET version')).toHaveLength(1);
    expect(server.requests[1]).toBe('GET gpu');
    expect(server.maxInFlight).toBe(1);
  });

  it('tells a version mismatch, and keeps polling', async () => {
    // Given a server extension of another version than this page
    server.addSamples(1);
    server.version = '9.9.9';
    // When the panel opens
    makeModel();
    await advance(0);
    // Then the model knows both versions, says they differ, and is live
    expect(model.serverVersion).toBe('9.9.9');
    expect(model.frontendVersion).toBe(FRONTEND_VERSION);
    expect(model.versionMismatch).toBe(true);
    expect(model.state).toBe('live');
  });

  it('sees no mismatch when the server runs the version of this page', async () => {
    // Given a server extension of this page's version
    server.addSamples(1);
    server.version = FRONTEND_VERSION;
    // When the panel opens, Then there is no mismatch
    makeModel();
    await advance(0);
    expect(model.serverVersion).toBe(FRONTEND_VERSION);
    expect(model.versionMismatch).toBe(false);
  });

  it('says the server extension is missing as soon as the version route answers 404', async () => {
    // Given a server without the extension, answering each request after 1 s
    server.failWith = new RequestError('jupyter-air/version answered 404', 'unavailable', 404);
    server.delayMs = SECOND;
    makeModel({ inactivityTimeoutSeconds: 100_000 });
    // When the version request has been answered
    await advance(SECOND);
    // Then the state is unavailable before the first poll has been answered
    expect(server.requests).toEqual(['GET version', 'GET gpu']);
    expect(server.inFlight).toBe(1);
    expect(model.state).toBe('unavailable');
    expect(model.error?.message).toContain('version answered 404');
    expect(model.versionMismatch).toBe(false);
  });

  it('leaves other failures of the version request to the poll', async () => {
    // Given a server whose version route fails with a 500, while its GPU route works
    server.addSamples(1);
    const endpoints: string[] = [];
    const request = async <T>(endpoint: string, init?: RequestInit): Promise<T> => {
      endpoints.push(endpoint);
      if (endpoint === 'version') {
        throw new RequestError('jupyter-air/version answered 500: boom', 'server', 500);
      }
      return server.request<T>(endpoint, init);
    };
    model = new GpuModel({ request });
    model.setVisible(true);
    // When the panel opens
    await advance(0);
    // Then the version is unknown, nothing is reported, and the panel is live
    expect(endpoints).toEqual(['version', 'gpu']);
    expect(model.serverVersion).toBeNull();
    expect(model.versionMismatch).toBe(false);
    expect(model.error).toBeNull();
    expect(model.state).toBe('live');
  });
});
