"""Sphinx extension: directives that write jupyter_air's reference pages from the code at build time.

Each directive renders MyST Markdown from where the facts live (traitlets, JupyterLab settings schemas, routes
and handlers, ``*_ENV`` constants, pydantic and dataclass models); nothing is copied by hand. What the code has
and the pages do not (a route or an environment variable without its section) is a warning, so ``-W`` fails.
"""

from __future__ import annotations

import importlib
import re

from docutils.nodes import Node
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.parsing import nested_parse_to_nodes

_CODE_SPAN = re.compile(r"(``.+?``|`[^`]+`)")
_SPECIAL = re.compile(r"([\\*_\[\]<>#|~])")


def md_text(text: str) -> str:
    """``text`` as Markdown that shows it as written: code spans kept, every other special character escaped."""
    parts = _CODE_SPAN.split(" ".join(text.split()))
    return "".join(part if _CODE_SPAN.fullmatch(part) else _SPECIAL.sub(r"\\\1", part) for part in parts)


def md_code(text: str) -> str:
    """``text`` as one inline code span, whatever backticks it holds."""
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"


def import_object(dotted: str):
    """The object named ``package.module.Class.attribute``: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for part in parts[cut:]:
            found = getattr(found, part)
        return found
    raise ImportError(f"cannot import {dotted}")


class GeneratedMarkdown(SphinxDirective):
    """A directive whose output is Markdown written by :meth:`markdown`, parsed as if it stood in the page."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True

    def markdown(self) -> str:
        raise NotImplementedError

    def run(self) -> list[Node]:
        text = self.markdown()
        return nested_parse_to_nodes(self.state, text, source=f"<{self.name} directive>", keep_title_context=True)


def setup(app: Sphinx) -> dict:
    import air_config
    import air_env
    import air_errors
    import air_models
    import air_rest

    for module in (air_config, air_env, air_errors, air_models, air_rest):
        module.setup(app)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
