/** Shared identifiers, settings and the REST payload types of the GPU resources panel. */
import { Token } from '@lumino/coreutils';

import type { GpuModel } from './model';

/** Plugin, command and widget identifiers. */
export const PLUGIN_ID = 'jupyter-air:plugin';
export const PANEL_ID = 'jupyter-air-gpu-panel';

export namespace CommandIDs {
  export const openGpuPanel = 'jupyter-air:open-gpu-panel';
  export const refreshGpuPanel = 'jupyter-air:refresh-gpu-panel';
}

/** The GPU model of the page, provided by the GPU panel's plugin to the status bar readout. */
export const IGpuModel = new Token<GpuModel>(
  'jupyter-air:IGpuModel',
  'The GPU model that polls the server for the GPU panel; views read it, never fetch.'
);

/** User settings of the panel (see schema/plugin.json). */
export interface IGpuSettings {
  /** Seconds between two polls of the server. */
  pollIntervalSeconds: number;
  /** Seconds without activity (or with the panel hidden) before polling pauses. */
  inactivityTimeoutSeconds: number;
  /** Minutes of history kept and charted. */
  historyWindowMinutes: number;
}

export const DEFAULT_SETTINGS: IGpuSettings = {
  pollIntervalSeconds: 10,
  inactivityTimeoutSeconds: 300,
  historyWindowMinutes: 120
};

/** One GPU as described by the server. */
export interface IGpuDevice {
  index: number;
  uuid: string | null;
  name: string;
  memory_total_bytes: number | null;
  error: string | null;
}

/** A compute process on a GPU, with its notebook when it is a kernel of this server. */
export interface IGpuProcess {
  gpu_index: number;
  pid: number;
  name: string;
  used_memory_bytes: number | null;
  kernel_id?: string | null;
  path?: string | null;
}

/** Per-GPU time series: `metric[gpu][sample]`, `null` where the device cannot report. */
export interface IGpuSeries {
  utilization_percent: (number | null)[][];
  memory_used_bytes: (number | null)[][];
  temperature_celsius: (number | null)[][];
  power_watts: (number | null)[][];
}

/** Host series: arrays index by sample. */
export interface IHostSeries {
  cpu_percent: (number | null)[];
  memory_used_bytes: (number | null)[];
  memory_total_bytes: number | null;
}

/** Answer of `GET jupyter-air/gpu` and `POST jupyter-air/gpu/refresh`. */
export interface IGpuPayload {
  node: string;
  source: string;
  available: boolean;
  reason: string | null;
  sampling: boolean;
  interval_seconds: number;
  history_seconds: number;
  idle_timeout_seconds: number;
  devices: IGpuDevice[];
  timestamps_ms: number[];
  gpus: IGpuSeries;
  host: IHostSeries;
  processes: IGpuProcess[];
}

/** Answer of `GET jupyter-air/version`. */
export interface IVersionPayload {
  version: string;
}

/** Every per-GPU metric of the history. */
export const GPU_METRICS: (keyof IGpuSeries)[] = [
  'utilization_percent',
  'memory_used_bytes',
  'temperature_celsius',
  'power_watts'
];
