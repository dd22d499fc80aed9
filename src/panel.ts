/** Registering a sidebar panel: its tab, its Open and Refresh commands, the palette, the layout and its settings. */
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { trackActivity } from './activity';

/** Commands that take no arguments. */
export const NO_ARGS = { args: { type: 'object' as const, properties: {} } };

/** A command's id and what the menus, the palette and tooltips say of it. */
export interface ICommandText {
  id: string;
  label: string;
  caption: string;
}

/** What a panel's model offers its plugin. */
export interface IPanelModel<S> {
  settings: S;
  refresh(): Promise<void>;
  notifyActivity(): void;
}

export interface ISidebarPanelOptions<S> {
  app: JupyterFrontEnd;
  widget: Widget;
  model: IPanelModel<S>;
  area: 'left' | 'right';
  rank: number;
  icon: LabIcon;
  /** Shown next to the icon in the tab (sidebars show it when the tab has room). */
  label?: string;
  /** The tab's tooltip. */
  caption: string;
  open: ICommandText;
  refresh: ICommandText;
  /** The command palette's category of both commands. */
  category: string;
  palette: ICommandPalette | null;
  restorer: ILayoutRestorer | null;
  /** The plugin whose settings the model takes (numbers; a missing or invalid one keeps its default). */
  settings?: { registry: ISettingRegistry | null; pluginId: string; defaults: S };
}

/** Add the panel to its sidebar with its Open and Refresh commands, and keep its model's settings current. */
export async function addSidebarPanel<S extends object>(
  options: ISidebarPanelOptions<S>
): Promise<void> {
  const { app, widget, model, area, rank, open, refresh, category, palette } = options;
  widget.title.icon = options.icon;
  widget.title.caption = options.caption;
  if (options.label) {
    widget.title.label = options.label;
  }
  trackActivity(document, () => model.notifyActivity());
  app.commands.addCommand(open.id, {
    label: open.label,
    caption: open.caption,
    icon: options.icon,
    describedBy: NO_ARGS,
    execute: () => {
      if (!widget.isAttached) {
        app.shell.add(widget, area, { rank });
      }
      app.shell.activateById(widget.id);
    }
  });
  app.commands.addCommand(refresh.id, {
    label: refresh.label,
    caption: refresh.caption,
    describedBy: NO_ARGS,
    execute: () => model.refresh()
  });
  palette?.addItem({ command: open.id, category });
  palette?.addItem({ command: refresh.id, category });
  app.shell.add(widget, area, { rank });
  options.restorer?.add(widget, widget.id);

  const settings = options.settings;
  if (settings) {
    await followSettings(settings.registry, settings.pluginId, loaded => {
      model.settings = readNumbers(loaded, settings.defaults);
    });
  }
}

/** Call `apply` with a plugin's settings now and whenever they change; a failure to load is logged. */
export async function followSettings(
  registry: ISettingRegistry | null,
  pluginId: string,
  apply: (settings: ISettingRegistry.ISettings | null) => void
): Promise<void> {
  if (!registry) {
    apply(null);
    return;
  }
  try {
    const settings = await registry.load(pluginId);
    apply(settings);
    settings.changed.connect(() => apply(settings));
  } catch (reason) {
    console.error(`jupyter-air: could not load settings of ${pluginId}.`, reason);
    apply(null);
  }
}

/** The numeric settings of `defaults`' keys: each positive number set, else its default. */
export function readNumbers<S extends object>(
  settings: ISettingRegistry.ISettings | null,
  defaults: S
): S {
  const read = { ...defaults };
  for (const key of Object.keys(defaults) as (keyof S & string)[]) {
    const value = settings?.get(key).composite;
    if (typeof value === 'number' && value > 0) {
      read[key] = value as S[keyof S & string];
    }
  }
  return read;
}
