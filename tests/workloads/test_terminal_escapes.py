"""Names and output never act on the terminal: control characters (an OSC 52 clipboard write) in an experiment name,
a schedule's name or a job's output are written out by `air list`, `air get`, `air schedules` and, on a terminal,
`air logs`; piped, `air logs` passes the output through as it was written."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest
from workload_helpers import write_workload

from jupyter_air.cli import main

CLIPBOARD = "\x1b]52;c;aGkgdGhlcmU=\x07"  # OSC 52: "put 'hi there' on the clipboard"
NAME = f"air-tests-evil{CLIPBOARD}name"
SHOWN = "air-tests-evil\\x1b]52;c;aGkgdGhlcmU=\\x07name"
OUTPUT = f"before{CLIPBOARD}after\ttabbed\x1b[2J"


@pytest.fixture(scope="module")
def evil(module_air, tmp_path_factory):
    """A job run whose experiment name holds an OSC 52 sequence and whose command prints one (and a screen clear)."""
    folder = tmp_path_factory.mktemp("evil")
    command = "printf 'before\\033]52;c;aGkgdGhlcmU=\\007after\\ttabbed\\033[2J\\n'"
    job_id = module_air.submit(write_workload(folder, experiment_name=NAME, command=command))
    assert module_air.wait(job_id)["status"] == "SUCCEEDED"
    return job_id


def on_terminal(air, *args: str) -> str:
    """What `air ARGS` writes to a pseudo-terminal, as the terminal receives it."""
    leader, follower = pty.openpty()
    env = {**air.env, "TERM": "xterm-256color", "COLUMNS": "250"}
    subprocess.run(
        [sys.executable, "-m", "jupyter_air.cli", *args], env=env, stdout=follower, stderr=subprocess.PIPE, timeout=60
    )
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 1 << 16)
        except OSError:  # the terminal is closed once everything was read
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    return received.decode()


@pytest.mark.parametrize("command", [["list", "--all-status"], ["get"]])
def test_a_name_with_control_characters_is_written_out_in_tables(evil, module_air, command):
    # Given a job whose experiment name holds an OSC 52 clipboard write
    args = [*command, evil] if command == ["get"] else command

    # When it is listed or shown, piped and on a terminal
    piped = module_air(*args, check=True).stdout
    terminal = on_terminal(module_air, *args)

    # Then the sequence is shown as text, and no ESC or BEL reaches the reader (a terminal gets only colours)
    assert SHOWN in piped and "\x1b" not in piped and "\x07" not in piped
    assert "\\x1b]52;c;aGkgdGhlcmU=\\x07" in terminal.replace("\r\n", "")
    assert "\x1b]" not in terminal and "\x07" not in terminal


def test_a_schedule_name_with_control_characters_is_written_out(air, tmp_path, capsys):
    # Given a schedule named after an experiment name holding an OSC 52 clipboard write
    timing = {"quartz_cron_expression": "0 0 2 * * ?", "timezone_id": "UTC"}
    path = write_workload(tmp_path, experiment_name=NAME, command="true", schedule=timing)

    # When it is created, listed and shown
    codes = [main(args) for args in (["run", "-f", str(path)], ["schedules", "list"], ["schedules", "get", NAME])]

    # Then each names it with the sequence written out
    out = capsys.readouterr().out
    assert codes == [0, 0, 0]
    assert out.count(SHOWN) == 3 and "\x1b" not in out and "\x07" not in out


def test_logs_on_a_terminal_write_control_characters_out_but_keep_tabs(evil, module_air):
    # Given a job whose output holds an OSC 52 clipboard write, a tab and a screen clear
    # When its log is printed to a terminal
    shown = on_terminal(module_air, "logs", evil)

    # Then the sequences are written out as text, the tab is kept
    assert shown.replace("\r\n", "\n") == "before\\x1b]52;c;aGkgdGhlcmU=\\x07after\ttabbed\\x1b[2J\n"


def test_logs_piped_pass_the_output_through_as_written(evil, module_air):
    # Given the same job, When its log is piped (to a file, another program)
    piped = subprocess.run(
        [sys.executable, "-m", "jupyter_air.cli", "logs", evil], env=module_air.env, capture_output=True, check=True
    ).stdout

    # Then the bytes are the ones the command wrote
    assert piped == OUTPUT.encode() + b"\n"
