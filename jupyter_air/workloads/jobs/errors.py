"""What goes wrong on the path of a job: a job run or attempt that does not exist, a job that has ended, a workload
that cannot be submitted (every problem at once). Each names its kind (:mod:`jupyter_air.error_kinds`)."""

from __future__ import annotations

from jupyter_air.error_kinds import BAD_INPUT, CONFLICT, NOT_FOUND, ErrorKind


class JobNotFound(LookupError):
    """No job run with that id under this AIR_HOME."""

    kind = NOT_FOUND


class OutOfRange(LookupError):
    """An attempt or a node the job does not have; the message says which it has."""

    kind = NOT_FOUND


class NotActive(ValueError):
    """The job has already ended, so there is nothing to cancel."""

    kind = CONFLICT


class SubmitError(ValueError):
    """A workload that cannot be submitted: ``problems`` lists every reason (``file:line: field: ...``); its
    ``kind`` is bad input, or refused elsewhere when a valid workload cannot run (an unreachable cluster). Nothing
    was created."""

    def __init__(self, message: str, problems: list[str], kind: ErrorKind = BAD_INPUT):
        super().__init__(message)
        self.problems = problems
        self.kind = kind


def invalid(label: str, problems: list[str]) -> SubmitError:
    """The SubmitError of a workload found invalid after loading, worded as the loader words its own."""
    return SubmitError(f"invalid workload {label}:\n" + "\n".join(f"  {p}" for p in problems), problems)
