/** An in-memory stand-in for the server's GPU routes, behind the model's request seam. */
import { RequestError } from '../request';
import { IGpuPayload, IVersionPayload } from '../gpu/tokens';
import { FRONTEND_VERSION } from '../version';

export const START_MS = 1_764_420_000_000;

/** Holds samples like the server's ring buffer; answers `version`, `gpu[?since=]` and `gpu/refresh`. */
export class FakeServer {
  constructor(
    readonly gpuCount = 2,
    readonly intervalMs = 10_000
  ) {}

  timestamps: number[] = [];
  available = true;
  /** What `version` answers; `null`: that route answers 404. */
  version: string | null = FRONTEND_VERSION;
  /** When set, every request fails with it. */
  failWith: RequestError | null = null;
  /** When true, `since` is ignored and the whole buffer is returned (overlapping answers). */
  ignoreSince = false;
  calls: { endpoint: string; method: string }[] = [];
  inFlight = 0;
  maxInFlight = 0;
  /** Delay each answer by this many ms (fake timers advance it). */
  delayMs = 0;

  addSamples(count: number): void {
    for (let i = 0; i < count; i++) {
      const last = this.timestamps[this.timestamps.length - 1] ?? START_MS;
      this.timestamps.push(last + this.intervalMs);
    }
  }

  get requests(): string[] {
    return this.calls.map(c => `${c.method} ${c.endpoint}`);
  }

  request = async <T>(endpoint: string, init?: RequestInit): Promise<T> => {
    this.calls.push({ endpoint, method: init?.method ?? 'GET' });
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.delayMs > 0) {
        await new Promise(resolve => setTimeout(resolve, this.delayMs));
      }
      if (this.failWith) {
        throw this.failWith;
      }
      if (endpoint === 'version') {
        return this.versionAnswer() as T;
      }
      if (endpoint.startsWith('gpu/refresh')) {
        this.addSamples(1);
      }
      const match = /since=(\d+)/.exec(endpoint);
      const since = match && !this.ignoreSince ? Number(match[1]) : -Infinity;
      return this.payload(since) as T;
    } finally {
      this.inFlight -= 1;
    }
  };

  private versionAnswer(): IVersionPayload {
    if (this.version === null) {
      throw new RequestError('jupyter-air/version answered 404', 'unavailable', 404);
    }
    return { version: this.version };
  }

  /** The answer for samples newer than `since`; values encode the timestamp to check order. */
  payload(since = -Infinity): IGpuPayload {
    const ts = this.timestamps.filter(t => t > since);
    const gpus = this.available ? this.gpuCount : 0;
    const perGpu = (f: (t: number, gpu: number) => number) =>
      Array.from({ length: gpus }, (_, gpu) => ts.map(t => f(t, gpu)));
    return {
      node: 'node-1',
      source: 'simulated',
      available: this.available,
      reason: this.available ? null : 'NVML library not found (libnvidia-ml.so.1).',
      sampling: true,
      interval_seconds: this.intervalMs / 1000,
      history_seconds: 7200,
      idle_timeout_seconds: 300,
      devices: Array.from({ length: gpus }, (_, index) => ({
        index,
        uuid: `GPU-${index}`,
        name: `Fake GPU ${index}`,
        memory_total_bytes: 80 * 1024 ** 3,
        error: null
      })),
      timestamps_ms: ts,
      gpus: {
        utilization_percent: perGpu((t, gpu) => ((t / this.intervalMs) % 100) + gpu),
        memory_used_bytes: perGpu(t => t % 1024 ** 3),
        temperature_celsius: perGpu(() => 50),
        power_watts: perGpu(() => 200)
      },
      host: {
        cpu_percent: ts.map(() => 12.5),
        memory_used_bytes: ts.map(() => 8 * 1024 ** 3),
        memory_total_bytes: 24 * 1024 ** 3
      },
      processes: []
    };
  }
}
