"""Seeded fuzzing: 5,000 mutated bundles, packages, kits, cards and anchors; only DCError may escape.

The long campaign is ``python -m benchmarks fuzz --cases 100000`` (docs/results/fuzz.md).
"""

from __future__ import annotations

import time

import pytest

from benchmarks.fuzz import TARGETS, run_fuzz


@pytest.mark.slow
def test_five_thousand_mutated_files_end_in_the_products_error():
    start = time.perf_counter()
    result = run_fuzz(5000, seed=2026)
    assert result.findings == [], result.findings[:5]
    assert result.cases == 5000 and result.refused + result.accepted == 5000
    for target in TARGETS:  # every reader was exercised, and most mutations are refused
        stats = result.per_target[target]
        assert stats["cases"] == 1000 and stats["refused"] > 600, (target, stats)
    # deep enough: signed inner mutations reach the application checks, so some files are still accepted
    assert result.per_target["bundle"]["accepted"] > 0 and result.per_target["package"]["accepted"] > 0
    assert time.perf_counter() - start < 60
