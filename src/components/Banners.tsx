/** The panel's banners (paused, request failure, version mismatch): the words live here, not in the model. */
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
    <div
      className={`jp-Air-banner ${unavailable ? 'jp-Air-unavailable' : 'jp-Air-error'}`}
      role="alert"
    >
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

export interface IVersionBannerProps {
  serverVersion: string;
  frontendVersion: string;
}

/** Non-blocking: the panel keeps working, but the two halves of jupyter_air disagree. */
export function VersionBanner(props: IVersionBannerProps): JSX.Element {
  return (
    <div className="jp-Air-banner jp-Air-version-mismatch" role="status">
      <div className="jp-Air-banner-title">jupyter_air versions differ</div>
      <div>
        The jupyter_air server extension is {props.serverVersion} but this page runs{' '}
        {props.frontendVersion}. Reload this page; if the versions still differ, restart the Jupyter
        server, then reload the page.
      </div>
    </div>
  );
}
