"""A remote call's results are kept in its job's folder for RESULT_DAYS days, then deleted by the server's check."""

from __future__ import annotations

import os
import time

from jupyter_air.workloads.state.kept_results import RESULT_DAYS, RESULTS, forget_old_results


def test_results_older_than_the_days_kept_are_deleted_and_newer_ones_kept(tmp_path):
    # Given two ended calls' results, one written 8 days ago and one an hour ago, and a job with no results
    old, new = tmp_path / "job-old" / RESULTS, tmp_path / "job-new" / RESULTS
    for folder in (old, new):
        folder.mkdir(parents=True)
        (folder / "rank_0.pkl").write_bytes(b"result")
    (tmp_path / "job-none").mkdir()
    now = time.time()
    os.utime(old, (now - 8 * 86400, now - 8 * 86400))
    os.utime(new, (now - 3600, now - 3600))

    # When the server's check forgets results older than the default
    gone = forget_old_results(tmp_path)

    # Then only the old results are gone, and the job folders stay
    assert RESULT_DAYS == 7 and gone == [old]
    assert not old.exists() and (new / "rank_0.pkl").read_bytes() == b"result"
    assert (tmp_path / "job-old").is_dir() and (tmp_path / "job-none").is_dir()
