/** The panel's banners (paused, request failure, version mismatch): the words live here, not in the model. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatDuration } from '../format';
import type { RequestError } from '../request';

export interface IPausedBannerProps {
  /** The inactivity timeout after which polling paused. */
  timeoutSeconds: number;
  trans: TranslationBundle;
}

export function PausedBanner(props: IPausedBannerProps): JSX.Element {
  const { timeoutSeconds, trans } = props;
  return (
    <div className="jp-Air-banner jp-Air-paused" role="status">
      {trans.__(
        'Paused after %1 of inactivity — Refresh to resume',
        formatDuration(timeoutSeconds, trans)
      )}
    </div>
  );
}

export interface IErrorBannerProps {
  error: RequestError;
  /** What failed, e.g. "Reading GPU data failed" (a missing server extension says so instead). */
  heading: string;
  /** Milliseconds until the next attempt, or `null` when none is scheduled. */
  retryInMs: number | null;
  trans: TranslationBundle;
}

export function ErrorBanner(props: IErrorBannerProps): JSX.Element {
  const { error, heading, retryInMs, trans } = props;
  const unavailable = error.kind === 'unavailable';
  return (
    <div
      className={`jp-Air-banner ${unavailable ? 'jp-Air-unavailable' : 'jp-Air-error'}`}
      role="alert"
    >
      <div className="jp-Air-banner-title">
        {unavailable ? trans.__('Server extension unavailable') : heading}
      </div>
      <div>{error.message}</div>
      {retryInMs !== null ? (
        <div className="jp-Air-retry">
          {trans.__(
            'Retrying in %1.',
            formatDuration(Math.max(1, Math.round(retryInMs / 1000)), trans)
          )}
        </div>
      ) : null}
    </div>
  );
}

export interface IVersionBannerProps {
  serverVersion: string;
  frontendVersion: string;
  trans: TranslationBundle;
}

/** Non-blocking: the panel keeps working, but the two halves of jupyter_air disagree. */
export function VersionBanner(props: IVersionBannerProps): JSX.Element {
  const { serverVersion, frontendVersion, trans } = props;
  return (
    <div className="jp-Air-banner jp-Air-version-mismatch" role="status">
      <div className="jp-Air-banner-title">{trans.__('jupyter_air versions differ')}</div>
      <div>
        {trans.__(
          'The jupyter_air server extension is %1 but this page runs %2. Reload this page; if the versions still differ, restart the Jupyter server, then reload the page.',
          serverVersion,
          frontendVersion
        )}
      </div>
    </div>
  );
}
