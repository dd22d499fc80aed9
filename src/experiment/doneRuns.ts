/**
 * Runs done while you were away: a run of a notebook open in this JupyterLab, or of a job started from it,
 * that ends after running at least a threshold (2 minutes by default) gets one notification with its status,
 * duration, first metric and link; and a browser notification too when the tab is hidden, if allowed.
 */
import type { Notification } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';
import { Poll } from '@lumino/polling';

import { formatElapsed } from '../format';
import { pollFrequency } from '../polling';
import { requestAPI, Requester } from '../request';
import type { IRun, IRunWindowPayload } from './tokens';

/** Seconds between two reads of the runs that ended; each read asks for a short window, answered from cache. */
const INTERVAL_SECONDS = 30;
/** Each read asks from this long before the previous one's end: a late clock on the server misses nothing. */
const OVERLAP_MS = 60_000;

/** What the watch needs of JupyterLab's `Notification` (tests pass a recorder). */
export interface IDoneNotifications {
  emit(
    message: string,
    type: Notification.TypeOptions,
    options?: Notification.IOptions<null>
  ): string;
}

export class DoneRuns implements IDisposable {
  constructor(private _options: DoneRuns.IOptions) {
    this._now = _options.now ?? Date.now;
    this._request = _options.request ?? requestAPI;
    this._since = this._now();
    this._poll = new Poll({
      factory: () => this._check(),
      frequency: pollFrequency((_options.intervalSeconds ?? INTERVAL_SECONDS) * 1000),
      name: 'jupyter-air:done-runs',
      standby: 'never'
    });
  }

  /** Runs shorter than this are not notified; 0 turns the watch off. */
  thresholdMinutes = 2;
  /** Also a browser notification while the tab is hidden (when the browser allows them). */
  browserNotifications = false;

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  dispose(): void {
    this._poll.dispose();
  }

  private async _check(): Promise<void> {
    const to = this._now();
    if (this.thresholdMinutes > 0) {
      const window = `runs?from=${Math.max(0, this._since - OVERLAP_MS)}&to=${to}`;
      const answer = await this._request<IRunWindowPayload>(window, { method: 'GET' });
      answer.runs.filter(run => this._due(run)).forEach(run => this._notify(run));
    }
    this._since = to;
  }

  /** A top-level run of ours that ended after running at least the threshold, not notified yet. */
  private _due(run: IRun): boolean {
    const ran = run.end_ms === null ? 0 : run.end_ms - run.start_ms;
    return (
      run.status !== 'RUNNING' &&
      !run.parent_run_id &&
      ran >= this.thresholdMinutes * 60_000 &&
      !this._notified.has(run.run_id) &&
      this._options.isOurs(run)
    );
  }

  private _notify(run: IRun): void {
    const { trans } = this._options;
    this._notified.add(run.run_id);
    const words = {
      FINISHED: trans.__('finished'),
      FAILED: trans.__('failed'),
      KILLED: trans.__('was stopped')
    };
    const done = words[run.status as keyof typeof words] ?? run.status.toLowerCase();
    const [metric] = Object.entries(run.metrics);
    const name = run.run_name ?? run.run_id.slice(0, 8);
    const head = trans.__('%1 %2 after %3', name, done, formatElapsed(run.end_ms! - run.start_ms));
    const body = metric ? trans.__('%1: %2', metric[0], String(metric[1])) : '';
    const url = run.url;
    const type =
      run.status === 'FINISHED' ? 'success' : run.status === 'FAILED' ? 'error' : 'warning';
    const open = url
      ? [{ label: trans.__('Open run'), callback: () => window.open(url, '_blank', 'noopener') }]
      : [];
    this._options.notifications.emit(body ? `${head} — ${body}` : head, type, {
      autoClose: false,
      actions: open
    });
    const browser = globalThis.Notification;
    if (this.browserNotifications && document.hidden && browser?.permission === 'granted') {
      const shown = new browser(head, { body, tag: `jupyter-air-${run.run_id}` });
      shown.onclick = () => {
        window.focus();
        if (url) {
          window.open(url, '_blank', 'noopener');
        }
      };
    }
  }

  private _notified = new Set<string>();
  private _now: () => number;
  private _poll: Poll;
  private _request: Requester;
  private _since: number;
}

export namespace DoneRuns {
  export interface IOptions {
    notifications: IDoneNotifications;
    /** Whether a run was started from this JupyterLab (its notebook is open here, or its job was started here). */
    isOurs: (run: IRun) => boolean;
    trans: TranslationBundle;
    /** Replaces `requestAPI` (tests). */
    request?: Requester;
    /** Clock in epoch milliseconds (tests). */
    now?: () => number;
    intervalSeconds?: number;
  }
}
