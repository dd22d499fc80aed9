/** The Lumino wrapper of the Experiment panel in the left sidebar; it confirms before cancelling a job. */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget, refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { ExperimentPanel } from './components/ExperimentPanel';
import type { ExperimentModel } from './model';
import { EXPERIMENT_PANEL_ID, IJob } from './tokens';

export class ExperimentPanelWidget extends ReactWidget {
  constructor(options: ExperimentPanelWidget.IOptions) {
    super();
    this.model = options.model;
    this._options = options;
    this.id = EXPERIMENT_PANEL_ID;
    this.addClass('jp-Air-panel');
    this.model.changed.connect(this._onModelChanged, this);
  }

  readonly model: ExperimentModel;

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.model.changed.disconnect(this._onModelChanged, this);
    super.dispose();
  }

  protected render(): JSX.Element {
    const { trans, onOpenLogs } = this._options;
    return (
      <ExperimentPanel
        model={this.model}
        revision={this._revision}
        onOpenUrl={url => window.open(url, '_blank', 'noopener')}
        onOpenLogs={onOpenLogs}
        onCancelJob={job => void this._confirmCancel(job)}
        trans={trans}
        refreshIcon={<refreshIcon.react tag="span" className="jp-Air-refresh-icon" />}
      />
    );
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.model.setVisible(true);
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.model.setVisible(false);
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

  private _onModelChanged(): void {
    this._revision += 1;
    this.update();
  }

  private _options: ExperimentPanelWidget.IOptions;
  private _revision = 0;
}

export namespace ExperimentPanelWidget {
  export interface IOptions {
    model: ExperimentModel;
    onOpenLogs: (jobRunId: string, attempt: number, node: number) => void;
    trans: TranslationBundle;
  }
}
