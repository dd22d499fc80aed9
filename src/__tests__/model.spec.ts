/** Unit tests of the GPU model: merging, the history cap, the inactivity pause, the poll interval. */
import { describe, expect, it } from 'vitest';

import { FakeServer } from './fakeServer';
import { advance, gpuHarness } from './harness';

const SECOND = 1000;

const h = gpuHarness();

describe('GpuModel history', () => {
  it('loads the full history first, then asks only for newer samples', async () => {
    // Given a server holding 3 samples
    h.server.addSamples(3);
    // When the panel opens and one poll interval passes with 2 new samples
    h.makeModel();
    await advance(0);
    const firstNewest = h.server.timestamps[2];
    h.server.addSamples(2);
    await advance(10 * SECOND);
    // Then the first request had no `since`, the second asked for samples after the newest held
    expect(h.server.requests.slice(0, 3)).toEqual([
      'GET version',
      'GET gpu',
      `GET gpu?since=${firstNewest}`
    ]);
    expect(h.model.history.timestampsMs).toEqual(h.server.timestamps);
    expect(h.model.state).toBe('live');
  });

  it('merges overlapping answers without duplicates', async () => {
    // Given a server that ignores `since` and always answers its whole buffer
    h.server.ignoreSince = true;
    h.server.addSamples(4);
    h.makeModel();
    await advance(0);
    // When three polls bring one new sample each
    for (let i = 0; i < 3; i++) {
      h.server.addSamples(1);
      await advance(10 * SECOND);
    }
    // Then every sample is held once, in order, with its own values
    expect(h.model.history.timestampsMs).toEqual(h.server.timestamps);
    expect(new Set(h.model.history.timestampsMs).size).toBe(7);
    const expected = h.server.payload().gpus.utilization_percent[1];
    expect(h.model.history.gpus.utilization_percent[1]).toEqual(expected);
  });

  it('leaves no gap over many polls with irregular arrivals', async () => {
    // Given a loaded model
    h.server.addSamples(2);
    h.makeModel({ inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    // When samples arrive 0, 1, 2 or 3 at a time across 40 polls
    for (let i = 0; i < 40; i++) {
      h.server.addSamples(i % 4);
      await advance(10 * SECOND);
    }
    // Then the client holds exactly the server's samples
    expect(h.model.history.timestampsMs).toEqual(h.server.timestamps);
    expect(h.model.history.hostCpuPercent).toHaveLength(h.server.timestamps.length);
    expect(h.model.history.gpus.memory_used_bytes[0]).toEqual(
      h.server.payload().gpus.memory_used_bytes[0]
    );
  });

  it('keeps at most the history window client-side', async () => {
    // Given a 1-minute window and a server that already holds 20 samples 10 s apart
    h.server.addSamples(20);
    h.makeModel({ historyWindowMinutes: 1, inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    // Then only the samples of the last minute are kept (7: newest - 60 s to newest)
    expect(h.model.history.timestampsMs).toEqual(h.server.timestamps.slice(-7));
    // When 10 more samples arrive over 10 polls
    for (let i = 0; i < 10; i++) {
      h.server.addSamples(1);
      await advance(10 * SECOND);
    }
    // Then the window still holds 7 samples, the newest ones, in every column
    expect(h.model.history.timestampsMs).toEqual(h.server.timestamps.slice(-7));
    expect(h.model.history.gpus.temperature_celsius[1]).toHaveLength(7);
    expect(h.model.history.hostMemoryUsedBytes).toHaveLength(7);
  });

  it('starts over when the GPUs of the h.server change', async () => {
    // Given a model that loaded 2 GPUs
    h.server.addSamples(3);
    h.makeModel();
    await advance(0);
    // When the server now reports no GPU
    h.server.available = false;
    await advance(10 * SECOND);
    // Then the state says so and the history has no GPU columns
    expect(h.model.state).toBe('no-gpu');
    expect(h.model.payload?.reason).toContain('NVML');
    expect(h.model.history.gpus.utilization_percent).toHaveLength(0);
  });
});

describe('GpuModel inactivity', () => {
  it('pauses after the inactivity timeout and stops requesting', async () => {
    // Given a 30-second inactivity timeout and no user activity
    h.server.addSamples(1);
    h.makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(0);
    // When 40 seconds pass
    await advance(40 * SECOND);
    // Then polling is paused after the 30-second timeout, and no request is made for the next 5 minutes
    expect(h.model.state).toBe('paused');
    expect(h.model.pausedAfterSeconds).toBe(30);
    const count = h.server.calls.length;
    await advance(300 * SECOND);
    expect(h.server.calls.length).toBe(count);
  });

  it('keeps the timeout that paused it when the setting changes afterwards', async () => {
    // Given a model paused after 30 s
    h.server.addSamples(1);
    h.makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(40 * SECOND);
    // When the timeout setting becomes 10 minutes
    h.model.settings = { ...h.model.settings, inactivityTimeoutSeconds: 600 };
    // Then the pause is still the one that happened after 30 s
    expect(h.model.pausedAfterSeconds).toBe(30);
    // And Refresh clears it
    await h.refresh();
    expect(h.model.pausedAfterSeconds).toBeNull();
  });

  it('keeps polling while the user is active', async () => {
    // Given a 30-second timeout
    h.server.addSamples(1);
    h.makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(0);
    // When the user moves the pointer every 5 s for 2 minutes
    for (let t = 0; t < 120; t += 5) {
      h.model.notifyActivity();
      await advance(5 * SECOND);
    }
    // Then polling never paused: about one request every 10 s
    expect(h.model.paused).toBe(false);
    expect(h.server.calls.length).toBeGreaterThanOrEqual(12);
  });

  it('resumes on Refresh with a POST, then polls again', async () => {
    // Given a paused model
    h.server.addSamples(1);
    h.makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(0);
    await advance(40 * SECOND);
    expect(h.model.paused).toBe(true);
    const count = h.server.calls.length;
    // When the user clicks Refresh
    await h.refresh();
    // Then a refresh is posted with `since`, a new sample arrives, and polling continues
    expect(h.server.calls[count]).toEqual({
      endpoint: `gpu/refresh?since=${h.server.timestamps[0]}`,
      method: 'POST'
    });
    expect(h.model.state).toBe('live');
    expect(h.model.history.timestampsMs).toEqual(h.server.timestamps);
    await advance(10 * SECOND);
    expect(h.server.calls.length).toBe(count + 2);
    expect(h.server.calls[count + 1].method).toBe('GET');
  });

  it('pauses when the panel stays hidden, and resumes when it is shown', async () => {
    // Given an active user and a 30-second timeout
    h.server.addSamples(1);
    h.makeModel({ inactivityTimeoutSeconds: 30 });
    await advance(0);
    // When the panel is hidden for 40 s while the user keeps typing elsewhere
    h.model.setVisible(false);
    for (let t = 0; t < 40; t += 5) {
      h.model.notifyActivity();
      await advance(5 * SECOND);
    }
    // Then polling paused
    expect(h.model.paused).toBe(true);
    const count = h.server.calls.length;
    // When the panel is shown again
    h.model.setVisible(true);
    await advance(0);
    // Then a request is made at once and the model is live
    expect(h.server.calls.length).toBe(count + 1);
    expect(h.model.state).toBe('live');
  });

  it('applies a new poll interval from settings', async () => {
    // Given a server sampling every second, and a model polling every 10 s
    h.server = new FakeServer(2, SECOND);
    h.server.addSamples(1);
    h.makeModel({ inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    // When the interval is set to 2 s
    h.model.settings = { ...h.model.settings, pollIntervalSeconds: 2 };
    await advance(10 * SECOND);
    const count = h.server.calls.length;
    await advance(20 * SECOND);
    // Then about 10 requests are made in 20 s
    expect(h.server.calls.length - count).toBeGreaterThanOrEqual(9);
    expect(h.server.calls.length - count).toBeLessThanOrEqual(11);
  });
});

describe('GpuModel poll interval', () => {
  it('polls no faster than the h.server samples', async () => {
    // Given a server sampling every 10 s and a 1-second poll interval setting
    h.server.addSamples(1);
    h.makeModel({ pollIntervalSeconds: 1, inactivityTimeoutSeconds: 100_000 });
    expect(h.model.pollIntervalMs).toBe(SECOND);
    // When the server has answered and one minute passes
    await advance(0);
    const count = h.server.calls.length;
    await advance(60 * SECOND);
    // Then the model polls every 10 s, not every second
    expect(h.model.pollIntervalMs).toBe(10 * SECOND);
    expect(h.server.calls.length - count).toBe(6);
  });

  it('keeps a poll interval longer than the sampling interval', async () => {
    // Given a server sampling every 10 s and a 30-second poll interval setting
    h.server.addSamples(1);
    h.makeModel({ pollIntervalSeconds: 30, inactivityTimeoutSeconds: 100_000 });
    await advance(0);
    const count = h.server.calls.length;
    // When one minute passes, Then the model polled twice
    await advance(60 * SECOND);
    expect(h.model.pollIntervalMs).toBe(30 * SECOND);
    expect(h.server.calls.length - count).toBe(2);
  });
});
