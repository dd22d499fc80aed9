"""Start JupyterLab for the browser tests with a Ray cluster on loopback; stop both (by recorded PID) on SIGTERM.

The server watches a head and two worker nodes, each sampling 2 simulated GPUs. Never use it in production.
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from ray_cluster import LocalCluster  # sets the environment Ray reads before Ray is imported
from resident_servers import stop_all

cluster = LocalCluster()
try:
    cluster.add_node()
    cluster.add_node()
    cluster.wait_for_nodes()
    env = {**os.environ, "AIR_RAY_ADDRESS": cluster.address, "JUPYTER_AIR_GPU_SOURCE": "simulated"}
    lab = subprocess.Popen(["jupyter", "lab", "--config", "jupyter_server_test_config.py"], env=env)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: lab.terminate())
    lab.wait()
finally:
    cluster.shutdown()
    stop_all(Path(os.environ["AIR_HOME"]))  # AIR_HOME's zygote and MLflow server, whatever the server's exit
