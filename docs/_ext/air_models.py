"""References read from models: the workload YAML fields (pydantic), the options of ``@distributed`` and the
magics (a dataclass and IPython's parsers), and constant collections."""

from __future__ import annotations

import dataclasses
import json
import textwrap

from air_reference import GeneratedMarkdown, import_object, md_code, md_text
from pydantic import BaseModel
from sphinx.application import Sphinx

_BOUNDS = (
    ("minimum", "≥"),
    ("ge", "≥"),
    ("exclusiveMinimum", ">"),
    ("gt", ">"),
    ("maximum", "≤"),
    ("le", "≤"),
    ("minLength", "length ≥"),
    ("maxLength", "length ≤"),
)


def _type(schema: dict) -> str:
    """A JSON schema's type in words: ``integer ≥ 0, ≤ 100``, ``string or null``, ``mapping of name to ...``."""
    if "anyOf" in schema:
        kinds = list(dict.fromkeys(_type(option) for option in schema["anyOf"] if option.get("type") != "null"))
        if "number" in kinds and "integer" in kinds:  # every integer is a number
            kinds.remove("integer")
        text = " or ".join(filter(None, [", ".join(kinds[:-1]), kinds[-1]]))
    elif schema.get("type") == "object" and "additionalProperties" in schema:
        text = f"mapping of name to {_type(schema['additionalProperties'])}"
    else:
        text = schema.get("type", "mapping")
    bounds = [f"{sign} {schema[key]}" for key, sign in _BOUNDS if key in schema]
    if "pattern" in schema:
        bounds.append(f"matching {md_code(schema['pattern'])}")
    return text + (f" ({', '.join(bounds)})" if bounds else "")


def _default(model: type[BaseModel], name: str) -> str:
    field = model.model_fields[name]
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "its fields' defaults"
    return md_code(json.dumps(value))


def _rows(model: type[BaseModel], schema: dict, definitions: dict, prefix: str) -> list[str]:
    rows = []
    for name, prop in schema["properties"].items():
        field = model.model_fields[name]
        ref = prop.get("$ref") or next((o["$ref"] for o in prop.get("anyOf", []) if "$ref" in o), None)
        if "$ref" in prop.get("items", {}):  # a list of a nested model (`permissions:`): its fields as `name[].field`
            nested = definitions[prop["items"]["$ref"].rsplit("/", 1)[1]]
            text = md_text(field.description or "")
            rows.append(f"| `{prefix}{name}` | list of mappings | {_default(model, name)} | {text} |")
            rows += _rows(field.annotation.__args__[0], nested, definitions, f"{prefix}{name}[].")
            continue
        if ref:  # a nested model, or an optional one (`schedule:`)
            nested = definitions[ref.rsplit("/", 1)[1]]
            kind, annotation = "mapping", field.annotation
            if "$ref" not in prop:
                kind, annotation = "mapping or null", next(a for a in annotation.__args__ if a is not type(None))
            rows.append(f"| `{prefix}{name}` | {kind} | {_default(model, name)} | {md_text(nested['description'])} |")
            rows += _rows(annotation, nested, definitions, f"{prefix}{name}.")
            continue
        rows.append(
            f"| `{prefix}{name}` | {_type(prop)} | {_default(model, name)} | {md_text(field.description or '')} |"
        )
    return rows


class ModelFields(GeneratedMarkdown):
    """``{air-model-fields} jupyter_air.workloads.file.spec.Workload``: one row per field, nested models' fields as
    ``compute.num_nodes``."""

    required_arguments = 1
    optional_arguments = 0

    def markdown(self) -> str:
        model = import_object(self.arguments[0])
        schema = model.model_json_schema()
        lines = ["| field | type | default | meaning |", "| --- | --- | --- | --- |"]
        return "\n".join(lines + _rows(model, schema, schema.get("$defs", {}), ""))


class RunOptions(GeneratedMarkdown):
    """``{air-run-options}``: the options of ``@distributed`` and the flags of the magics, from one dataclass."""

    optional_arguments = 0

    def markdown(self) -> str:
        from jupyter_air.training.options import RunOptions as Options

        lines = ["| option | magic flag | default | meaning |", "| --- | --- | --- | --- |"]
        for field in dataclasses.fields(Options):
            meta = field.metadata
            lines.append(f"| `{field.name}` | `{meta['flag']}` | `{field.default!r}` | {md_text(meta['help'])} |")
        return "\n".join(lines)


class MagicHelp(GeneratedMarkdown):
    """``{air-magic-help} jupyter_air.magics.AirMagics.air_run``: what ``%%air_run?`` shows, from its parser."""

    required_arguments = 1
    optional_arguments = 0

    def markdown(self) -> str:
        help_text = textwrap.dedent(import_object(self.arguments[0]).__doc__.removeprefix("::")).strip("\n")
        return f"```text\n{help_text}\n```"


class Values(GeneratedMarkdown):
    """``{air-values} jupyter_air.workloads.file.spec._RESERVED_ENV``: a collection's items, sorted, as code."""

    required_arguments = 1
    optional_arguments = 0

    def markdown(self) -> str:
        return ", ".join(md_code(str(value)) for value in sorted(import_object(self.arguments[0]))) + "\n"


def setup(app: Sphinx) -> None:
    app.add_directive("air-model-fields", ModelFields)
    app.add_directive("air-run-options", RunOptions)
    app.add_directive("air-magic-help", MagicHelp)
    app.add_directive("air-values", Values)
