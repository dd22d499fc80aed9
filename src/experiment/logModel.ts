/** The Logs view's model: one node's log of one attempt of an `air` job, followed by byte offset. */
import { PollingModel } from '../pollingModel';
import type { Requester } from '../request';
import { DEFAULT_EXPERIMENT_SETTINGS, ILogChunk, JobStatus, RunStatus } from './tokens';

/** Most lines kept for display; the download has them all. */
export const MAX_LOG_LINES = 20_000;

/** Most chunks read in one poll while catching up with a long log. */
const CATCH_UP_CHUNKS = 16;

/**
 * Reads `jobs/<id>/logs` from offset 0, then asks only for what was added (`offset` = the
 * `next_offset` of the last answer), while the view is visible and until the attempt has ended and
 * everything was read (see `PollingModel` for when it pauses). The first answer pins the attempt,
 * so "the latest" stays the same one.
 */
export class LogModel extends PollingModel {
  constructor(options: LogModel.IOptions) {
    super({ ...options, name: 'jupyter-air:job-logs', intervalMs: options.intervalMs ?? 1000 });
    this.jobRunId = options.jobRunId;
    this._attempt = options.attempt ?? -1;
    this.node = options.node ?? 0;
    this._maxLines = options.maxLines ?? MAX_LOG_LINES;
    this._timeoutSeconds =
      options.inactivityTimeoutSeconds ?? DEFAULT_EXPERIMENT_SETTINGS.inactivityTimeoutSeconds;
  }

  readonly jobRunId: string;
  readonly node: number;

  /** The attempt shown (-1 until the server said which one is the latest). */
  get attempt(): number {
    return this._attempt;
  }

  /** Lines read so far (the last `maxLines`), without their newline; a `\r` redraw shows its last state. */
  get lines(): string[] {
    return this._lines;
  }

  /** Lines dropped from the start to keep at most `maxLines`. */
  get droppedLines(): number {
    return this._dropped;
  }

  get offset(): number {
    return this._offset;
  }

  /** True once the attempt has ended and the whole log was read. */
  get complete(): boolean {
    return this._complete;
  }

  get attemptStatus(): RunStatus | null {
    return this._attemptStatus;
  }

  get jobStatus(): JobStatus | null {
    return this._jobStatus;
  }

  protected get inactivityTimeoutSeconds(): number {
    return this._timeoutSeconds;
  }

  /** Following goes on until the whole log of an ended attempt has been read. */
  protected due(): boolean {
    return !this._complete;
  }

  /** Read what was added, several chunks in a row while catching up with a long log. */
  protected async fetch(): Promise<void> {
    for (let i = 0; i < CATCH_UP_CHUNKS; i++) {
      const query = `attempt=${this._attempt}&node=${this.node}&offset=${this._offset}`;
      const chunk = await this.read<ILogChunk>(
        `jobs/${encodeURIComponent(this.jobRunId)}/logs?${query}`,
        { method: 'GET' },
        'Reading the log'
      );
      this._append(chunk);
      if (chunk.complete) {
        this._complete = true;
        break;
      }
      if (chunk.next_offset >= chunk.size_bytes || chunk.next_offset === chunk.offset) {
        break;
      }
    }
    this.emitChanged();
  }

  private _append(chunk: ILogChunk): void {
    this._attempt = chunk.attempt;
    this._attemptStatus = chunk.attempt_status;
    this._jobStatus = chunk.job_status;
    this._offset = chunk.next_offset;
    if (chunk.text.length === 0) {
      return;
    }
    const text = this._pending + chunk.text;
    const parts = text.split('\n');
    this._pending = parts.pop() ?? '';
    if (chunk.complete && this._pending) {
      parts.push(this._pending);
      this._pending = '';
    }
    this._lines.push(...parts.map(line => line.split('\r').pop() ?? ''));
    const excess = this._lines.length - this._maxLines;
    if (excess > 0) {
      this._lines.splice(0, excess);
      this._dropped += excess;
    }
  }

  private _attempt: number;
  private _attemptStatus: RunStatus | null = null;
  private _complete = false;
  private _dropped = 0;
  private _jobStatus: JobStatus | null = null;
  private _lines: string[] = [];
  private _maxLines: number;
  private _offset = 0;
  /** Text after the last newline of a line handed out in pieces (longer than a chunk). */
  private _pending = '';
  private _timeoutSeconds: number;
}

export namespace LogModel {
  export interface IOptions {
    jobRunId: string;
    /** The attempt (0, 1, ...); -1 or absent: the latest. */
    attempt?: number;
    node?: number;
    request?: Requester;
    /** Milliseconds between two reads while the attempt runs. */
    intervalMs?: number;
    maxLines?: number;
    /** Seconds hidden or without activity before following pauses (the Experiment panel's setting). */
    inactivityTimeoutSeconds?: number;
    /** Clock in epoch milliseconds (tests). */
    now?: () => number;
  }
}
