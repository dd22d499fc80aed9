"""Ray's token authentication as jupyter_air uses it: the token Ray would send, and what to say without it.

Ray finds the token in ``RAY_AUTH_TOKEN``, else the file named by ``RAY_AUTH_TOKEN_PATH``, else
``~/.ray/auth_token``, and sends it only with ``RAY_AUTH_MODE=token``. Ray's own loader does that here: its
modules are private (``ray._raylet``, ``ray._private.authentication``), which the ``ray`` extra's pinned
version makes acceptable.
"""

from __future__ import annotations

#: What to set, in the environment of every process that joins the cluster, to send the cluster's token.
HOW_TO_SEND = (
    "set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN=<the cluster's token> or RAY_AUTH_TOKEN_PATH=<a file holding it, "
    "mode 0600> (default ~/.ray/auth_token) in this process's environment; kernels and terminals inherit the "
    "Jupyter server's, so set it there and restart the server"
)
#: How a cluster's owner locks it, for the warning about an open cluster.
HOW_TO_LOCK = (
    "start every node with RAY_AUTH_MODE=token and the same token (`ray get-auth-token --generate` writes "
    "~/.ray/auth_token; copy it to every node with mode 0600), and give this server the same environment"
)


def metadata() -> tuple[tuple[str, str], ...]:
    """The gRPC metadata Ray sends with its calls: the token when ``RAY_AUTH_MODE=token`` and one is found."""
    from ray._private.authentication.authentication_utils import is_token_auth_enabled

    return tuple(_token_header(ignore_mode=False).items()) if is_token_auth_enabled() else ()


def refused(what: str, sent: bool) -> str:
    """Why ``what`` answered UNAUTHENTICATED, and what to set."""
    if sent:
        return (
            f"{what} refused the token configured here (UNAUTHENTICATED): RAY_AUTH_TOKEN, or the file "
            "RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token, must hold the token the cluster was started with"
        )
    found = bool(_token_header(ignore_mode=True))
    unset = "a token is found here but RAY_AUTH_MODE=token is not set" if found else "no token is configured here"
    return f"{what} requires Ray's token authentication (UNAUTHENTICATED) and {unset}: {HOW_TO_SEND}"


def _token_header(ignore_mode: bool) -> dict[str, str]:
    """``{"authorization": "Bearer <token>"}`` as Ray's loader finds the token, else ``{}``."""
    from ray._raylet import AuthenticationTokenLoader
    from ray.exceptions import AuthenticationError

    try:
        return AuthenticationTokenLoader.instance().get_token_for_http_header(ignore_auth_mode=ignore_mode)
    except AuthenticationError:  # token mode and no token: the cluster's answer says what is missing
        return {}


def follow_ray_for_auto() -> None:
    """What ``ray.init("auto")`` does before it joins: turn token authentication on when ``RAY_AUTH_MODE`` is
    unset and a token exists. jupyter_air passes Ray the address it resolved, for which Ray would not."""
    from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available

    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
