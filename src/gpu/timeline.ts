/** The runs shaded on the GPU panel's charts: asked for once per new GPU sample, only while they show. */
import type { IRun, IRunWindowPayload } from '../experiment/tokens';
import { GpuFollower } from './follower';

/**
 * Follows the GPU model instead of polling: after a GPU poll that brought a newer sample, and only
 * while the GPU panel (with its charts) is visible, it asks once for the runs of the node the charts
 * show (the payload's `node`, a hostname as runs name it) active in the charts' window
 * (`runs?from=&to=&node=`): the whole window the first time, then only from the end of the previous
 * answer (runs that ended since, still run, or started since). When the charts show another node (one
 * chosen in a cluster), its runs are asked for afresh and an answer about the previous one is dropped.
 * So it makes at most one extra request per GPU poll, never two at once, and none while the charts
 * are hidden.
 */
export class RunTimeline extends GpuFollower {
  /** The runs active in the charts' window, newest first. */
  get runs(): IRun[] {
    return this._runs;
  }

  /** Bumped whenever `runs` changes, for views that redraw on it. */
  get revision(): number {
    return this._revision;
  }

  protected onGpuChanged(): void {
    const node = this.gpu.payload?.node ?? null;
    if (node !== this._node) {
      this._follow(node);
    }
    const newest = this.gpu.newestSampleMs;
    const oldest = this.gpu.history.timestampsMs[0];
    const chartsShown = this.gpu.isVisibleTo('panel') && this.gpu.devices.length > 0;
    if (!chartsShown || node === null || newest === null || oldest === undefined) {
      return;
    }
    if (this._inflight || newest === this._askedForNewest) {
      return;
    }
    this._askedForNewest = newest;
    this._inflight = true;
    const from = this._heldToMs === null ? oldest : Math.max(oldest, this._heldToMs);
    void this._fetch(node, from, newest, oldest).finally(() => {
      this._inflight = false;
      if (node !== this._node && !this.isDisposed) {
        this.onGpuChanged(); // the charts show another node since: ask for its runs now
      }
    });
  }

  /** The charts show `node` now (`null`: none): its runs replace the previous node's, from scratch. */
  private _follow(node: string | null): void {
    this._node = node;
    this._askedForNewest = null;
    this._heldToMs = null;
    if (this._runs.length > 0) {
      this._runs = [];
      this._revision += 1;
      this.emitChanged();
    }
  }

  private async _fetch(
    node: string,
    fromMs: number,
    toMs: number,
    oldestMs: number
  ): Promise<void> {
    const endpoint = `runs?from=${fromMs}&to=${toMs}&node=${encodeURIComponent(node)}`;
    try {
      const answer = await this.request<IRunWindowPayload>(endpoint, { method: 'GET' });
      if (this.isDisposed || node !== this._node) {
        return;
      }
      const byId = new Map(this._runs.map(run => [run.run_id, run]));
      answer.runs.forEach(run => byId.set(run.run_id, run));
      this._runs = [...byId.values()]
        .filter(run => run.end_ms === null || run.end_ms >= oldestMs)
        .sort((a, b) => b.start_ms - a.start_ms);
      this._heldToMs = toMs;
      this._revision += 1;
      this.emitChanged();
    } catch (error) {
      // The charts stay as they are; the next GPU poll asks again.
      this._askedForNewest = null;
      console.warn('jupyter-air: reading the runs of the GPU timeline failed.', error);
    }
  }

  private _askedForNewest: number | null = null;
  /** The end of the window of the last answer: later requests start there. */
  private _heldToMs: number | null = null;
  private _inflight = false;
  /** The node whose runs are held (the charts' node), or `null`. */
  private _node: string | null = null;
  private _revision = 0;
  private _runs: IRun[] = [];
}
