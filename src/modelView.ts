/** The Lumino widget of a polling model's React view: it re-renders on the model's changes and reports its visibility. */
import { ReactWidget } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import type { ISignal } from '@lumino/signaling';

/** What a view needs of its model. */
export interface IViewedModel {
  readonly changed: ISignal<any, void>;
  setVisible(visible: boolean, viewer?: string): void;
}

/**
 * Renders again (with `revision` bumped) whenever the model or another followed signal changes, and
 * tells the model while it is visible, so that the model polls only then.
 */
export abstract class ModelView<M extends IViewedModel> extends ReactWidget {
  constructor(readonly model: M) {
    super();
    this.follow(model.changed);
  }

  /** Bumped on every change, for views that redraw on it. */
  get revision(): number {
    return this._revision;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._followed.forEach(signal => signal.disconnect(this.onChanged, this));
    super.dispose();
  }

  /** Render again whenever `signal` is emitted too. */
  protected follow(signal: ISignal<any, any>): void {
    this._followed.push(signal);
    signal.connect(this.onChanged, this);
  }

  protected onChanged(): void {
    this._revision += 1;
    this.update();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) {
      this.model.setVisible(true);
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.model.setVisible(true);
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.model.setVisible(false);
  }

  protected onBeforeDetach(msg: Message): void {
    this.model.setVisible(false);
    super.onBeforeDetach(msg);
  }

  private _followed: ISignal<any, any>[] = [];
  private _revision = 0;
}
