/**
 * Sharing an experiment of the tracking server (MLflow's authentication app) from the Experiment panel: whether
 * this Jupyter server can (`GET jupyter-air/experiments/share`, read once), and one grant (`POST`).
 */
import type { Requester } from '../request';

/** The permissions a colleague can be given, from least to most. */
export const SHARE_LEVELS = ['READ', 'EDIT', 'MANAGE'] as const;
export type ShareLevel = (typeof SHARE_LEVELS)[number];

/** Whether experiments can be shared from here, and if not why (`reason`, for a tooltip). */
export interface ISharingInfo {
  available: boolean;
  /** The tracking server (no credentials in it). */
  server: string | null;
  reason: string | null;
}

/** A grant made: `level` null when it was taken back. */
export interface IGrant {
  experiment_name: string;
  experiment_id: string;
  user: string;
  level: ShareLevel | null;
  server: string;
}

export class Sharing {
  constructor(private _request: Requester) {}

  /** Whether experiments can be shared from this server; asked once (a server without it: not available). */
  info(): Promise<ISharingInfo> {
    if (!this._info) {
      this._info = this._request<ISharingInfo>('experiments/share').catch(() => ({
        available: false,
        server: null,
        reason: null
      }));
    }
    return this._info;
  }

  /** Give `user` `level` on `experiment` (null takes their grant back); rejects with the server's reason. */
  share(experiment: string, user: string, level: ShareLevel | null): Promise<IGrant> {
    return this._request<IGrant>('experiments/share', {
      method: 'POST',
      // A string body alone would be sent as text/plain.
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ experiment, user, level })
    });
  }

  private _info: Promise<ISharingInfo> | null = null;
}
