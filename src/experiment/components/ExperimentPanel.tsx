/** The Experiment panel: the followed notebook's runs, the `air` jobs and schedules, each a section that collapses. */
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';

import { ErrorBanner, PausedBanner } from '../../components/Banners';
import type { ExperimentModel, ExperimentState } from '../model';
import type { PanelState } from '../panelState';
import { orderRuns, RunOrder } from '../runs';
import { sectionCounts, SectionId } from '../sections';
import type { IJob, ISchedule, ScheduleAction } from '../tokens';
import { EmptyJobs, EmptyRuns, EmptySchedules } from './EmptyStates';
import { JobList } from './JobList';
import { RunList } from './RunList';
import { RunTools } from './RunTools';
import { ScheduleList } from './ScheduleList';
import { Section } from './Section';

export interface IExperimentPanelProps {
  model: ExperimentModel;
  /** Which sections are collapsed, what to bring into view. */
  state: PanelState;
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
  const { model, state, onOpenUrl, onOpenLogs, onCancelJob, onScheduleAction, onCopy, trans } =
    props;
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
  const counts = sectionCounts(model, path !== null);
  const shown = state.sectionReveal;
  const sectionProps = (id: SectionId) => ({
    counted: counts[id],
    collapsed: state.isCollapsed(id),
    onToggle: () => state.toggle(id),
    scrollTick: shown?.section === id ? shown.tick : 0,
    trans
  });
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

      <Section
        id="runs"
        className="jp-Air-runs-section"
        title={trans.__('Runs')}
        {...sectionProps('runs')}
        tools={
          <RunTools
            order={order}
            onOrder={setOrder}
            chosen={chosen.length}
            compareUrl={compareUrl}
            onOpenUrl={onOpenUrl}
            trans={trans}
          />
        }
      >
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
      </Section>

      <Section
        id="workloads"
        className="jp-Air-jobs-section"
        title={trans.__('Workloads')}
        {...sectionProps('workloads')}
      >
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
            revealed={state.revealedJob}
            revealTick={state.jobRevealTick}
          />
        ) : (
          <EmptyJobs trans={trans} />
        )}
      </Section>

      <Section
        id="schedules"
        className="jp-Air-schedules-section"
        title={trans.__('Schedules')}
        {...sectionProps('schedules')}
      >
        {model.schedules.length > 0 ? (
          <ScheduleList
            schedules={model.schedules}
            driver={model.scheduleDriver}
            onAct={onScheduleAction}
            trans={trans}
          />
        ) : (
          <EmptySchedules trans={trans} />
        )}
      </Section>
    </div>
  );
}
