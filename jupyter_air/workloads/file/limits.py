"""How big a workload file may be, checked before it is parsed or expanded: its size in bytes (read no further),
the nesting of its lists and mappings, the values its YAML aliases repeat. Each check returns the problem, or None.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from jupyter_air.format import byte_size

#: Largest workload file (or workload sent to a job service), in bytes: a real one is a few KB.
MAX_FILE_BYTES = 1_000_000
#: Most values the YAML aliases of a workload file may add once expanded (a real one repeats dozens, if any).
MAX_ALIAS_VALUES = 10_000
#: Deepest nesting of lists and mappings a workload file (or an override) may have (a real one has 3 levels).
MAX_DEPTH = 50


def read_limited(source: Path) -> tuple[str | None, int | None]:
    """The UTF-8 text of the file at ``source``, or None and its size when it is over MAX_FILE_BYTES (told by its
    size before reading; a file of no size, such as a pipe, is read no further than the limit: its size is None).
    Raises OSError or UnicodeDecodeError."""
    with open(source, encoding="utf-8") as stream:
        size = os.fstat(stream.fileno()).st_size
        if size > MAX_FILE_BYTES:
            return None, size
        text = stream.read(MAX_FILE_BYTES + 1)  # characters: at most four bytes each
    read = len(text.encode("utf-8"))
    return (None, None) if read > MAX_FILE_BYTES else (text, read)


def too_big(label: str, size: int | None, what: str = "the file") -> str:
    """The problem of a workload of ``size`` bytes (None: not known, read no further), over MAX_FILE_BYTES
    (``what``: the file, the workload sent)."""
    found = "over the limit (read no further)" if size is None else f"{byte_size(size)} ({size:,} bytes)"
    return (
        f"{label}: {what} is {found}; a workload file may be at most "
        f"{byte_size(MAX_FILE_BYTES)} ({MAX_FILE_BYTES:,} bytes): keep data in files the command reads, not in it"
    )


def too_deep(text: str) -> int | None:
    """The line where lists and mappings nest deeper than MAX_DEPTH, read as a stream of events (PyYAML builds
    nested values recursively, and would fail on thousands of levels without saying where)."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                return event.start_mark.line + 1
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            depth -= 1
    return None


def alias_bomb(root: yaml.Node, label: str) -> str | None:
    """The problem of a file whose aliases repeat more than MAX_ALIAS_VALUES values once expanded, found on the
    composed nodes (an alias is the node it names, met again) before anything expands them. Values written out,
    however many, never count: the file's size bounds them."""
    sizes: dict[int, int] = {}
    repeated = 0

    def size(node: yaml.Node) -> int:
        nonlocal repeated
        sizes[id(node)] = 0  # a recursive alias counts once
        children = node.value if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)) else ()
        pairs = [item for pair in children for item in pair] if isinstance(node, yaml.MappingNode) else children
        total = 1
        for child in pairs:
            if id(child) in sizes:  # an alias: the values it names, once more
                repeated += sizes[id(child)]
                if repeated > MAX_ALIAS_VALUES:
                    raise _Bomb(node.start_mark.line + 1)
                total += sizes[id(child)]
            else:
                total += size(child)
        sizes[id(node)] = total
        return total

    try:
        size(root)
    except _Bomb as bomb:
        return (
            f"{label}:{bomb.line}: YAML aliases here expand to more than {MAX_ALIAS_VALUES} values (an alias "
            "bomb?); write the values out instead of repeating aliases"
        )
    return None


class _Bomb(Exception):
    def __init__(self, line: int):
        self.line = line
