"""JupyterLab terminals of a server started without a TTY (nohup, systemd, a spawner): login shells whose profile
resets PATH still find this environment's `air` first, and open at the file browser's root."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import websocket
from ray_cluster import free_port

from jupyter_air.server.terminals import login_command

ENVIRONMENT_BIN = str(Path(sys.executable).parent)
TOKEN = "terminals-test"
#: What the shell reports, each as ``<<name=value>>``; typed as ``"<<""name=..."`` so that the echo of the
#: command line itself never matches.
PROBES = {"cwd": "$(pwd)", "air": "$(command -v air)", "python": "$(command -v python)", "path": "$PATH", "pid": "$$"}
PROBE_LINE = "echo " + " ".join(f'"<<""{name}={value}>>"' for name, value in PROBES.items()) + "\r"
#: A user's ~/.profile that sets PATH from scratch, as /etc/profile does.
PROFILE = "PATH=/usr/bin:/bin\nexport PATH\n"


class Server:
    """`jupyter server` as a subprocess with stdout and stderr in a file (no TTY), stopped on exit."""

    def __init__(self, tmp_path: Path, shell: str, server_app: dict | None = None, jupyter_air: dict | None = None):
        self.port, self.log = free_port(), tmp_path / "server.log"
        self.root, self.started_in, home = (tmp_path / name for name in ("root", "started-in", "home"))
        for folder in (self.root, self.started_in, home, tmp_path / "config"):
            folder.mkdir()
        (home / ".profile").write_text(PROFILE)
        extensions = dict.fromkeys(("jupyterlab", "jupyter_lsp", "jupyter_server_proxy", "notebook_shim"), False)
        config = {"ServerApp": {"jpserver_extensions": {**extensions, "jupyter_air": True}, **(server_app or {})}}
        config["JupyterAir"] = jupyter_air or {}
        (tmp_path / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
        self.env = {
            **os.environ,
            "HOME": str(home),
            "AIR_HOME": str(tmp_path / "air-home"),
            "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
            "SHELL": shell,
        }

    def __enter__(self) -> Server:
        command = [
            *(sys.executable, "-m", "jupyter_server", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}"),
            *("--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}", "--ServerApp.allow_root=True"),
            *(f"--ServerApp.root_dir={self.root}", "--JupyterAir.gpu_source=none"),
            *("--JupyterAir.mlflow_ui_autostart=False", "--JupyterAir.job_check_interval_seconds=0"),
            "--JupyterAir.fork_zygote_at_start=False",
            "--JupyterAir.idle_holder_minutes=0",
        ]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                command, env=self.env, cwd=self.started_in, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        deadline = time.monotonic() + 120
        while "jupyter_air | extension was successfully loaded" not in self.log.read_text() or not self._answers():
            assert self.process.poll() is None and time.monotonic() < deadline, self.log.read_text()[-3000:]
            time.sleep(0.3)
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def _answers(self) -> bool:
        try:
            return self.request("GET", "api/status") is not None
        except OSError:
            return False

    def request(self, method: str, path: str, body: dict | None = None) -> dict | None:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/{path}", data, {"Authorization": f"token {TOKEN}"}, method=method
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
        return json.loads(text) if text else None

    def probe_terminal(self) -> dict[str, str]:
        """Open a terminal as JupyterLab does at the file browser's root (no folder named), run the probes in
        it, shut it down; the values the shell printed."""
        name = self.request("POST", "api/terminals", {})["name"]
        socket = websocket.create_connection(
            f"ws://127.0.0.1:{self.port}/terminals/websocket/{name}", header=[f"Authorization: token {TOKEN}"]
        )
        try:
            text = _read_until(socket, lambda text: bool(text))  # the prompt: the shell reads its input now
            socket.send(json.dumps(["stdin", PROBE_LINE]))
            text = _read_until(socket, lambda text: len(dict(re.findall(r"<<(\w+)=(.*?)>>", text))) == len(PROBES))
        finally:
            socket.close()
            self.request("DELETE", f"api/terminals/{name}")
        return dict(re.findall(r"<<(\w+)=(.*?)>>", text))


def _read_until(socket, done, timeout: float = 60.0) -> str:
    """The terminal's output until ``done(output)``; fails with the output after ``timeout`` seconds."""
    text, deadline = "", time.monotonic() + timeout
    while not done(text):
        left = deadline - time.monotonic()
        assert left > 0, f"terminal output so far: {text!r}"
        socket.settimeout(left)
        try:
            kind, *data = json.loads(socket.recv())
        except websocket.WebSocketTimeoutException:
            continue
        if kind == "stdout":
            text += data[0]
    return text


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _gone(pid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while _running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not _running(pid)


@pytest.mark.parametrize("shell", ["/bin/bash", "/bin/sh"])
def test_a_terminal_of_a_server_without_a_tty_finds_air_first_and_opens_at_the_root(tmp_path, shell):
    # Given a server with stdout to a file (its terminals are login shells) and a ~/.profile that sets PATH
    with Server(tmp_path, shell) as server:
        # When JupyterLab opens a terminal at the file browser's root and runs commands in it
        seen = server.probe_terminal()
        log = server.log.read_text()

    # Then the environment's bin comes first on PATH, `air` and `python` are the environment's
    assert seen["path"].split(os.pathsep)[0] == ENVIRONMENT_BIN, (seen, log[-3000:])
    assert (seen["air"], seen["python"]) == (f"{ENVIRONMENT_BIN}/air", f"{ENVIRONMENT_BIN}/python")
    # And the profile did run (its PATH follows), and the terminal opened at the root the user sees
    assert seen["path"].split(os.pathsep)[1:3] == ["/usr/bin", "/bin"]
    assert Path(seen["cwd"]).resolve() == server.root.resolve()
    assert f"{ENVIRONMENT_BIN} comes first on their PATH" in log
    # And the shell is gone with its server
    assert _gone(int(seen["pid"]))


def test_an_administrators_shell_command_and_the_setting_off_are_kept(tmp_path):
    # Given an explicit login shell command, and terminals_open_at_root turned off
    server_app = {"terminado_settings": {"shell_command": ["/bin/sh", "-l"]}}
    with Server(tmp_path, "/bin/bash", server_app, {"terminals_open_at_root": False}) as server:
        # When a terminal opens
        seen = server.probe_terminal()

    # Then it is exactly what was asked for: the profile's PATH alone, in the folder the server started in
    assert seen["path"].split(os.pathsep)[:2] == ["/usr/bin", "/bin"] and ENVIRONMENT_BIN not in seen["path"]
    assert seen["air"] == ""
    assert Path(seen["cwd"]).resolve() == server.started_in.resolve()
    assert _gone(int(seen["pid"]))


def test_only_posix_login_shells_are_wrapped():
    # Given the commands jupyter_server_terminals may build, When jupyter_air adjusts them, Then only POSIX login
    # shells change, and a folder with a space stays one word
    assert login_command(["/usr/bin/fish", "-l"], "/env/bin") is None
    assert login_command(["/bin/bash"], "/env/bin") is None  # a server on a TTY: not a login shell
    assert login_command(["/bin/zsh", "-l"], "/my env/bin") == [
        "/bin/zsh",
        "-l",
        "-c",
        "PATH='/my env/bin':\"$PATH\"; export PATH; exec /bin/zsh -i",
    ]
