"""Cost of the run card: ``.distributed()`` of a no-op on 2 CPU ranks in a real kernel, with and without the card.

Both sides run in one ipykernel, taken in turn round after round so load changes hit both alike: the
card (``AIR_RUN_CARD=widget``, the default in a kernel: widget, thread, metric reads, final snapshot)
against plain text (``AIR_RUN_CARD=text``: the run's line and the ranks' lines printed). Each call is
timed inside the kernel; the client drains every message the kernel sends, as a front end would.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile

from jupyter_client.manager import KernelManager

ROUNDS = 20
GOAL_RATIO = 1.05

SETUP = """
import os, time, json
from jupyter_air import distributed

def noop():
    pass

call = distributed(noop, gpus=2, experiment="bench-run-card")
times = {"text": [], "widget": []}

# The card's own work, measured where it happens: on the cell's thread (show, lines, finish) and the CPU
# time of its update thread, per widget-mode call.
from jupyter_air.run_card.card import RunCard
own = {"cell_thread": [], "card_thread_cpu": []}

def _on_cell_thread(name):
    original = getattr(RunCard, name)
    def timed_method(self, *args):
        started = time.perf_counter()
        try:
            return original(self, *args)
        finally:
            self.bench_seconds = getattr(self, "bench_seconds", 0.0) + time.perf_counter() - started
            if name == "finish" and self.mode == "widget":
                own["cell_thread"].append(self.bench_seconds)
    setattr(RunCard, name, timed_method)

for _name in ("show", "add_lines", "finish"):
    _on_cell_thread(_name)

_keep_up_to_date = RunCard._keep_up_to_date
def _measured_thread(self):
    started = time.thread_time()
    _keep_up_to_date(self)
    own["card_thread_cpu"].append(time.thread_time() - started)
RunCard._keep_up_to_date = _measured_thread

def timed(mode):
    os.environ["AIR_RUN_CARD"] = mode
    started = time.perf_counter()
    call.distributed()
    times[mode].append(time.perf_counter() - started)

timed("text"); timed("widget")  # warm-up: fork server, MLflow store, imports
times = {"text": [], "widget": []}
own = {"cell_thread": [], "card_thread_cpu": []}
"""

ROUND = 'timed("text"); timed("widget")'
REPORT = "print('RESULT' + json.dumps({**times, **own}))"


def _run(client, code: str) -> str:
    """Execute ``code`` and return what it printed, failing loudly on an error."""
    printed: list[str] = []

    def collect(msg) -> None:
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            printed.append(msg["content"]["text"])
        if msg["msg_type"] == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"]))

    reply = client.execute_interactive(code, output_hook=collect, timeout=600)
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"{code!r} failed: {reply['content'].get('evalue')}")
    return "".join(printed)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="air-bench-card-") as tmp:
        env = {**os.environ, "AIR_HOME": os.path.join(tmp, "home")}
        env.pop("MLFLOW_TRACKING_URI", None)
        # IPC sockets in the temporary folder: the kernel listens on no TCP port at all.
        manager = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(tmp, "kernel"))
        manager.start_kernel(env=env, cwd=tmp)
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=60)
            _run(client, SETUP)
            for _ in range(ROUNDS):
                _run(client, ROUND)
            printed = _run(client, REPORT)
        finally:
            client.stop_channels()
            manager.shutdown_kernel(now=True)
    times = json.loads(printed.split("RESULT", 1)[1])
    text, widget = times["text"], times["widget"]
    medians = {"plain text (AIR_RUN_CARD=text)": statistics.median(text), "run card": statistics.median(widget)}
    baseline = medians["plain text (AIR_RUN_CARD=text)"]
    print(f"No-op .distributed() on 2 CPU ranks in one ipykernel, {ROUNDS} warm rounds taking each side in turn.")
    print("Baseline: the same call with the card turned off (AIR_RUN_CARD=text).")
    print(f"  {'':<34} {'median':>8} {'p25-p75':>13}  ratio")
    for label, seconds in medians.items():
        q1, _, q3 = statistics.quantiles([v * 1000 for v in (widget if label == "run card" else text)], n=4)
        print(f"  {label:<34} {seconds * 1000:6.0f} ms {q1:5.0f}-{q3:<5.0f}ms  {seconds / baseline:5.2f}x")
    ratio = medians["run card"] / baseline
    paired = statistics.median(w / t for w, t in zip(widget, text, strict=True))
    verdict = "meets" if ratio <= GOAL_RATIO else "misses"
    print(
        f"card / text: {ratio:.3f}x of medians, {paired:.3f}x median of paired rounds"
        f" ({verdict} the {GOAL_RATIO}x goal); extra per call: {(medians['run card'] - baseline) * 1000:.0f} ms"
    )
    cell, thread = statistics.median(times["cell_thread"]), statistics.median(times["card_thread_cpu"])
    print(
        f"The card's own work per call (medians, less noisy than the wall clock on a shared machine):"
        f" {cell * 1000:.1f} ms on the cell's thread (show, lines, final metrics and snapshot) ="
        f" {cell / baseline:.1%} of the call, plus {thread * 1000:.1f} ms CPU on its update thread."
    )


if __name__ == "__main__":
    main()
