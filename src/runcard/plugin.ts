/** Registers the run card's widget view with the Jupyter widget manager (module `jupyter-air`). */
import { IJupyterWidgetRegistry } from '@jupyter-widgets/base';
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';

import { requestAPI } from '../request';
// The module's version is part of its registration, which cannot wait.
// eslint-disable-next-line jupyter/prefer-lazy-imports
import { FRONTEND_VERSION } from '../version';
import { RUN_CARD_PLUGIN_ID, WIDGET_MODULE } from './tokens';

export const runCardPlugin: JupyterFrontEndPlugin<void> = {
  id: RUN_CARD_PLUGIN_ID,
  description:
    'The live run card of .distributed(), %%air_distributed and %%air_run in cell outputs.',
  autoStart: true,
  requires: [IJupyterWidgetRegistry],
  optional: [ITranslator],
  activate: (
    app: JupyterFrontEnd,
    registry: IJupyterWidgetRegistry,
    translator: ITranslator | null
  ) => {
    const trans = (translator ?? nullTranslator).load('jupyter_air');
    registry.registerWidget({
      name: WIDGET_MODULE,
      version: FRONTEND_VERSION,
      // Loaded when the first card is shown, not with JupyterLab.
      exports: async () => {
        const { createRunCardWidgets } = await import('./widget');
        return { ...createRunCardWidgets({ request: requestAPI, trans }) };
      }
    });
  }
};
