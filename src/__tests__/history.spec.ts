/** Unit tests of the pure history, formatting and chart-data helpers. */
import { nullTranslator } from '@jupyterlab/translation';
import { describe, expect, it } from 'vitest';

import { chartData } from '../gpu/charts';
import { formatBytes, formatDuration, formatValue } from '../format';
import { appendPayload, capHistory, emptyHistory, latestValue } from '../gpu/history';
import { FakeServer, START_MS } from './fakeServer';

const trans = nullTranslator.load('jupyter_air');

describe('appendPayload and capHistory', () => {
  it('appends only newer samples and skips out-of-order ones', () => {
    // Given a history holding 3 samples
    const server = new FakeServer(1);
    server.addSamples(3);
    const history = emptyHistory(1);
    appendPayload(history, server.payload());
    // When an answer repeats the last sample, and has one out of order
    server.addSamples(2);
    const payload = server.payload(server.timestamps[1]);
    payload.timestamps_ms.splice(2, 0, START_MS);
    payload.gpus.utilization_percent[0].splice(2, 0, 999);
    const appended = appendPayload(history, payload);
    // Then only the 2 new samples are added
    expect(appended).toBe(2);
    expect(history.timestampsMs).toEqual(server.timestamps);
    expect(history.gpus.utilization_percent[0]).not.toContain(999);
  });

  it('fills metrics the device cannot report with null', () => {
    // Given an answer without power readings
    const server = new FakeServer(2);
    server.addSamples(2);
    const payload = server.payload();
    payload.gpus.power_watts = [
      [null, null],
      [null, null]
    ];
    const history = emptyHistory(2);
    // When appended, Then power is null and the newest known value is null
    appendPayload(history, payload);
    expect(history.gpus.power_watts[1]).toEqual([null, null]);
    expect(latestValue(history.gpus.power_watts[1])).toBeNull();
    expect(latestValue([1, 2, null])).toBe(2);
  });

  it('drops samples older than the window before the newest', () => {
    // Given 10 samples 10 s apart
    const server = new FakeServer(1);
    server.addSamples(10);
    const history = emptyHistory(1);
    appendPayload(history, server.payload());
    // When capped to 30 s
    const dropped = capHistory(history, 30_000);
    // Then the 4 newest remain in every column
    expect(dropped).toBe(6);
    expect(history.timestampsMs).toEqual(server.timestamps.slice(-4));
    expect(history.gpus.power_watts[0]).toHaveLength(4);
    expect(history.hostCpuPercent).toHaveLength(4);
  });
});

describe('chartData', () => {
  it('converts to epoch seconds, scales, and breaks the line at a gap', () => {
    // Given samples at 0, 10 and 100 s (a pause in between)
    const history = emptyHistory(1);
    history.timestampsMs.push(START_MS, START_MS + 10_000, START_MS + 100_000);
    history.gpus.memory_used_bytes[0].push(1024 ** 3, null, 2 * 1024 ** 3);
    // When built for the memory chart in GiB with a 25 s gap limit
    const data = chartData(
      history,
      { values: (h, gpu) => h.gpus.memory_used_bytes[gpu], scale: 1 / 1024 ** 3 },
      1,
      25_000
    );
    // Then x is in seconds with a null row inserted in the gap
    expect(data[0]).toEqual([
      START_MS / 1000,
      START_MS / 1000 + 10,
      START_MS / 1000 + 55,
      START_MS / 1000 + 100
    ]);
    expect(data[1]).toEqual([1, null, null, 2]);
  });
});

describe('format', () => {
  it('writes bytes, values and durations for people', () => {
    expect(formatBytes(80 * 1024 ** 3)).toBe('80.0 GiB');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(null)).toBe('–');
    expect(formatValue(37.4, '%')).toBe('37%');
    expect(formatValue(null, ' W')).toBe('–');
    expect(formatDuration(300, trans)).toBe('5 minutes');
    expect(formatDuration(60, trans)).toBe('1 minute');
    expect(formatDuration(90, trans)).toBe('90 seconds');
    expect(formatDuration(1, trans)).toBe('1 second');
  });
});
