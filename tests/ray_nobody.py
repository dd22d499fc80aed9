"""What another local user (``nobody``) gets from a Ray cluster's doors: the GCS, the job server, a dashboard agent."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

#: What ``nobody`` runs: two calls to the GCS (one a named actor's lookup) and a job submission to the job server
#: and to a node's dashboard agent, without a token; then, given the token on stdin, the GCS call and a read of the
#: job list with it.
NOBODY_CALLS = r"""
import json, sys, urllib.error, urllib.request
sys.path.append(sys.argv[1])  # grpc from the project's environment (world-readable)
import grpc

gcs, job_server, agent = sys.argv[2:5]
token = sys.stdin.read().strip()


def gcs_call(metadata, method="/ray.rpc.NodeInfoGcsService/GetClusterId"):
    channel = grpc.insecure_channel(gcs)
    try:  # GetClusterIdRequest is empty: its serialized form is b"" (a request with every field unset, for others)
        channel.unary_unary(method)(b"", timeout=10, metadata=metadata)
        return "OK"
    except grpc.RpcError as exc:
        return exc.code().name
    finally:
        channel.close()


def http(method, url, headers=None):
    body = json.dumps({"entrypoint": "id", "submission_id": "nobody-was-here"}).encode() if method == "POST" else None
    headers = {"Content-Type": "application/json", **(headers or {})}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


result = {"gcs": gcs_call(())}
result["named_actor"] = gcs_call((), "/ray.rpc.ActorInfoGcsService/GetNamedActorInfo")  # how parked actors are found
if job_server:
    result["job_server"] = http("POST", job_server + "/api/jobs/")
    result["agent"] = http("POST", agent + "/api/job_agent/jobs/")
if token:
    bearer = {"authorization": "Bearer " + token}
    result["gcs_with_token"] = gcs_call(tuple(bearer.items()))
    result["job_list_with_token"] = http("GET", job_server + "/api/jobs/", bearer)
print(json.dumps(result))
"""


def as_nobody(gcs: str, job_server: str = "", agent: str = "", token: str = "") -> dict:
    """What the calls of ``NOBODY_CALLS`` got, made by the local user ``nobody``."""
    site = next(p for p in sys.path if p.endswith("site-packages") and Path(p, "grpc").is_dir())
    nobody = [shutil.which("runuser"), "-u", "nobody", "--", "/usr/bin/python3.11"]
    done = subprocess.run(
        [*nobody, "-c", NOBODY_CALLS, site, gcs, job_server, agent],
        input=token,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},  # nothing of ours, no token
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def answers(url: str, headers: dict, within: float = 90.0) -> None:
    """Wait until ``url`` answers 200 (the dashboard's servers start after the head)."""
    deadline = time.monotonic() + within
    while True:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)
