/** The Lumino sidebar widget wrapping the GPU view; reports its visibility to the model. */
import type { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget, refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { GpuPanel } from './components/GpuPanel';
import type { RunTimeline } from './experiment/timeline';
import { GpuModel } from './model';
import { PANEL_ID } from './tokens';

export class GpuPanelWidget extends ReactWidget {
  constructor(options: GpuPanelWidget.IOptions) {
    super();
    this.model = options.model;
    this._onOpenPath = options.onOpenPath;
    this._trans = options.trans;
    this._timeline = options.timeline ?? null;
    this.id = PANEL_ID;
    this.addClass('jp-Air-panel');
    this.model.changed.connect(this._onModelChanged, this);
    this._timeline?.changed.connect(this._onModelChanged, this);
  }

  readonly model: GpuModel;

  /** Re-read the theme's colours (call after a theme change). */
  refreshTheme(): void {
    this._themeKey += 1;
    this.update();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.model.changed.disconnect(this._onModelChanged, this);
    this._timeline?.changed.disconnect(this._onModelChanged, this);
    super.dispose();
  }

  protected render(): JSX.Element {
    return (
      <GpuPanel
        model={this.model}
        revision={this._revision}
        themeKey={this._themeKey}
        onOpenPath={this._onOpenPath}
        trans={this._trans}
        refreshIcon={<refreshIcon.react tag="span" className="jp-Air-refresh-icon" />}
        runs={this._timeline?.runs}
        onOpenRun={run => run.url && window.open(run.url, '_blank', 'noopener')}
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

  private _onModelChanged(): void {
    this._revision += 1;
    this.update();
  }

  private _onOpenPath: (path: string) => void;
  private _revision = 0;
  private _themeKey = 0;
  private _timeline: RunTimeline | null;
  private _trans: TranslationBundle;
}

export namespace GpuPanelWidget {
  export interface IOptions {
    model: GpuModel;
    onOpenPath: (path: string) => void;
    /** The strings of the panel, in the user's language. */
    trans: TranslationBundle;
    /** Runs to shade on the charts. */
    timeline?: RunTimeline;
  }
}
