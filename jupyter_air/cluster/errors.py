"""Why work cannot run on the Ray cluster; each message names what was asked and what to change."""

from __future__ import annotations

from jupyter_air.tracebacks import render


class ClusterError(Exception):
    """Work cannot start on the Ray cluster (nothing was started, no run was created for it)."""

    def _render_traceback_(self) -> list[str]:
        """In IPython: the user's own frames and the message, not jupyter_air's frames (as for worker errors)."""
        return render(self, f"{type(self).__name__}: {self}")


class BadAddress(ClusterError, ValueError):
    """A Ray address that cannot be an address; the message names it and shows the forms allowed."""


class ClusterUnreachable(ClusterError, ConnectionError):
    """The Ray cluster cannot be joined; the message names the address and what to check."""


class PlacementError(ClusterError, RuntimeError):
    """The cluster cannot place the nodes asked for (now or ever); the message says what was asked and what
    there is."""


class TrackingUnreachable(ClusterError, ValueError):
    """Work would span several hosts but MLflow's tracking store is a file or database only one can reach."""
