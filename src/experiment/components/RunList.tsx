/** The notebook's runs: status, name (opens the run), source, duration, GPU energy, last metrics; children nested. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatElapsed, formatEnergy } from '../../format';
import type { IRun } from '../tokens';

export interface IRunListProps {
  runs: IRun[];
  childrenOf: (runId: string) => IRun[];
  selected: ReadonlySet<string>;
  onToggle: (runId: string) => void;
  /** Epoch milliseconds now, for the duration of running runs. */
  nowMs: number;
  /** The notebook's default experiment: runs in it do not repeat its name. */
  defaultExperiment?: string | null;
  /** Open the log of a job's attempt; a run backed by a job (`job_run_id`) offers it. */
  onOpenLogs?: (jobRunId: string, attempt: number, node: number) => void;
  trans: TranslationBundle;
}

/** The word shown for a run's source. */
export function sourceLabel(source: string | null, trans: TranslationBundle): string | null {
  switch (source) {
    case 'distributed':
      return trans.__('distributed');
    case 'magic':
      return trans.__('cell');
    case 'job':
      return trans.__('air job');
    default:
      return source;
  }
}

/** A run's duration: to its end, or to now while it runs. */
export function runDurationMs(run: Pick<IRun, 'start_ms' | 'end_ms'>, nowMs: number): number {
  return (run.end_ms ?? nowMs) - run.start_ms;
}

function formatMetric(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toPrecision(4).replace(/\.?0+$/, '');
}

export function RunList(props: IRunListProps): JSX.Element {
  const { runs } = props;
  return (
    <ul className="jp-Air-runs">
      {runs.map(run => (
        <RunRow key={run.run_id} {...props} run={run} />
      ))}
    </ul>
  );
}

function RunRow(props: IRunListProps & { run: IRun }): JSX.Element {
  const { run, childrenOf, selected, onToggle, nowMs, defaultExperiment, onOpenLogs, trans } =
    props;
  const jobRunId = run.job_run_id;
  const children = childrenOf(run.run_id);
  const name = run.run_name || run.run_id;
  const source = sourceLabel(run.source, trans);
  const metrics = Object.entries(run.metrics);
  const status = run.status.toLowerCase();
  return (
    <li className="jp-Air-run" data-run-id={run.run_id} data-status={run.status}>
      <div className="jp-Air-run-main">
        <input
          type="checkbox"
          className="jp-Air-run-select"
          checked={selected.has(run.run_id)}
          onChange={() => onToggle(run.run_id)}
          title={trans.__('Select to compare')}
          aria-label={trans.__('Select %1 to compare', name)}
        />
        <span className={`jp-Air-status-dot jp-Air-status-${run.status}`} />
        {run.url ? (
          <a
            className="jp-Air-run-name"
            href={run.url}
            target="_blank"
            rel="noopener noreferrer"
            title={trans.__('%1 — open the run in the MLflow UI', name)}
          >
            {name}
          </a>
        ) : (
          <span className="jp-Air-run-name" title={trans.__('%1 (run %2)', name, run.run_id)}>
            {name}
          </span>
        )}
        {source ? <span className="jp-Air-badge jp-Air-source-badge">{source}</span> : null}
      </div>
      <div className="jp-Air-run-details">
        <span className={`jp-Air-run-status jp-Air-status-text jp-Air-status-${run.status}`}>
          {status}
        </span>
        <span className="jp-Air-run-duration" title={trans.__('Duration')}>
          {formatElapsed(runDurationMs(run, nowMs))}
        </span>
        {run.world_size !== null && run.world_size > 1 ? (
          <span title={trans.__('Processes (world size)')}>
            {trans.__('%1 ranks', run.world_size)}
          </span>
        ) : null}
        {run.energy_watt_hours !== null ? (
          <span
            className="jp-Air-run-energy"
            title={
              run.gpus_simulated
                ? trans.__('GPU energy of the run (simulated GPUs)')
                : trans.__('GPU energy of the run')
            }
          >
            {run.gpus_simulated
              ? trans.__('%1 simulated', formatEnergy(run.energy_watt_hours))
              : formatEnergy(run.energy_watt_hours)}
          </span>
        ) : null}
        {jobRunId && onOpenLogs ? (
          <button
            className="jp-Air-run-logs jp-Air-job-logs jp-mod-styled"
            onClick={() => onOpenLogs(jobRunId, run.attempt ?? -1, 0)}
            title={trans.__('Open the log of job %1, which runs this', jobRunId)}
          >
            {trans.__('Logs')}
          </button>
        ) : null}
        {run.experiment_name && run.experiment_name !== defaultExperiment ? (
          <span
            className="jp-Air-run-experiment"
            title={trans.__('Experiment: %1', run.experiment_name)}
          >
            {run.experiment_name}
          </span>
        ) : null}
      </div>
      {metrics.length > 0 ? (
        <div className="jp-Air-run-metrics">
          {metrics.map(([key, value]) => (
            <span key={key} className="jp-Air-metric" title={key}>
              <span className="jp-Air-metric-key">{key}</span> {formatMetric(value)}
            </span>
          ))}
        </div>
      ) : null}
      {run.error ? (
        <div className="jp-Air-run-error" title={run.error}>
          {run.error}
        </div>
      ) : null}
      {children.length > 0 ? <RunList {...props} runs={children} /> : null}
    </li>
  );
}
