"""The log pump of one workload node: ``python -m jupyter_air.workloads.supervisor.pump NODE_DIR``, the output on stdin.

It is a process of its own, so the workload's output is still written if the supervisor is killed.
When a write fails (a full disk, a file size limit) it says so in one line on stdout, the supervisor's
channel, and keeps draining its input, so the workload never blocks on a full pipe.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from jupyter_air.growing import split_lines
from jupyter_air.workloads.state.logs import MAX_LINE_BYTES, LogWriter

#: Environment variable naming the attempt whose output a pump writes (how leftover pumps are found).
PUMP_ENV = "AIR_LOG_PUMP"
#: Prefix of the line a pump prints when it could not write the log.
FAILED = "log write failed: "


def pump(source: int, writer: LogWriter, report) -> None:
    """Copy lines from the file descriptor ``source`` until EOF; call ``report(reason)`` once if writing fails."""
    pending = b""
    failed = False
    while chunk := os.read(source, 1 << 16):
        if failed:
            continue
        lines, pending = split_lines(pending + chunk)
        while len(pending) > MAX_LINE_BYTES:  # a line that never ends is kept in pieces
            lines.append(pending[:MAX_LINE_BYTES])
            pending = pending[MAX_LINE_BYTES:]
        try:
            for line in lines:
                writer.write(line)
        except OSError as exc:
            failed = True
            report(exc.strerror or str(exc))
    if pending and not failed:
        try:
            writer.write(pending)
        except OSError as exc:
            report(exc.strerror or str(exc))


def _report(reason: str) -> None:
    with contextlib.suppress(OSError):  # the supervisor is gone; whoever notices that fails the job
        print(f"{FAILED}{reason}", flush=True)


def main(argv: list[str]) -> None:
    source = sys.stdin.fileno()
    try:
        writer = LogWriter(Path(argv[0]))
    except OSError as exc:
        _report(exc.strerror or str(exc))
        while os.read(source, 1 << 16):
            pass
        return
    try:
        pump(source, writer, _report)
    finally:
        writer.close()


if __name__ == "__main__":
    main(sys.argv[1:])
