"""Answers read from the tracking store, kept while the store is unchanged: identical concurrent queries share
one search, and a query asked again before anything was committed is answered from memory.

A SQLite store tells cheaply whether anything was committed since a look (``PRAGMA data_version`` on one
read-only connection, about 10 us), whoever committed it. Other stores cannot: their answers are shared while
being made and reused for ``unversioned_seconds`` after.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from jupyter_air.tracking.store import sqlite_path, tracking_uri

#: Answers kept per cache (the latest queries; the least recently asked is dropped first).
MAX_KEPT = 32


class StoreVersion:
    """A value that differs whenever anything was committed to a SQLite store since the last look, by any process;
    None for other stores, and when it cannot be told at once (the file missing, a writer committing)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._file: tuple | None = None  # (path, device, inode) the connection reads
        self._opened = 0  # connections opened so far: values of two connections never compare equal

    def __call__(self, uri: str, wait: bool = True) -> tuple[int, int] | None:
        """The store's version; with ``wait=False`` (on the event loop) None rather than open the file or wait for
        another thread's look."""
        path = sqlite_path(uri)
        if path is None:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            return None
        file = (str(path), stat.st_dev, stat.st_ino)
        if not self._lock.acquire(blocking=wait):
            return None
        try:
            if file != self._file:  # another store, or the file was replaced
                if not wait:
                    return None
                self._close()
                self._db = sqlite3.connect(
                    f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=0, check_same_thread=False
                )
                self._file, self._opened = file, self._opened + 1
            return self._opened, self._db.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:  # locked by a writer's commit (never waited for), or unreadable
            self._close()
            return None
        finally:
            self._lock.release()

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
        self._db, self._file = None, None


@dataclass(frozen=True)
class _Kept:
    version: Hashable | None
    made: float
    answer: Any


class SharedAnswers:
    """Answers by query, each kept with the store's version from just before it was made."""

    def __init__(self, version: StoreVersion, unversioned_seconds: float):
        self._version = version
        self._unversioned_seconds = unversioned_seconds
        self._lock = threading.Lock()
        self._kept: OrderedDict[Hashable, _Kept] = OrderedDict()
        self._making: dict[Hashable, tuple[Hashable | None, Future]] = {}

    def get(self, uri: str, query: Hashable, make: Callable[[], Any]) -> Any:
        """``make()``'s answer to ``query`` on the store at ``uri``: the kept one when nothing was committed since
        it was made, the one being made when nothing was committed since it started, else a new one."""
        key, version = (uri, query), self._version(uri)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and self._current(kept, version):
                self._kept.move_to_end(key)
                return kept.answer
            making = self._making.get(key)
            joined = making is not None and making[0] == version
            if joined:
                future = making[1]
            else:
                future = Future()
                self._making[key] = (version, future)
        if joined:
            return future.result()
        started = time.monotonic()
        try:
            answer = make()
        except BaseException as exc:
            self._done(key, future)
            future.set_exception(exc)
            raise
        self._done(key, future, _Kept(version, started, answer))
        future.set_result(answer)
        return answer

    def kept(self, uri: str, query: Hashable) -> Any | None:
        """The kept answer to ``query`` when the store tells at once that nothing was committed since it was made;
        None otherwise. Never waits nor searches: for the event loop, before ``get`` off it."""
        version = self._version(uri, wait=False)
        if version is None or not self._lock.acquire(blocking=False):
            return None
        try:
            kept = self._kept.get((uri, query))
            return kept.answer if kept is not None and kept.version == version else None
        finally:
            self._lock.release()

    def _current(self, kept: _Kept, version: Hashable | None) -> bool:
        if version is not None:
            return kept.version == version
        return kept.version is None and time.monotonic() - kept.made < self._unversioned_seconds

    def _done(self, key: Hashable, future: Future, kept: _Kept | None = None) -> None:
        with self._lock:
            if self._making.get(key, (None, None))[1] is future:
                del self._making[key]
            if kept is not None:
                self._kept[key] = kept
                self._kept.move_to_end(key)
                while len(self._kept) > MAX_KEPT:
                    self._kept.popitem(last=False)


def store_uri() -> str:
    """The server's tracking URI, resolved once per value of the variables it depends on (resolving AIR_HOME takes
    about 0.2 ms, more than the rest of a poll that finds nothing new)."""
    return _resolved_uri(os.environ.get("MLFLOW_TRACKING_URI"), os.environ.get("AIR_HOME"), os.environ.get("HOME"))


@functools.lru_cache(maxsize=8)
def _resolved_uri(_tracking: str | None, _air_home: str | None, _home: str | None) -> str:
    return tracking_uri()
