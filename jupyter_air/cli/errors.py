"""The one error the `air` commands raise for a problem the user can fix."""

from __future__ import annotations

from jupyter_air.error_kinds import ErrorKind


class CliError(Exception):
    """A problem the user can fix, of ``kind``: printed without a traceback, exits with the kind's exit status."""

    def __init__(self, message: str, kind: ErrorKind):
        super().__init__(message)
        self.kind = kind
