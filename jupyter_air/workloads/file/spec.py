"""The workload YAML schema as pydantic models (unknown keys and wrong types are errors)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, model_validator

from jupyter_air.cluster.address import check
from jupyter_air.tracking.lifecycle import MAX_PARAM_VALUE_CHARS, key_problem
from jupyter_air.workloads.file.cron import check_expression, check_timezone

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED_ENV = {
    "MLFLOW_TRACKING_URI",
    "MLFLOW_EXPERIMENT_ID",
    "MLFLOW_RUN_ID",
    "AIR_JOB_RUN_ID",
    "AIR_ATTEMPT",
    "NODE_RANK",
    "NUM_NODES",
    "MASTER_ADDR",
    "MASTER_PORT",
    "CUDA_VISIBLE_DEVICES",
}


def _no_nul(text: str) -> str:
    if "\0" in text:
        raise ValueError("contains a NUL character (\\0), which no command, file name or environment can carry")
    return text


def _env_name(name: str) -> str:
    if not _ENV_NAME.fullmatch(name):
        raise ValueError(f"{name!r} is not a valid environment variable name (letters, digits, _)")
    if name in _RESERVED_ENV:
        raise ValueError(f"{name} is set by air for every attempt; remove it from env_variables")
    return name


def _env_value(value: Any) -> str:
    return _no_nul(("true" if value else "false") if isinstance(value, bool) else str(value))


def _param_name(key: str) -> str:
    problem = key_problem(key)
    if problem:
        raise ValueError(f"parameter name {key!r} {problem} (MLflow refuses it)")
    return key


def _param_value(value: Any) -> Any:
    text = _no_nul(str(value))
    if len(text) > MAX_PARAM_VALUE_CHARS:
        raise ValueError(f"the value is {len(text)} characters long; MLflow keeps at most {MAX_PARAM_VALUE_CHARS}")
    return value


Text = Annotated[StrictStr, AfterValidator(_no_nul)]
EnvName = Annotated[StrictStr, AfterValidator(_env_name)]
EnvValue = Annotated[StrictStr | StrictInt | StrictFloat | bool, AfterValidator(_env_value)]
ParamName = Annotated[StrictStr, AfterValidator(_param_name)]
ParamValue = Annotated[StrictStr | StrictInt | StrictFloat | bool | None, AfterValidator(_param_value)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _ray_address(address: str) -> str:
    return check(address)


class Compute(_Strict):
    """Accelerators an attempt needs in all, and on how many nodes of a Ray cluster (default: as many as they take)."""

    num_accelerators: StrictInt = Field(
        1, ge=0, le=4096, description="GPUs of the attempt in all, spread evenly over its nodes; 0 runs on CPU."
    )
    accelerator_type: StrictStr | None = Field(
        None,
        pattern=r"^GPU_(\d+x)?\S+$",
        description="`GPU_<count>x<model>` or `GPU_<model>` (e.g. `GPU_2xH100`): the node needs at least <count> "
        "GPUs whose name contains <model>.",
    )
    num_nodes: StrictInt | None = Field(
        None, ge=1, le=512, description="Ray nodes to run on (default: as many whole nodes as the GPUs take)."
    )
    ray_address: Annotated[StrictStr, AfterValidator(_ray_address)] | None = Field(
        None,
        description="The Ray cluster: `auto`, `host:6379` or `ray://host:10001` (default: `air run --ray-address`, "
        "then `$AIR_RAY_ADDRESS` when the workload needs more than this machine).",
    )


class CodeSource(_Strict):
    """Where the command runs; `root_path` is relative to the YAML file."""

    root_path: Text = Field(".", description="The command's working folder, relative to the YAML file.")


def _expression(text: str) -> str:
    return check_expression(text)


def _timezone(name: str) -> str:
    return check_timezone(name)


class Schedule(_Strict):
    """When a workload runs by itself: `air run` then records the schedule and runs nothing now."""

    quartz_cron_expression: Annotated[StrictStr, AfterValidator(_expression)] = Field(
        description="Quartz cron: `seconds minutes hours day-of-month month day-of-week [year]`, `?` in one of the "
        "day fields, e.g. `0 0 2 * * ?` (02:00 daily); `L`, `W` and `#` work as in Quartz. At most one fire every "
        "10 s."
    )
    timezone_id: Annotated[StrictStr, AfterValidator(_timezone)] = Field(
        "UTC", description="The IANA time zone the expression is read in (e.g. `Europe/Lisbon`); DST is followed."
    )
    pause_status: Literal["UNPAUSED", "PAUSED"] = Field("UNPAUSED", description="`PAUSED`: recorded, never fired.")
    catchup: Literal["once", "none"] = Field(
        "once",
        description="After fires were missed (no driver ran): `once` fires one job for them all, `none` skips "
        "them and waits for the next fire time.",
    )
    max_concurrent_runs: StrictInt = Field(
        1, ge=1, le=100, description="Jobs of the schedule active at once; a fire beyond them is recorded SKIPPED."
    )


_Principal = Annotated[StrictStr, Field(min_length=1, max_length=255, pattern=r"^[^\s:]+$")]


class Permission(_Strict):
    """Who else may use the job (or the schedule's jobs), and how: one `user` or one `group`, and a `level`."""

    user: _Principal | None = Field(None, exclude_if=lambda v: v is None, description="A user name of the team.")
    group: _Principal | None = Field(None, exclude_if=lambda v: v is None, description="A group of the team.")
    level: Literal["CAN_VIEW", "CAN_MANAGE_RUN", "CAN_MANAGE"] = Field(
        description="`CAN_VIEW`: status and logs; `CAN_MANAGE_RUN`: also cancel and run now; `CAN_MANAGE`: also "
        "change permissions and delete. The submitter is the job's owner (`IS_OWNER`)."
    )

    @model_validator(mode="after")
    def _one_principal(self) -> Permission:
        if (self.user is None) == (self.group is None):
            raise ValueError("give exactly one of user or group")
        return self


class Workload(_Strict):
    """One workload: a shell command, its compute, retries and MLflow settings."""

    experiment_name: Text = Field(
        min_length=1, max_length=250, description="The MLflow experiment of every attempt, created if missing."
    )
    command: Text = Field(min_length=1, description="Run by `/bin/sh` in `code_source.root_path`, once per node.")
    compute: Compute = Field(default_factory=Compute)
    env_variables: dict[EnvName, EnvValue] = Field(
        default_factory=dict,
        description="Added to the command's environment; booleans are exported as `true` / `false`. The variables "
        "air sets itself are refused.",
    )
    parameters: dict[ParamName, ParamValue] = Field(
        default_factory=dict, description="Logged as MLflow parameters of every attempt's run."
    )
    max_retries: StrictInt = Field(
        0, ge=0, le=100, description="Attempts after a failed one; each retry is a new attempt and a new MLflow run."
    )
    retry_delay_seconds: StrictInt | StrictFloat = Field(5, ge=0, le=3600, description="The wait before a retry.")
    timeout_minutes: StrictInt | StrictFloat | None = Field(
        None, gt=0, description="An attempt running longer is stopped and counted as failed (default: no limit)."
    )
    mlflow_run_name: Text | None = Field(
        None,
        min_length=1,
        max_length=250,
        description="Name of every attempt's run (default: `experiment_name`); a retry's is `<name> (retry 1)`, ...",
    )
    mlflow_artifact_location: Text | None = Field(
        None,
        description="Used when the experiment is created; a path is relative to the YAML file.",
    )
    code_source: CodeSource = Field(default_factory=CodeSource)
    schedule: Schedule | None = Field(
        None, description="Run on a timetable instead of now; the schedule is named after `experiment_name`."
    )
    permissions: list[Permission] = Field(
        default_factory=list,
        exclude_if=lambda v: not v,
        description="Grants on the job (on every job of a schedule) besides its owner's: see Job permissions.",
    )

    @property
    def run_name(self) -> str:
        """The MLflow run name of every attempt."""
        return self.mlflow_run_name or self.experiment_name


def field_names(path: tuple[str, ...]) -> list[str]:
    """Allowed keys of the mapping at `path` (for "did you mean" hints); empty for free-form maps."""
    model: Any = Workload
    for part in path:
        field = model.model_fields.get(part)
        annotation = field.annotation if field else None
        members = [a for a in getattr(annotation, "__args__", ()) if a is not type(None)]
        annotation = members[0] if len(members) == 1 else annotation  # an optional section: its model
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)
