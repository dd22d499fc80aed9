/** What the models that poll share: back-off, one request at a time, and the inactivity rule. */

/** Longest wait between two attempts while the server keeps failing. */
export const MAX_BACKOFF_MS = 5 * 60 * 1000;

/** A `Poll` frequency: `intervalMs` between ticks, backing off up to 5 minutes while ticks fail. */
export function pollFrequency(intervalMs: number): {
  backoff: boolean;
  interval: number;
  max: number;
} {
  return { backoff: true, interval: intervalMs, max: Math.max(intervalMs, MAX_BACKOFF_MS) };
}

/** Runs asynchronous requests one after another, never two at once. */
export class RequestQueue {
  run<T>(fn: () => Promise<T>): Promise<T> {
    const run = this._last.then(fn, fn);
    this._last = run.catch(() => undefined);
    return run;
  }

  private _last: Promise<unknown> = Promise.resolve();
}

/** When a view was last used: the last pointer or keyboard activity, and since when it is hidden. */
export class Inactivity {
  constructor(private _now: () => number) {
    this._lastActivityMs = _now();
  }

  /** Record activity now. */
  activity(): void {
    this._lastActivityMs = this._now();
  }

  /** The view was hidden now. */
  hidden(): void {
    this._hiddenSinceMs = this._now();
  }

  /** The view is shown again, which counts as activity. */
  shown(): void {
    this._hiddenSinceMs = null;
    this.activity();
  }

  /** True after `timeoutMs` with the view hidden, or without activity. */
  expired(timeoutMs: number): boolean {
    const now = this._now();
    const hiddenTooLong = this._hiddenSinceMs !== null && now - this._hiddenSinceMs >= timeoutMs;
    return hiddenTooLong || now - this._lastActivityMs >= timeoutMs;
  }

  private _hiddenSinceMs: number | null = null;
  private _lastActivityMs: number;
}
