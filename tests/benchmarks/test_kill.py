"""SIGKILL a site's export, an analyst's run and a site's apply at every crash-relevant call and at random moments.

After each kill: no final-named file is partial, every bundle a site shows has its private state, no private
state is orphaned (issue #26 finding 5), the analyst's output folder is a complete set or absent, a RESULT.csv is
whole or absent, both audit logs verify; the next run cleans up. The
longer campaign is ``python -m benchmarks kill --kills 200`` (docs/results/fuzz.md).
"""

from __future__ import annotations

import sys

import pytest

from benchmarks.kill import run_kill


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses fork and SIGKILL")
def test_kills_at_every_write_step_leave_no_partial_file_no_bundle_without_state_and_no_orphan():
    stats = run_kill(random_kills=3, seed=11, whens=("before",))
    assert stats["problems"] == [], stats["problems"][:5]
    assert stats["leftovers"] == []
    for op in ("export", "analyst run", "apply"):
        s = stats["ops"][op]
        assert s["counted_calls"] >= 5 and s["cases"] == s["counted_calls"] + 3
        assert s["killed"] >= s["counted_calls"]  # every chosen moment really killed the child
