"""Read a workload YAML file: overrides, validation errors with line numbers and "did you mean" hints."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .spec import Workload, field_names

FieldPath = tuple[str, ...]
#: Most values a workload file may hold once its YAML aliases are expanded (a real one holds dozens).
MAX_VALUES = 10_000


class WorkloadError(Exception):
    """The workload file cannot be used; `problems` lists each issue as `file:line: field: message`."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        super().__init__(f"invalid workload {source}:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class ResolvedWorkload:
    """A validated workload with its working directory made absolute."""

    workload: Workload
    source: Path
    root_path: Path

    def as_dict(self) -> dict[str, Any]:
        data = self.workload.model_dump(mode="json")
        for key in ("num_nodes", "ray_address"):  # the scale-out fields show once set (or resolved for a cluster)
            if data["compute"][key] is None:
                del data["compute"][key]
        data["code_source"]["root_path"] = str(self.root_path)
        data["mlflow_run_name"] = self.workload.run_name
        return data


def load_workload(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> ResolvedWorkload:
    """Parse, override and validate the workload at `path`; raise `WorkloadError` on any problem."""
    source = Path(path)
    label = str(path)
    try:
        text = source.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(label, [f"{label}: cannot read the file: {exc}"]) from None
    data, lines = _parse(text, label)
    overridden = {_apply_override(data, item, label) for item in overrides}
    try:
        workload = Workload.model_validate(data)
    except ValidationError as exc:
        raise WorkloadError(label, [_describe(err, lines, overridden, label) for err in exc.errors()]) from None
    root = (source.resolve().parent / workload.code_source.root_path).resolve()
    if not root.is_dir():
        where = _where(("code_source", "root_path"), lines, overridden, label)
        raise WorkloadError(label, [f"{where}code_source.root_path: {root} is not a directory"])
    return ResolvedWorkload(workload=workload, source=source.resolve(), root_path=root)


def _parse(text: str, label: str) -> tuple[dict[str, Any], dict[FieldPath, int]]:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            _refuse_alias_bombs(node, label)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise WorkloadError(label, [f"{label}{line}: not valid YAML: {exc.problem or exc}"]) from None
    except yaml.YAMLError as exc:
        raise WorkloadError(label, [f"{label}: not valid YAML: {exc}"]) from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise WorkloadError(
            label, [f"{label}:1: the workload must be a mapping with experiment_name and command, not {kind}"]
        )
    lines: dict[FieldPath, int] = {}
    duplicates: list[str] = []
    _walk(node, (), lines, duplicates)
    if duplicates:
        raise WorkloadError(label, [f"{label}:{d}" for d in duplicates])
    return data, lines


def _refuse_alias_bombs(root: yaml.Node, label: str) -> None:
    """Refuse a file whose aliases expand to more than MAX_VALUES values before anything expands them."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        if id(node) not in sizes:
            sizes[id(node)] = 0  # a recursive alias counts once
            children = node.value if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) else ()
            pairs = [item for pair in children for item in pair] if isinstance(node, yaml.MappingNode) else children
            total = 1 + sum(size(child) for child in pairs)
            if total > MAX_VALUES:
                raise WorkloadError(
                    label,
                    [
                        f"{label}:{node.start_mark.line + 1}: YAML aliases here expand to more than {MAX_VALUES} "
                        "values (an alias bomb?); write the values out instead of repeating aliases"
                    ],
                )
            sizes[id(node)] = total
        return sizes[id(node)]

    size(root)


def _walk(node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int], duplicates: list[str]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            name, line = str(key.value), key.start_mark.line + 1
            dotted = ".".join(path + (name,))
            if name in seen:
                duplicates.append(f"{line}: {dotted}: duplicate key (first set on line {seen[name]}); keep one")
            seen[name] = line
            child = path + (name,)
            _walk(value, child, lines, duplicates)
            lines[child] = line


def _apply_override(data: dict[str, Any], item: str, label: str) -> FieldPath:
    field, sep, raw = item.partition("=")
    parts = tuple(field.strip().split("."))
    if not sep or not all(parts):
        raise WorkloadError(label, [f"--override {item!r}: expected FIELD.PATH=VALUE, e.g. max_retries=2"])
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    target = data
    for i, part in enumerate(parts[:-1]):
        nxt = target.setdefault(part, {})
        if not isinstance(nxt, dict):
            dotted = ".".join(parts[: i + 1])
            raise WorkloadError(label, [f"--override {item!r}: {dotted} is not a mapping"])
        target = nxt
    target[parts[-1]] = value
    return parts


def _describe(err: dict[str, Any], lines: dict[FieldPath, int], overridden: set[FieldPath], label: str) -> str:
    loc = tuple(str(p) for p in err["loc"] if p != "[key]")  # pydantic marks a mapping key's own error so
    dotted = ".".join(p if p.isprintable() else repr(p) for p in loc) or "(top level)"
    where = _where(loc, lines, overridden, label)
    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = field_names(loc[:-1])
        close = difflib.get_close_matches(loc[-1], allowed, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else f"; allowed keys: {', '.join(allowed)}"
        return f"{where}{dotted}: unknown key{hint}"
    if kind == "missing":
        return f"{where}{dotted}: required field is missing"
    value = err.get("input")
    shown = "" if isinstance(value, dict) or "[key]" in err["loc"] else f" (got {value!r})"
    message = err["msg"].removeprefix("Value error, ")
    return f"{where}{dotted}: {message}{shown}"


def _where(loc: FieldPath, lines: dict[FieldPath, int], overridden: set[FieldPath], label: str) -> str:
    for end in range(len(loc), -1, -1):
        if loc[:end] in overridden:
            return "--override: "
        if loc[:end] in lines:
            return f"{label}:{lines[loc[:end]]}: "
    return f"{label}: "
