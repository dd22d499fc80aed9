/** Unit tests of the GPU model: failures and back-off, chart rules, the server extension's version. */
import { describe, expect, it, vi } from 'vitest';

import { GpuModel } from '../gpu/model';
import { RequestError } from '../request';
import { FRONTEND_VERSION } from '../version';
import { FakeServer } from './fakeServer';
import { advance, gpuHarness } from './harness';

const SECOND = 1000;

const h = gpuHarness();

describe('GpuModel errors', () => {
  it('reports a missing h.server extension and backs off', async () => {
    // Given a server whose routes answer 404, and back-off delays drawn at mid-range (they are
    // random between the interval and three times the previous delay)
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    h.server.failWith = new RequestError('not installed (404)', 'unavailable', 404);
    h.makeModel({ inactivityTimeoutSeconds: 100_000 });
    // When 5 minutes pass
    await advance(0);
    expect(h.model.state).toBe('unavailable');
    expect(h.model.error?.message).toContain('404');
    await advance(300 * SECOND);
    // Then it kept polling, but far less often than every 10 s, and told when it retries
    const polls = h.server.calls.filter(call => call.endpoint.startsWith('gpu'));
    expect(polls.length).toBeGreaterThan(1);
    expect(polls.length).toBeLessThan(10);
    expect(h.model.retryInMs).toBeGreaterThanOrEqual(10 * SECOND);
  });

  it('keeps the history through a h.server error and recovers', async () => {
    // Given a loaded model
    h.server.addSamples(3);
    h.makeModel({ inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    // When the server fails once with a 500
    h.server.failWith = new RequestError('jupyter-air/gpu answered 500: boom', 'server', 500);
    await advance(10 * SECOND);
    // Then the error is shown and the history kept
    expect(h.model.state).toBe('error');
    expect(h.model.error?.message).toContain('500');
    expect(h.model.history.timestampsMs).toHaveLength(3);
    // When the server recovers with new samples
    h.server.failWith = null;
    h.server.addSamples(2);
    await h.refresh();
    // Then the error is cleared and nothing is missing
    expect(h.model.state).toBe('live');
    expect(h.model.error).toBeNull();
    expect(h.model.history.timestampsMs).toEqual(h.server.timestamps);
  });

  it('turns an unexpected rejection into a shown error instead of throwing', async () => {
    // Given a request seam that rejects with a plain error
    const request = vi.fn().mockRejectedValue(new TypeError('boom'));
    h.model = new GpuModel({ request });
    h.model.setVisible(true);
    await advance(0);
    // Then the model reports it
    expect(h.model.state).toBe('error');
    expect(h.model.error?.message).toContain('boom');
  });

  it('never has two requests in flight', async () => {
    // Given answers that take 4 s
    h.server.addSamples(1);
    h.server.delayMs = 4 * SECOND;
    h.makeModel({ inactivityTimeoutSeconds: 100_000, pollIntervalSeconds: 1 });
    // When the user clicks Refresh while polls are under way
    await advance(6 * SECOND);
    for (let i = 0; i < 10; i++) {
      void h.model.refresh();
      await advance(2500);
    }
    await advance(20 * SECOND);
    // Then requests were made, one at a time
    expect(h.server.calls.length).toBeGreaterThan(3);
    expect(h.server.maxInFlight).toBe(1);
    expect(h.model.history.timestampsMs).toEqual(h.server.timestamps);
  });
});

describe('GpuModel chart rules', () => {
  it('charts the history window of the settings', () => {
    // Given a 30-minute history window, Then the charts span 30 minutes
    h.makeModel({ historyWindowMinutes: 30 });
    expect(h.model.chartWindowMs).toBe(30 * 60 * SECOND);
  });

  it('breaks the lines after two and a half sampling intervals of the h.server', async () => {
    // Given a poll interval of 2 s and a server sampling every 10 s
    h.server.addSamples(1);
    h.makeModel({ pollIntervalSeconds: 2 });
    // Before the server answers, the gap follows the poll interval, and is never under 2.5 s
    expect(h.model.maxGapMs).toBe(5 * SECOND);
    // When the server has answered
    await advance(0);
    // Then the gap follows the server's sampling interval
    expect(h.model.maxGapMs).toBe(25 * SECOND);
  });

  it('never breaks the lines for gaps under 2.5 s', async () => {
    // Given a server sampling every half second
    h.server = new FakeServer(2, 500);
    h.server.addSamples(1);
    h.makeModel({ pollIntervalSeconds: 1 });
    // When it has answered, Then the gap is 2.5 s rather than 1.25 s
    await advance(0);
    expect(h.model.maxGapMs).toBe(2500);
  });
});

describe('GpuModel version check', () => {
  it('asks for the h.server version once, before the first poll', async () => {
    // Given a server that answers slowly, so that overlapping requests would show
    h.server.addSamples(1);
    h.server.delayMs = 3 * SECOND;
    h.makeModel({ inactivityTimeoutSeconds: 100_000 });
    // When it polls for a minute, and Refresh is clicked
    await advance(60 * SECOND);
    void h.model.refresh();
    await advance(10 * SECOND);
    // Then the version was asked first and only once, and no two requests overlapped
    expect(h.server.requests[0]).toBe('GET version');
    expect(h.server.requests.filter(r => r === 'GET version')).toHaveLength(1);
    expect(h.server.requests[1]).toBe('GET gpu');
    expect(h.server.maxInFlight).toBe(1);
  });

  it('tells a version mismatch, and keeps polling', async () => {
    // Given a server extension of another version than this page
    h.server.addSamples(1);
    h.server.version = '9.9.9';
    // When the panel opens
    h.makeModel();
    await advance(0);
    // Then the model knows both versions, says they differ, and is live
    expect(h.model.serverVersion).toBe('9.9.9');
    expect(h.model.frontendVersion).toBe(FRONTEND_VERSION);
    expect(h.model.versionMismatch).toBe(true);
    expect(h.model.state).toBe('live');
  });

  it('sees no mismatch when the h.server runs the version of this page', async () => {
    // Given a server extension of this page's version
    h.server.addSamples(1);
    h.server.version = FRONTEND_VERSION;
    // When the panel opens, Then there is no mismatch
    h.makeModel();
    await advance(0);
    expect(h.model.serverVersion).toBe(FRONTEND_VERSION);
    expect(h.model.versionMismatch).toBe(false);
  });

  it('says the h.server extension is missing as soon as the version route answers 404', async () => {
    // Given a server without the extension, answering each request after 1 s
    h.server.failWith = new RequestError('jupyter-air/version answered 404', 'unavailable', 404);
    h.server.delayMs = SECOND;
    h.makeModel({ inactivityTimeoutSeconds: 100_000 });
    // When the version request has been answered
    await advance(SECOND);
    // Then the state is unavailable before the first poll has been answered
    expect(h.server.requests).toEqual(['GET version', 'GET gpu']);
    expect(h.server.inFlight).toBe(1);
    expect(h.model.state).toBe('unavailable');
    expect(h.model.error?.message).toContain('version answered 404');
    expect(h.model.versionMismatch).toBe(false);
  });

  it('leaves other failures of the version request to the poll', async () => {
    // Given a server whose version route fails with a 500, while its GPU route works
    h.server.addSamples(1);
    const endpoints: string[] = [];
    const request = async <T>(endpoint: string, init?: RequestInit): Promise<T> => {
      endpoints.push(endpoint);
      if (endpoint === 'version') {
        throw new RequestError('jupyter-air/version answered 500: boom', 'server', 500);
      }
      return h.server.request<T>(endpoint, init);
    };
    h.model = new GpuModel({ request });
    h.model.setVisible(true);
    // When the panel opens
    await advance(0);
    // Then the version is unknown, nothing is reported, and the panel is live
    expect(endpoints).toEqual(['version', 'gpu']);
    expect(h.model.serverVersion).toBeNull();
    expect(h.model.versionMismatch).toBe(false);
    expect(h.model.error).toBeNull();
    expect(h.model.state).toBe('live');
  });
});
