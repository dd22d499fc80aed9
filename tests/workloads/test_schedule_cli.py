"""`air run -f` of a scheduled workload, `air schedules ...`, and `air scheduler` drivers as real processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from workload_helpers import write_workload

#: Seconds between two due times of the schedule the drivers share: the shortest a schedule may have.
PERIOD_S = 10


def scheduled(tmp_path, expression="0 0 2 * * ?", **timing):
    spec = {"quartz_cron_expression": expression, "timezone_id": "Europe/Lisbon", **timing}
    return write_workload(tmp_path, experiment_name="nightly-cli", command="python -c pass", schedule=spec)


def test_run_records_the_schedule_prints_three_fires_and_runs_nothing(air, tmp_path, mlflow_client):
    # Given a workload file with a schedule
    path = scheduled(tmp_path)

    # When it is run, then run again with another time
    first = air("run", "-f", str(path), check=True)
    second = air.json("run", "-f", str(path), "--override", "schedule.quartz_cron_expression=0 30 3 * * ?")

    # Then the schedule is created, then updated (one schedule, named after the experiment), and nothing ran
    lines = first.stdout.splitlines()
    assert lines[0] == "schedule nightly-cli created: 0 0 2 * * ? (Europe/Lisbon); nothing runs now"
    assert len(lines) == 5 and all(line.strip().endswith(("(+00:00)", "(+01:00)")) for line in lines[2:])
    assert " 02:00:00 " in lines[2]
    assert second["created"] is False and second["schedule"]["quartz_cron_expression"] == "0 30 3 * * ?"
    assert [s["name"] for s in air.json("schedules", "list")] == ["nightly-cli"]
    assert air.json("list", "--all-status") == []
    assert mlflow_client.get_experiment_by_name("nightly-cli") is None


def test_schedules_commands_pause_resume_delete_and_refuse_unknown_names(air, tmp_path):
    # Given a recorded schedule
    air("run", "-f", str(scheduled(tmp_path)), check=True)

    # When it is paused, read, resumed, misnamed and deleted
    paused = air.json("schedules", "pause", "nightly-cli")
    got = air.json("schedules", "get", "nightly-cli")
    resumed = air.json("schedules", "resume", "nightly-cli")
    wrong = air("schedules", "get", "nightly-clj")
    deleted = air("schedules", "delete", "nightly-cli")

    # Then each says what it did; a wrong name exits 2 with the closest one
    assert paused["pause_status"] == "PAUSED" and paused["next_fire_ms"] is None
    assert got["pause_status"] == "PAUSED" and len(got["next_fire_times_ms"]) == 3
    assert resumed["pause_status"] == "UNPAUSED" and resumed["next_fire_ms"] == resumed["next_fire_times_ms"][0]
    assert wrong.returncode == 2 and "did you mean 'nightly-cli'?" in wrong.stderr
    assert deleted.returncode == 0 and air.json("schedules", "list") == []


def test_run_now_submits_one_job_and_refuses_a_second_while_it_runs(air, tmp_path):
    # Given a schedule whose job runs for minutes
    path = scheduled(tmp_path)
    air("run", "-f", str(path), "--override", "command=python -c 'import time; time.sleep(120)'", check=True)

    # When it is run now twice
    fire = air.json("schedules", "run-now", "nightly-cli")
    again = air("schedules", "run-now", "nightly-cli")

    # Then the first starts a job of the schedule; the second exits 1 naming that job
    assert fire["outcome"] == "SUBMITTED" and fire["manual"] is True
    assert again.returncode == 1 and fire["job_run_id"] in again.stderr
    listed = air.json("list", "--schedule", "nightly-cli")
    assert [j["job_run_id"] for j in listed] == [fire["job_run_id"]]


def jupyter_server(air, folder):
    """A real Jupyter server on AIR_HOME, on a Unix socket, whose periodic check (every 60 s) never comes during a
    test: it fires only because a schedule due before the next check wakes one at its due time."""
    socket = folder / "jupyter.sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", f"--ServerApp.sock={socket}"]
        + ["--JupyterAir.job_check_interval_seconds=60", "--JupyterAir.gpu_source=none"]
        + ["--JupyterAir.mlflow_ui_autostart=False", "--JupyterAir.fork_zygote_at_start=False"],
        env=air.env,
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not socket.exists():
        assert server.poll() is None and time.monotonic() < deadline, "the Jupyter server did not start"
        time.sleep(0.2)
    return server


def test_two_schedulers_and_a_jupyter_server_fire_each_due_time_once_and_one_killed_loses_nothing(
    air, tmp_path, mlflow_client
):
    # Given a schedule every 10 s, and on one AIR_HOME a Jupyter server and two `air scheduler` drivers
    path = scheduled(tmp_path, f"*/{PERIOD_S} * * * * ?", max_concurrent_runs=20)
    air("run", "-f", str(path), check=True)
    server = jupyter_server(air, tmp_path)
    drivers = [air.popen("scheduler"), air.popen("scheduler")]

    # When both run for a due time or two, then one is killed half way between two (no submission under way), the
    # other runs alone for a due time, and the server alone for one or two more
    halfway = PERIOD_S / 2
    time.sleep(PERIOD_S + (halfway - time.time()) % PERIOD_S)
    drivers[0].kill()
    time.sleep(PERIOD_S)
    drivers[1].send_signal(signal.SIGTERM)
    outputs = [d.communicate(timeout=30)[0] for d in drivers]
    time.sleep(PERIOD_S + (halfway - time.time()) % PERIOD_S)
    server.send_signal(signal.SIGTERM)
    server_log = server.communicate(timeout=60)[1]

    # Then every due time while they ran fired exactly one job, whichever driver claimed it
    assert drivers[1].returncode == 0
    fires = sorted(air.json("schedules", "get", "nightly-cli")["fires"], key=lambda f: f["scheduled_ms"])
    times = [f["scheduled_ms"] for f in fires]
    assert len(times) >= 3 and all(b - a == PERIOD_S * 1000 for a, b in zip(times, times[1:], strict=False)), times
    assert all(f["outcome"] == "SUBMITTED" for f in fires), fires
    jobs = air.json("list", "--schedule", "nightly-cli", "--all-status")
    assert sorted(j["job_run_id"] for j in jobs) == sorted(f["job_run_id"] for f in fires)
    by_server = server_log.count("schedule nightly-cli fired: SUBMITTED")
    assert by_server >= 1 and sum(len(o.splitlines()) for o in outputs) + by_server == len(fires), server_log
    # And each job's run carries the schedule and its own fire time
    scheduled_times = set()
    for job in jobs:
        done = air.wait(job["job_run_id"])
        tags = mlflow_client.get_run(done["mlflow_run_id"]).data.tags
        assert tags["air.schedule"] == "nightly-cli"
        scheduled_times.add(tags["air.scheduled_time"])
    assert len(scheduled_times) == len(fires)


def test_scheduler_once_fires_what_is_due_and_exits(air, tmp_path):
    # Given no schedule due
    air("run", "-f", str(scheduled(tmp_path)), check=True)

    # When `air scheduler --once` runs
    result = air("scheduler", "--once", check=True)

    # Then it fires nothing, says which AIR_HOME it drives, and exits 0
    assert result.stdout == "" and str(air.home) in result.stderr
    assert json.loads(air("schedules", "list", "-o", "json").stdout)[0]["fires"] == []
