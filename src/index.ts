/** Entry points: the GPU resources panel (right sidebar), the Experiment panel (left), the status bar readout and the run card's widget view. */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IThemeManager } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { trackActivity } from './activity';

import { experimentPlugin, statusBarPlugin } from './experiment/plugin';
// The GPU panel's run timeline is created with the panel during activation.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { RunTimeline } from './experiment/timeline';
import { gpuIcon } from './icon';
// The sidebar panel and its model are created during activation (the layout restorer needs the
// widget at once), so a lazy import would not load them any later.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { GpuModel } from './model';
import { runCardPlugin } from './runcard/plugin';
import { CommandIDs, DEFAULT_SETTINGS, IGpuModel, IGpuSettings, PLUGIN_ID } from './tokens';
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { GpuPanelWidget } from './widget';

/** Commands of this plugin take no arguments. */
const NO_ARGS = { args: { type: 'object' as const, properties: {} } };

function readSettings(settings: ISettingRegistry.ISettings): IGpuSettings {
  const get = (key: keyof IGpuSettings) => {
    const value = settings.get(key).composite;
    return typeof value === 'number' && value > 0 ? value : DEFAULT_SETTINGS[key];
  };
  return {
    pollIntervalSeconds: get('pollIntervalSeconds'),
    inactivityTimeoutSeconds: get('inactivityTimeoutSeconds'),
    historyWindowMinutes: get('historyWindowMinutes')
  };
}

const plugin: JupyterFrontEndPlugin<GpuModel> = {
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
    const widget = new GpuPanelWidget({
      model,
      onOpenPath: path => void app.commands.execute('docmanager:open', { path }),
      trans,
      timeline: new RunTimeline({ gpu: model })
    });
    widget.title.icon = gpuIcon;
    widget.title.caption = trans.__('GPU resources');
    trackActivity(document, () => model.notifyActivity());
    themeManager?.themeChanged.connect(() => widget.refreshTheme());

    app.commands.addCommand(CommandIDs.openGpuPanel, {
      label: trans.__('Open GPU resources'),
      caption: trans.__('Show live GPU utilization, memory, temperature and processes'),
      icon: gpuIcon,
      describedBy: NO_ARGS,
      execute: () => {
        if (!widget.isAttached) {
          app.shell.add(widget, 'right', { rank: 700 });
        }
        app.shell.activateById(widget.id);
      }
    });
    app.commands.addCommand(CommandIDs.refreshGpuPanel, {
      label: trans.__('Refresh GPU resources'),
      caption: trans.__('Fetch the newest GPU values now and resume polling'),
      describedBy: NO_ARGS,
      execute: () => model.refresh()
    });
    const category = trans.__('GPU');
    palette?.addItem({ command: CommandIDs.openGpuPanel, category });
    palette?.addItem({ command: CommandIDs.refreshGpuPanel, category });

    app.shell.add(widget, 'right', { rank: 700 });
    restorer?.add(widget, widget.id);

    if (settingRegistry) {
      try {
        const settings = await settingRegistry.load(PLUGIN_ID);
        model.settings = readSettings(settings);
        settings.changed.connect(() => {
          model.settings = readSettings(settings);
        });
      } catch (reason) {
        console.error(`jupyter-air: could not load settings of ${PLUGIN_ID}.`, reason);
      }
    }
    return model;
  }
};

export default [plugin, experimentPlugin, statusBarPlugin, runCardPlugin];
