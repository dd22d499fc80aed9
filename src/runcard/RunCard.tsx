/** The run card's view: status, links, metrics with sparklines, GPU energy, ranks, output and the Stop button. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { formatElapsed, formatEnergy } from '../format';
import type { ICardData, ICardFailure, ICardMetric, ICardRow, StopState } from './tokens';

export namespace RunCard {
  export interface IProps {
    data: ICardData;
    /** Now, in epoch milliseconds: the elapsed time of a running card counts from `started_ms`. */
    nowMs: number;
    stop: StopState;
    onStop: () => void;
    /** Put a text (the job id) on the clipboard. */
    onCopy: (text: string) => void;
    trans: TranslationBundle;
  }
}

/** The card; names are rendered as text, never as HTML. */
export function RunCard(props: RunCard.IProps): JSX.Element {
  const { data, trans } = props;
  const status = data.status.toLowerCase();
  const endMs = data.ended_ms ?? props.nowMs;
  return (
    <div className={`jp-Air-runCard jp-Air-runCard-${status}`}>
      <div className="jp-Air-runCard-header">
        {trans.__('MLflow experiment')}{' '}
        <RunLink text={data.run.experiment_name} url={data.run.experiment_url} /> ·{' '}
        {trans.__('run')} <RunLink text={data.run.name} url={data.run.url} /> ·{' '}
        <span className="jp-Air-runCard-status">{statusLabel(data.status, trans)}</span> ·{' '}
        <span className="jp-Air-runCard-elapsed">
          {formatElapsed(Math.max(0, endMs - data.started_ms))}
        </span>{' '}
        · {placement(data, trans)}
        {data.run.url ? null : (
          <i className="jp-Air-runCard-hint">
            {' '}
            {trans.__('(no MLflow UI known for this store; open it with `mlflow ui`)')}
          </i>
        )}
        <StopButton {...props} />
      </div>
      {data.job_run_id ? (
        <JobLine jobRunId={data.job_run_id} onCopy={props.onCopy} trans={trans} />
      ) : null}
      {data.failure ? <FailureLine failure={data.failure} trans={trans} /> : null}
      {!data.failure && data.reason ? (
        <div className="jp-Air-runCard-reason">{data.reason}</div>
      ) : null}
      {data.energy ? (
        <div className="jp-Air-runCard-energy">
          {data.energy.simulated
            ? trans.__('GPU energy %1 (simulated GPUs)', formatEnergy(data.energy.watt_hours))
            : trans.__('GPU energy %1', formatEnergy(data.energy.watt_hours))}
        </div>
      ) : null}
      {props.stop.phase === 'error' ? (
        <div className="jp-Air-runCard-stopError">{props.stop.message}</div>
      ) : null}
      {data.metrics.length > 0 ? <Metrics metrics={data.metrics} trans={trans} /> : null}
      {data.rows.length > 0 ? <Ranks rows={data.rows} trans={trans} /> : null}
      {data.output ? <Output data={data} trans={trans} /> : null}
    </div>
  );
}

function RunLink(props: { text: string; url: string | null }): JSX.Element {
  if (!props.url) {
    return <b>{props.text}</b>;
  }
  return (
    <a href={props.url} target="_blank" rel="noopener">
      {props.text}
    </a>
  );
}

function statusLabel(status: ICardData['status'], trans: TranslationBundle): string {
  switch (status) {
    case 'RUNNING':
      return trans.__('running');
    case 'FINISHED':
      return trans.__('finished');
    case 'FAILED':
      return trans.__('failed');
    case 'KILLED':
      return trans.__('killed');
  }
}

function placement(data: ICardData, trans: TranslationBundle): string {
  if (data.kind === 'kernel') {
    return trans.__('in this kernel');
  }
  const ranks = trans._n('%1 rank', '%1 ranks', data.world_size);
  const nodes = trans._n('%1 node', '%1 nodes', data.nodes);
  const devices =
    data.gpus.length > 0
      ? trans._n('GPU %2', 'GPUs %2', data.gpus.length, data.gpus.join(', '))
      : trans.__('CPU');
  return trans.__('%1 on %2 · %3', ranks, nodes, devices);
}

function StopButton(props: RunCard.IProps): JSX.Element | null {
  const { data, stop, trans } = props;
  if (data.status !== 'RUNNING' || !data.stoppable) {
    return null;
  }
  const stopping = stop.phase === 'stopping';
  return (
    <button
      type="button"
      className="jp-Air-runCard-stop jp-mod-styled jp-mod-warn"
      disabled={stopping}
      title={trans.__('Stop every process of this call; the run ends KILLED')}
      onClick={props.onStop}
    >
      {stopping ? trans.__('Stopping…') : trans.__('Stop')}
    </button>
  );
}

/** A remote call's job: its id with Copy, and how to follow it again from any kernel. */
function JobLine(props: {
  jobRunId: string;
  onCopy: (text: string) => void;
  trans: TranslationBundle;
}): JSX.Element {
  const { jobRunId, trans } = props;
  return (
    <div className="jp-Air-runCard-job">
      {trans.__('job')} <code>{jobRunId}</code>{' '}
      <button
        type="button"
        className="jp-Air-copy"
        title={trans.__('Copy the job id (for %air_attach, air logs, air cancel)')}
        aria-label={trans.__('Copy %1', jobRunId)}
        onClick={() => props.onCopy(jobRunId)}
      >
        {trans.__('Copy')}
      </button>{' '}
      · {trans.__('follow it again from any kernel:')} <code>{`%air_attach ${jobRunId}`}</code>
    </div>
  );
}

function FailureLine(props: { failure: ICardFailure; trans: TranslationBundle }): JSX.Element {
  const { failure, trans } = props;
  const where: string[] = [];
  if (failure.node !== null) {
    where.push(trans.__('node %1', failure.node));
  }
  if (failure.rank !== null) {
    where.push(trans.__('rank %1', failure.rank));
  }
  if (failure.exitcode !== null) {
    where.push(trans.__('exit code %1', failure.exitcode));
  }
  const prefix = where.length > 0 ? `${where.join(', ')}: ` : '';
  return (
    <div className="jp-Air-runCard-failure">
      {trans.__('Failed on %1', `${prefix}${failure.message}`)}
    </div>
  );
}

function Metrics(props: { metrics: ICardMetric[]; trans: TranslationBundle }): JSX.Element {
  const { trans } = props;
  return (
    <table className="jp-Air-runCard-table jp-Air-runCard-metrics">
      <thead>
        <tr>
          <th>{trans.__('metric')}</th>
          <th>{trans.__('value')}</th>
          <th>{trans.__('step')}</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {props.metrics.map(metric => (
          <tr key={metric.key} data-metric={metric.key}>
            <td>{metric.key}</td>
            <td className="jp-Air-runCard-value">{metric.value_text}</td>
            <td>{metric.step}</td>
            <td>
              {metric.spark ? (
                <svg
                  className="jp-Air-runCard-spark"
                  viewBox="0 0 100 20"
                  width={100}
                  height={20}
                  preserveAspectRatio="none"
                >
                  <path
                    d={metric.spark}
                    fill="none"
                    stroke="currentColor"
                    strokeWidth={1.5}
                    vectorEffect="non-scaling-stroke"
                  />
                </svg>
              ) : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function rankState(row: ICardRow, trans: TranslationBundle): string {
  const label = {
    running: trans.__('running'),
    finished: trans.__('finished'),
    failed: trans.__('failed'),
    stopped: trans.__('stopped')
  }[row.state];
  return row.exitcode === null ? label : trans.__('%1 (exit code %2)', label, row.exitcode);
}

function Ranks(props: { rows: ICardRow[]; trans: TranslationBundle }): JSX.Element {
  const { trans } = props;
  return (
    <table className="jp-Air-runCard-table jp-Air-runCard-ranks">
      <tbody>
        {props.rows.map(row => (
          <tr key={row.name}>
            <td>{row.name}</td>
            <td className={`jp-Air-runCard-rank-${row.state}`}>{rankState(row, trans)}</td>
            <td>
              <code>{row.line}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Output(props: { data: ICardData; trans: TranslationBundle }): JSX.Element {
  const { data, trans } = props;
  const title =
    data.dropped_lines > 0
      ? trans.__(
          "Output of every rank; %1 earlier line(s) only in the run's logs/ artifacts",
          data.dropped_lines
        )
      : trans.__('Output of every rank');
  return (
    <details className="jp-Air-runCard-output">
      <summary>{title}</summary>
      <pre>{data.output}</pre>
    </details>
  );
}
