"""What is wrong with a workload file, in words a person editing it acts on: a file that cannot be read (with the
name it was probably meant to be), YAML that does not parse (PyYAML's messages say how its parser got lost)."""

from __future__ import annotations

import difflib
from pathlib import Path

import yaml


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
