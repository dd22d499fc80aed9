"""When a resident process (AIR_HOME's MLflow server, its zygote) stops with the Jupyter server that started it: the
decision alone, with a clock the test moves. tests/server/test_jupyter_shutdown.py shows it with real servers."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from jupyter_air import procs, residents

GONE = f"{os.getpid()}:1.0"  # this PID with another start time: a process that has exited


@pytest.fixture
def clock(monkeypatch):
    now = SimpleNamespace(t=100.0)
    monkeypatch.setattr(residents, "time", SimpleNamespace(monotonic=lambda: now.t))
    return now


def watch(monkeypatch, tmp_path, starter: str | None) -> residents.StarterWatch:
    if starter is None:
        monkeypatch.delenv(residents.STARTER_ENV, raising=False)
    else:
        monkeypatch.setenv(residents.STARTER_ENV, starter)
    return residents.StarterWatch(residents.holders_dir(tmp_path / "mlflow-server.json"))


def test_without_a_starter_or_while_it_lives_only_the_idle_stop_applies(monkeypatch, tmp_path, clock):
    alone, alive = (
        watch(monkeypatch, tmp_path, None),
        watch(monkeypatch, tmp_path, f"{os.getpid()}:{procs.start_time(os.getpid())}"),
    )
    clock.t += 3600
    assert not alone.should_stop() and not alive.should_stop()


def test_once_the_starter_is_gone_a_resident_nobody_holds_stops_after_the_settling_time(monkeypatch, tmp_path, clock):
    # Given a resident whose starter has exited, and the holder entry it left behind
    gone = watch(monkeypatch, tmp_path, GONE)
    gone.holders.mkdir()
    (gone.holders / GONE.replace(":", "-")).touch()

    # Then it waits for its kernels, killed with it, to go: not before SETTLE_SECONDS
    assert not gone.should_stop()
    clock.t += residents.SETTLE_SECONDS - 0.1
    assert not gone.should_stop()
    # And then stops, the dead holder's entry removed
    clock.t += 0.2
    assert gone.should_stop() and list(gone.holders.iterdir()) == []


def test_a_resident_another_live_process_holds_stays_and_says_for_whom(monkeypatch, tmp_path, clock, capsys):
    # Given a resident whose starter has exited, held by this live process
    kept = watch(monkeypatch, tmp_path, GONE)
    residents.hold(tmp_path / "mlflow-server.json")
    assert [p.name for p in kept.holders.iterdir()] == [f"{os.getpid()}-{procs.start_time(os.getpid())}"]

    # When it decides, Then it stays, names this process in its log, and never stops for its starter again
    assert not kept.should_stop()
    clock.t += residents.SETTLE_SECONDS + 1
    assert not kept.should_stop()
    kept.say_kept()
    assert f"kept for [{os.getpid()}] until idle" in capsys.readouterr().out
    clock.t += 3600
    assert not kept.should_stop()
