/** The status bar readout of the node's GPUs, read from the GPU model (no poller of its own). */
import type { TranslationBundle } from '@jupyterlab/translation';
import { ReactWidget } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import * as React from 'react';

import { busiestGpu, readout } from './readout';
import type { IGpuModel } from './tokens';

function GpuReadout(props: {
  model: IGpuModel;
  trans: TranslationBundle;
  onClick: () => void;
}): JSX.Element | null {
  const { model, trans, onClick } = props;
  const gpu = busiestGpu(model);
  if (gpu === null) {
    return null;
  }
  const simulated = model.payload?.source === 'simulated';
  const all = model.devices.map((_, i) => readout(model, i, trans)).join('\n');
  const notes = [
    simulated ? trans.__('Simulated GPUs: not real hardware.') : '',
    model.paused ? trans.__('Paused after inactivity; click to open the GPU panel and resume.') : ''
  ].filter(Boolean);
  return (
    <span
      className={`jp-Air-statusbar${model.paused ? ' jp-mod-paused' : ''}`}
      data-state={model.state}
      title={[
        trans.__('GPUs of %1 (click for the GPU panel)', model.payload?.node ?? ''),
        all,
        ...notes
      ].join('\n')}
      onClick={onClick}
    >
      {simulated ? <span className="jp-Air-statusbar-simulated">{trans.__('sim')}</span> : null}
      {readout(model, gpu, trans)}
    </span>
  );
}

/** The status bar item; it tells the model it is a visible view, so the readout stays current. */
export class GpuStatusItem extends ReactWidget {
  constructor(
    private _model: IGpuModel,
    private _trans: TranslationBundle,
    private _onClick: () => void
  ) {
    super();
    this.addClass('jp-Air-statusbar-item');
    _model.changed.connect(this._onModelChanged, this);
  }

  /** Whether there is a GPU to show (the item is hidden otherwise). */
  get hasGpu(): boolean {
    return this._model.devices.length > 0;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._model.changed.disconnect(this._onModelChanged, this);
    this._model.setVisible(false, 'status-bar');
    super.dispose();
  }

  protected render(): JSX.Element | null {
    return <GpuReadout model={this._model} trans={this._trans} onClick={this._onClick} />;
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this._model.setVisible(true, 'status-bar');
  }

  protected onBeforeDetach(msg: Message): void {
    this._model.setVisible(false, 'status-bar');
    super.onBeforeDetach(msg);
  }

  /** On a node without GPU (or without the server extension) the readout stops keeping the model polling. */
  private _onModelChanged(): void {
    const state = this._model.state;
    if (state === 'no-gpu' || state === 'unavailable') {
      this._model.setVisible(false, 'status-bar');
    }
    this.update();
  }
}
