"""Share an experiment on a tracking server that runs MLflow's authentication app (``mlflow server --app-name
basic-auth``): grant a user READ, EDIT or MANAGE on it, or take the grant back, through that app's REST API, as
the experiment's manager or an admin.

The grant is MLflow's own experiment permission: the MLflow UI, MLflow's clients and jupyter_air's Experiment panel
all obey it. The caller authenticates as for any run (``MLFLOW_TRACKING_USERNAME``/``PASSWORD`` or
``MLFLOW_TRACKING_TOKEN``). Knows nothing of the command line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from jupyter_air.error_kinds import BAD_INPUT, REFUSED_ELSEWHERE

from .entities import TrackingError
from .rest import RestTracking
from .store import ensure_experiment

#: The experiment permissions a user can be given, from least to most.
LEVELS = ("READ", "EDIT", "MANAGE")
#: MLflow 3's per-user grant API of the authentication app.
GRANTS_API = "/api/3.0/mlflow/users/permissions/"
_WORDS = {"READ": "can now read", "EDIT": "can now read and log to", "MANAGE": "can now manage", None: "lost"}
#: The authorization function of a tracking server that takes JupyterHub tokens.
HUB_TOKENS = "jupyter_air.team.mlflow_auth:authenticate_request_hub_token"
HOW_TO_SERVE = (
    "Sharing needs a tracking server that runs MLflow's authentication app (`mlflow server --app-name "
    "basic-auth`, MLflow 3.17 or later, from `pip install 'mlflow[auth]'`): set MLFLOW_TRACKING_URI to its "
    "http(s):// address and MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD to your account there"
)


class ShareError(Exception):
    """A grant that cannot be made: bad input when the user asked for something that cannot be, else refused by the
    tracking server."""

    def __init__(self, message: str, bad_input: bool = False):
        super().__init__(message)
        self.bad_input = bad_input
        self.kind = BAD_INPUT if bad_input else REFUSED_ELSEWHERE


@dataclass(frozen=True)
class Grant:
    experiment_name: str
    experiment_id: str
    user: str
    level: str | None  # None: the grant was taken back (the server's default permission applies)
    server: str

    def describe(self) -> str:
        if self.level is None:
            return f"{self.user} lost their grant on experiment {self.experiment_name!r} on {self.server}"
        return f"{self.user} {_WORDS[self.level]} experiment {self.experiment_name!r} ({self.level}) on {self.server}"


def availability() -> dict:
    """Whether experiments can be shared from this process (``MLFLOW_TRACKING_URI`` is a tracking server), as
    ``{"available", "server", "reason"}``; no request is made: the server may still lack the grant API."""
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if uri.startswith(("http://", "https://")):
        return {"available": True, "server": _shown(uri), "reason": None}
    return {"available": False, "server": None, "reason": _no_server(uri)}


def share(experiment_name: str, user: str, level: str | None, token: str | None = None) -> Grant:
    """Give ``user`` ``level`` on the experiment named ``experiment_name`` of ``$MLFLOW_TRACKING_URI`` (a grant
    they had is replaced), or take their grant back (``level`` None), with this process's MLflow credentials or as
    the holder of the bearer ``token``. Raises ShareError, with the server's own words where it refused."""
    if level is not None and level not in LEVELS:
        raise ShareError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}", bad_input=True)
    if not isinstance(experiment_name, str) or not experiment_name or not isinstance(user, str) or not user:
        raise ShareError("give the experiment's name and the MLflow user name to share it with", bad_input=True)
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if not uri.startswith(("http://", "https://")):
        raise ShareError(_no_server(uri), bad_input=True)

    server = RestTracking.http(uri, token=token)
    try:
        experiment = server.get_experiment_by_name(experiment_name)
        if experiment is None:
            raise ShareError(
                f"no experiment {experiment_name!r} on {_shown(uri)} (or you cannot see it); the Experiment panel and "
                "the MLflow UI list the ones you can",
                bad_input=True,
            )
        target = {"username": user, "resource_type": "experiment", "resource_id": experiment.experiment_id}
        if level is None:
            server.call("POST", "revoke", target, api=GRANTS_API)
        else:
            try:
                server.call("POST", "grant", {**target, "permission": level}, api=GRANTS_API)
            except TrackingError as err:
                if err.error_code != "RESOURCE_ALREADY_EXISTS":
                    raise
                server.call("POST", "revoke", target, api=GRANTS_API)  # the API has no update: replace it
                server.call("POST", "grant", {**target, "permission": level}, api=GRANTS_API)
    except TrackingError as err:
        raise ShareError(_explained(err, _shown(uri)), bad_input=err.error_code == "RESOURCE_DOES_NOT_EXIST") from None
    finally:
        server.close()
    return Grant(experiment.name, experiment.experiment_id, user, level, _shown(uri))


def claim(experiment_name: str, user: str, token: str, artifact_location: str | None = None) -> None:
    """Before a team's job service logs ``user``'s job to ``experiment_name`` on ``$MLFLOW_TRACKING_URI`` with its own
    credentials: as ``user`` (their hub ``token``, which a tracking server taking hub tokens accepts) the experiment is
    created when missing, so that they manage it, and on one that exists they must hold EDIT or MANAGE. ShareError
    says what to ask for. Nothing to check in a local store; a server without the authentication app grants all."""
    uri = os.environ.get("MLFLOW_TRACKING_URI", "")
    if not uri.startswith(("http://", "https://")):
        return
    server, ask = RestTracking.http(uri, token=token), f"air share {experiment_name} --user {user} --level EDIT"
    try:
        target = {
            "resource_type": "experiment",
            "resource_id": ensure_experiment(experiment_name, artifact_location, server),
        }
        level = server.call("GET", "get", api=GRANTS_API, username=user, **target).get("permission")
    except TrackingError as err:
        unknown_user = err.error_code == "RESOURCE_DOES_NOT_EXIST"  # a 404 too, but the check did run: refuse
        if not unknown_user and ("ENDPOINT_NOT_FOUND" in str(err) or " 404 " in str(err)):
            return  # no authentication app: everyone may log everywhere
        if " 401 " in str(err):
            raise ShareError(
                f"{_shown(uri)} does not take hub tokens, so the job service cannot check that {user} may log to "
                f"{experiment_name!r}: run it with authorization_function = {HUB_TOKENS}"
            ) from None
        if " 403 " in str(err):
            level = "NO_PERMISSIONS"
        else:
            raise ShareError(_explained(err, _shown(uri))) from None
    finally:
        server.close()
    if level not in ("EDIT", "MANAGE"):
        raise ShareError(
            f"{user} may not log runs to experiment {experiment_name!r} on {_shown(uri)} ({level}); ask one of its "
            f"managers to run `{ask}`, or choose an experiment of your own",
            bad_input=True,
        )


def _no_server(uri: str) -> str:
    where = f"this session tracks into {_shown(uri)}" if uri else "this session tracks into the embedded local store"
    return f"{where}, which only you can open. {HOW_TO_SERVE}."


def _shown(uri: str) -> str:
    """``uri`` without a user name or password in it."""
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1])) if "@" in parts.netloc else uri


def _explained(err: TrackingError, uri: str) -> str:
    """The server's refusal, with what it means here."""
    text = str(err)
    if "ENDPOINT_NOT_FOUND" in text or " 404 " in text:
        return f"{uri} has no per-user grant API. {HOW_TO_SERVE}. ({text})"
    if err.error_code == "RESOURCE_DOES_NOT_EXIST":
        return f"{text} (an admin of the MLflow server creates users; a grant taken back must exist)"
    if " 401 " in text:
        return f"{text} (set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD to your account on {uri})"
    if " 403 " in text:
        return f"{text} (only the experiment's managers and the server's admins can share it)"
    return text
