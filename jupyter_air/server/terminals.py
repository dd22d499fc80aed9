"""New JupyterLab terminals: this environment's programs first on ``PATH``, and the file browser's root as folder.

A server without a terminal on its stdout (nohup, systemd, a container, a JupyterHub spawner) gets login shells
from jupyter_server_terminals (``$SHELL -l``). Their profile (``/etc/profile``, ``~/.profile``) sets ``PATH``
again, so the environment's ``bin/`` that the server put first is gone: no ``air``, another ``python``. Such a
shell is started as ``$SHELL -l -c 'PATH=<env>/bin:"$PATH"; export PATH; exec $SHELL -i'`` instead: the login
shell reads its profile, puts the folder back in front, and becomes the interactive shell the user types in.

JupyterLab names no folder for a terminal opened from the file browser's root (or *File → New → Terminal*), so
it opened in the server process's working folder; it opens at ``ServerApp.root_dir`` instead.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ..programs import environment_bin

#: Shells that take ``-l -c SCRIPT`` and the POSIX script below; others (fish, tcsh, nu) keep their command.
POSIX_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"})


def login_command(shell_command: list[str], folder: str) -> list[str] | None:
    """``[shell, "-l"]`` made to put ``folder`` first on ``PATH`` after the profile ran; None for another command."""
    if len(shell_command) != 2 or shell_command[1] != "-l" or Path(shell_command[0]).name not in POSIX_SHELLS:
        return None
    shell = shell_command[0]
    script = f'PATH={shlex.quote(folder)}:"$PATH"; export PATH; exec {shlex.quote(shell)} -i'
    return [shell, "-l", "-c", script]


def set_up_terminals(serverapp, at_root: bool, log) -> None:
    """Adjust the running server's terminal manager, if it has one, where the administrator chose nothing:
    login shells get :func:`login_command` unless ``ServerApp.terminado_settings`` names a ``shell_command``;
    with ``at_root``, terminals opened without a folder open at ``ServerApp.root_dir``."""
    manager = serverapp.web_app.settings.get("terminal_manager")
    if manager is None:  # terminals disabled, or jupyter_server_terminals not installed
        return
    if serverapp.terminado_settings.get("shell_command") is None:
        command = login_command(list(manager.shell_command), environment_bin())
        if command is not None:
            manager.shell_command = command
            log.info("jupyter_air: terminals are login shells; %s comes first on their PATH.", environment_bin())
        elif manager.shell_command[-1:] == ["-l"]:
            log.warning(
                "jupyter_air: terminals are %s login shells, whose profile may leave %s off PATH (no `air`); set "
                "c.ServerApp.terminado_settings = {'shell_command': [...]} to a command that keeps it.",
                manager.shell_command[0],
                environment_bin(),
            )
    if at_root and "cwd" not in manager.term_settings and os.path.isdir(serverapp.root_dir):
        manager.term_settings["cwd"] = serverapp.root_dir
