"""Start the team stack for the browser tests: JupyterHub on 127.0.0.1:$JUPYTER_AIR_UI_PORT (users alice, bob and
carol with one shared password, each user's JupyterLab spawned on login) and its air-jobs service, in
$JUPYTER_AIR_UI_TEAM_DIR (made 0700). Writes ``team.json`` there (the hub's URL, the password, an API token of each
user) for the spec; stops the hub, and with it the proxy, the service and users' servers, on SIGTERM. Never use it
in production.
"""

import json
import os
import signal
import sys
import threading
from pathlib import Path

from jupyter_air.team.stack import Hub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from resident_servers import stop_all

folder = Path(os.environ["JUPYTER_AIR_UI_TEAM_DIR"])
stop = threading.Event()
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda *_: stop.set())
environment = {"AIR_HOME": str(folder / "air"), "MLFLOW_TRACKING_URI": f"sqlite:///{folder / 'mlflow.db'}"}
hub = Hub(folder, environment, port=int(os.environ["JUPYTER_AIR_UI_PORT"]))
try:
    hub.ready()
    secrets = {"url": hub.url, "password": hub.password, "tokens": hub.tokens()}
    team = folder / "team.json"
    team.touch(mode=0o600)
    team.write_text(json.dumps(secrets))
    print(f"Team stack ready at {hub.url} ({team})", flush=True)
    while not stop.wait(1):
        pass
finally:
    hub.stop()
    stop_all(folder)  # the resident processes of users' AIR_HOMEs (fork server zygotes), not left to their idle stop
