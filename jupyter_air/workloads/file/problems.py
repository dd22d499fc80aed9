"""What is wrong with a workload file, in words a person editing it acts on: a file that cannot be read (with the
name it was probably meant to be), YAML that does not parse (PyYAML's messages say how its parser got lost), such
as an unquoted value that starts with `*` (a cron expression often does; YAML reads `*name` as an alias)."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import yaml

#: What PyYAML counts as a line break (its marks number lines by them).
_BREAKS = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


def unreadable(source: Path, label: str, exc: OSError | UnicodeDecodeError) -> str:
    """Why the workload file at ``source`` (``label`` in messages) cannot be read, and what to do about it."""
    if isinstance(exc, UnicodeDecodeError):
        return f"{label}: cannot read the file: it is not UTF-8 text (byte {exc.start}); save it as UTF-8"
    if not isinstance(exc, FileNotFoundError):
        return f"{label}: cannot read the file: {exc.strerror or exc}"
    folder = source.parent
    if not folder.is_dir():
        return f"{label}: no such file: there is no folder {str(folder)!r} (relative to {Path.cwd()})"
    names = {p.stem: p.name for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()}
    close = difflib.get_close_matches(source.stem, sorted(names), n=1, cutoff=0.6)  # by stem: every name ends .yaml
    if close:
        return f"{label}: no such file; did you mean '{folder / names[close[0]]}'?"
    return f"{label}: no such file in {folder.resolve()}"


def yaml_problem(exc: yaml.MarkedYAMLError) -> str:
    """What is wrong, in words a person editing the file acts on (PyYAML's say how its parser got lost)."""
    problem, at, begun = exc.problem or "", exc.problem_mark, exc.context_mark
    opened = f" begun on line {begun.line + 1}" if begun else ""
    if exc.context == "while scanning an alias" and begun:
        return f"a value that starts with '*' must be quoted (YAML reads '*' as an alias): write {_quoted(begun)}"
    if problem.startswith("found undefined alias") and at:
        name = problem.removeprefix("found undefined alias ").strip("'")
        return f"'*{name}' reads as a YAML alias, and no '&{name}' anchor is set: if it is text, write {_quoted(at)}"
    if problem.startswith("expected <block end>") and begun and at:
        if problem.endswith("'-'"):
            return f"a list item ('- ...') among the keys of the mapping{opened}: put the list under a key, indented"
        what = "keys of the mapping" if "mapping" in (exc.context or "") else "items of the list"
        return (
            f"bad indentation: this line starts in column {at.column + 1}, but the {what}{opened} "
            f"start in column {begun.column + 1}; line it up with them (with spaces)"
        )
    if problem == "mapping values are not allowed here":
        return (
            "a ':' where no key can start: indent this key like the keys above it, or quote a value that holds "
            "': ' (e.g. command: \"echo a: b\")"
        )
    if "'\\t'" in problem:
        return "a tab: YAML indents with spaces only"
    if exc.context == "while scanning a quoted scalar":
        return f"the quoted text{opened} is never closed"
    if exc.context in ("while parsing a flow sequence", "while parsing a flow mapping"):
        kind, close = ("[ list", "]") if "sequence" in exc.context else ("{ mapping", "}")
        return f"the {kind}{opened} is not closed with '{close}' (or a ',' is missing) before this point"
    return problem or str(exc)


def _quoted(star: yaml.Mark) -> str:
    """The line whose value starts with the ``*`` at ``star``, that value quoted: ``quartz_cron_expression: "* * *
    * * ?"`` (or the value alone, quoted, where no key is found)."""
    lines = _BREAKS.split(star.buffer) if isinstance(star.buffer, str) else []
    line = lines[star.line].rstrip("\x00") if star.line < len(lines) else ""
    value = re.split(r"\s#", line[star.column :], maxsplit=1)[0].strip() or "*"  # no trailing # comment
    key = re.search(r"([^\s{},\[\]]+):\s*$", line[: star.column])
    if re.search(r"[{\[]", line[: key.start() if key else star.column]):  # in a flow {mapping}: ends at , or }
        value = re.split(r"[,}\]]", value, maxsplit=1)[0].strip()
    quoted = f'"{value}"' if '"' not in value and "\\" not in value else "'" + value.replace("'", "''") + "'"
    return f"{key.group(1)}: {quoted}" if key else quoted
