"""Pages of MLflow's run search over several filters at once, merged newest first, each resumed where the last
ended by a :class:`Cursor` that travels as an opaque page token."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from jupyter_air.error_kinds import BAD_INPUT

#: Newest first, as every page is.
ORDER = ["attributes.start_time DESC"]
#: Characters written as LIKE's one-character wildcard in a tag pattern: quotes and backslashes cannot be
#: written in MLflow's filter syntax, and % and _ are LIKE's own; matches are then checked exactly.
_UNSAFE_IN_PATTERN = set("'\"\\%_")


class QueryError(ValueError):
    """A query that cannot be answered as asked (a malformed page token); the message says how to fix it."""

    kind = BAD_INPUT


@dataclass(frozen=True)
class Cursor:
    """Where a page ends: runs started before ``start_ms``, or at it but not among ``seen``."""

    start_ms: int | None = None
    seen: frozenset[str] = field(default_factory=frozenset)

    def encode(self) -> str:
        data = json.dumps({"t": self.start_ms, "s": sorted(self.seen)}, separators=(",", ":"))
        return base64.urlsafe_b64encode(data.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str | None) -> Cursor:
        if not token:
            return cls()
        try:
            data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
            start_ms, seen = data["t"], data["s"]
            if not isinstance(start_ms, int) or not all(isinstance(s, str) for s in seen):
                raise TypeError
        except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError):
            raise QueryError(
                f"page_token {token[:40]!r} is not one this server gave out: pass the next_page_token of an "
                "earlier answer, or leave it out to start from the newest run."
            ) from None
        return cls(start_ms, frozenset(seen))

    def consumed(self, run) -> bool:
        return run.info.start_time == self.start_ms and run.info.run_id in self.seen


@dataclass(frozen=True)
class Query:
    """Runs of ``experiment_ids`` that match ``filter``, of which those ``keep`` accepts are shown."""

    experiment_ids: list[str]
    filter: str
    keep: Callable[[object], bool]


def search_page(client, queries: list[Query], limit: int, cursor: Cursor):
    """The newest ``limit`` runs after ``cursor`` over several queries (merged, no duplicates), and the cursor of
    the next page (None at the end). Each query brings its newest ``limit`` runs not yet given out, so the
    newest ``limit`` of their union are the page's."""
    want = limit + len(cursor.seen)
    considered, kept, cut = {}, set(), False
    for query in queries:
        filter_string = query.filter
        if cursor.start_ms is not None:
            filter_string = and_(filter_string, f"attributes.start_time <= {cursor.start_ms}")
        batch = client.search_runs(query.experiment_ids, filter_string, max_results=want, order_by=ORDER)
        considered.update({run.info.run_id: run for run in batch})
        kept.update(run.info.run_id for run in batch if query.keep(run))
        cut |= len(batch) == want
    ordered = [r for r in sorted(considered.values(), key=newest_first) if not cursor.consumed(r)]
    page = ordered[:limit]
    shown = [r for r in page if r.info.run_id in kept]
    if not page or (not cut and len(ordered) <= limit):
        return shown, None
    last = page[-1].info.start_time
    seen = {r.info.run_id for r in page if r.info.start_time == last}
    if last == cursor.start_ms:
        seen |= cursor.seen
    return shown, Cursor(last, frozenset(seen))


def tag_pattern(tag: str, values: Sequence[str]) -> str:
    """A LIKE filter matching every value that ends with the shortest of ``values`` (a superset; check exactly)."""
    suffix = "".join("_" if c in _UNSAFE_IN_PATTERN or not c.isprintable() else c for c in min(values, key=len))
    return f"tags.`{tag}` LIKE '%{suffix}'"


def and_(*clauses: str) -> str:
    return " and ".join(c for c in clauses if c)


def newest_first(run) -> tuple[int, str]:
    return -(run.info.start_time or 0), run.info.run_id
