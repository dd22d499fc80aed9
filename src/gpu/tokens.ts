/** Identifiers, the model's interface and token, settings and REST payload types of the GPU panel. */
import { Token } from '@lumino/coreutils';
import type { ISignal } from '@lumino/signaling';

/** Plugin, command and widget identifiers. */
export const PLUGIN_ID = 'jupyter-air:plugin';
export const STATUS_BAR_PLUGIN_ID = 'jupyter-air:status-bar';
export const PANEL_ID = 'jupyter-air-gpu-panel';

export namespace CommandIDs {
  export const openGpuPanel = 'jupyter-air:open-gpu-panel';
  export const refreshGpuPanel = 'jupyter-air:refresh-gpu-panel';
}

/** What the header shows. */
export type GpuState = 'loading' | 'live' | 'paused' | 'no-gpu' | 'unavailable' | 'error';

/** The GPU model of the page: what its views (the panel, the status bar readout, the charts' runs) read. */
export interface IGpuModel {
  /** Emitted whenever the data or the state changes. */
  readonly changed: ISignal<IGpuModel, void>;
  readonly state: GpuState;
  /** True once polling stopped for inactivity. */
  readonly paused: boolean;
  /** The latest answer of the server (its history columns are merged into `history`). */
  readonly payload: IGpuPayload | null;
  readonly devices: IGpuDevice[];
  readonly history: IGpuHistory;
  /** Epoch milliseconds of the newest sample held, or `null`. */
  readonly newestSampleMs: number | null;
  /** Tell the model whether the view `viewer` is visible; polling goes on while any is. */
  setVisible(visible: boolean, viewer?: string): void;
  isVisibleTo(viewer?: string): boolean;
}

/** The GPU model of the page, provided by the GPU panel's plugin to the status bar readout. */
export const IGpuModel = new Token<IGpuModel>(
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
  /** Seconds between two reads of the idle GPU holders and the Ray nodes kept by notebooks. */
  idleHoldersIntervalSeconds: number;
}

export const DEFAULT_SETTINGS: IGpuSettings = {
  pollIntervalSeconds: 10,
  inactivityTimeoutSeconds: 300,
  historyWindowMinutes: 120,
  idleHoldersIntervalSeconds: 60
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
  /** Set when the process's kernel is an idle GPU holder: since when it executed nothing (epoch ms). */
  idle_since_ms?: number | null;
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

/** State of a node of a Ray cluster: answering, not answered yet since its sampler started, or not answering. */
export type NodeState = 'live' | 'starting' | 'unreachable';

/** The newest values of one GPU of a cluster node, as the "all nodes" overview shows them. */
export interface INodeGpu {
  index: number;
  name: string | null;
  utilization_percent: number | null;
  memory_used_bytes: number | null;
  memory_total_bytes: number | null;
  temperature_celsius: number | null;
}

/** One node of the Ray cluster the server watches (`nodes` of the GPU payload). */
export interface INodeSummary {
  /** Ray node id: the value of `?node=`. */
  id: string;
  hostname: string;
  ip: string;
  state: NodeState;
  /** Why the node is not live, else `null`. */
  reason: string | null;
  /** Epoch ms of its newest answer, `null` before the first. */
  last_seen_ms: number | null;
  gpu_count: number | null;
  source: string | null;
  available: boolean;
  /** True for the node the Jupyter server runs on. */
  is_server_node: boolean;
  /** Empty unless live: an unreachable node has no values, never zeros. */
  gpus: INodeGpu[];
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
  /** With a Ray cluster configured: the node this payload describes, its state, every node, the cluster. */
  node_id?: string | null;
  node_state?: NodeState;
  nodes?: INodeSummary[];
  cluster?: { address: string; error: string | null };
}

/** Columnar samples: `gpus[metric][gpu][k]` and `host*[k]` are taken at `timestampsMs[k]`. */
export interface IGpuHistory {
  timestampsMs: number[];
  gpus: IGpuSeries;
  hostCpuPercent: (number | null)[];
  hostMemoryUsedBytes: (number | null)[];
}

/** Answer of `GET jupyter-air/version`. */
export interface IVersionPayload {
  version: string;
}
