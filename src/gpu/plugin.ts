/**
 * Plugins: the GPU resources panel (right sidebar) with the notifications of idle GPU holders, and the GPU
 * readout in the status bar.
 */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IThemeManager, Notification } from '@jupyterlab/apputils';
import { KernelAPI } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator, nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { IDisposable } from '@lumino/disposable';

import { gpuIcon } from '../icon';
import { addSidebarPanel, followSettings, readNumbers } from '../panel';
import { HolderNotifier } from './holderNotifier';
// The idle GPU holders are read from the start: their notifications do not wait for a panel.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { HoldersModel } from './holders';
import { GpuQueue } from './queue';
import { GpuUsage } from './usage';
// The sidebar panel, its model and its charts' runs are created during activation (the layout
// restorer needs the widget at once), so a lazy import would not load them any later.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { GpuModel } from './model';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { GpuStatusItem } from './statusbar';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { RunTimeline } from './timeline';
import { CommandIDs, DEFAULT_SETTINGS, IGpuModel, PLUGIN_ID, STATUS_BAR_PLUGIN_ID } from './tokens';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { GpuPanelWidget } from './widget';

export const gpuPlugin: JupyterFrontEndPlugin<IGpuModel> = {
  id: PLUGIN_ID,
  description: 'Live GPU utilization, memory, temperature and processes in the right sidebar.',
  autoStart: true,
  provides: IGpuModel,
  optional: [ILayoutRestorer, ICommandPalette, ISettingRegistry, IThemeManager, ITranslator],
  activate: async (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    themeManager: IThemeManager | null,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('jupyter_air');
    const model = new GpuModel();
    const holders = new HoldersModel();
    const kernels = app.serviceManager.kernels;
    new HolderNotifier(
      holders,
      {
        shutdown: id => kernels.shutdown(id),
        restart: id => KernelAPI.restartKernel(id, app.serviceManager.serverSettings)
      },
      Notification,
      trans
    );
    const widget = new GpuPanelWidget({
      model,
      onOpenPath: path => void app.commands.execute('docmanager:open', { path }),
      trans,
      timeline: new RunTimeline({ gpu: model }),
      holders,
      queue: new GpuQueue({ gpu: model }),
      usage: new GpuUsage({ gpu: model })
    });
    themeManager?.themeChanged.connect(() => widget.refreshTheme());
    await addSidebarPanel({
      app,
      widget,
      model,
      area: 'right',
      rank: 700,
      icon: gpuIcon,
      caption: trans.__('GPU resources'),
      open: {
        id: CommandIDs.openGpuPanel,
        label: trans.__('Open GPU resources'),
        caption: trans.__('Show live GPU utilization, memory, temperature and processes')
      },
      refresh: {
        id: CommandIDs.refreshGpuPanel,
        label: trans.__('Refresh GPU resources'),
        caption: trans.__('Fetch the newest GPU values now and resume polling')
      },
      category: trans.__('GPU'),
      palette,
      restorer,
      settings: { registry: settingRegistry, pluginId: PLUGIN_ID, defaults: DEFAULT_SETTINGS }
    });
    await followSettings(settingRegistry, PLUGIN_ID, loaded => {
      holders.intervalSeconds = readNumbers(loaded, DEFAULT_SETTINGS).idleHoldersIntervalSeconds;
    });
    return model;
  }
};

/** Register the readout while `enabled`; a disabled readout is removed, so it keeps nothing polling. */
function showReadout(
  app: JupyterFrontEnd,
  gpu: IGpuModel,
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
    gpu: IGpuModel,
    statusBar: IStatusBar | null,
    settingRegistry: ISettingRegistry | null,
    translator: ITranslator | null
  ) => {
    if (!statusBar) {
      return;
    }
    const trans = (translator ?? nullTranslator).load('jupyter_air');
    let shown: IDisposable | null = null;
    await followSettings(settingRegistry, STATUS_BAR_PLUGIN_ID, settings => {
      const enabled = settings?.get('enabled').composite !== false;
      if (enabled && !shown) {
        shown = showReadout(app, gpu, statusBar, trans);
      } else if (!enabled && shown) {
        shown.dispose();
        shown = null;
      }
    });
  }
};
