/** Plugins: the Experiment panel (left sidebar) with the Logs view, and the GPU status bar readout. */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, Notebook, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator, nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';

import { trackActivity } from '../activity';
import { experimentIcon } from '../icon';
import type { GpuModel } from '../model';
// The status bar item, the panel and its model are made during activation.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { GpuStatusItem } from '../statusbar';
import { CommandIDs, IGpuModel } from '../tokens';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { ExperimentModel } from './model';
import {
  DEFAULT_EXPERIMENT_SETTINGS,
  EXPERIMENT_PLUGIN_ID,
  ExperimentCommandIDs,
  IExperimentSettings,
  logWidgetId,
  STATUS_BAR_PLUGIN_ID
} from './tokens';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { ExperimentPanelWidget } from './widgets';

const NO_ARGS = { args: { type: 'object' as const, properties: {} } };

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

function readSettings(settings: ISettingRegistry.ISettings): IExperimentSettings {
  const get = (key: keyof IExperimentSettings) => {
    const value = settings.get(key).composite;
    return typeof value === 'number' && value > 0 ? value : DEFAULT_EXPERIMENT_SETTINGS[key];
  };
  return {
    pollIntervalSeconds: get('pollIntervalSeconds'),
    inactivityTimeoutSeconds: get('inactivityTimeoutSeconds')
  };
}

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

function addLogsCommand(app: JupyterFrontEnd, trans: TranslationBundle): void {
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
      const widget = createLogWidget({ model: new LogModel({ jobRunId, attempt, node }), trans });
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
    }
  });
}

export const experimentPlugin: JupyterFrontEndPlugin<void> = {
  id: EXPERIMENT_PLUGIN_ID,
  description: "The notebook's MLflow runs and the air jobs in the left sidebar, and their logs.",
  autoStart: true,
  optional: [INotebookTracker, ILayoutRestorer, ICommandPalette, ISettingRegistry, ITranslator],
  activate: async (
    app: JupyterFrontEnd,
    tracker: INotebookTracker | null,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('jupyter_air');
    const model = new ExperimentModel();
    addLogsCommand(app, trans);
    const widget = new ExperimentPanelWidget({
      model,
      onOpenLogs: (jobRunId, attempt, node) =>
        void app.commands.execute(ExperimentCommandIDs.openJobLogs, { jobRunId, attempt, node }),
      trans
    });
    widget.title.icon = experimentIcon;
    widget.title.caption = trans.__('Experiment: runs and workloads');
    trackActivity(document, () => model.notifyActivity());
    if (tracker) {
      followNotebooks(tracker, model);
    }

    app.commands.addCommand(ExperimentCommandIDs.openExperimentPanel, {
      label: trans.__('Open Experiment panel'),
      caption: trans.__("Show the current notebook's runs and the air jobs"),
      icon: experimentIcon,
      describedBy: NO_ARGS,
      execute: () => {
        if (!widget.isAttached) {
          app.shell.add(widget, 'left', { rank: 600 });
        }
        app.shell.activateById(widget.id);
      }
    });
    app.commands.addCommand(ExperimentCommandIDs.refreshExperimentPanel, {
      label: trans.__('Refresh Experiment panel'),
      caption: trans.__('Read the runs and jobs now and resume polling'),
      describedBy: NO_ARGS,
      execute: () => model.refresh()
    });
    const category = trans.__('Experiment');
    palette?.addItem({ command: ExperimentCommandIDs.openExperimentPanel, category });
    palette?.addItem({ command: ExperimentCommandIDs.refreshExperimentPanel, category });

    app.shell.add(widget, 'left', { rank: 600 });
    restorer?.add(widget, widget.id);

    if (settingRegistry) {
      try {
        const settings = await settingRegistry.load(EXPERIMENT_PLUGIN_ID);
        model.settings = readSettings(settings);
        settings.changed.connect(() => {
          model.settings = readSettings(settings);
        });
      } catch (reason) {
        console.error(`jupyter-air: could not load settings of ${EXPERIMENT_PLUGIN_ID}.`, reason);
      }
    }
  }
};

/** Register the readout while `enabled`; a disabled readout is removed, so it keeps nothing polling. */
function showReadout(
  app: JupyterFrontEnd,
  gpu: GpuModel,
  statusBar: IStatusBar,
  trans: TranslationBundle
): IDisposable {
  const item = new GpuStatusItem(gpu, trans, () => {
    void app.commands.execute(CommandIDs.openGpuPanel);
  });
  return statusBar.registerStatusItem(STATUS_BAR_PLUGIN_ID, {
    item,
    align: 'left',
    rank: 50,
    isActive: () => item.hasGpu,
    activeStateChanged: gpu.changed
  });
}

export const statusBarPlugin: JupyterFrontEndPlugin<void> = {
  id: STATUS_BAR_PLUGIN_ID,
  description: "The node's busiest GPU in the status bar, from the GPU panel's model.",
  autoStart: true,
  requires: [IGpuModel],
  optional: [IStatusBar, ISettingRegistry, ITranslator],
  activate: async (
    app: JupyterFrontEnd,
    gpu: GpuModel,
    statusBar: IStatusBar | null,
    settingRegistry: ISettingRegistry | null,
    translator: ITranslator | null
  ) => {
    if (!statusBar) {
      return;
    }
    const trans = (translator ?? nullTranslator).load('jupyter_air');
    let shown: IDisposable | null = null;
    const apply = (enabled: boolean) => {
      if (enabled && !shown) {
        shown = showReadout(app, gpu, statusBar, trans);
      } else if (!enabled && shown) {
        shown.dispose();
        shown = null;
      }
    };
    if (!settingRegistry) {
      apply(true);
      return;
    }
    try {
      const settings = await settingRegistry.load(STATUS_BAR_PLUGIN_ID);
      const read = () => settings.get('enabled').composite !== false;
      apply(read());
      settings.changed.connect(() => apply(read()));
    } catch (reason) {
      console.error(`jupyter-air: could not load settings of ${STATUS_BAR_PLUGIN_ID}.`, reason);
      apply(true);
    }
  }
};
