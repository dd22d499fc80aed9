/** Client-side GPU and host history: merging `since` answers and capping the window. */
// Types only: the charts' modules load without JupyterLab (the chart benchmark runs them in a bare page).
import type { IGpuHistory, IGpuPayload, IGpuSeries } from './tokens';

/** Every per-GPU metric of the history. */
export const GPU_METRICS: (keyof IGpuSeries)[] = [
  'utilization_percent',
  'memory_used_bytes',
  'temperature_celsius',
  'power_watts'
];

/** An empty history for `gpuCount` GPUs. */
export function emptyHistory(gpuCount: number): IGpuHistory {
  const perGpu = () => Array.from({ length: gpuCount }, () => [] as (number | null)[]);
  return {
    timestampsMs: [],
    gpus: {
      utilization_percent: perGpu(),
      memory_used_bytes: perGpu(),
      temperature_celsius: perGpu(),
      power_watts: perGpu()
    },
    hostCpuPercent: [],
    hostMemoryUsedBytes: []
  };
}

/** Timestamp of the newest sample, or `null` when the history is empty. */
export function newestTimestamp(history: IGpuHistory): number | null {
  const ts = history.timestampsMs;
  return ts.length > 0 ? ts[ts.length - 1] : null;
}

/**
 * Append the samples of `payload` that are newer than the newest one held, in place.
 *
 * Samples at or before the newest timestamp are duplicates (an overlapping answer) and
 * are skipped; out-of-order samples are skipped too. Returns the number appended.
 */
export function appendPayload(history: IGpuHistory, payload: IGpuPayload): number {
  let newest = newestTimestamp(history) ?? -Infinity;
  let appended = 0;
  const gpuCount = history.gpus.utilization_percent.length;
  payload.timestamps_ms.forEach((ts, k) => {
    if (!(ts > newest)) {
      return;
    }
    newest = ts;
    appended += 1;
    history.timestampsMs.push(ts);
    for (const metric of GPU_METRICS) {
      const incoming = payload.gpus?.[metric] ?? [];
      for (let gpu = 0; gpu < gpuCount; gpu++) {
        history.gpus[metric][gpu].push(incoming[gpu]?.[k] ?? null);
      }
    }
    history.hostCpuPercent.push(payload.host?.cpu_percent?.[k] ?? null);
    history.hostMemoryUsedBytes.push(payload.host?.memory_used_bytes?.[k] ?? null);
  });
  return appended;
}

/** Drop, in place, the samples older than `windowMs` before the newest one. Returns how many. */
export function capHistory(history: IGpuHistory, windowMs: number): number {
  const newest = newestTimestamp(history);
  if (newest === null) {
    return 0;
  }
  const oldestKept = newest - windowMs;
  let drop = 0;
  while (drop < history.timestampsMs.length && history.timestampsMs[drop] < oldestKept) {
    drop += 1;
  }
  if (drop > 0) {
    history.timestampsMs.splice(0, drop);
    for (const metric of GPU_METRICS) {
      for (const series of history.gpus[metric]) {
        series.splice(0, drop);
      }
    }
    history.hostCpuPercent.splice(0, drop);
    history.hostMemoryUsedBytes.splice(0, drop);
  }
  return drop;
}

/** The newest non-null value of a series, or `null`. */
export function latestValue(series: (number | null)[] | undefined): number | null {
  if (!series) {
    return null;
  }
  for (let k = series.length - 1; k >= 0; k--) {
    const value = series[k];
    if (value !== null && value !== undefined) {
      return value;
    }
  }
  return null;
}
