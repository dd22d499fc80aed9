"""Run a notebook cell's code on every rank, shipping the names it reads and returning what it assigns."""

from __future__ import annotations

import ast
import builtins
import itertools
import linecache
import os
import re
import types

#: Names IPython puts in the user namespace that mean nothing in a worker (plus its output history).
_KERNEL_NAMES = {"In", "Out", "get_ipython", "exit", "quit"}
_HISTORY_NAME = re.compile(r"^(_+|_i+|_i?\d+|_oh|_ih|_dh|_exit_code)$")
_cell_numbers = itertools.count(1)


def register_source(source: str, kind: str) -> str:
    """Give the cell a file name whose source lines tracebacks can show (here and in workers)."""
    filename = f"<{kind} cell {next(_cell_numbers)}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    return filename


def run_cell_here(source: str, filename: str, namespace: dict):
    """Execute the cell in the notebook's namespace; its last expression's value is the result."""
    tree = ast.parse(source, filename)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, filename, "exec"), namespace)  # noqa: S102 - running the user's own cell is the point
    if last is not None:
        return eval(compile(ast.Expression(last.value), filename, "eval"), namespace)  # noqa: S307
    return None


def scalar_params(source: str, namespace: dict) -> dict[str, str]:
    """The numbers, strings and booleans the cell takes from the notebook (names it reads and never assigns), as
    MLflow params (short values only): a name the cell sets itself is no input of the run."""
    inputs = names_read(source) - names_assigned(source)
    return {
        k: repr(v)
        for k, v in namespace.items()
        if k in inputs and isinstance(v, (bool, int, float, str)) and len(repr(v)) < 500
    }


def names_assigned(source: str) -> set[str]:
    """Every name the code binds anywhere: assignments, loop and ``with`` targets, imports, definitions and their
    arguments, ``except ... as``."""
    bound = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound


def names_read(source: str) -> set[str]:
    """Every plain name the code reads (loads), anywhere in it."""
    tree = ast.parse(source)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def shipped_namespace(source: str, user_ns: dict) -> dict:
    """The notebook names the cell reads, leaving out the kernel's own helpers and output history."""
    wanted = names_read(source) - _KERNEL_NAMES
    return {
        name: user_ns[name]
        for name in sorted(wanted)
        if name in user_ns and not _HISTORY_NAME.match(name) and user_ns[name] is not getattr(builtins, name, None)
    }


def unpicklable(namespace: dict) -> dict[str, str]:
    """``{name: type}`` of the values that cannot be sent to another process."""
    import cloudpickle

    bad = {}
    for name, value in namespace.items():
        try:
            cloudpickle.dumps(value)
        except Exception:  # noqa: BLE001 - any pickling failure means the value cannot travel
            bad[name] = type(value).__qualname__
    return bad


def created_by_cell(value) -> bool:
    """False for what a cell imports (modules, and functions or classes defined elsewhere): only values the
    cell created travel back to the notebook."""
    if isinstance(value, types.ModuleType):
        return False
    if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
        return getattr(value, "__module__", None) == "__main__"
    return True


def run_cell_on_rank(source: str, filename: str, namespace: dict) -> dict | None:
    """Execute the cell; rank 0 returns ``{"values": picklable new names, "unpicklable": {name: type}}``."""
    scope = {"__name__": "__main__", "__builtins__": builtins, **namespace}
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - running the user's own cell is the point
    if os.environ.get("RANK") != "0":
        return None
    assigned = {
        name: value
        for name, value in scope.items()
        if not name.startswith("__") and not (name in namespace and namespace[name] is value) and created_by_cell(value)
    }
    stuck = unpicklable(assigned)
    values = {name: value for name, value in assigned.items() if name not in stuck}
    return {"values": values, "unpicklable": stuck}


def is_cell_result(result) -> bool:
    """Whether ``result`` is what :func:`run_cell_on_rank` returns on rank 0 (a remote cell's, attached again)."""
    return isinstance(result, dict) and set(result) == {"values", "unpicklable"}
