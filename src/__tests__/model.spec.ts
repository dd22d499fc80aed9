/** Unit tests of the GPU model: merging, the history cap, the inactivity pause, errors and versions. */
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

describe('GpuModel history', () => {
  it('loads the full history first, then asks only for newer samples', async () => {
    // Given a server holding 3 samples
    server.addSamples(3);
    // When the panel opens and one poll interval passes with 2 new samples
    makeModel();
    await advance(0);
    const firstNewest = server.timestamps[2];
    server.addSamples(2);
    await advance(10 * SECOND);
    // Then the first request had no `since`, the second asked for samples after the newest held
    expect(server.requests.slice(0, 3)).toEqual([
      'GET version',
      'GET gpu',
      `GET gpu?since=${firstNewest}`
    ]);
    expect(model.history.timestampsMs).toEqual(server.timestamps);
    expect(model.state).toBe('live');
  });

  it('merges overlapping answers without duplicates', async () => {
    // Given a server that ignores `since` and always answers its whole buffer
    server.ignoreSince = true;
    server.addSamples(4);
    makeModel();
    await advance(0);
    // When three polls bring one new sample each
    for (let i = 0; i < 3; i++) {
      server.addSamples(1);
      await advance(10 * SECOND);
    }
    // Then every sample is held once, in order, with its own values
    expect(model.history.timestampsMs).toEqual(server.timestamps);
    expect(new Set(model.history.timestampsMs).size).toBe(7);
    const expected = server.payload().gpus.utilization_percent[1];
    expect(model.history.gpus.utilization_percent[1]).toEqual(expected);
  });

  it('leaves no gap over many polls with irregular arrivals', async () => {
    // Given a loaded model
    server.addSamples(2);
    makeModel({ inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    // When samples arrive 0, 1, 2 or 3 at a time across 40 polls
    for (let i = 0; i < 40; i++) {
      server.addSamples(i % 4);
      await advance(10 * SECOND);
    }
    // Then the client holds exactly the server's samples
    expect(model.history.timestampsMs).toEqual(server.timestamps);
    expect(model.history.hostCpuPercent).toHaveLength(server.timestamps.length);
    expect(model.history.gpus.memory_used_bytes[0]).toEqual(
      server.payload().gpus.memory_used_bytes[0]
    );
  });

  it('keeps at most the history window client-side', async () => {
    // Given a 1-minute window and a server that already holds 20 samples 10 s apart
    server.addSamples(20);
    makeModel({ historyWindowMinutes: 1, inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    // Then only the samples of the last minute are kept (7: newest - 60 s to newest)
    expect(model.history.timestampsMs).toEqual(server.timestamps.slice(-7));
    // When 10 more samples arrive over 10 polls
    for (let i = 0; i < 10; i++) {
      server.addSamples(1);
      await advance(10 * SECOND);
    }
    // Then the window still holds 7 samples, the newest ones, in every column
    expect(model.history.timestampsMs).toEqual(server.timestamps.slice(-7));
    expect(model.history.gpus.temperature_celsius[1]).toHaveLength(7);
    expect(model.history.hostMemoryUsedBytes).toHaveLength(7);
  });

  it('starts over when the GPUs of the server change', async () => {
    // Given a model that loaded 2 GPUs
    server.addSamples(3);
    makeModel();
    await advance(0);
    // When the server now reports no GPU
    server.available = false;
    await advance(10 * SECOND);
    // Then the state says so and the history has no GPU columns
    expect(model.state).toBe('no-gpu');
    expect(model.payload?.reason).toContain('NVML');
    expect(model.history.gpus.utilization_percent).toHaveLength(0);
  });
});

describe('GpuModel inactivity', () => {
  it('pauses after the inactivity timeout and stops requesting', async () => {
    // Given a 30-second inactivity timeout and no user activity
    server.addSamples(1);
    makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(0);
    // When 40 seconds pass
    await advance(40 * SECOND);
    // Then polling is paused after the 30-second timeout, and no request is made for the next 5 minutes
    expect(model.state).toBe('paused');
    expect(model.pausedAfterSeconds).toBe(30);
    const count = server.calls.length;
    await advance(300 * SECOND);
    expect(server.calls.length).toBe(count);
  });

  it('keeps the timeout that paused it when the setting changes afterwards', async () => {
    // Given a model paused after 30 s
    server.addSamples(1);
    makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(40 * SECOND);
    // When the timeout setting becomes 10 minutes
    model.settings = { ...model.settings, inactivityTimeoutSeconds: 600 };
    // Then the pause is still the one that happened after 30 s
    expect(model.pausedAfterSeconds).toBe(30);
    // And Refresh clears it
    await refresh();
    expect(model.pausedAfterSeconds).toBeNull();
  });

  it('keeps polling while the user is active', async () => {
    // Given a 30-second timeout
    server.addSamples(1);
    makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(0);
    // When the user moves the pointer every 5 s for 2 minutes
    for (let t = 0; t < 120; t += 5) {
      model.notifyActivity();
      await advance(5 * SECOND);
    }
    // Then polling never paused: about one request every 10 s
    expect(model.paused).toBe(false);
    expect(server.calls.length).toBeGreaterThanOrEqual(12);
  });

  it('resumes on Refresh with a POST, then polls again', async () => {
    // Given a paused model
    server.addSamples(1);
    makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(0);
    await advance(40 * SECOND);
    expect(model.paused).toBe(true);
    const count = server.calls.length;
    // When the user clicks Refresh
    await refresh();
    // Then a refresh is posted with `since`, a new sample arrives, and polling continues
    expect(server.calls[count]).toEqual({
      endpoint: `gpu/refresh?since=${server.timestamps[0]}`,
      method: 'POST'
    });
    expect(model.state).toBe('live');
    expect(model.history.timestampsMs).toEqual(server.timestamps);
    await advance(10 * SECOND);
    expect(server.calls.length).toBe(count + 2);
    expect(server.calls[count + 1].method).toBe('GET');
  });

  it('pauses when the panel stays hidden, and resumes when it is shown', async () => {
    // Given an active user and a 30-second timeout
    server.addSamples(1);
    makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(0);
    // When the panel is hidden for 40 s while the user keeps typing elsewhere
    model.setVisible(false);
    for (let t = 0; t < 40; t += 5) {
      model.notifyActivity();
      await advance(5 * SECOND);
    }
    // Then polling paused
    expect(model.paused).toBe(true);
    const count = server.calls.length;
    // When the panel is shown again
    model.setVisible(true);
    await advance(0);
    // Then a request is made at once and the model is live
    expect(server.calls.length).toBe(count + 1);
    expect(model.state).toBe('live');
  });

  it('applies a new poll interval from settings', async () => {
    // Given a server sampling every second, and a model polling every 10 s
    server = new FakeServer(2, SECOND);
    server.addSamples(1);
    makeModel({ inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    // When the interval is set to 2 s
    model.settings = { ...model.settings, pollIntervalSeconds: 2 };
    await advance(10 * SECOND);
    const count = server.calls.length;
    await advance(20 * SECOND);
    // Then about 10 requests are made in 20 s
    expect(server.calls.length - count).toBeGreaterThanOrEqual(9);
    expect(server.calls.length - count).toBeLessThanOrEqual(11);
  });
});

describe('GpuModel poll interval', () => {
  it('polls no faster than the server samples', async () => {
    // Given a server sampling every 10 s and a 1-second poll interval setting
    server.addSamples(1);
    makeModel({ pollIntervalSeconds: 1, inactivityTimeoutSeconds: 100_000 });
    expect(model.pollIntervalMs).toBe(SECOND);
    // When the server has answered and one minute passes
    await advance(0);
    const count = server.calls.length;
    await advance(60 * SECOND);
    // Then the model polls every 10 s, not every second
    expect(model.pollIntervalMs).toBe(10 * SECOND);
    expect(server.calls.length - count).toBe(6);
  });

  it('keeps a poll interval longer than the sampling interval', async () => {
    // Given a server sampling every 10 s and a 30-second poll interval setting
    server.addSamples(1);
    makeModel({ pollIntervalSeconds: 30, inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    const count = server.calls.length;
    // When one minute passes, Then the model polled twice
    await advance(60 * SECOND);
    expect(model.pollIntervalMs).toBe(30 * SECOND);
    expect(server.calls.length - count).toBe(2);
  });
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
