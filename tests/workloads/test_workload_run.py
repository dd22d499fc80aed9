"""`air run`, `list` and `get` with real supervisors, workloads and MLflow runs."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import textwrap

import pytest
from workload_helpers import write_workload

pytestmark = pytest.mark.local_store  # run links go through the Jupyter server's MLflow UI

TRAIN = textwrap.dedent(
    """
    import os, sys
    print("cwd=" + os.getcwd())
    for key in ("AIR_JOB_RUN_ID", "AIR_ATTEMPT", "NODE_RANK", "NUM_NODES", "CUDA_VISIBLE_DEVICES",
                "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_TRACKING_URI", "HF_HOME"):
        print(f"{key}={os.environ.get(key)}")
    print("args=" + " ".join(sys.argv[1:]))
    print("to stderr", file=sys.stderr)
    import mlflow
    with mlflow.start_run(run_id=os.environ["MLFLOW_RUN_ID"]):
        mlflow.log_metric("loss_value", 0.5)
    print("done")
    """
)


@pytest.fixture(scope="module")
def finished(module_air, tmp_path_factory):
    """A succeeding job (submitted with --watch) and a fail-then-succeed job, run side by side."""
    folder = tmp_path_factory.mktemp("workloads")
    (folder / "code").mkdir()
    (folder / "code" / "train.py").write_text(TRAIN)
    success = write_workload(
        folder,
        "success.yaml",
        experiment_name="air-tests-success",
        command=f"{sys.executable} train.py --epochs 2",
        code_source={"root_path": "code"},
        env_variables={"HF_HOME": "/data/hf"},
        parameters={"lr": 0.001, "epochs": 2},
        mlflow_run_name="baseline",
    )
    retry = write_workload(
        folder,
        "retry.yaml",
        experiment_name="air-tests-retry",
        command='echo "attempt $AIR_ATTEMPT"; test "$AIR_ATTEMPT" = 1',
        max_retries=1,
        retry_delay_seconds=1,
    )
    failing = write_workload(folder, "failing.yaml", command="echo about to fail; exit 3")
    quick = module_air("run", "-f", str(write_workload(folder, "quick.yaml", command="true")), check=True)
    retry_id = module_air.submit(retry)
    watch_failing = module_air.popen("run", "-f", str(failing), "--watch")
    watch = module_air.popen("run", "-f", str(success), "--watch", "-o", "json")
    out, err = watch.communicate(timeout=120)
    failing_out, failing_err = watch_failing.communicate(timeout=120)
    module_air.wait(quick.stdout.strip())
    return {
        "watch_code": watch.returncode,
        "watch_stderr": err,
        "watch_lines": [json.loads(line) for line in out.splitlines()],
        "retry": module_air.wait(retry_id),
        "quick": quick,
        "failing": (watch_failing.returncode, failing_out, failing_err),
        "root": folder / "code",
    }


def test_a_workload_that_succeeds(finished, module_air, mlflow_client, tmp_path):
    # Given a workload submitted with --watch -o json
    summary, *log_lines = finished["watch_lines"]

    # Then the watch streamed its output as JSON lines and exited 0
    assert finished["watch_code"] == 0, finished["watch_stderr"]
    assert summary["status"] == "PENDING" and summary["job_run_id"].startswith("job-")
    assert {tuple(sorted(line)) for line in log_lines} == {("attempt", "line", "node", "ts")}
    printed = [line["line"] for line in log_lines]
    assert printed[-1] == "done" and "to stderr" in printed

    # And the job SUCCEEDED with one attempt, its run FINISHED
    job = module_air.job(summary["job_run_id"])
    assert job["status"] == "SUCCEEDED" and job["exit_code"] == 0 and job["error"] is None
    assert job["num_attempts"] == 1 and job["attempts"][0]["status"] == "FINISHED"
    run_id = job["attempts"][0]["mlflow_run_id"]
    assert job["mlflow_run_id"] == run_id

    # And the command saw the documented environment, in its working directory
    env = dict(line.split("=", 1) for line in printed if "=" in line)
    assert env["cwd"] == str(finished["root"])
    assert env["MLFLOW_RUN_ID"] == run_id and env["MLFLOW_EXPERIMENT_ID"] == job["experiment_id"]
    assert env["MLFLOW_TRACKING_URI"] == module_air.env["MLFLOW_TRACKING_URI"]
    assert (env["AIR_JOB_RUN_ID"], env["AIR_ATTEMPT"], env["NODE_RANK"], env["NUM_NODES"]) == (
        job["job_run_id"],
        "0",
        "0",
        "1",
    )
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["HF_HOME"] == "/data/hf" and env["args"] == "--epochs 2"

    # And the MLflow run has the name, tags, parameters, the workload's metric and system metrics
    run = mlflow_client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == "baseline"
    assert run.info.experiment_id == job["experiment_id"]
    assert run.data.params == {"lr": "0.001", "epochs": "2"}
    assert run.data.tags["air.job_run_id"] == job["job_run_id"] and run.data.tags["air.attempt"] == "0"
    assert run.data.tags["air.gpus"] == "0"  # what `air usage` counts GPU-hours from
    assert run.data.metrics["loss_value"] == 0.5
    assert "system/cpu_utilization_percentage" in run.data.metrics

    # And its output was uploaded as an artifact, identical to what `air logs` shows
    local = mlflow_client.download_artifacts(run_id, "logs/attempt_0/node_0/output.log", str(tmp_path))
    with open(local) as f:
        assert f.read().splitlines() == module_air("logs", job["job_run_id"], check=True).stdout.splitlines()


def test_fail_then_succeed_is_one_job_with_two_mlflow_runs(finished, mlflow_client):
    # Given a command failing on attempt 0 and succeeding on attempt 1, with max_retries 1
    job = finished["retry"]

    # Then one job SUCCEEDED after two attempts, the first FAILED with its exit code
    assert job["status"] == "SUCCEEDED" and job["num_attempts"] == 2 and job["max_retries"] == 1
    first, second = job["attempts"]
    assert (first["attempt"], first["status"], first["exit_code"]) == (0, "FAILED", 1)
    assert first["error"] == "command exited with code 1"
    assert (second["attempt"], second["status"], second["exit_code"]) == (1, "FINISHED", 0)

    # And MLflow holds two runs of the job in its experiment: the first FAILED, the second FINISHED
    runs = mlflow_client.search_runs(
        [job["experiment_id"]], filter_string=f"tags.`air.job_run_id` = '{job['job_run_id']}'"
    )
    by_attempt = {r.data.tags["air.attempt"]: r for r in runs}
    assert set(by_attempt) == {"0", "1"}
    assert by_attempt["0"].info.status == "FAILED" and by_attempt["0"].info.run_id == first["mlflow_run_id"]
    assert by_attempt["1"].info.status == "FINISHED" and by_attempt["1"].info.run_id == second["mlflow_run_id"]
    assert by_attempt["0"].info.run_name == "air-tests-retry"
    assert by_attempt["1"].info.run_name == "air-tests-retry (retry 1)"
    # And the retry waited retry_delay_seconds after the failed attempt
    assert second["started_ms"] - first["ended_ms"] >= 1000


def test_logs_of_each_attempt(finished, module_air):
    job_id = finished["retry"]["job_run_id"]
    assert module_air("logs", job_id, "--retry", "0", check=True).stdout == "attempt 0\n"
    assert module_air("logs", job_id, check=True).stdout == "attempt 1\n"


def test_list_json_and_filters(finished, module_air):
    # Given two ended jobs, When listing
    everything = module_air.json("list", "--all-status")
    active = module_air.json("list")
    retried = module_air.json("list", "--all-status", "--filter", "experiment=air-tests-retry")
    succeeded = module_air.json("list", "--filter", "status=succeeded", "--limit", "1")

    # Then the stable shape is there, active-only is empty, filters and limit apply
    assert active == []
    assert {j["experiment_name"] for j in everything} == {"air-tests-success", "air-tests-retry", "air-tests"}
    assert set(everything[0]) == {
        "job_run_id",
        "status",
        "experiment_name",
        "experiment_id",
        "user",
        "executor",
        "submitted_ms",
        "started_ms",
        "ended_ms",
        "duration_seconds",
        "num_attempts",
        "max_retries",
        "mlflow_run_id",
        "num_accelerators",
        "gpus",
        "exit_code",
        "error",
        "schedule_name",
    }
    assert [j["job_run_id"] for j in retried] == [finished["retry"]["job_run_id"]]
    assert len(succeeded) == 1 and succeeded[0]["status"] == "SUCCEEDED"


def test_list_and_get_for_people(finished, module_air):
    # When stdout is not a terminal, Then list prints plain aligned columns without colour codes
    listing = module_air("list", "--all-status", check=True).stdout.splitlines()
    assert listing[0].split() == [
        "RUN",
        "ID",
        "EXPERIMENT",
        "STATUS",
        "STARTED",
        "DURATION",
        "ATTEMPTS",
        "MLFLOW",
        "RUN",
        "USER",
        "GPUS",
    ]
    row = next(line for line in listing if finished["retry"]["job_run_id"] in line)
    assert "SUCCEEDED" in row and "2/2" in row and "\x1b[" not in row
    assert "no active job runs" in module_air("list").stderr

    detail = module_air("get", finished["retry"]["job_run_id"], check=True).stdout
    assert "Status:" in detail and "SUCCEEDED" in detail and "Attempts:          2 (max retries 1)" in detail
    assert finished["retry"]["attempts"][0]["mlflow_run_id"] in detail


def test_bad_list_filter_and_unknown_job(module_air):
    result = module_air("list", "--filter", "stat=RUNNING")
    assert result.returncode == 2 and "did you mean 'status'?" in result.stderr
    missing = module_air("get", "job-000000000000")
    assert missing.returncode == 2 and "no job run 'job-000000000000'" in missing.stderr


def test_a_job_id_without_its_prefix_is_named(finished, module_air):
    # Given a job, When it is asked for without its `job-` prefix
    job_id = finished["quick"].stdout.strip()
    for command in ("get", "logs", "cancel"):
        result = module_air(command, job_id.removeprefix("job-"))
        # Then air exits 2 naming the id it probably means
        assert result.returncode == 2 and f"did you mean '{job_id}'?" in result.stderr, result.stderr
    # And an id like none says how to list them
    assert "`air list --all-status` lists them" in module_air("get", "0123456789ab").stderr


def test_human_run_prints_only_the_job_run_id(finished, module_air):
    # Given a quick workload submitted without -o json
    result = finished["quick"]

    # Then stdout is the id alone (scripts can capture it) and the hint goes to stderr
    job_id = result.stdout.strip()
    assert job_id.startswith("job-") and "\n" not in job_id
    assert f"air logs {job_id} --follow" in result.stderr
    assert module_air.wait(job_id)["status"] == "SUCCEEDED"


def test_watch_of_a_failing_workload_exits_1(finished, module_air):
    # Given a workload exiting 3, submitted with --watch
    code, out, err = finished["failing"]

    # Then the watch printed its output and the outcome, and exited 1
    job_id, printed = out.splitlines()
    assert code == 1 and printed == "about to fail"
    assert f"{job_id} FAILED: command exited with code 3" in err
    job = module_air.job(job_id)
    assert job["status"] == "FAILED" and job["exit_code"] == 3


def test_a_terminal_gets_a_coloured_table(finished, module_air):
    # Given stdout is a terminal
    leader, follower = pty.openpty()
    env = {**module_air.env, "TERM": "xterm-256color", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)

    # When the job runs are listed
    subprocess.run(
        [sys.executable, "-m", "jupyter_air.cli", "list", "--all-status"],
        env=env,
        stdout=follower,
        stderr=subprocess.PIPE,
        timeout=60,
        check=True,
    )
    os.close(follower)
    shown = os.read(leader, 1 << 16).decode()
    os.close(leader)

    # Then the status is coloured (green for SUCCEEDED) in a table with the same columns
    assert "\x1b[" in shown and "SUCCEEDED" in shown
    assert "EXPERIMENT" in shown and finished["retry"]["job_run_id"] in shown


def test_links_use_the_public_url_and_say_where_it_came_from(finished, module_air):
    # Given a public address for this machine's Jupyter server (c.JupyterAir.public_url exports it)
    job_id = finished["retry"]["job_run_id"]
    env = {**module_air.env, "AIR_PUBLIC_URL": "https://gpu-box.example.org/lab/"}
    shown = subprocess.run(
        [sys.executable, "-m", "jupyter_air.cli", "get", job_id], env=env, capture_output=True, text=True, check=True
    ).stdout
    detail = json.loads(
        subprocess.run(
            [sys.executable, "-m", "jupyter_air.cli", "get", job_id, "-o", "json"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )

    # Then every attempt's link opens its run through that address, and the output says where it came from
    for attempt in detail["attempts"]:
        assert attempt["mlflow_run_url"] == (
            f"https://gpu-box.example.org/lab/jupyter-air/runs/{attempt['mlflow_run_id']}/open"
        )
    assert "MLflow links:" in shown and "from AIR_PUBLIC_URL" in shown
