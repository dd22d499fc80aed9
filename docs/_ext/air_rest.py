"""The REST reference: every route the server extension registers, its verbs, query arguments and description,
read from the routes, the handlers' docstrings and the query-argument calls in their source."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import tornado.web
from air_reference import GeneratedMarkdown, md_code, md_text
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

logger = logging.getLogger(__name__)

VERBS = ("get", "post", "put", "delete", "patch", "head", "options")
_GROUP = re.compile(r"\((?:[^()\\]|\\.)*\)")
#: tornado's ``@authenticated`` wrapper: a verb whose code is not it is refused.
_AUTHENTICATED_CODE = tornado.web.authenticated(lambda self: None).__code__


@dataclass
class Argument:
    name: str
    kind: str
    default: str


def _verb_function(cls: type, verb: str):
    """The function answering ``verb``, or None when the handler leaves it to tornado (405) or to Jupyter's
    CORS pre-flight (OPTIONS)."""
    from jupyter_server.base.handlers import APIHandler

    function = getattr(cls, verb)
    unset = {getattr(tornado.web.RequestHandler, verb), APIHandler.options}
    return None if function in unset else function


def all_routes() -> dict[str, type]:
    """``{"/jupyter-air/gpu": GpuHandler, ...}``: the patterns ``JupyterAir.initialize_handlers`` registers, their
    groups named after the verb's parameters."""
    from jupyter_air.server.extension import JupyterAir

    app = JupyterAir()
    app.mlflow_socket = Path("/nonexistent/mlflow.sock")  # the routes do not depend on it
    app.handlers = []
    app.initialize_handlers()
    return {readable(pattern, cls): cls for pattern, cls, *_ in app.handlers}


def readable(pattern: str, cls: type) -> str:
    """``/jupyter-air/runs/([0-9a-zA-Z_-]+)/open`` as ``/jupyter-air/runs/<run_id>/open``."""
    names = ["path"]
    for verb in VERBS:
        function = _verb_function(cls, verb)
        if function is not None:
            parameters = list(inspect.signature(inspect.unwrap(function)).parameters.values())[1:]
            named = [p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD]
            names = named or names
            break
    groups = iter(names)
    return _GROUP.sub(lambda _: f"<{next(groups, 'path')}>", pattern)


class _Resolver:
    """Values of the names a call passes: local ``from ... import`` lines first, then the module's globals (and their
    attributes)."""

    def __init__(self, function, tree: ast.AST):
        self.globals = function.__globals__
        self.local = {}
        package = function.__module__.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = importlib.import_module("." * node.level + (node.module or ""), package)
                self.local.update({alias.asname or alias.name: getattr(module, alias.name) for alias in node.names})

    def value(self, node: ast.AST) -> object:
        if isinstance(node, ast.Name):
            return self.local[node.id] if node.id in self.local else self.globals[node.id]
        if isinstance(node, ast.Attribute):  # a module's constant: ``runs_query.DEFAULT_LIMIT``
            return getattr(self.value(node.value), node.attr)
        return ast.literal_eval(node)


def _reader_argument(call: ast.Call, resolver: _Resolver) -> Argument | None:
    """The query argument a call of ``self.<reader>(...)`` reads, None when the call reads none by name."""
    reader, args = call.func.attr, call.args
    if not args or not isinstance(args[0], ast.Constant):
        return None
    name = args[0].value
    if reader == "get_query_argument":
        default = resolver.value(args[1]) if len(args) > 1 else None
        return Argument(name, "string", "none" if default is None else md_code(repr(default)))
    if reader == "epoch_ms_argument":
        return Argument(name, "epoch milliseconds (integer, up to the end of the year 9999)", "none")
    if reader == "int_argument":
        default, low = resolver.value(args[1]), resolver.value(args[2])
        high = resolver.value(args[3]) if len(args) > 3 else None
        span = f"from {low} to {high}" if high is not None else f"at least {low}"
        return Argument(name, f"integer {span}", md_code(str(default)))
    return None


READERS = ("get_query_argument", "epoch_ms_argument", "int_argument")


def query_arguments(cls: type, method: str, seen: set[str] | None = None) -> list[Argument]:
    """The query arguments ``cls.<method>`` reads, following the ``self.<name>(...)`` calls into jupyter_air's own
    methods."""
    seen = set() if seen is None else seen
    seen.add(method)
    function = inspect.unwrap(getattr(cls, method))
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    resolver = _Resolver(function, tree)
    found: list[Argument] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if not (isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
            continue
        name = node.func.attr
        if name in READERS:
            argument = _reader_argument(node, resolver)
            found += [argument] if argument else []
        elif name not in seen and getattr(getattr(cls, name, None), "__module__", "").startswith("jupyter_air"):
            found += query_arguments(cls, name, seen)
    unique = {}
    for argument in found:
        unique.setdefault(argument.name, argument)
    return list(unique.values())


class Route(GeneratedMarkdown):
    """``{air-route} /jupyter-air/jobs/<job_run_id>/logs``: the route's verbs, description and query arguments,
    then the directive's own content (examples of the answer)."""

    required_arguments = 1
    optional_arguments = 0

    def markdown(self) -> str:
        route = self.arguments[0]
        routes = all_routes()
        if route not in routes:
            raise self.error(f"no route {route!r}; the server registers: {', '.join(routes)}")
        cls = routes[route]
        self.env.air_routes.setdefault(route, self.env.docname)
        verbs = [verb for verb in VERBS if _verb_function(cls, verb) is not None]
        for verb in verbs:
            if _verb_function(cls, verb).__code__ is not _AUTHENTICATED_CODE:
                logger.warning("%s %s of %s is not @tornado.web.authenticated", verb.upper(), route, cls.__name__)
        doc = inspect.cleandoc(cls.__doc__) if cls.__doc__ else None  # its own, not a base class's
        if not doc:
            logger.warning("%s (%s) has no docstring to describe it", cls.__name__, route)
        shown = " ".join(f"`{verb.upper()}`" for verb in verbs)
        lines = [f"### {shown} `{{base_url}}{route.lstrip('/')}`", ""]
        lines += [md_text(paragraph) + "\n" for paragraph in (doc or "").split("\n\n")]
        arguments = [arg for verb in verbs for arg in query_arguments(cls, verb)]
        if arguments:
            lines += ["| query argument | type | default |", "| --- | --- | --- |"]
            lines += [f"| `{arg.name}` | {arg.kind} | {arg.default} |" for arg in arguments]
            lines.append("")
        return "\n".join(lines + list(self.content))


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    routes = getattr(env, "air_routes", {})
    env.air_routes = {route: doc for route, doc in routes.items() if doc != docname}


def _check(app: Sphinx, env: BuildEnvironment) -> None:
    """Every registered route has its ``{air-route}`` section somewhere."""
    for route in all_routes():
        if route not in env.air_routes:
            logger.warning("the route %s has no {air-route} section in the documentation", route)


def _init(app: Sphinx, env: BuildEnvironment, docnames) -> None:
    if not hasattr(env, "air_routes"):
        env.air_routes = {}


def setup(app: Sphinx) -> None:
    app.add_directive("air-route", Route)
    app.connect("env-before-read-docs", _init)
    app.connect("env-purge-doc", _purge)
    app.connect("env-check-consistency", _check)
