/** The `air` jobs: status, attempts (each opens its run), every node with its Logs, duration, Cancel, who may use
 * it. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatElapsed } from '../../format';
import { ACTIVE_JOB_STATUSES, IJob, IJobAttempt, IJobNode } from '../tokens';

export interface IJobListProps {
  jobs: IJob[];
  nowMs: number;
  onOpenLogs: (jobRunId: string, attempt: number, node: number) => void;
  onCancel: (job: IJob) => void;
  /** Show and change who may view, run or manage the job. */
  onPermissions?: (job: IJob) => void;
  /** Put a text (a job id) on the clipboard. */
  onCopy: (text: string) => void;
  trans: TranslationBundle;
  /** Icon of the Copy buttons. */
  copyIcon?: React.ReactNode;
  /** The job to show a person (just submitted): highlighted and scrolled into view. */
  revealed?: string | null;
  /** Bumped to scroll to `revealed` again (the panel opened on it). */
  revealTick?: number;
}

export function JobList(props: IJobListProps): JSX.Element {
  const { jobs, nowMs, onOpenLogs, onCancel, onPermissions, onCopy, trans, copyIcon } = props;
  const { revealed, revealTick } = props;
  const listRef = React.useRef<HTMLUListElement>(null);
  React.useEffect(() => {
    const rows = listRef.current?.querySelectorAll<HTMLElement>('.jp-Air-job') ?? [];
    const row = [...rows].find(node => node.dataset.jobId === revealed);
    row?.scrollIntoView?.({ block: 'nearest' });
  }, [revealed, revealTick]);
  return (
    <ul className="jp-Air-jobs" ref={listRef}>
      {jobs.map(job => {
        const active = ACTIVE_JOB_STATUSES.includes(job.status);
        const durationMs =
          job.started_ms === null ? null : (job.ended_ms ?? nowMs) - job.started_ms;
        return (
          <li
            key={job.job_run_id}
            className={`jp-Air-job${job.job_run_id === revealed ? ' jp-mod-revealed' : ''}`}
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
              <span className={`jp-Air-run-status jp-Air-status-text jp-Air-status-${job.status}`}>
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
              {onPermissions ? (
                <button
                  className="jp-Air-job-permissions jp-mod-styled"
                  onClick={() => onPermissions(job)}
                  title={trans.__('Who may view, run or manage this job')}
                >
                  {trans.__('Access…')}
                </button>
              ) : null}
            </div>
            {job.error && !active ? (
              <div className="jp-Air-run-error" title={job.error}>
                {job.error}
              </div>
            ) : null}
            {job.error && job.status === 'PENDING' ? (
              <div className="jp-Air-job-waiting" title={job.error}>
                {job.error}
              </div>
            ) : null}
            <ul className="jp-Air-attempts">
              {job.attempts.map(attempt => (
                <AttemptRow
                  key={attempt.attempt}
                  job={job}
                  attempt={attempt}
                  onOpenLogs={onOpenLogs}
                  trans={trans}
                />
              ))}
            </ul>
          </li>
        );
      })}
    </ul>
  );
}

/** The nodes of an attempt: as the server lists them, else numbered from the job's node count. */
export function attemptNodes(job: IJob, attempt: IJobAttempt): IJobNode[] {
  if (attempt.nodes && attempt.nodes.length > 0) {
    return [...attempt.nodes].sort((a, b) => a.node - b.node);
  }
  return Array.from({ length: Math.max(1, job.num_nodes) }, (_, node) => ({
    node,
    hostname: null,
    ip: null,
    ray_node_id: null,
    exit_code: null
  }));
}

function AttemptRow(props: {
  job: IJob;
  attempt: IJobAttempt;
  onOpenLogs: (jobRunId: string, attempt: number, node: number) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { job, attempt, onOpenLogs, trans } = props;
  const nodes = attemptNodes(job, attempt);
  const logs = (node: number, label: string) => (
    <button
      className="jp-Air-job-logs jp-mod-styled"
      onClick={() => onOpenLogs(job.job_run_id, attempt.attempt, node)}
      title={trans.__('Open the log of node %1 of attempt %2', node, attempt.attempt)}
    >
      {label}
    </button>
  );
  return (
    <li className="jp-Air-attempt" data-attempt={attempt.attempt}>
      <div className="jp-Air-attempt-main">
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
        <span className={`jp-Air-status-text jp-Air-status-${attempt.status}`}>
          {attempt.status.toLowerCase()}
        </span>
        {nodes.length === 1 ? logs(nodes[0].node, trans.__('Logs')) : null}
      </div>
      {nodes.length > 1 ? (
        <ul className="jp-Air-job-nodes">
          {nodes.map(node => (
            <li key={node.node} className="jp-Air-job-node" data-node={node.node}>
              <span className="jp-Air-job-node-index">{trans.__('node %1', node.node)}</span>
              <span
                className="jp-Air-job-node-host"
                title={[node.ip, node.ray_node_id].filter(Boolean).join(' · ')}
              >
                {node.hostname ?? node.ip ?? ''}
              </span>
              {node.exit_code !== null ? (
                <span
                  className={`jp-Air-job-node-exit${node.exit_code === 0 ? '' : ' jp-mod-failed'}`}
                >
                  {trans.__('exit %1', node.exit_code)}
                </span>
              ) : null}
              {logs(node.node, trans.__('Logs'))}
            </li>
          ))}
        </ul>
      ) : null}
    </li>
  );
}
