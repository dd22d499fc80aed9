/** The `air` jobs: status, attempts (each opens its run), nodes, duration, Logs and Cancel. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatElapsed } from '../../format';
import { ACTIVE_JOB_STATUSES, IJob } from '../tokens';

export interface IJobListProps {
  jobs: IJob[];
  nowMs: number;
  onOpenLogs: (jobRunId: string, attempt: number, node: number) => void;
  onCancel: (job: IJob) => void;
  /** Put a text (a job id) on the clipboard. */
  onCopy: (text: string) => void;
  trans: TranslationBundle;
  /** Icon of the Copy buttons. */
  copyIcon?: React.ReactNode;
}

export function JobList(props: IJobListProps): JSX.Element {
  const { jobs, nowMs, onOpenLogs, onCancel, onCopy, trans, copyIcon } = props;
  return (
    <ul className="jp-Air-jobs">
      {jobs.map(job => {
        const active = ACTIVE_JOB_STATUSES.includes(job.status);
        const durationMs =
          job.started_ms === null ? null : (job.ended_ms ?? nowMs) - job.started_ms;
        const nodes = Array.from({ length: job.num_nodes }, (_, node) => node);
        return (
          <li
            key={job.job_run_id}
            className="jp-Air-job"
            data-job-id={job.job_run_id}
            data-status={job.status}
          >
            <div className="jp-Air-run-main">
              <span className={`jp-Air-status-dot jp-Air-status-${job.status}`} />
              <span className="jp-Air-job-id" title={job.job_run_id}>
                {job.job_run_id}
              </span>
              <button
                className="jp-Air-copy"
                onClick={() => onCopy(job.job_run_id)}
                title={trans.__('Copy the job id (for air get, air logs, air cancel)')}
                aria-label={trans.__('Copy %1', job.job_run_id)}
              >
                {copyIcon ?? trans.__('Copy')}
              </button>
              {active ? (
                <button
                  className="jp-Air-job-cancel jp-mod-styled jp-mod-warn"
                  onClick={() => onCancel(job)}
                  title={trans.__('Stop this job (its run ends KILLED)')}
                >
                  {trans.__('Cancel')}
                </button>
              ) : null}
            </div>
            <div className="jp-Air-run-details">
              <span className={`jp-Air-run-status jp-Air-status-text-${job.status}`}>
                {job.status.toLowerCase()}
              </span>
              <span
                className="jp-Air-run-experiment"
                title={trans.__('Experiment: %1', job.experiment_name)}
              >
                {job.experiment_name}
              </span>
              <span className="jp-Air-run-duration" title={trans.__('Duration')}>
                {formatElapsed(durationMs)}
              </span>
              <span>{trans._n('%1 node', '%1 nodes', job.num_nodes)}</span>
              <span>{trans.__('attempts %1/%2', job.num_attempts, job.max_retries + 1)}</span>
            </div>
            {job.error && !active ? (
              <div className="jp-Air-run-error" title={job.error}>
                {job.error}
              </div>
            ) : null}
            <ul className="jp-Air-attempts">
              {job.attempts.map(attempt => (
                <li key={attempt.attempt} className="jp-Air-attempt" data-attempt={attempt.attempt}>
                  <span className={`jp-Air-status-dot jp-Air-status-${attempt.status}`} />
                  {attempt.url ? (
                    <a
                      href={attempt.url}
                      target="_blank"
                      rel="noopener noreferrer"
                      title={trans.__('Open the attempt’s run in the MLflow UI')}
                    >
                      {trans.__('attempt %1', attempt.attempt)}
                    </a>
                  ) : (
                    <span>{trans.__('attempt %1', attempt.attempt)}</span>
                  )}
                  <span className={`jp-Air-status-text-${attempt.status}`}>
                    {attempt.status.toLowerCase()}
                  </span>
                  {nodes.map(node => (
                    <button
                      key={node}
                      className="jp-Air-job-logs jp-mod-styled"
                      onClick={() => onOpenLogs(job.job_run_id, attempt.attempt, node)}
                      title={trans.__(
                        'Open the log of node %1 of attempt %2',
                        node,
                        attempt.attempt
                      )}
                    >
                      {job.num_nodes > 1 ? trans.__('Logs %1', node) : trans.__('Logs')}
                    </button>
                  ))}
                </li>
              ))}
            </ul>
          </li>
        );
      })}
    </ul>
  );
}
