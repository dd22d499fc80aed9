"""The tables of how errors are answered, from :mod:`jupyter_air.error_kinds`: ``{air-exit-statuses}`` for `air`,
``{air-http-statuses}`` for the REST API."""

from __future__ import annotations

from air_reference import GeneratedMarkdown, md_text
from sphinx.application import Sphinx

from jupyter_air import error_kinds


class ExitStatuses(GeneratedMarkdown):
    """``{air-exit-statuses}``: every exit status of `air`, a row per kind of error."""

    optional_arguments = 0

    def markdown(self) -> str:
        rows = [("0", "", "success")]
        kinds = sorted(error_kinds.KINDS, key=lambda k: k.exit_status)
        rows += [(str(k.exit_status), k.name, md_text(k.meaning)) for k in kinds]
        rows.append(("1", "", "a job followed with `--watch` that did not succeed"))
        interrupted = "interrupted (Ctrl-C): a job it submitted keeps running; `air cancel` stops it"
        rows.append((str(error_kinds.INTERRUPTED), "", interrupted))
        rows.append((str(error_kinds.BROKEN_PIPE), "", "its reader went away (as `head` does): it stops quietly"))
        lines = ["| status | kind of error | meaning |", "| --- | --- | --- |"]
        return "\n".join([*lines, *(f"| {status} | {kind} | {meaning} |" for status, kind, meaning in rows)]) + "\n"


class HttpStatuses(GeneratedMarkdown):
    """``{air-http-statuses}``: the status each kind of error is answered with, as a list."""

    optional_arguments = 0

    def markdown(self) -> str:
        lines = [f"- `{k.http_status}` **{k.name}**: {md_text(k.meaning)}." for k in error_kinds.KINDS]
        return "\n".join(lines) + "\n"


def setup(app: Sphinx) -> None:
    app.add_directive("air-exit-statuses", ExitStatuses)
    app.add_directive("air-http-statuses", HttpStatuses)
