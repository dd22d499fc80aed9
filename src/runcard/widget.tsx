/** The run card's widget model and view, registered with the Jupyter widget manager as `jupyter-air`. */
import { DOMWidgetModel, DOMWidgetView } from '@jupyter-widgets/base';
import { Clipboard } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import * as React from 'react';
import { createRoot, Root } from 'react-dom/client';

import type { Requester } from '../request';
import { FRONTEND_VERSION } from '../version';
import { RunCard } from './RunCard';
import { requestStop } from './stop';
import { ICardData, StopState, WIDGET_MODULE } from './tokens';

/** Milliseconds between two redraws of a running card's elapsed time (the kernel sends no ticks). */
const ELAPSED_TICK_MS = 1000;

export interface IRunCardOptions {
  /** The request seam: `requestAPI` in the application, a fake in unit tests. */
  request: Requester;
  trans: TranslationBundle;
  now?: () => number;
}

/** The model and view classes, bound to the application's request seam and translations. */
export function createRunCardWidgets(options: IRunCardOptions): {
  RunCardModel: typeof DOMWidgetModel;
  RunCardView: typeof DOMWidgetView;
} {
  const now = options.now ?? Date.now;

  class RunCardModel extends DOMWidgetModel {
    defaults(): any {
      return {
        ...super.defaults(),
        _model_name: 'RunCardModel',
        _model_module: WIDGET_MODULE,
        _model_module_version: FRONTEND_VERSION,
        _view_name: 'RunCardView',
        _view_module: WIDGET_MODULE,
        _view_module_version: FRONTEND_VERSION,
        card: null
      };
    }
  }

  class RunCardView extends DOMWidgetView {
    render(): void {
      this.el.classList.add('jp-Air-runCardWidget');
      this._root = createRoot(this.el);
      this.listenTo(this.model, 'change:card', () => this._draw());
      this._timer = window.setInterval(() => {
        if (this._card()?.status === 'RUNNING') {
          this._draw();
        }
      }, ELAPSED_TICK_MS);
      this._draw();
    }

    remove(): any {
      window.clearInterval(this._timer);
      this._root?.unmount();
      this._root = null;
      return super.remove();
    }

    private _card(): ICardData | null {
      return this.model.get('card') as ICardData | null;
    }

    private _draw(): void {
      const data = this._card();
      if (!this._root || !data || !data.run) {
        return;
      }
      this._root.render(
        <RunCard
          data={data}
          nowMs={now()}
          stop={this._stop}
          onStop={() => void this._onStop(data.run.id)}
          onCopy={text => Clipboard.copyToSystem(text)}
          trans={options.trans}
        />
      );
    }

    private async _onStop(runId: string): Promise<void> {
      this._stop = { phase: 'stopping' };
      this._draw();
      this._stop = await requestStop(options.request, runId);
      this._draw();
    }

    private _root: Root | null = null;
    private _stop: StopState = { phase: 'idle' };
    private _timer = 0;
  }

  return { RunCardModel, RunCardView };
}
