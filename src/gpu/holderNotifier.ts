/**
 * One JupyterLab notification per kernel idle on GPU memory, with "Shut down", "Restart" (the kernel) and
 * "Dismiss"; it goes when the kernel is no longer an idle holder, and comes again for a later idle spell.
 */
import type { Notification } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';

import { formatBytes, formatClock } from '../format';
import type { HoldersModel, IIdleHolder } from './holders';

/** What the notifier needs of JupyterLab's `Notification` (tests pass a recorder). */
export interface INotifications {
  warning(message: string, options?: Notification.IOptions<null>): string;
  error(message: string, options?: Notification.IOptions<null>): string;
  dismiss(id?: string): void;
}

/** What it needs of the kernels (JupyterLab's kernel manager and REST API). */
export interface IKernelActions {
  shutdown(kernelId: string): Promise<void>;
  restart(kernelId: string): Promise<void>;
}

export class HolderNotifier {
  constructor(
    private _model: HoldersModel,
    private _kernels: IKernelActions,
    private _notifications: INotifications,
    private _trans: TranslationBundle
  ) {
    _model.changed.connect(this._update, this);
  }

  /** The notification shown for each idle kernel, by kernel id. */
  get shown(): ReadonlyMap<string, string> {
    return this._shown;
  }

  private _update(): void {
    const byKernel = new Map<string, IIdleHolder[]>();
    this._model.holders.forEach(holder => {
      byKernel.set(holder.kernel_id, [...(byKernel.get(holder.kernel_id) ?? []), holder]);
    });
    for (const [kernelId, id] of [...this._shown]) {
      if (!byKernel.has(kernelId)) {
        this._notifications.dismiss(id);
        this._shown.delete(kernelId);
      }
    }
    [...this._handled].filter(k => !byKernel.has(k)).forEach(k => this._handled.delete(k));
    byKernel.forEach((gpus, kernelId) => {
      if (!this._shown.has(kernelId) && !this._handled.has(kernelId)) {
        this._shown.set(kernelId, this._notify(kernelId, gpus));
      }
    });
  }

  private _notify(kernelId: string, gpus: IIdleHolder[]): string {
    const trans = this._trans;
    const held = gpus
      .map(g =>
        g.node_id
          ? trans.__('%1 on GPU %2 of %3', formatBytes(g.used_memory_bytes), g.gpu_index, g.node)
          : trans.__('%1 on GPU %2', formatBytes(g.used_memory_bytes), g.gpu_index)
      )
      .join(', ');
    const since = formatClock(Math.min(...gpus.map(g => g.idle_since_ms)));
    // JupyterLab cuts messages at 140 characters: the notebook's name, not its whole path.
    const who = gpus[0].path?.split('/').pop() ?? kernelId.slice(0, 8);
    const act = (label: string, caption: string, run?: () => Promise<void>) => ({
      label,
      caption,
      displayType: run ? ('accent' as const) : ('link' as const),
      callback: () => {
        this._handled.add(kernelId);
        this._shown.delete(kernelId);
        if (run) {
          run().then(
            () => this._model.refresh(),
            (error: unknown) => this._failed(label, who, error)
          );
        }
      }
    });
    return this._notifications.warning(
      trans.__('The kernel of %1 has been idle since %2, holding %3', who, since, held),
      {
        autoClose: false,
        actions: [
          act(trans.__('Shut down'), trans.__('Shut down the kernel: frees its GPU memory'), () =>
            this._kernels.shutdown(kernelId)
          ),
          act(
            trans.__('Restart'),
            trans.__('Restart the kernel: frees its GPU memory, its variables are lost'),
            () => this._kernels.restart(kernelId)
          ),
          act(trans.__('Dismiss'), trans.__('Not again while it stays idle'))
        ]
      }
    );
  }

  private _failed(action: string, who: string, error: unknown): void {
    const why = error instanceof Error ? error.message : String(error);
    this._notifications.error(
      this._trans.__('%1 of the kernel of %2 failed: %3', action, who, why),
      {
        autoClose: false
      }
    );
  }

  private _handled = new Set<string>();
  private _shown = new Map<string, string>();
}
