/** The Logs view: a main-area tab following one node's log of one attempt, with Download and Jump to end. */
import { MainAreaWidget, ToolbarButton } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';
import { downloadIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { ModelView } from '../modelView';
import { LogView } from './components/LogView';
import { LogModel } from './logModel';
import { logWidgetId } from './tokens';

/** The log lines, scrolled to the end while following unless the reader scrolled up. */
class LogContent extends ModelView<LogModel> {
  constructor(
    model: LogModel,
    private _trans: TranslationBundle
  ) {
    super(model);
    this.addClass('jp-Air-log');
    this.node.addEventListener('scroll', () => {
      const { scrollTop, scrollHeight, clientHeight } = this.node;
      this._stickToEnd = scrollHeight - scrollTop - clientHeight < 24;
    });
  }

  /** Scroll to the last line and keep following. */
  jumpToEnd(): void {
    this._stickToEnd = true;
    this.node.scrollTop = this.node.scrollHeight;
  }

  protected render(): JSX.Element {
    return <LogView model={this.model} revision={this.revision} trans={this._trans} />;
  }

  protected onUpdateRequest(msg: Message): void {
    super.onUpdateRequest(msg);
    if (this._stickToEnd) {
      // React renders synchronously into the node here; the end is known on the next frame.
      requestAnimationFrame(() => {
        this.node.scrollTop = this.node.scrollHeight;
      });
    }
  }

  private _stickToEnd = true;
}

/** A main-area tab following one node's log of one attempt, with Download and Jump to end. */
export function createLogWidget(options: {
  model: LogModel;
  trans: TranslationBundle;
}): MainAreaWidget<LogContent> {
  const { model, trans } = options;
  const content = new LogContent(model, trans);
  const widget = new MainAreaWidget({ content });
  widget.id = logWidgetId(model.jobRunId, model.attempt, model.node);
  widget.title.label = trans.__('Logs %1', model.jobRunId);
  widget.title.caption = trans.__(
    'Output of node %1 of attempt %2 of %3',
    model.node,
    model.attempt,
    model.jobRunId
  );
  widget.title.closable = true;
  widget.addClass('jp-Air-log-widget');
  const download = new ToolbarButton({
    icon: downloadIcon,
    label: trans.__('Download'),
    tooltip: trans.__('Download the whole log file'),
    onClick: () => {
      const settings = ServerConnection.makeSettings();
      const url =
        URLExt.join(
          settings.baseUrl,
          'jupyter-air/jobs',
          encodeURIComponent(model.jobRunId),
          'logs/download'
        ) + `?attempt=${model.attempt}&node=${model.node}`;
      const link = document.createElement('a');
      link.href = url;
      link.download = `${model.jobRunId}-attempt_${model.attempt}-node_${model.node}.log`;
      document.body.appendChild(link);
      link.click();
      link.remove();
    }
  });
  const end = new ToolbarButton({
    label: trans.__('Jump to end'),
    tooltip: trans.__('Scroll to the last line and keep following the log'),
    onClick: () => content.jumpToEnd()
  });
  const refresh = new ToolbarButton({
    icon: refreshIcon,
    tooltip: trans.__('Read the log now (resumes following)'),
    onClick: () => void model.refresh()
  });
  widget.toolbar.addItem('download', download);
  widget.toolbar.addItem('jump-to-end', end);
  widget.toolbar.addItem('refresh', refresh);
  widget.disposed.connect(() => model.dispose());
  return widget;
}
