/** The run card's data, as the kernel sends it (jupyter_air.run_card.render.card_json), and its ids. */

/** Plugin of the run card's widget view. */
export const RUN_CARD_PLUGIN_ID = 'jupyter-air:run-card';

/** The widget module the Python model names (`_model_module` / `_view_module`). */
export const WIDGET_MODULE = 'jupyter-air';

export type RunStatus = 'RUNNING' | 'FINISHED' | 'FAILED' | 'KILLED';

export interface ICardRun {
  id: string;
  name: string;
  url: string | null;
  experiment_name: string;
  experiment_url: string | null;
}

export interface ICardMetric {
  key: string;
  value: number | null;
  value_text: string;
  step: number;
  /** SVG path in a 100 × 20 box, or '' with nothing to draw. */
  spark: string;
}

export interface ICardRow {
  /** `rank 3`, or `node 1 (ranks 8-15)` when there are many ranks. */
  name: string;
  state: 'running' | 'finished' | 'failed' | 'stopped';
  exitcode: number | null;
  /** The last line the rank (or node) wrote. */
  line: string;
}

export interface ICardFailure {
  message: string;
  rank: number | null;
  node: number | null;
  exitcode: number | null;
}

export interface ICardData {
  run: ICardRun;
  /** `distributed`: ranks in worker processes; `kernel`: the cell runs in the kernel itself. */
  kind: 'distributed' | 'kernel';
  world_size: number;
  nodes: number;
  gpus: string[];
  /** The job a remote call runs as (`job-…`), to follow again with `%air_attach`; null for a call in the kernel. */
  job_run_id: string | null;
  status: RunStatus;
  started_ms: number;
  ended_ms: number | null;
  reason: string | null;
  failure: ICardFailure | null;
  metrics: ICardMetric[];
  /** The run's GPU energy, once it ended and some was measured. */
  energy: { watt_hours: number; simulated: boolean } | null;
  rows: ICardRow[];
  output: string;
  dropped_lines: number;
  /** Whether the Stop button is offered (the run is running and can be stopped). */
  stoppable: boolean;
}

/** Where the Stop request is: not sent, on its way or accepted, or refused with a message. */
export type StopState =
  { phase: 'idle' } | { phase: 'stopping' } | { phase: 'error'; message: string };
