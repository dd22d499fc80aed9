"""What a job keeps in its folder for whoever attaches after it ended: a remote call's ranks' pickled results
(``results/rank_<r>.pkl``), deleted by the Jupyter server's checks :data:`RESULT_DAYS` days after they were
written."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

#: The folder of a job's folder that holds its ranks' results (``rank_<r>.pkl``).
RESULTS = "results"
#: Days the results of an ended call are kept in its job's folder before the server's check deletes them.
RESULT_DAYS = 7


def forget_old_results(jobs_dir: Path, days: float = RESULT_DAYS) -> list[Path]:
    """Delete the results folders last written more than ``days`` ago; the folders deleted."""
    cutoff, gone = time.time() - days * 86400, []
    for results in jobs_dir.glob(f"*/{RESULTS}"):
        if results.is_dir() and results.stat().st_mtime < cutoff:
            shutil.rmtree(results, ignore_errors=True)
            gone.append(results)
    return gone
