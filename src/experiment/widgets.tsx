/**
 * The Lumino wrapper of the Experiment panel in the left sidebar; it confirms before cancelling a job or
 * running a schedule now, and shows why a schedule action was refused.
 */
import { Clipboard, Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { copyIcon, refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { ModelView } from '../modelView';
import { ExperimentPanel } from './components/ExperimentPanel';
import type { ExperimentModel } from './model';
import { EXPERIMENT_PANEL_ID, IJob, IRunNowAnswer, ISchedule, ScheduleAction } from './tokens';

export class ExperimentPanelWidget extends ModelView<ExperimentModel> {
  constructor(options: ExperimentPanelWidget.IOptions) {
    super(options.model);
    this._options = options;
    this.id = EXPERIMENT_PANEL_ID;
    this.addClass('jp-Air-panel');
  }

  protected render(): JSX.Element {
    const { trans, onOpenLogs } = this._options;
    return (
      <ExperimentPanel
        model={this.model}
        revision={this.revision}
        onOpenUrl={url => window.open(url, '_blank', 'noopener')}
        onOpenLogs={onOpenLogs}
        onCancelJob={job => void this._confirmCancel(job)}
        onScheduleAction={(schedule, action) => void this._actOnSchedule(schedule, action)}
        onCopy={text => Clipboard.copyToSystem(text)}
        trans={trans}
        refreshIcon={<refreshIcon.react tag="span" className="jp-Air-refresh-icon" />}
        copyIcon={<copyIcon.react tag="span" className="jp-Air-copy-icon" />}
      />
    );
  }

  private async _confirmCancel(job: IJob): Promise<void> {
    const { trans } = this._options;
    const answer = await showDialog({
      title: trans.__('Cancel job %1?', job.job_run_id),
      body: trans.__(
        'Its processes are stopped (SIGTERM, then SIGKILL after 5 s); the job ends CANCELED and its MLflow run KILLED.'
      ),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Keep running') }),
        Dialog.warnButton({ label: trans.__('Cancel job') })
      ]
    });
    if (answer.button.accept) {
      await this.model.cancelJob(job.job_run_id);
    }
  }

  private async _actOnSchedule(schedule: ISchedule, action: ScheduleAction): Promise<void> {
    const { trans } = this._options;
    if (action === 'run-now') {
      const answer = await showDialog({
        title: trans.__('Run schedule %1 now?', schedule.name),
        body: trans.__(
          'Its workload starts once now as a new job, a new MLflow run in experiment %1; its timetable is unchanged.',
          schedule.experiment_name
        ),
        buttons: [Dialog.cancelButton(), Dialog.okButton({ label: trans.__('Run now') })]
      });
      if (!answer.button.accept) {
        return;
      }
    }
    let why: string | null;
    try {
      const fired = await this.model.actOnSchedule<Partial<IRunNowAnswer>>(schedule.name, action);
      why = fired.fire && !fired.job ? (fired.fire.reason ?? fired.fire.outcome) : null;
    } catch (error) {
      why = error instanceof Error ? error.message : String(error);
    }
    if (why !== null) {
      await showErrorMessage(trans.__('Schedule %1', schedule.name), why);
    }
  }

  private _options: ExperimentPanelWidget.IOptions;
}

export namespace ExperimentPanelWidget {
  export interface IOptions {
    model: ExperimentModel;
    onOpenLogs: (jobRunId: string, attempt: number, node: number) => void;
    trans: TranslationBundle;
  }
}
