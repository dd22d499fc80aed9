/** The Experiment panel: the followed notebook's runs, the `air` jobs and schedules, from the model's state. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBanner, PausedBanner } from '../../components/Banners';
import type { ExperimentModel, ExperimentState } from '../model';
import { orderRuns, RunOrder } from '../runs';
import type { IJob, ISchedule, ScheduleAction } from '../tokens';
import { JobList } from './JobList';
import { RunList } from './RunList';
import { ScheduleList } from './ScheduleList';

export interface IExperimentPanelProps {
  model: ExperimentModel;
  /** Bumped by the model on every change. */
  revision: number;
  onOpenUrl: (url: string) => void;
  onOpenLogs: (jobRunId: string, attempt: number, node: number) => void;
  onCancelJob: (job: IJob) => void;
  /** Show and change who may use a job. */
  onJobPermissions?: (job: IJob) => void;
  onScheduleAction: (schedule: ISchedule, action: ScheduleAction) => void;
  /** Put a text (a job id) on the clipboard. */
  onCopy: (text: string) => void;
  /** Share the notebook's experiment with a colleague; absent where the tracking server cannot. */
  onShare?: (experiment: string) => void;
  trans: TranslationBundle;
  refreshIcon?: React.ReactNode;
  copyIcon?: React.ReactNode;
}

function stateLabel(state: ExperimentState, trans: TranslationBundle): string {
  const labels: Record<ExperimentState, string> = {
    idle: trans.__('up to date'),
    loading: trans.__('loading'),
    live: trans.__('live'),
    paused: trans.__('paused'),
    unavailable: trans.__('server extension unavailable'),
    error: trans.__('error')
  };
  return labels[state];
}

/** Epoch milliseconds now, ticking every second while `running` (durations of running runs). */
function useNow(running: boolean): number {
  const [now, setNow] = React.useState(Date.now());
  React.useEffect(() => {
    if (!running) {
      return;
    }
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, [running]);
  return running ? now : Date.now();
}

export function ExperimentPanel(props: IExperimentPanelProps): JSX.Element {
  const { model, onOpenUrl, onOpenLogs, onCancelJob, onScheduleAction, onCopy, trans } = props;
  const { refreshIcon, copyIcon, onShare, onJobPermissions } = props;
  const [selected, setSelected] = React.useState<ReadonlySet<string>>(new Set());
  const [order, setOrder] = React.useState<RunOrder>('newest');
  const nowMs = useNow(model.active);
  const path = model.notebookPath;
  const name = path?.split('/').pop() ?? null;
  const runs = model.runs;
  const held = new Set(runs.map(run => run.run_id));
  const chosen = [...selected].filter(id => held.has(id));
  const compareUrl = chosen.length >= 2 ? model.compareUrl(chosen) : null;
  const error = model.error;
  const experiment = path !== null ? (model.runsPayload?.default_experiment ?? null) : null;
  const toggle = (runId: string) => {
    const next = new Set(selected);
    if (!next.delete(runId)) {
      next.add(runId);
    }
    setSelected(next);
  };

  return (
    <div className="jp-Air-panel-body jp-Air-experiment">
      <div className="jp-Air-header">
        <div className="jp-Air-header-main">
          <span className="jp-Air-node jp-Air-notebook" title={path ?? ''}>
            {name ?? trans.__('No notebook open')}
          </span>
          <span className={`jp-Air-state jp-Air-state-${model.state}`} data-state={model.state}>
            {stateLabel(model.state, trans)}
          </span>
          <button
            className="jp-Air-refresh jp-mod-styled"
            title={trans.__('Read the runs and jobs now (resumes polling)')}
            onClick={() => void model.refresh()}
          >
            {refreshIcon}
            <span>{trans.__('Refresh')}</span>
          </button>
        </div>
        {experiment && onShare ? (
          <div className="jp-Air-header-experiment">
            <span className="jp-Air-experiment-name" title={trans.__('Experiment: %1', experiment)}>
              {experiment}
            </span>
            <button
              className="jp-Air-share jp-mod-styled"
              title={trans.__('Give a colleague access to this experiment on the tracking server')}
              onClick={() => onShare(experiment)}
            >
              {trans.__('Share…')}
            </button>
          </div>
        ) : null}
      </div>
      {model.pausedAfterSeconds !== null ? (
        <PausedBanner timeoutSeconds={model.pausedAfterSeconds} trans={trans} />
      ) : null}
      {error ? (
        <ErrorBanner
          error={error}
          heading={trans.__('Reading runs and jobs failed')}
          retryInMs={model.paused ? null : model.retryInMs}
          trans={trans}
        />
      ) : null}

      <section className="jp-Air-section jp-Air-runs-section">
        <div className="jp-Air-section-title">
          <span>{trans.__('Runs')}</span>
          <select
            className="jp-Air-run-order"
            value={order}
            onChange={event => setOrder(event.target.value as RunOrder)}
            aria-label={trans.__('Order of the runs')}
            title={trans.__('Order of the runs listed here: newest, or most GPU energy, first')}
          >
            <option value="newest">{trans.__('Newest first')}</option>
            <option value="energy">{trans.__('Most energy first')}</option>
          </select>
          <button
            className="jp-Air-compare jp-mod-styled"
            disabled={compareUrl === null}
            title={
              chosen.length < 2
                ? trans.__('Select two or more runs to compare them in the MLflow UI')
                : trans.__('Compare the selected runs in the MLflow UI')
            }
            onClick={() => compareUrl && onOpenUrl(compareUrl)}
          >
            {chosen.length >= 2 ? trans.__('Compare (%1)', chosen.length) : trans.__('Compare')}
          </button>
        </div>
        {path !== null && runs.length > 0 ? (
          <RunList
            runs={orderRuns(model.topLevelRuns, order)}
            childrenOf={id => orderRuns(model.childrenOf(id), order)}
            selected={selected}
            onToggle={toggle}
            nowMs={nowMs}
            defaultExperiment={model.runsPayload?.default_experiment}
            onOpenLogs={onOpenLogs}
            trans={trans}
          />
        ) : (
          <EmptyRuns
            notebook={name}
            experiment={model.runsPayload?.default_experiment ?? null}
            trans={trans}
          />
        )}
        {model.hasMore ? (
          <button className="jp-Air-more jp-mod-styled" onClick={() => void model.loadMore()}>
            {trans.__('Older runs')}
          </button>
        ) : null}
      </section>

      <section className="jp-Air-section jp-Air-jobs-section">
        <div className="jp-Air-section-title">
          <span>{trans.__('Workloads')}</span>
        </div>
        {model.jobs.length > 0 ? (
          <JobList
            jobs={model.jobs}
            nowMs={nowMs}
            onOpenLogs={onOpenLogs}
            onCancel={onCancelJob}
            onPermissions={onJobPermissions}
            onCopy={onCopy}
            trans={trans}
            copyIcon={copyIcon}
            revealed={model.revealedJob}
          />
        ) : (
          <div className="jp-Air-empty-reason">
            {trans.__('No air jobs yet. Start one from a terminal:')} <code>{CODE.airRun}</code>{' '}
            {trans.__('or right-click a YAML file in the file browser: Run workload…')}
          </div>
        )}
      </section>

      <section className="jp-Air-section jp-Air-schedules-section">
        <div className="jp-Air-section-title">
          <span>{trans.__('Schedules')}</span>
        </div>
        {model.schedules.length > 0 ? (
          <ScheduleList schedules={model.schedules} onAct={onScheduleAction} trans={trans} />
        ) : (
          <div className="jp-Air-empty-reason">
            {trans.__(
              'No schedules. A workload file with a %1 block creates one with',
              CODE.schedule
            )}{' '}
            <code>{CODE.airRun}</code>
          </div>
        )}
      </section>
    </div>
  );
}

/** Code a person types, shown as code and never translated. */
const CODE = {
  distributed: 'train.distributed(…)',
  decorator: '@distributed',
  cellMagic: '%%air_distributed',
  runMagic: '%%air_run',
  airRun: 'air run -f workload.yaml',
  schedule: 'schedule:'
};

function EmptyRuns(props: {
  notebook: string | null;
  experiment: string | null;
  trans: TranslationBundle;
}): JSX.Element {
  const { notebook, experiment, trans } = props;
  return (
    <div className="jp-Air-empty jp-Air-runs-empty">
      <div className="jp-Air-empty-title">
        {notebook === null
          ? trans.__('Open a notebook to see its runs')
          : trans.__('No runs from this notebook yet')}
      </div>
      <div className="jp-Air-empty-reason">{trans.__('Its runs show here when it')}</div>
      <ul className="jp-Air-empty-how">
        <li>
          {trans.__('calls a function decorated with %1:', CODE.decorator)}{' '}
          <code>{CODE.distributed}</code>
        </li>
        <li>
          {trans.__('runs a cell with')} <code>{CODE.cellMagic}</code> {trans.__('or')}{' '}
          <code>{CODE.runMagic}</code>
        </li>
        {experiment !== null ? (
          <li>
            {trans.__('or logs runs to its experiment')} <code>{experiment}</code>
          </li>
        ) : null}
      </ul>
      <div className="jp-Air-empty-reason">
        {trans.__('Jobs started with')} <code>{CODE.airRun}</code>{' '}
        {trans.__('show under Workloads.')}
      </div>
    </div>
  );
}
