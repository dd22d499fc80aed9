/** The Logs view's content: which log, its state, and its lines. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBanner, PausedBanner } from '../../components/Banners';
import type { LogModel } from '../logModel';

export interface ILogViewProps {
  model: LogModel;
  revision: number;
  trans: TranslationBundle;
}

export function LogView(props: ILogViewProps): JSX.Element {
  const { model, trans } = props;
  const attempt =
    model.attempt < 0 ? trans.__('latest attempt') : trans.__('attempt %1', model.attempt);
  const following = !model.complete && model.error === null && !model.paused;
  return (
    <div className="jp-Air-log-body">
      <div className="jp-Air-log-header">
        <span className="jp-Air-job-id">{model.jobRunId}</span>
        <span>{attempt}</span>
        <span>{trans.__('node %1', model.node)}</span>
        {model.attemptStatus ? (
          <span
            className={`jp-Air-run-status jp-Air-status-text jp-Air-status-${model.attemptStatus}`}
          >
            {model.attemptStatus.toLowerCase()}
          </span>
        ) : null}
        <span className="jp-Air-log-state" data-complete={model.complete}>
          {following ? trans.__('following…') : model.complete ? trans.__('complete') : ''}
        </span>
      </div>
      {model.pausedAfterSeconds !== null ? (
        <PausedBanner timeoutSeconds={model.pausedAfterSeconds} trans={trans} />
      ) : null}
      {model.error ? (
        <ErrorBanner
          error={model.error}
          heading={trans.__('Reading the log failed')}
          retryInMs={model.retryInMs}
          trans={trans}
        />
      ) : null}
      {model.droppedLines > 0 ? (
        <div className="jp-Air-log-dropped">
          {trans.__(
            '%1 earlier lines are not shown; Download has the whole log.',
            model.droppedLines
          )}
        </div>
      ) : null}
      <pre className="jp-Air-log-text">{model.lines.join('\n')}</pre>
    </div>
  );
}
