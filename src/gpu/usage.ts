/**
 * GPU use over the last 7 days per user, experiment or day (`GET usage`, what `air usage` prints), shown in the
 * GPU panel: read when the panel shows, then at most once a minute while it does, and at once when the grouping
 * changes; never while the panel is hidden.
 */
import { GpuFollower } from './follower';

/** How the use is grouped. */
export type UsageGroup = 'user' | 'experiment' | 'day';

export const USAGE_GROUPS: UsageGroup[] = ['user', 'experiment', 'day'];

/** Milliseconds between two reads while the panel shows: use changes by the minute, not by the sample. */
export const USAGE_REFRESH_MS = 60_000;

/** One group's use: its runs, GPU-hours, measured energy (simulated energy apart, never counted) and cost. */
export interface IUsageRow {
  key: string;
  runs: number;
  gpu_hours: number;
  energy_wh: number;
  simulated_energy_wh: number;
  cost: number;
}

/** Answer of `GET jupyter-air/usage`. */
export interface IUsagePayload {
  by: UsageGroup;
  since_ms: number;
  until_ms: number;
  prices: { gpu_hour: number; kwh: number };
  rows: IUsageRow[];
  total: IUsageRow;
}

export class GpuUsage extends GpuFollower {
  /** The grouping shown. */
  get by(): UsageGroup {
    return this._by;
  }

  /** The last answer for the grouping shown; null until one came. */
  get payload(): IUsagePayload | null {
    return this._payload;
  }

  /** Group by `by`, read at once. */
  setBy(by: UsageGroup): void {
    if (by === this._by) {
      return;
    }
    this._by = by;
    this._payload = null;
    this.emitChanged();
    void this._read();
  }

  protected onGpuChanged(): void {
    if (!this.gpu.isVisibleTo('panel') || this._inflight) {
      return;
    }
    if (this._readAtMs !== null && Date.now() - this._readAtMs < USAGE_REFRESH_MS) {
      return;
    }
    void this._read();
  }

  private async _read(): Promise<void> {
    const by = this._by;
    this._inflight = true;
    this._readAtMs = Date.now();
    try {
      const answer = await this.request<IUsagePayload>(`usage?by=${by}`, { method: 'GET' });
      if (!this.isDisposed && by === this._by) {
        this._payload = answer;
        this.emitChanged();
      }
    } catch (error) {
      // What is shown stays; the next GPU poll asks again.
      this._readAtMs = null;
      console.warn('jupyter-air: reading the GPU use failed.', error);
    } finally {
      this._inflight = false;
    }
  }

  private _by: UsageGroup = 'user';
  private _inflight = false;
  private _payload: IUsagePayload | null = null;
  private _readAtMs: number | null = null;
}
