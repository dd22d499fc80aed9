/**
 * "Run workload…": submit a YAML file of the file browser as an `air` job, which a notification names with
 * its Logs and a way to the Experiment panel; a workload with a `schedule:` becomes a schedule, announced too.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import type { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import type { TranslationBundle } from '@jupyterlab/translation';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import * as React from 'react';

import { RequestError } from '../request';
import { WorkloadErrors } from './components/WorkloadErrors';
import type { ExperimentModel } from './model';
import type { PanelState } from './panelState';
import { ExperimentCommandIDs, SubmitAnswer } from './tokens';
import { submittedNotice } from './workloadNotice';

/** The file browser's items the command is offered on (JupyterLab's `yaml` file type: .yaml, .yml). */
const YAML_ITEMS = '.jp-DirListing-item[data-file-type="yaml"]';
const YAML_PATH = /\.ya?ml$/i;

/** How long a notification of a submitted file stays on screen (then in the notification centre). */
const NOTICE_MS = 15_000;

const RUN_ARGS = {
  args: {
    type: 'object' as const,
    properties: {
      path: {
        type: 'string' as const,
        description:
          "The workload file, relative to the server's root, e.g. experiments/train.yaml " +
          '(default: the file selected in the file browser)'
      }
    }
  }
};

/** Add the command, and offer it on the YAML files of the file browser's context menu. */
export function addRunWorkloadCommand(
  app: JupyterFrontEnd,
  model: ExperimentModel,
  state: PanelState,
  browser: IDefaultFileBrowser | null,
  trans: TranslationBundle
): void {
  const pathOf = (args: ReadonlyPartialJSONObject): string | null => {
    if (typeof args.path === 'string') {
      return args.path;
    }
    const items = browser ? [...browser.selectedItems()] : [];
    return items.length === 1 && items[0].type !== 'directory' ? items[0].path : null;
  };
  app.commands.addCommand(ExperimentCommandIDs.runWorkload, {
    label: trans.__('Run workload…'),
    caption: trans.__(
      'Start this YAML workload as an air job (as `air run -f` does); a notification opens its logs'
    ),
    describedBy: RUN_ARGS,
    isEnabled: args => YAML_PATH.test(pathOf(args) ?? ''),
    execute: async args => {
      const path = pathOf(args);
      if (path !== null) {
        await runWorkload(app, model, state, path, trans);
      }
    }
  });
  app.contextMenu.addItem({ command: ExperimentCommandIDs.runWorkload, selector: YAML_ITEMS });
}

/**
 * Submit `path`; on success a notification names the new job (or the schedule made), with Logs and Open in
 * panel, whether the panel shows or not; otherwise a dialog lists every error of the file.
 */
async function runWorkload(
  app: JupyterFrontEnd,
  model: ExperimentModel,
  state: PanelState,
  path: string,
  trans: TranslationBundle
): Promise<void> {
  let answer: SubmitAnswer;
  try {
    answer = await model.submitWorkload(path);
  } catch (error) {
    const failure =
      error instanceof RequestError ? error : new RequestError(String(error), 'server', null);
    await showDialog({
      title: trans.__('Workload not started'),
      body: (
        <WorkloadErrors
          path={path}
          message={failure.message}
          errors={failure.errors}
          trans={trans}
        />
      ),
      buttons: [Dialog.okButton({ label: trans.__('Close') })]
    });
    return;
  }
  const showPanel = (reveal: () => void) => {
    reveal();
    void app.commands.execute(ExperimentCommandIDs.openExperimentPanel);
  };
  const { message, actions } = submittedNotice(
    answer,
    path,
    {
      openLogs: jobRunId =>
        void app.commands.execute(ExperimentCommandIDs.openJobLogs, {
          jobRunId,
          attempt: -1,
          node: 0
        }),
      showJob: jobRunId => showPanel(() => state.revealJob(jobRunId)),
      showSchedules: () => showPanel(() => state.revealSection('schedules'))
    },
    trans
  );
  Notification.success(message, { autoClose: NOTICE_MS, actions });
}
