"""The team's job service (air-jobs) as a user's Jupyter server sees it: the jobs routes called with the user's hub
token, answered in the shapes of :class:`~jupyter_air.workloads.surfaces.jobs_view.JobsView`, so the panel's handlers
serve either the same way. The service's refusals come back as :class:`ServiceAnswer` with its status and words (a
403 names the job and whom to ask)."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

from jupyter_air.error_kinds import kind_of_status
from jupyter_air.workloads.file.limits import read_limited, too_big
from jupyter_air.workloads.surfaces.jobs_view import workload_file

#: The team's job service whose jobs a Jupyter server's job routes answer (overrides ``c.JupyterAir.jobs_service_url``;
#: a hub's spawner sets it for every user).
JOBS_URL_ENV = "AIR_JOBS_URL"
#: Seconds a call to the job service may take.
TIMEOUT_SECONDS = 30


class ServiceAnswer(RuntimeError):
    """The job service refused a call (``status``, its message and, for a workload, every problem in ``errors``),
    or could not be reached (502); its ``kind`` is the one of its status."""

    def __init__(self, status: int, message: str, errors: list[str] | None = None):
        super().__init__(message)
        self.status, self.errors = status, errors
        self.kind = kind_of_status(status)


class ServiceJobs:
    """The jobs of the air-jobs service at ``url`` (e.g. ``http://127.0.0.1:8081/services/air-jobs/``) that the
    holder of the hub ``token`` may see."""

    def __init__(self, url: str, token: str):
        import urllib3

        self.url, self.token = url.rstrip("/") + "/", token
        # Kept-alive connections, shared by the threads that call (the server's executor).
        self._pool = urllib3.PoolManager(maxsize=8, timeout=TIMEOUT_SECONDS, retries=False)

    @classmethod
    def from_environment(cls) -> ServiceJobs | None:
        """The service ``AIR_JOBS_URL`` names, called with ``JUPYTERHUB_API_TOKEN``; None when it names none."""
        url = os.environ.get(JOBS_URL_ENV)
        return cls(url, os.environ.get("JUPYTERHUB_API_TOKEN", "")) if url else None

    def list(self, limit: int, schedule: str | None = None) -> dict:
        fired = f"&schedule={quote(schedule, safe='')}" if schedule else ""
        return self.call("GET", f"jobs?limit={limit}{fired}")

    def get(self, job_run_id: str) -> dict:
        return self.call("GET", f"jobs/{quote(job_run_id, safe='')}")

    def submit(self, root: Path, path: str) -> dict:
        """Send the workload file at ``path`` under ``root`` (checked as the local view checks it) to the service,
        which runs it as ``air run -f`` would; the file's folder is where its relative paths point."""

        return self.send(workload_file(root, path), path)

    def send(self, target: Path, label: str, overrides: list[str] | tuple[str, ...] = ()) -> dict:
        """Send the workload file at the absolute path ``target`` (named ``label`` in problems), with ``air run``'s
        ``--override`` items, to be run as the caller's job; what ``get`` answers for it (``{"created", "schedule"}``
        when it has a ``schedule:``, which the service keeps and fires)."""
        text, size = read_limited(target)
        if text is None:  # refused here, as the service would refuse it, without sending it
            problem = too_big(label, size)
            raise ServiceAnswer(400, f"invalid workload {label}:\n  {problem}", [problem])
        body = {"workload": text, "path": str(target), "label": label, "overrides": list(overrides)}
        return self.call("POST", "jobs", body)

    @property
    def schedules(self) -> ServiceSchedules:
        return ServiceSchedules(self)

    def gpu_queue(self) -> dict:
        """The team's GPU ledger as `air queue -o json` prints it: held, queued, recent GPU-hours per user."""
        return self.call("GET", "gpus/queue")

    def cancel(self, job_run_id: str) -> dict:
        return self.call("POST", f"jobs/{quote(job_run_id, safe='')}/cancel")

    def permissions(self, job_run_id: str) -> dict:
        return self.call("GET", f"jobs/{quote(job_run_id, safe='')}/permissions")

    def grant(self, job_run_id: str, user: str | None, group: str | None, level: str | None) -> dict:
        body = {"user": user, "group": group, "level": level}
        return self.call("PUT", f"jobs/{quote(job_run_id, safe='')}/permissions", body)

    def logs(self, job_run_id: str, attempt: int, node: int, offset: int) -> dict:
        query = urlencode({"attempt": attempt, "node": node, "offset": offset})
        return self.call("GET", f"jobs/{quote(job_run_id, safe='')}/logs?{query}")

    def log_pages(self, job_run_id: str, attempt: int, node: int, offset: int = 0) -> Iterator[dict]:
        """The pages of ``logs`` from ``offset`` until the log as it is now has been read (the last one says where
        to go on from, and whether the attempt has ended)."""
        page = self.logs(job_run_id, attempt, node, offset)
        yield page
        while page["text"] and page["next_offset"] < page["size_bytes"]:
            page = self.logs(job_run_id, page["attempt"], node, page["next_offset"])
            yield page

    def log_blocks(self, job_run_id: str, attempt: int, node: int) -> tuple[int, Iterator[bytes]]:
        """The attempt's number and the log as it is now, read page by page."""
        pages = self.log_pages(job_run_id, attempt, node)
        first = next(pages)
        blocks = (page["text"].encode("utf-8") for page in itertools.chain([first], pages) if page["text"])
        return first["attempt"], blocks

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        """``method`` on the service's route ``path`` as the token's user: its JSON answer, or ServiceAnswer."""
        import urllib3

        try:
            answer = self._pool.request(
                method,
                self.url + path,
                body=None if body is None else json.dumps(body).encode(),
                headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
            )
        except urllib3.exceptions.HTTPError as err:
            raise ServiceAnswer(
                502,
                f"The team's job service at {self.url} does not answer ({err}). Ask the hub's admins whether the "
                "air-jobs service runs (the hub's log says why it stopped).",
            ) from None
        if answer.status >= 400:
            raise _refusal(answer.status, answer.reason, answer.data.decode("utf-8", "replace"))
        return json.loads(answer.data)


class ServiceSchedules:
    """The service's schedules that the caller may see, in the shapes of
    :class:`~jupyter_air.workloads.surfaces.schedules_view.SchedulesView` (the service fires them)."""

    def __init__(self, service: ServiceJobs):
        self.service = service

    def list(self) -> dict:
        return self.service.call("GET", "schedules")

    def get(self, name: str) -> dict:
        return self.service.call("GET", f"schedules/{quote(name, safe='')}")

    def delete(self, name: str) -> dict:
        return self.service.call("DELETE", f"schedules/{quote(name, safe='')}")

    def pause(self, name: str) -> dict:
        return self.service.call("POST", f"schedules/{quote(name, safe='')}/pause")

    def resume(self, name: str) -> dict:
        return self.service.call("POST", f"schedules/{quote(name, safe='')}/resume")

    def run_now(self, name: str) -> dict:
        return self.service.call("POST", f"schedules/{quote(name, safe='')}/run-now")


def _refusal(status: int, reason: str, text: str) -> ServiceAnswer:
    """The service's answer in its own words (JSON ``message``); the hub's own refusals (a token without access to
    the service) say how to get access."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return ServiceAnswer(status, body["message"], body.get("errors"))
    if status in (401, 403):
        return ServiceAnswer(
            403,
            "The team's job service refused this server's hub token: its role needs the scope "
            "access:services!service=air-jobs (c.JupyterHub.load_roles, role 'server').",
        )
    return ServiceAnswer(502, f"The team's job service answered {status} {reason}: {text[:300]}")
