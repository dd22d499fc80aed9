/** Entry point: the GPU resources panel in JupyterLab's right sidebar. */
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, IThemeManager } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';

import { trackActivity } from './activity';
import { gpuIcon } from './icon';
import { GpuModel } from './model';
import { CommandIDs, DEFAULT_SETTINGS, IGpuSettings, PLUGIN_ID } from './tokens';
import { GpuPanelWidget } from './widget';

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

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Live GPU utilization, memory, temperature and processes in the right sidebar.',
  autoStart: true,
  optional: [ILayoutRestorer, ICommandPalette, ISettingRegistry, IThemeManager],
  activate: async (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    themeManager: IThemeManager | null
  ) => {
    const model = new GpuModel();
    const widget = new GpuPanelWidget({
      model,
      onOpenPath: path => void app.commands.execute('docmanager:open', { path })
    });
    widget.title.icon = gpuIcon;
    widget.title.caption = 'GPU resources';
    trackActivity(document, () => model.notifyActivity());
    themeManager?.themeChanged.connect(() => widget.refreshTheme());

    app.commands.addCommand(CommandIDs.openGpuPanel, {
      label: 'Open GPU resources',
      caption: 'Show live GPU utilization, memory, temperature and processes',
      icon: gpuIcon,
      execute: () => {
        if (!widget.isAttached) {
          app.shell.add(widget, 'right', { rank: 700 });
        }
        app.shell.activateById(widget.id);
      }
    });
    app.commands.addCommand(CommandIDs.refreshGpuPanel, {
      label: 'Refresh GPU resources',
      caption: 'Fetch the newest GPU values now and resume polling',
      execute: () => model.refresh()
    });
    palette?.addItem({ command: CommandIDs.openGpuPanel, category: 'GPU' });
    palette?.addItem({ command: CommandIDs.refreshGpuPanel, category: 'GPU' });

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
  }
};

export default plugin;
