"""The configuration reference: the server's ``c.JupyterAir.*`` traitlets and the JupyterLab settings schemas."""

from __future__ import annotations

import json
import math
from pathlib import Path

from air_reference import GeneratedMarkdown, import_object, md_code, md_text
from docutils.parsers.rst import directives
from myst_parser.slugs import SLUG_PRESETS
from sphinx.application import Sphinx
from traitlets import Enum

#: The JupyterLab extension's settings schemas, one file per plugin (``jupyter-air:<file name>``).
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "schema"
#: The npm package name that prefixes the plugin ids.
PACKAGE = json.loads((SCHEMA_DIR.parent / "package.json").read_text())["name"]


def _trait_type(trait) -> str:
    kind = type(trait).__name__
    if isinstance(trait, Enum):
        return f"{kind}: one of " + ", ".join(md_code(repr(value)) for value in trait.values)
    low, high = (getattr(trait, bound, None) for bound in ("min", "max"))
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        return f"{kind} from {low} to {high}"
    return kind


def anchor(cls_name: str, trait_name: str) -> str:
    """The option's anchor in the page, for links from other pages (``configuration.md#c-jupyterair-public-url``)."""
    return SLUG_PRESETS["docutils"](f"c.{cls_name}.{trait_name}")


class ServerConfig(GeneratedMarkdown):
    """``{air-server-config} jupyter_air.server.extension.JupyterAir``: a section per option the class defines
    (``config=True``); with ``:summary:``, a table of them instead."""

    required_arguments = 1
    optional_arguments = 0
    option_spec = {"summary": directives.flag}

    def markdown(self) -> str:
        cls = import_object(self.arguments[0])
        name = cls.__name__
        traits = cls.class_own_traits(config=True)
        if "summary" in self.options:
            lines = ["| option | type | default |", "| --- | --- | --- |"]
            for trait_name, trait in traits.items():
                default = md_code(trait.default_value_repr())
                link = f"[`c.{name}.{trait_name}`](#{anchor(name, trait_name)})"
                lines.append(f"| {link} | {type(trait).__name__} | {default} |")
            return "\n".join(lines)
        lines = []
        for trait_name, trait in traits.items():
            lines += [
                f"### `c.{name}.{trait_name}`",
                "",
                f"{_trait_type(trait)}, default {md_code(trait.default_value_repr())}; on the command line "
                f"{md_code(f'--{name}.{trait_name}=<value>')}.",
                "",
                md_text(trait.help),
                "",
            ]
        return "\n".join(lines)


class LabSettings(GeneratedMarkdown):
    """``{air-lab-settings}``: a section per settings schema of the JupyterLab extension, with a table of its
    settings."""

    optional_arguments = 0

    def markdown(self) -> str:
        lines = []
        for path in sorted(SCHEMA_DIR.glob("*.json")):
            self.env.note_dependency(str(path))
            schema = json.loads(path.read_text())
            lines += [
                f"### {md_text(schema['title'])}",
                "",
                f"*Settings → Settings Editor → {md_text(schema['title'])}* (plugin `{PACKAGE}:{path.stem}`): "
                f"{md_text(schema.get('description', ''))}",
                "",
                "| setting | type | default | meaning |",
                "| --- | --- | --- | --- |",
            ]
            for key, prop in schema["properties"].items():
                kind = prop["type"]
                limits = [f"{word} {prop[word]}" for word in ("minimum", "maximum") if word in prop]
                if limits:
                    kind += f" ({', '.join(limits)})"
                default = md_code(json.dumps(prop.get("default")))
                lines.append(f"| `{key}` | {kind} | {default} | {md_text(prop.get('description', ''))} |")
            lines.append("")
        return "\n".join(lines)


def setup(app: Sphinx) -> None:
    app.add_directive("air-server-config", ServerConfig)
    app.add_directive("air-lab-settings", LabSettings)
