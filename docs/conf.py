"""Sphinx configuration of jupyter_air's documentation: MyST Markdown pages, the PyData theme, and references
generated from the code (configuration, CLI, REST API, environment variables, workload fields)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS / "_ext"), str(DOCS.parent)]  # the reference extensions, and this checkout's package

project = "jupyter_air"
author = "jupyter_air contributors"
copyright = "jupyter_air contributors"
release = version = json.loads((DOCS.parent / "package.json").read_text())["version"]

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinxarg.ext",
    "sphinx_copybutton",
    "air_reference",
]
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
myst_heading_slug_func = "docutils"  # `c.JupyterAir.public_url` -> c-jupyterair-public-url
autodoc_member_order = "bysource"
autodoc_typehints = "description"

html_theme = "pydata_sphinx_theme"
html_title = "jupyter_air"
html_theme_options = {
    "github_url": "https://github.com/jupyter-air/jupyter_air",
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_show_sourcelink = False
