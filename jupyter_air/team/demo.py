"""``make hub``: the whole team stack on 127.0.0.1 for trying it, NOT FOR PRODUCTION (one shared password, every
user's server running as this machine's user): JupyterHub with alice, bob and carol (group ml) and the admin
hubadmin, configurable-http-proxy, the air-jobs service, and an MLflow server that runs MLflow's authentication app
(nothing shared by default) and takes hub tokens. Writes ``hub-demo.json`` (0600) into the folder it prints: the
URLs, the demo password and an API token per user, for scripts; runs until Ctrl-C or SIGTERM, then stops it all.

    python -m jupyter_air.team.demo [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from jupyter_air.home import open_private, private_dir
from jupyter_air.owned import NotOurs, private_folder, write_private
from jupyter_air.tracking.sharing import HUB_TOKENS

from .stack import Hub, free_port

#: Seconds the MLflow server may take to answer /health (about 20 s on a quiet machine).
MLFLOW_START_SECONDS = 300


def start_mlflow(folder: Path, port: int, hub: Hub, admin_password: str) -> subprocess.Popen:
    """The team's tracking server on 127.0.0.1:``port``, its stores in ``folder``."""
    private_dir(folder)
    write_private(
        folder / "auth.ini",
        f"[mlflow]\ndefault_permission = NO_PERMISSIONS\ndatabase_uri = sqlite:///{folder / 'auth.db'}\n"
        f"admin_username = admin\nauthorization_function = {HUB_TOKENS}\n",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(
        MLFLOW_AUTH_CONFIG_PATH=str(folder / "auth.ini"),
        MLFLOW_AUTH_ADMIN_PASSWORD=admin_password,
        MLFLOW_FLASK_SERVER_SECRET_KEY=secrets.token_hex(16),
        JUPYTERHUB_API_URL=f"{hub.url}/hub/api",
        JUPYTERHUB_API_TOKEN=hub.mlflow_token,
        TMPDIR=str(folder),  # MLflow's upload copies and database lock files stay in the stack's private folder
        # MLflow's GenAI job runner: 8 more processes (1.8 GiB) that nothing in the stack uses
        MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
    )
    command = [sys.executable, "-m", "mlflow", "server", "--app-name", "basic-auth", "--workers", "1"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--serve-artifacts"]
    command += ["--backend-store-uri", f"sqlite:///{folder / 'mlflow.db'}"]
    command += ["--artifacts-destination", str(folder / "artifacts")]
    with open_private(folder / "server.log", "wb") as log:
        return subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_for(url: str, process: subprocess.Popen, log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer:\n" + log.read_text()[-3000:])
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make hub", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help="where the stack keeps its state (default: a new temporary folder)")
    args = parser.parse_args(argv)
    try:  # the secrets go where no other user can read, plant or swap a file
        folder = private_folder(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="jupyter-air-hub-"))
    except NotOurs as err:
        parser.error(f"--dir {args.dir} cannot hold the stack's secrets: {err}")
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda *_: stop.set())
    mlflow_url = f"http://127.0.0.1:{free_port()}"
    admin_password = secrets.token_urlsafe(16)
    # air-jobs keeps the team's jobs and logs their runs to the team's MLflow server as its admin (each job's
    # experiment checked as the job's owner first)
    service = {"AIR_HOME": str(folder / "air-jobs"), "MLFLOW_TRACKING_URI": mlflow_url}
    credentials = {"MLFLOW_TRACKING_USERNAME": "admin", "MLFLOW_TRACKING_PASSWORD": admin_password}
    hub = Hub(private_dir(folder / "hub"), service, mlflow_url, credentials=credentials)  # in a 0600 file
    mlflow = start_mlflow(folder / "mlflow", int(mlflow_url.rsplit(":", 1)[1]), hub, admin_password)
    try:
        hub.ready()
        wait_for(f"{mlflow_url}/health", mlflow, folder / "mlflow" / "server.log", MLFLOW_START_SECONDS)
        demo = {
            "hub_url": hub.url,
            "mlflow_url": mlflow_url,
            "jobs_service_url": hub.service_url,
            "password": hub.password,
            "tokens": hub.tokens(),
            "mlflow_admin": {"username": "admin", "password": admin_password},
            "not_for_production": "one shared password; every user's server runs as this machine's user",
        }
        write_private(folder / "hub-demo.json", json.dumps(demo, indent=2))
        print(f"Team stack (NOT FOR PRODUCTION) in {folder}\n  JupyterHub {hub.url}  (alice, bob, carol or hubadmin;")
        print(f"  password {hub.password})\n  MLflow {mlflow_url}\n  tokens and URLs: {folder / 'hub-demo.json'}")
        print("Ctrl-C stops it.", flush=True)
        stop.wait()
    finally:
        hub.stop()
        os.killpg(mlflow.pid, signal.SIGTERM)
        mlflow.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
