"""How a call ended: the file a call's process writes into the call's folder (how its launch ended), and a
remote call's runner into its job's folder (its results or failure); the kernel reads it without importing torch."""

from __future__ import annotations

import json
import os
from pathlib import Path

#: The file of a call's (or a remote call's job's) folder that says how it ended.
OUTCOME = "outcome.json"


def write_outcome(folder: Path, outcome: dict) -> None:
    """Write ``outcome`` at once: a reader sees all of it or nothing."""
    staging = folder / (OUTCOME + ".tmp")
    staging.write_text(json.dumps(outcome))
    os.replace(staging, folder / OUTCOME)


def read_outcome(folder: Path) -> dict | None:
    """The call's outcome, or None while (or when) the call process has written none."""
    try:
        return json.loads((folder / OUTCOME).read_text())
    except FileNotFoundError:
        return None
