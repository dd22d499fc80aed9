"""The workload YAML schema as pydantic models (unknown keys and wrong types are errors)."""

from __future__ import annotations

import re
from typing import Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, field_validator

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RESERVED_ENV = {
    "MLFLOW_TRACKING_URI",
    "MLFLOW_EXPERIMENT_ID",
    "MLFLOW_RUN_ID",
    "AIR_JOB_RUN_ID",
    "AIR_ATTEMPT",
    "NODE_RANK",
    "NUM_NODES",
    "CUDA_VISIBLE_DEVICES",
}
Scalar = Union[StrictStr, StrictInt, StrictFloat, bool, None]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Compute(_Strict):
    """Accelerators the workload needs on one node."""

    num_accelerators: StrictInt = Field(1, ge=0, le=64)
    accelerator_type: Optional[StrictStr] = Field(None, pattern=r"^GPU_(\d+x)?\S+$")


class CodeSource(_Strict):
    """Where the command runs; `root_path` is relative to the YAML file."""

    root_path: StrictStr = "."


class Workload(_Strict):
    """One workload: a shell command, its compute, retries and MLflow settings."""

    experiment_name: StrictStr = Field(min_length=1, max_length=250)
    command: StrictStr = Field(min_length=1)
    compute: Compute = Field(default_factory=Compute)
    env_variables: dict[StrictStr, Union[StrictStr, StrictInt, StrictFloat, bool]] = Field(default_factory=dict)
    parameters: dict[StrictStr, Scalar] = Field(default_factory=dict)
    max_retries: StrictInt = Field(0, ge=0, le=100)
    timeout_minutes: Optional[Union[StrictInt, StrictFloat]] = Field(None, gt=0)
    mlflow_run_name: Optional[StrictStr] = Field(None, min_length=1, max_length=250)
    mlflow_artifact_location: Optional[StrictStr] = None
    code_source: CodeSource = Field(default_factory=CodeSource)

    @field_validator("env_variables")
    @classmethod
    def _env_names(cls, value: dict[str, Any]) -> dict[str, str]:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ValueError(f"{name!r} is not a valid environment variable name (letters, digits, _)")
            if name in _RESERVED_ENV:
                raise ValueError(f"{name} is set by air for every attempt; remove it from env_variables")
        return {k: _env_str(v) for k, v in value.items()}

    @property
    def run_name(self) -> str:
        """The MLflow run name of every attempt."""
        return self.mlflow_run_name or self.experiment_name


def _env_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_names(path: tuple[str, ...]) -> list[str]:
    """Allowed keys of the mapping at `path` (for "did you mean" hints); empty for free-form maps."""
    model: Any = Workload
    for part in path:
        field = model.model_fields.get(part)
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)
