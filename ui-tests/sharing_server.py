"""Start JupyterLab for the browser tests with a team's MLflow tracking server: `mlflow server --app-name basic-auth`
on 127.0.0.1 granting nothing by default, with users alice and bob; JupyterLab tracks there as alice. Writes
``mlflow.json`` (the server's URI and bob's password) into $JUPYTER_AIR_UI_SHARING_DIR for the spec; stops both on
SIGTERM. Never use it in production.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from tracking_servers import auth_tracking_server, create_user

PASSWORDS = {"admin": "ui-admin-password", "alice": "ui-alice-password", "bob": "ui-bob-password"}
folder = Path(os.environ["JUPYTER_AIR_UI_SHARING_DIR"])
with auth_tracking_server(folder, PASSWORDS["admin"]) as server:
    uri = server.ready()
    for user in ("alice", "bob"):
        create_user(uri, PASSWORDS["admin"], user, PASSWORDS[user])
    (folder / "mlflow.json").write_text(json.dumps({"uri": uri, "bob_password": PASSWORDS["bob"]}))
    env = {
        **os.environ,
        "MLFLOW_TRACKING_URI": uri,
        "MLFLOW_TRACKING_USERNAME": "alice",
        "MLFLOW_TRACKING_PASSWORD": PASSWORDS["alice"],
        "JUPYTER_AIR_GPU_SOURCE": "none",
    }
    lab = subprocess.Popen(["jupyter", "lab", "--config", "jupyter_server_test_config.py"], env=env)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: lab.terminate())
    lab.wait()
