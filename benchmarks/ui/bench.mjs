// In-page part of the chart-update benchmark: times one poll's render of the panel's charts.
import { GpuCharts, readTheme } from '/lib/gpu/charts.js';
import { appendPayload, capHistory, emptyHistory } from '/lib/gpu/history.js';

const params = new URLSearchParams(location.search);
const GPUS = Number(params.get('gpus') ?? 8);
const SAMPLES = Number(params.get('samples') ?? 720);
const UPDATES = Number(params.get('updates') ?? 20);
const INTERVAL_MS = 10_000;
const WINDOW_MS = (SAMPLES - 1) * INTERVAL_MS;
const MAX_GAP_MS = 2.5 * INTERVAL_MS;
const START_MS = Date.UTC(2026, 0, 1);

/** A poll answer with `count` samples starting at sample number `first`. */
function payload(first, count) {
  const ts = Array.from({ length: count }, (_, k) => START_MS + (first + k) * INTERVAL_MS);
  const series = f => Array.from({ length: GPUS }, (_, gpu) => ts.map((t, k) => f(first + k, gpu)));
  return {
    timestamps_ms: ts,
    gpus: {
      utilization_percent: series((k, gpu) => 50 + 45 * Math.sin(k / 40 + gpu)),
      memory_used_bytes: series((k, gpu) => (20 + 10 * Math.sin(k / 90 + gpu)) * 1024 ** 3),
      temperature_celsius: series((k, gpu) => 60 + 15 * Math.sin(k / 60 + gpu)),
      power_watts: series(() => 300)
    },
    host: { cpu_percent: ts.map(() => 10), memory_used_bytes: ts.map(() => 8 * 1024 ** 3) }
  };
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function summary(times) {
  const sorted = [...times].sort((a, b) => a - b);
  return { median_ms: median(times), min_ms: sorted[0], max_ms: sorted[sorted.length - 1], runs: times.length };
}

const nextFrame = () => new Promise(resolve => requestAnimationFrame(() => resolve()));

async function run() {
  const host = document.getElementById('host');
  const history = emptyHistory(GPUS);
  appendPayload(history, payload(0, SAMPLES));
  let next = SAMPLES;
  // The panel's words in English: what the charts' titles and legends are made of.
  const trans = { __: (text, ...args) => args.reduce((s, arg, i) => s.replace(`%${i + 1}`, arg), text) };
  const make = () =>
    new GpuCharts({ host, gpuCount: GPUS, theme: readTheme(host), trans, width: host.clientWidth, windowMs: WINDOW_MS });

  // Baseline: re-creating the three uPlot charts on every poll.
  const recreate = [];
  let current = make();
  for (let i = 0; i < UPDATES + 3; i++) {
    await nextFrame();
    appendPayload(history, payload(next++, 1));
    capHistory(history, WINDOW_MS);
    const t0 = performance.now();
    current.dispose();
    current = make();
    current.update(history, WINDOW_MS, MAX_GAP_MS);
    const t1 = performance.now();
    if (i >= 3) {
      recreate.push(t1 - t0);
    }
  }
  current.dispose();

  // The panel: charts created once, each poll appends one sample and updates them in place.
  const charts = make();
  charts.update(history, WINDOW_MS, MAX_GAP_MS);
  const inPlace = [];
  for (let i = 0; i < UPDATES + 3; i++) {
    await nextFrame();
    appendPayload(history, payload(next++, 1));
    capHistory(history, WINDOW_MS);
    const t0 = performance.now();
    charts.update(history, WINDOW_MS, MAX_GAP_MS);
    const t1 = performance.now();
    if (i >= 3) {
      inPlace.push(t1 - t0);
    }
  }
  const points = history.timestampsMs.length;
  // The charts stay on the page for an optional screenshot.

  return {
    gpus: GPUS,
    samples: points,
    update_in_place: summary(inPlace),
    baseline_recreate: summary(recreate),
    user_agent: navigator.userAgent
  };
}

window.benchResult = run().catch(error => ({ error: String(error && error.stack ? error.stack : error) }));
