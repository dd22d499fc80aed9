"""The environment-variable reference: every module-level ``*_ENV`` constant of the package, with its ``#:``
comment as the description."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from air_reference import GeneratedMarkdown, md_text
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.pycode import ModuleAnalyzer
from sphinx.util import logging

logger = logging.getLogger(__name__)

PACKAGE = Path(__file__).resolve().parents[2] / "jupyter_air"


@dataclass
class Variable:
    name: str
    constant: str
    module: str
    doc: str


def all_variables() -> dict[str, Variable]:
    """``{"AIR_HOME": Variable(...), ...}``, read from the source without importing it."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text(), str(path))
        docs = None
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            constant = node.targets[0].id
            if not (constant.endswith("_ENV") and isinstance(node.value, ast.Constant)):
                continue
            docs = docs if docs is not None else ModuleAnalyzer.for_file(str(path), module).find_attr_docs()
            doc = " ".join(docs.get(("", constant), [])).strip()
            found[node.value.value] = Variable(node.value.value, constant, module, doc)
    return found


class EnvTable(GeneratedMarkdown):
    """``{air-env}`` with one variable name per line: a table of them, described by their constants' comments."""

    optional_arguments = 0

    def markdown(self) -> str:
        variables = all_variables()
        lines = ["| variable | meaning |", "| --- | --- |"]
        for name in (line.strip() for line in self.content if line.strip()):
            if name not in variables:
                raise self.error(f"no *_ENV constant holds {name!r}; the package has: {', '.join(sorted(variables))}")
            variable = variables[name]
            if not variable.doc:
                logger.warning("%s.%s (%s) has no #: comment to describe it", variable.module, variable.constant, name)
            self.env.air_env.setdefault(name, self.env.docname)
            lines.append(f"| `{name}` | {md_text(variable.doc)} |")
        return "\n".join(lines)


def _init(app: Sphinx, env: BuildEnvironment, docnames) -> None:
    if not hasattr(env, "air_env"):
        env.air_env = {}


def _purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    documented = getattr(env, "air_env", {})
    env.air_env = {name: doc for name, doc in documented.items() if doc != docname}


def _check(app: Sphinx, env: BuildEnvironment) -> None:
    """Every ``*_ENV`` constant of the package is in some ``{air-env}`` table."""
    for name, variable in all_variables().items():
        if name not in env.air_env:
            logger.warning("%s (%s.%s) is in no {air-env} table", name, variable.module, variable.constant)


def setup(app: Sphinx) -> None:
    app.add_directive("air-env", EnvTable)
    app.connect("env-before-read-docs", _init)
    app.connect("env-purge-doc", _purge)
    app.connect("env-check-consistency", _check)
