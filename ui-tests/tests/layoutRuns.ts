/** The runs the simulated server's layout tests shade on its GPU charts, and checks of their labels. */
import type { Locator, PlaywrightWorkerArgs, TestInfo } from '@playwright/test';
import { expect } from '@jupyterlab/galata';
import { execFileSync } from 'child_process';

import { SIMULATED_AIR_HOME } from '../playwright.config';

const HOSTILE = '<img src=x onerror="window.__pwned=1">';

/**
 * Twelve runs with long names, nested and overlapping, two still running: name, start and end in seconds
 * before the newest GPU sample, all within the 40 s of samples held (so they spread over the charts,
 * which span the samples held): a sweep's six trials, then six runs in the last 14 s.
 */
export const RUNS: [string, number, number | null][] = [
  ['lr-sweep-trial-01', 39, 30],
  ['lr-sweep-trial-02', 36, 27],
  ['lr-sweep-trial-03', 33, 24],
  ['lr-sweep-trial-04', 30, 21],
  ['lr-sweep-trial-05', 27, 18],
  ['lr-sweep-trial-06', 24, 15],
  ['preprocess-imagenet-shards-train-split', 14, 3],
  [`resnet50-lr-sweep-warmup-cosine ${HOSTILE}`, 12, null],
  ['eval-top5-accuracy-holdout-set', 10, 8],
  ['nested-call-rank0-gloo-allreduce', 9, 6],
  ['checkpoint-upload-to-bucket', 7, 5],
  ['tokenizer-warmup-and-cache-fill', 4, null]
];

/** Record runs in the server's store as notebook calls do (`once`: unless the experiment has runs already). */
export function createRuns(
  runs: { name: string; start_ms: number; end_ms: number | null }[],
  once = false
): void {
  const code = [
    'import json, sys',
    'from jupyter_air.tracking.store import client, ensure_experiment',
    'experiment = ensure_experiment("layout")',
    '# A worker started again after a failed test, or another file of tests, finds them recorded already.',
    'if sys.argv[2] == "once" and client().search_runs([experiment], max_results=1):',
    '    sys.exit(0)',
    'for r in json.loads(sys.argv[1]):',
    '    tags = {"air.source": "magic"}',
    '    run = client().create_run(experiment, start_time=r["start_ms"], tags=tags, run_name=r["name"])',
    '    if r["end_ms"] is not None:',
    '        client().set_terminated(run.info.run_id, end_time=r["end_ms"])'
  ].join('\n');
  const args = ['-c', code, JSON.stringify(runs), once ? 'once' : 'always'];
  execFileSync(process.env.JUPYTER_AIR_UI_PYTHON ?? 'python', args, {
    env: { ...process.env, AIR_HOME: SIMULATED_AIR_HOME, MLFLOW_TRACKING_URI: '' }
  });
}

/**
 * Record `RUNS` once per server, once it holds the 40 s they span (it samples every 2 s; the charts ask for the
 * runs active since their oldest sample). For a `beforeAll` of 120 s.
 */
export async function seedRuns(
  playwright: PlaywrightWorkerArgs['playwright'],
  testInfo: TestInfo
): Promise<void> {
  const http = await playwright.request.newContext({ baseURL: testInfo.project.use.baseURL });
  let timestamps: number[] = [];
  await expect
    .poll(
      async () => {
        const answer = await http.get('/jupyter-air/gpu');
        timestamps = (await answer.json()).timestamps_ms;
        return timestamps[timestamps.length - 1] - timestamps[0];
      },
      { timeout: 90_000, intervals: [2000] }
    )
    .toBeGreaterThan(40_000);
  await http.dispose();
  const newest = timestamps[timestamps.length - 1];
  const runs = RUNS.map(([name, start, end]) => ({
    name,
    start_ms: newest - start * 1000,
    end_ms: end === null ? null : newest - end * 1000
  }));
  createRuns(runs, true);
}

/** Run labels (and "+N" labels) of the utilization chart that reach out of it, or cover another label. */
export async function misplacedLabels(panel: Locator): Promise<string[]> {
  return panel.locator('.jp-Air-chart-utilization .u-over').evaluate(over => {
    const plot = over.getBoundingClientRect();
    const labels = [...over.querySelectorAll('.jp-Air-run-label')].map(label => ({
      name: label.textContent ?? '',
      box: label.getBoundingClientRect()
    }));
    const outside = labels
      .filter(({ box }) => box.left < plot.left - 0.5 || box.right > plot.right + 0.5)
      .map(({ name }) => `outside: ${name}`);
    const covering = labels.flatMap((a, i) =>
      labels
        .slice(i + 1)
        .filter(
          b =>
            a.box.left < b.box.right - 0.5 &&
            b.box.left < a.box.right - 0.5 &&
            a.box.top < b.box.bottom - 0.5 &&
            b.box.top < a.box.bottom - 0.5
        )
        .map(b => `covering: ${a.name} / ${b.name}`)
    );
    return [...outside, ...covering];
  });
}
