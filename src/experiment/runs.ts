/** The list of a notebook's runs: merging answers, nesting, order, what to ask for next, MLflow's compare page. */
import type { IRun } from './tokens';

/** `held` with `runs` added or replaced, newest first. */
export function mergeRuns(held: IRun[], runs: IRun[]): IRun[] {
  const byId = new Map(held.map(run => [run.run_id, run]));
  runs.forEach(run => byId.set(run.run_id, run));
  return [...byId.values()].sort(
    (a, b) => b.start_ms - a.start_ms || a.run_id.localeCompare(b.run_id)
  );
}

/** The runs whose parent is not among `runs`. */
export function topLevelRuns(runs: IRun[]): IRun[] {
  const held = new Set(runs.map(run => run.run_id));
  return runs.filter(run => !run.parent_run_id || !held.has(run.parent_run_id));
}

/** How the panel lists runs: newest first (as held), or most GPU energy first. */
export type RunOrder = 'newest' | 'energy';

/** `runs` (newest first) in `order`; by energy, runs without a measured energy come last, newest first. */
export function orderRuns(runs: IRun[], order: RunOrder): IRun[] {
  if (order === 'newest') {
    return runs;
  }
  const energy = (run: IRun) => run.energy_watt_hours ?? -Infinity;
  return [...runs].sort((a, b) => (energy(a) === energy(b) ? 0 : energy(b) > energy(a) ? 1 : -1));
}

/**
 * Start of the runs to ask for again, in the server's clock: the start of the oldest run held as
 * running, or of the newest run held (`runs` newest first). Every new run, and every run that may
 * have changed (ended, logged metrics), started at or after it; `null` with no run held.
 */
export function pollSince(runs: IRun[]): number | null {
  if (runs.length === 0) {
    return null;
  }
  const starts = [
    runs[0].start_ms,
    ...runs.filter(run => run.status === 'RUNNING').map(run => run.start_ms)
  ];
  return Math.min(...starts);
}

/** The page of the MLflow UI at `uiUrl` comparing `runIds` of `runs`; `null` without a UI or runs. */
export function compareUrl(uiUrl: string | null, runs: IRun[], runIds: string[]): string | null {
  if (!uiUrl || runIds.length === 0) {
    return null;
  }
  const chosen = runs.filter(run => runIds.includes(run.run_id));
  const experiments = [...new Set(chosen.map(run => run.experiment_id))].sort();
  const ids = JSON.stringify(chosen.map(run => run.run_id));
  return (
    `${uiUrl}#/compare-runs?runs=${encodeURIComponent(ids)}` +
    `&experiments=${encodeURIComponent(JSON.stringify(experiments))}`
  );
}
