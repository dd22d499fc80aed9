"""What a call sends to its ranks: its function and arguments pickled with cloudpickle, keeping code objects' file
names, and the calling process's import path, folder and notebook source lines, so worker tracebacks can show
them."""

from __future__ import annotations

import io
import linecache
import os
import sys
import types
from collections import ChainMap

from jupyter_air.training.errors import DistributedError


def _pickler_class():
    import cloudpickle

    reduce_code = cloudpickle.Pickler.dispatch_table[types.CodeType]

    def reduce_code_keeping_filename(code: types.CodeType):
        constructor, args = reduce_code(code)
        # cloudpickle writes "<dynamic-code>" where the file name goes; put the real one back.
        return constructor, tuple(code.co_filename if a == "<dynamic-code>" else a for a in args)

    class Pickler(cloudpickle.Pickler):
        dispatch_table = ChainMap({types.CodeType: reduce_code_keeping_filename}, cloudpickle.Pickler.dispatch_table)

    return Pickler


def dumps(obj) -> bytes:
    """Pickle ``obj`` by value where needed (like ``cloudpickle.dumps``), keeping code file names."""
    buffer = io.BytesIO()
    _pickler_class()(buffer).dump(obj)
    return buffer.getvalue()


def _picklable(value) -> bool:
    try:
        dumps(value)
    except Exception:  # noqa: BLE001 - any pickling failure means the value cannot travel
        return False
    return True


def _names_read(code: types.CodeType) -> set[str]:
    """The global names ``code`` and the functions defined inside it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def culprit(function, args: tuple, kwargs: dict) -> str | None:
    """Which part of a call cannot be pickled: an argument, or a global or closure variable the function reads
    (None when none alone is the cause)."""
    parts = [(f"argument {i}", value) for i, value in enumerate(args)]
    parts += [(f"argument {name}=", value) for name, value in kwargs.items()]
    code = getattr(function, "__code__", None)
    if code is not None:
        scope = getattr(function, "__globals__", {})
        used = f"that {getattr(function, '__qualname__', 'the function')} uses"
        parts += [(f"the global {n!r} {used}", scope[n]) for n in sorted(_names_read(code)) if n in scope]
        cells = zip(code.co_freevars, getattr(function, "__closure__", None) or (), strict=False)
        parts += [(f"the variable {name!r} {used} from its enclosing function", c.cell_contents) for name, c in cells]
    for where, value in parts:
        if not _picklable(value):
            return f"{where} (a {type(value).__module__}.{type(value).__qualname__})"
    return None


def pack(function, args: tuple, kwargs: dict) -> bytes:
    """The call's function and arguments as one pickle; raises DistributedError when they cannot travel."""
    try:
        return dumps({"function": function, "args": args, "kwargs": kwargs})
    except Exception as exc:
        where = culprit(function, args, kwargs)
        raise DistributedError(
            f"cannot send {where or 'the function or its arguments'} to the workers: {type(exc).__name__}: {exc}."
            " Pass picklable arguments (tensors, numbers, paths) and create open files, locks or"
            " connections inside the function."
        ) from exc


def call_context() -> dict:
    """What ranks need from the calling process: its import path, folder and notebook source lines."""
    return {"sys_path": list(sys.path), "cwd": os.getcwd(), "sources": notebook_sources()}


def notebook_sources() -> dict[str, list[str]]:
    """Source lines of code with no file on disk (notebook cells), so worker tracebacks can show them."""
    return {
        name: list(entry[2])
        for name, entry in linecache.cache.copy().items()  # one C call: a warning on another thread may add lines
        if len(entry) == 4 and entry[1] is None and entry[2]
    }
