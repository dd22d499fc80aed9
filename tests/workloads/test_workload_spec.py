"""Workload YAML validation: every bad file exits 2 with file, line and field, and creates nothing."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from workload_helpers import write_workload

from jupyter_air.cli import main
from jupyter_air.workloads.file.loader import WorkloadError, load_workload

BAD = Path(__file__).parent / "bad"
#: What a value that starts with '*', unquoted, is told (the line as it must be written follows).
STAR = "not valid YAML: a value that starts with '*' must be quoted (YAML reads '*' as an alias): write "

CASES = [
    ("unknown_top_key.yaml", "unknown_top_key.yaml:4: max_retry: unknown key; did you mean 'max_retries'?"),
    (
        "unknown_nested_key.yaml",
        "unknown_nested_key.yaml:5: compute.acelerator_type: unknown key; did you mean 'accelerator_type'?",
    ),
    ("missing_command.yaml", "missing_command.yaml:1: command: required field is missing"),
    ("wrong_type.yaml", "wrong_type.yaml:5: max_retries: Input should be a valid integer (got 'two')"),
    ("negative_timeout.yaml", "negative_timeout.yaml:4: timeout_minutes: Input should be greater than 0 (got -5)"),
    ("not_yaml.yaml", "not_yaml.yaml:3: not valid YAML: the [ list begun on line 2 is not closed with ']'"),
    (
        "bad_indentation.yaml",
        "bad_indentation.yaml:5: not valid YAML: bad indentation: this line starts in column 3, but the keys of the "
        "mapping begun on line 1 start in column 1",
    ),
    (
        "list_at_top.yaml",
        "list_at_top.yaml:1: the workload must be a mapping with experiment_name and command, not a list",
    ),
    ("empty.yaml", "empty.yaml:1: the workload must be a mapping with experiment_name and command, not empty"),
    (
        "reserved_env.yaml",
        "reserved_env.yaml:5: env_variables.MLFLOW_RUN_ID: MLFLOW_RUN_ID is set by air for every attempt",
    ),
    (
        "env_name_newline.yaml",
        "env_name_newline.yaml:5: env_variables.'FOO\\n': 'FOO\\n' is not a valid environment variable",
    ),
    ("env_value_nul.yaml", "env_value_nul.yaml:5: env_variables.HF_TOKEN: contains a NUL character"),
    ("param_key.yaml", "param_key.yaml:5: parameters.lr@1: parameter name 'lr@1' may only contain letters"),
    ("alias_bomb.yaml", "alias_bomb.yaml:9: YAML aliases here expand to more than 10000 values"),
    ("duplicate_key.yaml", "duplicate_key.yaml:4: command: duplicate key (first set on line 2); keep one"),
    ("missing_root.yaml", "missing_root.yaml:5: code_source.root_path:"),
    ("bad_accelerator_type.yaml", "bad_accelerator_type.yaml:5: compute.accelerator_type: String should match pattern"),
    (
        "schedule_expression.yaml",
        "schedule_expression.yaml:6: schedule.quartz_cron_expression: not a valid Quartz expression",
    ),
    (
        "schedule_five_fields.yaml",
        "schedule_five_fields.yaml:6: schedule.quartz_cron_expression: 5 fields: a Quartz expression starts with "
        "seconds (seconds minutes hours day-of-month month day-of-week [year]); for 02:00 daily write '0 0 2 * * ?'",
    ),
    (
        "schedule_too_often.yaml",
        "schedule_too_often.yaml:6: schedule.quartz_cron_expression: fires 5 s apart; a schedule fires at most "
        "every 10 s: e.g. '*/10 * * * * ?' (got '*/5 * * * * ?')",
    ),
    (
        "schedule_both_days.yaml",
        "schedule_both_days.yaml:6: schedule.quartz_cron_expression: both day-of-month (1) and day-of-week (MON) "
        "are set; put '?' in one of them",
    ),
    (
        "schedule_timezone.yaml",
        "schedule_timezone.yaml:7: schedule.timezone_id: unknown time zone; did you mean 'America/Sao_Paulo'? "
        "(got 'America/Sao_Paolo')",
    ),
    ("schedule_unknown_key.yaml", "schedule_unknown_key.yaml:7: schedule.timezone: unknown key; did you mean"),
    (
        "schedule_unquoted.yaml",
        f'schedule_unquoted.yaml:6: {STAR}quartz_cron_expression: "* * * * *"',
    ),
]


def assert_nothing_created(air, mlflow_client, experiment: str) -> None:
    assert not (air.home / "jobs.db").exists()
    assert mlflow_client.get_experiment_by_name(experiment) is None


@pytest.mark.parametrize("name, expected", CASES, ids=[c[0] for c in CASES])
def test_bad_workload_exits_2_with_its_message_and_creates_nothing(name, expected, air, mlflow_client, capsys):
    # Given a workload file with one mistake
    path = BAD / name
    named = re.search(r"experiment_name: (\S+)", path.read_text())
    experiment = named.group(1) if named else "air-tests-never-created"

    # When it is submitted
    code = main(["run", "-f", str(path)])

    # Then air exits 2, names the file, line and field, and records nothing anywhere
    err = capsys.readouterr().err
    assert code == 2
    assert expected in err, err
    assert_nothing_created(air, mlflow_client, experiment)


@pytest.mark.parametrize(
    "text, expected",
    [
        (  # a flow mapping: the value ends at its comma
            "schedule: {quartz_cron_expression: */10 * * * * ?, timezone_id: UTC}",
            f'wl.yaml:1: {STAR}quartz_cron_expression: "*/10 * * * * ?"',
        ),
        ('command: python\nargs:\n  - *"x"  # a list item', f"wl.yaml:3: {STAR}'*\"x\"'"),
        (
            "command: *train",
            "wl.yaml:1: not valid YAML: '*train' reads as a YAML alias, and no '&train' anchor is set: if it is text, "
            'write command: "*train"',
        ),
    ],
)
def test_a_value_starting_with_a_star_is_shown_quoted(text, expected):
    # Given a workload whose value starts with '*', unquoted, When it is loaded
    with pytest.raises(WorkloadError) as error:
        load_workload("wl.yaml", text=text + "\n")

    # Then the one problem names the line and shows the line as it must be written
    assert error.value.problems == [expected]


def test_every_error_is_reported_in_one_pass_one_line_each(air, mlflow_client, capsys):
    # Given a file with a wrong type on a field of several types, a reserved variable and a missing folder
    # When it is submitted
    code = main(["run", "-f", str(BAD / "many_errors.yaml")])

    # Then each problem is one line, in file order, all in one pass, and nothing is created
    err = capsys.readouterr().err
    assert code == 2
    problems = [line.strip() for line in err.splitlines()[1:]]
    assert [p.split(": ", 2)[1] for p in problems] == [
        "timeout_minutes",
        "env_variables.MLFLOW_RUN_ID",
        "code_source.root_path",
    ], problems
    assert problems[0].endswith("timeout_minutes: expected a number (got 'soon')")
    assert_nothing_created(air, mlflow_client, "bad-many")


def test_a_relative_artifact_location_is_relative_to_the_workload_file(tmp_path, capsys):
    # Given a workload in a folder naming ./vol/artifacts, submitted from somewhere else
    path = write_workload(tmp_path, command="true", mlflow_artifact_location="./vol/artifacts")

    # When it is resolved
    assert main(["run", "-f", str(path), "--dry-run", "-o", "json"]) == 0

    # Then the location is under the workload's folder, as code_source.root_path is
    workload = json.loads(capsys.readouterr().out)["workload"]
    assert workload["mlflow_artifact_location"] == str(tmp_path / "vol" / "artifacts")
    assert workload["retry_delay_seconds"] == 5


def test_bad_workload_through_the_console_entry_point(air, mlflow_client):
    # Given the real command line, When a file with an unknown key is submitted
    result = air("run", "-f", str(BAD / "unknown_top_key.yaml"))

    # Then it exits 2 with the hint, and nothing is created
    assert result.returncode == 2
    assert "did you mean 'max_retries'?" in result.stderr
    assert result.stdout == ""
    assert_nothing_created(air, mlflow_client, "bad-unknown")


def test_override_sets_nested_fields_with_yaml_types(air, tmp_path, capsys):
    # Given a valid workload
    path = write_workload(tmp_path, command=f"{sys.executable} train.py", parameters={"lr": 0.1})

    # When it is resolved with overrides
    code = main(
        [
            "run",
            "-f",
            str(path),
            "--dry-run",
            "-o",
            "json",
            "--override",
            "max_retries=3",
            "--override",
            "parameters.lr=0.003",
            "--override",
            "env_variables.HF_HOME=/data/hf",
            "--override",
            "timeout_minutes=1.5",
        ]
    )

    # Then the resolved workload carries them, typed, with defaults filled in and nothing started
    assert code == 0
    resolved = json.loads(capsys.readouterr().out)["workload"]
    assert resolved["max_retries"] == 3
    assert resolved["parameters"] == {"lr": 0.003}
    assert resolved["env_variables"] == {"HF_HOME": "/data/hf"}
    assert resolved["timeout_minutes"] == 1.5
    assert resolved["mlflow_run_name"] == "air-tests"
    assert resolved["code_source"]["root_path"] == str(tmp_path)
    assert not (air.home / "jobs.db").exists()


@pytest.mark.parametrize(
    "override, expected",
    [
        (
            "compute.num_acelerators=1",
            "--override: compute.num_acelerators: unknown key; did you mean 'num_accelerators'?",
        ),
        ("max_retries=lots", "--override: max_retries: Input should be a valid integer (got 'lots')"),
        ("max_retries", "expected FIELD.PATH=VALUE"),
        ("command.sub=1", "command is not a mapping"),
    ],
)
def test_bad_override_exits_2(override, expected, air, tmp_path, capsys):
    # Given a valid workload, When an override is wrong
    path = write_workload(tmp_path, command="echo hi")
    code = main(["run", "-f", str(path), "--override", override])

    # Then air names the override as the place of the error
    assert code == 2
    assert expected in capsys.readouterr().err
    assert not (air.home / "jobs.db").exists()


def test_human_dry_run_prints_the_resolved_yaml(air, tmp_path, capsys):
    path = write_workload(tmp_path, command="echo hi", mlflow_run_name="baseline")
    assert main(["run", "-f", str(path), "--dry-run"]) == 0
    resolved = yaml.safe_load(capsys.readouterr().out)
    assert resolved["mlflow_run_name"] == "baseline"
    assert resolved["compute"] == {"num_accelerators": 0, "accelerator_type": None}


def test_a_missing_file_names_the_one_meant_or_where_it_looked_and_creates_nothing(
    air, mlflow_client, tmp_path, monkeypatch, capsys
):
    # Given hello.yaml in the current folder
    write_workload(tmp_path, "hello.yaml", experiment_name="bad-missing-file", command="true")
    monkeypatch.chdir(tmp_path)

    # When hello.yml is submitted, Then air exits 2 naming the file that is there
    assert main(["run", "-f", "hello.yml"]) == 2
    assert "hello.yml: no such file; did you mean 'hello.yaml'?" in capsys.readouterr().err
    # And for a name like none there it says where it looked, and for a missing folder which one
    assert main(["run", "-f", "nightly.yaml"]) == 2
    assert f"nightly.yaml: no such file in {tmp_path.resolve()}" in capsys.readouterr().err
    assert main(["run", "-f", "conf/hello.yaml"]) == 2
    assert f"conf/hello.yaml: no such file: there is no folder 'conf' (relative to {tmp_path})" in (
        capsys.readouterr().err
    )
    assert_nothing_created(air, mlflow_client, "bad-missing-file")
