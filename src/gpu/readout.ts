/** What the status bar says about the node's GPUs, read from the GPU model. */
import type { TranslationBundle } from '@jupyterlab/translation';

import { formatValue } from '../format';
import { latestValue } from './history';
import type { IGpuModel } from './tokens';

const GIB = 1024 ** 3;

/** The GPU to show: the busiest one now (highest utilization, then most memory used). */
export function busiestGpu(model: IGpuModel): number | null {
  const history = model.history;
  let best: number | null = null;
  let bestKey: [number, number] = [-1, -1];
  model.devices.forEach((_, i) => {
    const key: [number, number] = [
      latestValue(history.gpus.utilization_percent[i]) ?? -1,
      latestValue(history.gpus.memory_used_bytes[i]) ?? -1
    ];
    if (key[0] > bestKey[0] || (key[0] === bestKey[0] && key[1] > bestKey[1])) {
      best = i;
      bestKey = key;
    }
  });
  return best;
}

/** `GPU 37% · 12/80 GiB · 54 °C` for one GPU (`–` where it cannot report). */
export function readout(model: IGpuModel, gpu: number, trans: TranslationBundle): string {
  const history = model.history;
  const used = latestValue(history.gpus.memory_used_bytes[gpu]);
  const total = model.devices[gpu]?.memory_total_bytes ?? null;
  const gib = (bytes: number | null) =>
    bytes === null
      ? '–'
      : bytes < 10 * GIB
        ? (bytes / GIB).toFixed(1)
        : String(Math.round(bytes / GIB));
  const label =
    model.devices.length > 1 ? trans.__('GPU %1', model.devices[gpu].index) : trans.__('GPU');
  return [
    `${label} ${formatValue(latestValue(history.gpus.utilization_percent[gpu]), '%')}`,
    `${gib(used)}/${gib(total)} GiB`,
    formatValue(latestValue(history.gpus.temperature_celsius[gpu]), ' °C')
  ].join(' · ');
}
