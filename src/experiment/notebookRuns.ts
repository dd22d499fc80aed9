/** The runs of the one notebook the Experiment panel follows: its first page, the changes since, older pages. */
import { mergeRuns, pollSince } from './runs';
import type { IRun, IRunsPayload } from './tokens';

/** Runs asked for per page, and per incremental read. */
const PAGE_SIZE = 50;
const CHANGES_LIMIT = 200;

/** Reads an endpoint of the server's API. */
export type Reader = <T>(endpoint: string) => Promise<T>;

/**
 * The followed notebook's runs, newest first (children included). After the first page, a read asks only for the
 * runs that changed (`since` = the oldest start among the runs still running, or the newest start held), so a
 * long list costs one small answer per poll. An answer that arrives once another notebook is followed is dropped.
 */
export class NotebookRuns {
  /** Path of the followed notebook (as JupyterLab names it), or `null` when no notebook is open. */
  get path(): string | null {
    return this._path;
  }

  get runs(): IRun[] {
    return this._runs;
  }

  /** The latest answer about the notebook (its default experiment, the MLflow UI's address). */
  get payload(): IRunsPayload | null {
    return this._payload;
  }

  /** True when older runs can be read with `readOlder()`. */
  get hasMore(): boolean {
    return this._nextPageToken !== null;
  }

  /** True while one of the runs held is running. */
  get running(): boolean {
    return this._runs.some(run => run.status === 'RUNNING');
  }

  /** True until a first page was read. */
  get unread(): boolean {
    return this._payload === null;
  }

  /** Follow `path`: its runs replace the previous notebook's. False when it already was the one followed. */
  follow(path: string | null): boolean {
    if (path === this._path) {
      return false;
    }
    this._path = path;
    this._runs = [];
    this._payload = null;
    this._nextPageToken = null;
    return true;
  }

  /** Read the first page (`full`, or none read yet) or the runs changed since the last read. */
  async read(get: Reader, full: boolean): Promise<void> {
    const path = this._path;
    if (path === null) {
      return;
    }
    const since = full || this.unread ? null : pollSince(this._runs);
    const query = since === null ? `&limit=${PAGE_SIZE}` : `&since=${since}&limit=${CHANGES_LIMIT}`;
    const answer = await get<IRunsPayload>(`runs?notebook=${encodeURIComponent(path)}${query}`);
    if (path !== this._path) {
      return;
    }
    if (since === null) {
      this._runs = [];
      this._nextPageToken = answer.next_page_token;
    }
    this._payload = answer;
    this._runs = mergeRuns(this._runs, answer.runs);
  }

  /** Read the next page of older runs; false when there was none, or another notebook is followed meanwhile. */
  async readOlder(get: Reader): Promise<boolean> {
    const token = this._nextPageToken;
    const path = this._path;
    if (token === null || path === null) {
      return false;
    }
    const page = await get<IRunsPayload>(
      `runs?notebook=${encodeURIComponent(path)}&limit=${PAGE_SIZE}&page_token=${encodeURIComponent(token)}`
    );
    if (path !== this._path) {
      return false;
    }
    this._runs = mergeRuns(this._runs, page.runs);
    this._nextPageToken = page.next_page_token;
    return true;
  }

  private _path: string | null = null;
  private _runs: IRun[] = [];
  private _payload: IRunsPayload | null = null;
  private _nextPageToken: string | null = null;
}
