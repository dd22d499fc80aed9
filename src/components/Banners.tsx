/** The panel's banners: paused polling and request failures; the words live here, not in the model. */
import * as React from 'react';

import { formatDuration } from '../format';
import type { RequestError } from '../request';

export interface IPausedBannerProps {
  /** The inactivity timeout after which polling paused. */
  timeoutSeconds: number;
}

export function PausedBanner(props: IPausedBannerProps): JSX.Element {
  return (
    <div className="jp-Air-banner jp-Air-paused" role="status">
      Paused after {formatDuration(props.timeoutSeconds)} of inactivity — Refresh to resume
    </div>
  );
}

export interface IErrorBannerProps {
  error: RequestError;
  /** Milliseconds until the next attempt, or `null` when none is scheduled. */
  retryInMs: number | null;
}

export function ErrorBanner(props: IErrorBannerProps): JSX.Element {
  const { error, retryInMs } = props;
  const unavailable = error.kind === 'unavailable';
  return (
    <div className={`jp-Air-banner ${unavailable ? 'jp-Air-unavailable' : 'jp-Air-error'}`} role="alert">
      <div className="jp-Air-banner-title">
        {unavailable ? 'Server extension unavailable' : 'Reading GPU data failed'}
      </div>
      <div>{error.message}</div>
      {retryInMs !== null ? (
        <div className="jp-Air-retry">
          Retrying in {formatDuration(Math.max(1, Math.round(retryInMs / 1000)))}.
        </div>
      ) : null}
    </div>
  );
}
