/**
 * The Lumino wrapper of the Experiment panel in the left sidebar; it confirms before cancelling a job or
 * running a schedule now, shows why a schedule action was refused, asks whom to share an experiment with, and
 * shows who may use a job.
 */
import {
  Clipboard,
  Dialog,
  Notification,
  showDialog,
  showErrorMessage
} from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { copyIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

import { ModelView } from '../modelView';
import { showJobAccess } from './accessDialog';
import { ExperimentPanel } from './components/ExperimentPanel';
import type { JobAccess } from './jobAccess';
import type { ExperimentModel } from './model';
import type { PanelState } from './panelState';
import { SHARE_LEVELS, Sharing, ShareLevel } from './sharing';
import { EXPERIMENT_PANEL_ID, IJob, IRunNowAnswer, ISchedule, ScheduleAction } from './tokens';

export class ExperimentPanelWidget extends ModelView<ExperimentModel> {
  constructor(options: ExperimentPanelWidget.IOptions) {
    super(options.model);
    this._options = options;
    this.follow(options.state.changed);
    this.id = EXPERIMENT_PANEL_ID;
    this.addClass('jp-Air-panel');
    void options.sharing.info().then(info => {
      this._shareable = info.available;
      this.update();
    });
  }

  protected render(): JSX.Element {
    const { trans, onOpenLogs } = this._options;
    return (
      <ExperimentPanel
        model={this.model}
        state={this._options.state}
        revision={this.revision}
        onOpenUrl={url => window.open(url, '_blank', 'noopener')}
        onOpenLogs={onOpenLogs}
        onCancelJob={job => void this._confirmCancel(job)}
        onJobPermissions={job => void showJobAccess(this._options.access, job.job_run_id, trans)}
        onScheduleAction={(schedule, action) => void this._actOnSchedule(schedule, action)}
        onCopy={text => Clipboard.copyToSystem(text)}
        onShare={this._shareable ? experiment => void this._share(experiment) : undefined}
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

  private async _share(experiment: string): Promise<void> {
    const { trans, sharing } = this._options;
    const form = new ShareForm(trans);
    const answer = await showDialog({
      title: trans.__('Share %1', experiment),
      body: form,
      focusNodeSelector: 'input',
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: trans.__('Share') })]
    });
    const { user, level } = form.getValue();
    if (!answer.button.accept || !user) {
      return;
    }
    try {
      const grant = await sharing.share(experiment, user, level);
      const done =
        grant.level === null
          ? trans.__('%1 no longer has a grant on %2', grant.user, experiment)
          : trans.__('%1 has %2 on %3', grant.user, grant.level, experiment);
      Notification.success(done, { autoClose: 5000 });
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      await showErrorMessage(trans.__('Sharing %1 failed', experiment), why);
    }
  }

  private _options: ExperimentPanelWidget.IOptions;
  private _shareable = false;
}

/** The Share dialog's body: the colleague's MLflow user name and what they may do. */
class ShareForm
  extends Widget
  implements Dialog.IBodyWidget<{ user: string; level: ShareLevel | null }>
{
  constructor(trans: TranslationBundle) {
    super();
    this.addClass('jp-Air-share-form');
    const words: Record<ShareLevel, string> = {
      READ: trans.__('Can read (READ)'),
      EDIT: trans.__('Can read and log runs (EDIT)'),
      MANAGE: trans.__('Can manage and share (MANAGE)')
    };
    this._user.className = 'jp-mod-styled';
    this._user.placeholder = trans.__('MLflow user name');
    this._user.setAttribute('aria-label', trans.__('MLflow user name'));
    this._level.className = 'jp-Air-share-level';
    this._level.setAttribute('aria-label', trans.__('Permission'));
    for (const level of SHARE_LEVELS) {
      this._level.add(new Option(words[level], level));
    }
    this._level.add(new Option(trans.__('No access (take the grant back)'), ''));
    this.node.append(this._user, this._level);
  }

  getValue(): { user: string; level: ShareLevel | null } {
    return {
      user: this._user.value.trim(),
      level: (this._level.value || null) as ShareLevel | null
    };
  }

  private _user = document.createElement('input');
  private _level = document.createElement('select');
}

export namespace ExperimentPanelWidget {
  export interface IOptions {
    model: ExperimentModel;
    /** Its collapsed sections and what to bring into view. */
    state: PanelState;
    sharing: Sharing;
    access: JobAccess;
    onOpenLogs: (jobRunId: string, attempt: number, node: number) => void;
    trans: TranslationBundle;
  }
}
