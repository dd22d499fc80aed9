"""cloudpickle that keeps code objects' file names, so worker tracebacks can show notebook source lines."""

from __future__ import annotations

import io
import types
from collections import ChainMap


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
