"""SIGKILL a site's export, ``audit new``, ``kit new``, an analyst's import and run and a site's apply at every
crash-relevant call and at random moments.

After each kill: no final-named file is partial, every bundle a site shows has its private state, no export folder
the site held before is lost (issue #32 finding 1: ``audit new`` killed anywhere, then the workspace opened again),
no private state is orphaned (issue #26 finding 5), the analyst's output folder is a complete set or absent, every
registered bundle is stored and recorded, a RESULT.csv is whole or absent, the audit logs verify (or, after a killed
``audit new``, are refused until the next one); the next run cleans up. The longer campaign is
``python -m benchmarks kill --kills 200`` (docs/results/fuzz.md).
"""

from __future__ import annotations

import sys

import pytest

from benchmarks.kill import OPERATIONS, run_kill


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses fork and SIGKILL")
def test_kills_at_every_write_step_lose_no_export_leave_no_partial_file_and_no_orphan():
    stats = run_kill(random_kills=2, seed=11, whens=("before",))
    assert stats["problems"] == [], stats["problems"][:5]
    assert stats["lost_exports"] == 0 and stats["orphans"] == 0
    assert stats["leftovers"] == []
    assert set(stats["ops"]) == set(OPERATIONS)
    for op, s in stats["ops"].items():
        assert s["counted_calls"] >= (3 if op == "kit new" else 5) and s["cases"] == s["counted_calls"] + 2
        assert s["killed"] >= s["counted_calls"]  # every chosen moment really killed the child
