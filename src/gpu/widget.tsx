/** The Lumino sidebar widget wrapping the GPU view; reports its visibility to the model. */
import type { TranslationBundle } from '@jupyterlab/translation';
import { refreshIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { ModelView } from '../modelView';
import { GpuPanel } from './components/GpuPanel';
import type { HoldersModel } from './holders';
import type { GpuModel } from './model';
import type { GpuQueue } from './queue';
import type { RunTimeline } from './timeline';
import type { GpuUsage } from './usage';
import { PANEL_ID } from './tokens';

export class GpuPanelWidget extends ModelView<GpuModel> {
  constructor(options: GpuPanelWidget.IOptions) {
    super(options.model);
    this._onOpenPath = options.onOpenPath;
    this._trans = options.trans;
    this._timeline = options.timeline ?? null;
    this.id = PANEL_ID;
    this.addClass('jp-Air-panel');
    this._holders = options.holders ?? null;
    this._queue = options.queue ?? null;
    if (this._queue) {
      this.follow(this._queue.changed);
    }
    this._usage = options.usage ?? null;
    if (this._usage) {
      this.follow(this._usage.changed);
    }
    if (this._timeline) {
      this.follow(this._timeline.changed);
    }
    if (this._holders) {
      this.follow(this._holders.changed);
    }
  }

  /** Re-read the theme's colours (call after a theme change). */
  refreshTheme(): void {
    this._themeKey += 1;
    this.update();
  }

  protected render(): JSX.Element {
    return (
      <GpuPanel
        model={this.model}
        revision={this.revision}
        themeKey={this._themeKey}
        onOpenPath={this._onOpenPath}
        trans={this._trans}
        refreshIcon={<refreshIcon.react tag="span" className="jp-Air-refresh-icon" />}
        runs={this._timeline?.runs}
        onOpenRun={run => run.url && window.open(run.url, '_blank', 'noopener')}
        heldNodes={this._holders?.nodeHolders}
        onRelease={pid => void this._holders?.release(pid)}
        queue={this._queue ?? undefined}
        usage={this._usage ?? undefined}
      />
    );
  }

  private _holders: HoldersModel | null;
  private _onOpenPath: (path: string) => void;
  private _queue: GpuQueue | null;
  private _themeKey = 0;
  private _timeline: RunTimeline | null;
  private _trans: TranslationBundle;
  private _usage: GpuUsage | null;
}

export namespace GpuPanelWidget {
  export interface IOptions {
    model: GpuModel;
    onOpenPath: (path: string) => void;
    /** The strings of the panel, in the user's language. */
    trans: TranslationBundle;
    /** Runs to shade on the charts. */
    timeline?: RunTimeline;
    /** Notebooks keeping Ray nodes, listed with Release. */
    holders?: HoldersModel;
    /** This machine's GPU queue, listed when anything holds or waits for a GPU. */
    queue?: GpuQueue;
    /** GPU use over the last 7 days, listed under the queue. */
    usage?: GpuUsage;
  }
}
