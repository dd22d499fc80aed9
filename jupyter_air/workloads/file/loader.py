"""Read a workload YAML file: overrides, validation errors with line numbers and "did you mean" hints."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from jupyter_air.workloads.file.limits import MAX_DEPTH, MAX_FILE_BYTES, alias_bomb, read_limited, too_big, too_deep
from jupyter_air.workloads.file.problems import unreadable, yaml_problem
from jupyter_air.workloads.file.spec import Workload, field_names

FieldPath = tuple[str, ...]


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
    lines: dict[FieldPath, int] = field(default_factory=dict)
    overridden: frozenset[FieldPath] = frozenset()

    def locate(self, problem: str, label: str) -> str:
        """``file:line: field.path: message`` for a ``field.path: message`` problem found after loading (``label``:
        the file as the user named it)."""
        path = tuple(problem.split(":", 1)[0].split("."))
        return f"{_where(path, self.lines, set(self.overridden), label)}{problem}"

    def as_dict(self) -> dict[str, Any]:
        data = self.workload.model_dump(mode="json", exclude={"schedule"} if self.workload.schedule is None else None)
        for key in ("num_nodes", "ray_address"):  # the scale-out fields show once set (or resolved for a cluster)
            if data["compute"][key] is None:
                del data["compute"][key]
        data["code_source"]["root_path"] = str(self.root_path)
        data["mlflow_run_name"] = self.workload.run_name
        return data


def load_workload(
    path: str | Path, overrides: list[str] | tuple[str, ...] = (), label: str | None = None, text: str | None = None
) -> ResolvedWorkload:
    """Parse, override and validate the workload at `path` (named `label` in problems, default `path`; its `text`
    when it was sent, not read here); raise `WorkloadError` on any problem. A file over MAX_FILE_BYTES is refused
    before it is read."""
    source = Path(path)
    label = label or str(path)
    if text is None:
        text = _read(source, label)
    elif (size := len(text.encode("utf-8", "surrogatepass"))) > MAX_FILE_BYTES:
        raise WorkloadError(label, [too_big(label, size, "the workload sent")])
    data, lines = _parse(text, label)
    overridden = {_apply_override(data, item, label) for item in overrides}
    folder = source.resolve().parent
    problems = []
    try:
        workload = Workload.model_validate(data)
    except ValidationError as exc:
        workload = None
        problems = _describe_all(exc.errors(), data, lines, overridden, label)
    code_source = data.get("code_source")
    raw_root = code_source.get("root_path", ".") if isinstance(code_source, dict) else "."
    if isinstance(raw_root, str) and "\0" not in raw_root and not (folder / raw_root).resolve().is_dir():
        where = _where(("code_source", "root_path"), lines, overridden, label)
        problems.append(f"{where}code_source.root_path: {(folder / raw_root).resolve()} is not a directory")
    if problems or workload is None:
        raise WorkloadError(label, sorted(problems, key=lambda p: _line_of(p, label)))
    root = (folder / workload.code_source.root_path).resolve()
    location = workload.mlflow_artifact_location
    if location and "://" not in location:  # a local path: relative to the workload file, like root_path
        workload = workload.model_copy(update={"mlflow_artifact_location": str((folder / location).resolve())})
    return ResolvedWorkload(workload, source.resolve(), root, lines, frozenset(overridden))


def _read(source: Path, label: str) -> str:
    try:
        text, size = read_limited(source)
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError(label, [unreadable(source, label, exc)]) from None
    if text is None:
        raise WorkloadError(label, [too_big(label, size)])
    return text


def _parse(text: str, label: str) -> tuple[dict[str, Any], dict[FieldPath, int]]:
    try:
        if (deep := too_deep(text)) is not None:
            raise WorkloadError(label, [f"{label}:{deep}: lists and mappings nest more than {MAX_DEPTH} deep here"])
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None and (bomb := alias_bomb(node, label)) is not None:
            raise WorkloadError(label, [bomb])
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise WorkloadError(label, [f"{label}{line}: not valid YAML: {yaml_problem(exc)}"]) from None
    except yaml.YAMLError as exc:
        raise WorkloadError(label, [f"{label}: not valid YAML: {exc}"]) from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        problem = f"{label}:1: the workload must be a mapping with experiment_name and command, not {kind}"
        raise WorkloadError(label, [problem])
    lines, duplicates = {}, []
    _walk(node, (), lines, duplicates)
    if duplicates:
        raise WorkloadError(label, [f"{label}:{d}" for d in duplicates])
    return data, lines


def _walk(node: yaml.Node, path: FieldPath, lines: dict[FieldPath, int], dupes: list[str]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, path + (str(index),), lines, dupes)
    elif isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            name, line, child = str(key.value), key.start_mark.line + 1, path + (str(key.value),)
            if name in seen:
                dupes.append(f"{line}: {'.'.join(child)}: duplicate key (first set on line {seen[name]}); keep one")
            seen[name] = line
            _walk(value, child, lines, dupes)
            lines[child] = line


def _apply_override(data: dict[str, Any], item: str, label: str) -> FieldPath:
    field, sep, raw = item.partition("=")
    parts = tuple(field.strip().split("."))
    if not sep or not all(parts):
        raise WorkloadError(label, [f"--override {item!r}: expected FIELD.PATH=VALUE, e.g. max_retries=2"])
    try:
        if too_deep(raw) is not None:
            raise WorkloadError(label, [f"--override {item[:80]!r}: lists and mappings nest over {MAX_DEPTH} deep"])
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


#: What a value must be, by pydantic's error type, for one line about a field that accepts several types.
_EXPECTED = {
    "string_type": "text",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "none_required": "empty (null)",
}


def _describe_all(
    errors: list[dict[str, Any]],
    data: dict[str, Any],
    lines: dict[FieldPath, int],
    overridden: set[FieldPath],
    label: str,
) -> list[str]:
    """One line per field: the errors pydantic gives for each member of a union field become one line."""
    by_field: dict[FieldPath, list[dict[str, Any]]] = {}
    for err in errors:
        by_field.setdefault(_data_path(err["loc"], data), []).append(err)
    described = []
    for path, group in by_field.items():
        expected = [_EXPECTED.get(err["type"]) for err in group]
        if len(group) > 1 and all(expected):
            kinds = list(dict.fromkeys(expected))
            if "a number" in kinds and "a whole number" in kinds:
                kinds.remove("a whole number")
            words = ", ".join(kinds[:-1]) + f" or {kinds[-1]}" if len(kinds) > 1 else kinds[0]
            where = _where(path, lines, overridden, label)
            described.append(f"{where}{'.'.join(path)}: expected {words} (got {_got(group[0].get('input'))})")
        else:
            described.extend(_describe(err, lines, overridden, label) for err in group)
    return described


def _line_of(problem: str, label: str) -> int:
    """The line a problem names (``file:12: ...``), 0 for the file as a whole or an override."""
    return int(head) if (head := problem.removeprefix(f"{label}:").split(":", 1)[0]).isdigit() else 0


def _data_path(loc: tuple, data: Any) -> FieldPath:
    """The part of an error's location that names keys of the file (pydantic adds union member tags)."""
    path, node = [], data
    for part in loc:
        in_mapping = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if in_mapping or in_list:
            path.append(str(part))
            node = node[part]
    return tuple(path) or tuple(str(p) for p in loc[:1])


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
    shown = "" if isinstance(value, dict) or "[key]" in err["loc"] else f" (got {_got(value)})"
    message = err["msg"].removeprefix("Value error, ")
    return f"{where}{dotted}: {message}{shown}"


def _got(value: Any, longest: int = 200) -> str:
    """The value a problem names, as Python writes it, cut after ``longest`` characters."""
    text = repr(value)
    return text if len(text) <= longest else f"{text[:longest]}... ({len(text):,} characters)"


def _where(loc: FieldPath, lines: dict[FieldPath, int], overridden: set[FieldPath], label: str) -> str:
    for end in range(len(loc), -1, -1):
        if loc[:end] in overridden:
            return "--override: "
        if loc[:end] in lines:
            return f"{label}:{lines[loc[:end]]}: "
    return f"{label}: "
