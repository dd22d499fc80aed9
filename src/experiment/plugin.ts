/** The Experiment panel (left sidebar) with the Logs view, following the current notebook. */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { INotebookTracker, Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator, TranslationBundle } from '@jupyterlab/translation';

import { experimentIcon } from '../icon';
import { addSidebarPanel, followSettings } from '../panel';
import { requestAPI } from '../request';
// The panel and its model are made during activation.
// Runs done while away are watched from the start, panel open or not.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { DoneRuns } from './doneRuns';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { ExperimentModel } from './model';

import { JobAccess } from './jobAccess';
// The panel's state is made during activation, for the panel and Run workload…'s notifications.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { PanelState } from './panelState';
import { Sharing } from './sharing';
import {
  DEFAULT_EXPERIMENT_SETTINGS,
  EXPERIMENT_PLUGIN_ID,
  ExperimentCommandIDs,
  logWidgetId
} from './tokens';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { ExperimentPanelWidget } from './widgets';
// The command and its context menu item are added during activation.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { addRunWorkloadCommand } from './workload';

const LOG_ARGS = {
  args: {
    type: 'object' as const,
    properties: {
      jobRunId: { type: 'string' as const, description: 'The job run id, e.g. job-3f9a1c2b7d4e' },
      attempt: { type: 'number' as const, description: 'The attempt (0, 1, ...; -1: the latest)' },
      node: { type: 'number' as const, description: 'The node (0, 1, ...)' }
    },
    required: ['jobRunId']
  }
};

/**
 * Point the model at the current notebook and tell it while cells of that notebook run (a cell may
 * start a run), so it polls only then or while a run or a job is active.
 */
function followNotebooks(tracker: INotebookTracker, model: ExperimentModel): void {
  const pending = new WeakMap<Notebook, number>();
  let followed: NotebookPanel | null = null;
  const busy = () => (followed ? (pending.get(followed.content) ?? 0) > 0 : false);
  const onPath = () => {
    model.notebookPath = followed?.context.localPath ?? null;
  };
  const follow = (panel: NotebookPanel | null) => {
    followed?.context.pathChanged.disconnect(onPath);
    followed = panel;
    followed?.context.pathChanged.connect(onPath);
    onPath();
    model.setKernelBusy(busy());
  };
  const count = (notebook: Notebook, delta: number) => {
    pending.set(notebook, Math.max(0, (pending.get(notebook) ?? 0) + delta));
    model.setKernelBusy(busy());
  };
  NotebookActions.executionScheduled.connect((_, { notebook }) => count(notebook, 1));
  NotebookActions.executed.connect((_, { notebook }) => count(notebook, -1));
  tracker.widgetAdded.connect((_, panel) => {
    // A restarted or dead kernel never reports the cells it had queued.
    panel.sessionContext.statusChanged.connect((_, status) => {
      if (status === 'restarting' || status === 'dead' || status === 'unknown') {
        pending.delete(panel.content);
        model.setKernelBusy(busy());
      }
    });
  });
  tracker.currentChanged.connect((_, panel) => follow(panel));
  follow(tracker.currentWidget);
}

function addLogsCommand(
  app: JupyterFrontEnd,
  model: ExperimentModel,
  trans: TranslationBundle
): void {
  app.commands.addCommand(ExperimentCommandIDs.openJobLogs, {
    label: trans.__('Open job logs'),
    caption: trans.__('Follow the output of one node of one attempt of an air job'),
    describedBy: LOG_ARGS,
    execute: async args => {
      const jobRunId = String(args.jobRunId);
      const attempt = typeof args.attempt === 'number' ? args.attempt : -1;
      const node = typeof args.node === 'number' ? args.node : 0;
      const id = logWidgetId(jobRunId, attempt, node);
      const open = [...app.shell.widgets('main')].find(widget => widget.id === id);
      if (open) {
        app.shell.activateById(id);
        return;
      }
      const [{ LogModel }, { createLogWidget }] = await Promise.all([
        import('./logModel'),
        import('./logWidget')
      ]);
      const { inactivityTimeoutSeconds } = model.settings;
      const log = new LogModel({ jobRunId, attempt, node, inactivityTimeoutSeconds });
      const widget = createLogWidget({ model: log, trans });
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
    }
  });
}

/**
 * Watch for the runs of this JupyterLab's notebooks (their sessions) and of the jobs started from its
 * Experiment panel, following the panel's settings `doneNotificationMinutes` and `browserNotifications`;
 * it watches for as long as the page is open.
 */
async function watchDoneRuns(
  app: JupyterFrontEnd,
  model: ExperimentModel,
  registry: ISettingRegistry | null,
  trans: TranslationBundle
): Promise<DoneRuns> {
  const startedHere = new Set<string>();
  model.changed.connect(() => model.revealedJob && startedHere.add(model.revealedJob));
  const openHere = (path: string) =>
    [...app.serviceManager.sessions.running()].some(
      s => path === s.path || path.endsWith(`/${s.path}`)
    );
  const done = new DoneRuns({
    notifications: Notification,
    isOurs: run =>
      (run.job_run_id !== null && startedHere.has(run.job_run_id)) ||
      (run.notebook_path !== null && openHere(run.notebook_path)),
    trans
  });
  await followSettings(registry, EXPERIMENT_PLUGIN_ID, settings => {
    const minutes = settings?.get('doneNotificationMinutes').composite;
    done.thresholdMinutes = typeof minutes === 'number' && minutes >= 0 ? minutes : 2;
    done.browserNotifications = settings?.get('browserNotifications').composite === true;
    const browser = globalThis.Notification;
    if (done.browserNotifications && browser?.permission === 'default') {
      void browser.requestPermission();
    }
  });
  return done;
}

export const experimentPlugin: JupyterFrontEndPlugin<void> = {
  id: EXPERIMENT_PLUGIN_ID,
  description:
    "The notebook's MLflow runs and the air jobs in the left sidebar, their logs, and Run workload… on YAML files.",
  autoStart: true,
  optional: [
    INotebookTracker,
    ILayoutRestorer,
    ICommandPalette,
    ISettingRegistry,
    ITranslator,
    IDefaultFileBrowser
  ],
  activate: async (
    app: JupyterFrontEnd,
    tracker: INotebookTracker | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    translator: ITranslator | null,
    fileBrowser: IDefaultFileBrowser | null
  ) => {
    const trans = (translator ?? nullTranslator).load('jupyter_air');
    const model = new ExperimentModel();
    const state = new PanelState();
    state.follow(model);
    addLogsCommand(app, model, trans);
    addRunWorkloadCommand(app, model, state, fileBrowser, trans);
    const widget = new ExperimentPanelWidget({
      model,
      state,
      sharing: new Sharing(requestAPI),
      access: new JobAccess(requestAPI),
      onOpenLogs: (jobRunId, attempt, node) =>
        void app.commands.execute(ExperimentCommandIDs.openJobLogs, { jobRunId, attempt, node }),
      trans
    });
    if (tracker) {
      followNotebooks(tracker, model);
    }
    await watchDoneRuns(app, model, settingRegistry, trans);
    await addSidebarPanel({
      app,
      widget,
      model,
      area: 'left',
      rank: 600,
      icon: experimentIcon,
      label: trans.__('Experiment'),
      caption: trans.__(
        "Experiment: the current notebook's MLflow runs, and the air jobs (workloads) with their logs"
      ),
      open: {
        id: ExperimentCommandIDs.openExperimentPanel,
        label: trans.__('Open Experiment panel (MLflow runs, air jobs)'),
        caption: trans.__(
          "Show the current notebook's MLflow runs, and the air jobs (workloads) with their logs"
        )
      },
      refresh: {
        id: ExperimentCommandIDs.refreshExperimentPanel,
        label: trans.__('Refresh Experiment panel'),
        caption: trans.__('Read the runs and jobs now and resume polling')
      },
      category: trans.__('Experiment'),
      palette,
      restorer,
      settings: {
        registry: settingRegistry,
        pluginId: EXPERIMENT_PLUGIN_ID,
        defaults: DEFAULT_EXPERIMENT_SETTINGS
      }
    });
  }
};
