"""The runs the panels list: a notebook's runs, newest first and paged, and the runs active on a node (this one
unless named) in a time window. Knows nothing of HTTP.

Reads the Jupyter server's tracking store (its ``MLFLOW_TRACKING_URI``, else the embedded default), never
creating it. Blocking (MLflow reads): call it off the event loop. Answers are kept while the store is unchanged
(:mod:`~jupyter_air.tracking.answers`): a poll that finds nothing new makes no search.
"""

from __future__ import annotations

from collections.abc import Sequence

from jupyter_air.home import AirHomeError
from jupyter_air.tracking import naming
from jupyter_air.tracking.answers import SharedAnswers, StoreVersion, store_uri
from jupyter_air.tracking.energy import ENERGY_METRIC, on_simulated_gpus
from jupyter_air.tracking.links import page_links, ui_root
from jupyter_air.tracking.naming import JOB_TAG, NODE_TAG, NOTEBOOK_TAG, SOURCE_TAG, default_experiment_name, node_name
from jupyter_air.tracking.run_pages import ORDER, Cursor, Query, and_, newest_first, search_page, tag_pattern
from jupyter_air.tracking.store import existing_client, store_errors

PARENT_TAG = "mlflow.parentRunId"
#: Metrics shown per run: the latest values of the first few by name (system metrics are the GPU panel's).
MAX_METRICS = 8
DEFAULT_LIMIT, MAX_LIMIT = 50, 1000
#: Most runs one timeline answer holds (the newest).
MAX_WINDOW_RUNS = 200
#: Seconds an answer is reused for the same query on a store that cannot tell whether it changed (not SQLite):
#: identical polls in this window share one search. SQLite stores' answers are reused until something is committed.
UNVERSIONED_ANSWER_SECONDS = 0.5
#: The same for the list of experiments, which costs as much as a search of runs.
UNVERSIONED_EXPERIMENTS_SECONDS = 5.0


class RunsQuery:
    """Answers the runs routes from the server's tracking store; links are rooted at ``base_url``."""

    def __init__(self, base_url: str = "/"):
        self.base_url = base_url
        self._version = StoreVersion()
        self._answers = SharedAnswers(self._version, UNVERSIONED_ANSWER_SECONDS)
        self._experiments = SharedAnswers(self._version, UNVERSIONED_EXPERIMENTS_SECONDS)

    @store_errors()  # a damaged store: UnusableDatabase, naming the file
    def notebook(
        self,
        paths: Sequence[str],
        since_ms: int | None = None,
        limit: int = DEFAULT_LIMIT,
        page_token: str | None = None,
        wait: bool = True,
    ) -> dict | None:
        """Runs started from the notebook (tag ``air.notebook_path`` equal to one of ``paths``, any experiment)
        and runs of its default experiment, newest first; with ``since_ms``, only those started at or after it
        (a panel asks from the start of the oldest run it holds as running, or of its newest run). ``wait=False``
        never blocks (on the event loop): the kept answer if the store tells at once it is current, else None."""
        query = ("notebook", tuple(paths), since_ms, limit, page_token)
        if not wait:
            return self._kept(query)
        return self._answers.get(store_uri(), query, lambda: self._notebook(paths, since_ms, limit, page_token))

    @store_errors()
    def window(self, from_ms: int, to_ms: int, node: str | None = None, wait: bool = True) -> dict | None:
        """Runs of jupyter_air (notebook calls, ``%%air_run``, ``air`` jobs) started on ``node`` (a hostname, as
        runs name their node; default: this one) and active at some time between ``from_ms`` and ``to_ms``, newest
        first (at most :data:`MAX_WINDOW_RUNS`); ``wait`` as for ``notebook``."""
        node = node or node_name()
        query = ("window", from_ms, to_ms, node)
        if not wait:
            return self._kept(query)
        return self._answers.get(store_uri(), query, lambda: self._window(from_ms, to_ms, node))

    def _kept(self, query: tuple) -> dict | None:
        try:
            uri = store_uri()
        except AirHomeError:  # an unusable AIR_HOME: the call off the event loop says so (a 503)
            return None
        return self._answers.kept(uri, query)

    def _notebook(self, paths: Sequence[str], since_ms: int | None, limit: int, page_token: str | None) -> dict:
        cursor = Cursor.decode(page_token)
        default = default_experiment_name(paths[0])
        answer = {"node": node_name(), "ui_url": ui_root(self.base_url), "default_experiment": default}
        client = existing_client(store_uri())
        experiments = self._experiments_of(client)
        if not experiments:
            return {**answer, "runs": [], "next_page_token": None}
        exact = set(paths)
        default_id = next((i for i, name in experiments.items() if name == default), None)

        def ours(run) -> bool:
            return run.data.tags.get(NOTEBOOK_TAG) in exact or run.info.experiment_id == default_id

        following = None
        if since_ms is not None:
            # A poll: the runs started since are few, so one search of them all, kept when they are the
            # notebook's, costs half the two searches below (a search costs MLflow ~4 ms of CPU whatever it finds).
            started = f"attributes.start_time >= {since_ms}"
            runs, following = search_page(client, [Query(list(experiments), started, ours)], limit, cursor)
        if since_ms is None or following is not None:
            queries = [Query(list(experiments), tag_pattern(NOTEBOOK_TAG, paths), ours)]
            if default_id is not None:
                queries.append(Query([default_id], "", ours))
            if since_ms is not None:
                started = f"attributes.start_time >= {since_ms}"
                queries = [Query(q.experiment_ids, and_(q.filter, started), q.keep) for q in queries]
            runs, following = search_page(client, queries, limit, cursor)
        return {
            **answer,
            "runs": [run_json(r, experiments, self.base_url) for r in runs],
            "next_page_token": following.encode() if following else None,
        }

    def _window(self, from_ms: int, to_ms: int, node: str) -> dict:
        answer = {"node": node, "from_ms": from_ms, "to_ms": to_ms, "ui_url": ui_root(self.base_url)}
        client = existing_client(store_uri())
        experiments = self._experiments_of(client)
        if not experiments:
            return {**answer, "runs": [], "truncated": False}
        started = f"attributes.start_time <= {to_ms}"
        found, truncated, here = {}, False, node_name()
        for active in (f"attributes.end_time >= {from_ms}", "attributes.status = 'RUNNING'"):
            batch = client.search_runs(
                list(experiments), and_(started, active), max_results=MAX_WINDOW_RUNS, order_by=ORDER
            )
            truncated |= len(batch) == MAX_WINDOW_RUNS
            found.update({r.info.run_id: r for r in batch if _ours(r, node, here)})
        runs = sorted(found.values(), key=newest_first)[:MAX_WINDOW_RUNS]
        return {**answer, "runs": [run_json(r, experiments, self.base_url) for r in runs], "truncated": truncated}

    def _experiments_of(self, client) -> dict[str, str]:
        """The store's active experiments by id, listed again once something was committed to the store (after
        :data:`UNVERSIONED_EXPERIMENTS_SECONDS` for a store that cannot tell)."""
        if client is None:
            return {}
        return self._experiments.get(store_uri(), "experiments", lambda: _experiments(client))


def run_json(run, experiments: dict[str, str], base_url: str) -> dict:
    """One run as the panels show it."""
    info, tags, metrics = run.info, run.data.tags, run.data.metrics
    shown = sorted(k for k in metrics if not k.startswith("system/"))[:MAX_METRICS]
    node = tags.get(NODE_TAG)
    return {
        "run_id": info.run_id,
        "run_name": info.run_name,
        "experiment_id": info.experiment_id,
        "experiment_name": experiments.get(info.experiment_id),
        "status": info.status,
        "start_ms": info.start_time,
        "end_ms": info.end_time,
        "source": source_of(tags),
        "function": tags.get(naming.FUNCTION_TAG),
        "job_run_id": tags.get(JOB_TAG),
        "attempt": _int(tags.get(naming.ATTEMPT_TAG)),
        "world_size": _int(tags.get(naming.WORLD_SIZE_TAG)),
        "gpus": _int(tags.get(naming.GPUS_TAG)),
        "nodes": [node] if node else [],
        "metrics": {k: metrics[k] for k in shown},
        "metrics_count": len(metrics),
        "params_count": len(run.data.params),
        "parent_run_id": tags.get(PARENT_TAG),
        "notebook_path": tags.get(NOTEBOOK_TAG),
        "error": tags.get(naming.ERROR_TAG),
        "energy_watt_hours": metrics.get(ENERGY_METRIC),
        "gpus_simulated": on_simulated_gpus(tags),
        "url": page_links(base_url, info.experiment_id, info.run_id).run,
    }


def source_of(tags: dict[str, str]) -> str | None:
    """``distributed`` or ``magic`` (notebook calls), ``job`` (an ``air`` job's attempt), None for other runs."""
    return tags.get(SOURCE_TAG) or ("job" if JOB_TAG in tags else None)


def _experiments(client) -> dict[str, str]:
    """Names of the store's active experiments by id."""
    found, token = {}, None
    while True:
        page = client.search_experiments(max_results=1000, page_token=token)
        found.update({e.experiment_id: e.name for e in page})
        token = page.token
        if not token:
            return found


def _ours(run, node: str, here: str) -> bool:
    """A run of jupyter_air started on ``node`` (runs recorded before the node tag existed count as ``here``'s, this
    node's)."""
    tags = run.data.tags
    return source_of(tags) is not None and tags.get(NODE_TAG, here) == node


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
