"""Local copies of files that grow on other nodes: each copy's size is how much of the remote file it holds."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

from jupyter_air.home import open_private

K = TypeVar("K")


def offsets(copies: Mapping[K, Path]) -> dict[K, int]:
    """Bytes already copied of each file (0 for a copy not made yet): where the next read starts."""
    return {key: path.stat().st_size if path.exists() else 0 for key, path in copies.items()}


def append(copies: Mapping[K, Path], chunks: Mapping[K, bytes]) -> None:
    """Add the new bytes of each remote file to its local copy (created owner-only)."""
    for key, data in chunks.items():
        if data:
            with open_private(copies[key]) as f:
                f.write(data)
