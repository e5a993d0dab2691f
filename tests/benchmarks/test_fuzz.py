"""Seeded fuzzing: 5,000 mutated bundles, packages, kits, cards and anchors; only DCError may escape.

The long campaign is ``python -m benchmarks fuzz --cases 100000`` (docs/results/fuzz.md).
"""

from __future__ import annotations

import time

import pytest

from benchmarks.fuzz import METHODS, TARGETS, run_fuzz


@pytest.mark.slow
def test_five_thousand_mutated_files_end_in_the_products_error():
    start = time.perf_counter()
    result = run_fuzz(5000, seed=2026)
    assert result.findings == [], result.findings[:5]
    assert result.cases == 5000 and result.refused + result.accepted == 5000
    for target in TARGETS:  # every reader was exercised, and most mutations are refused
        stats = result.per_target[f"{target}:dc" if target in ("bundle", "package") else target]
        assert stats["cases"] == 1000 and stats["refused"] > 600, (target, stats)
    # deep enough: signed inner mutations reach the application checks, so some files are still accepted
    assert result.per_target["bundle:dc"]["accepted"] > 0 and result.per_target["package:dc"]["accepted"] > 0
    assert time.perf_counter() - start < 60


@pytest.mark.slow
def test_structured_resigned_mutations_of_every_method_end_in_the_products_error():
    """Every method's bundle and package, re-signed with typed garbage in a field or an array of the wrong shape,
    dtype or size (issue #26): no traceback, and no wrong-shaped or wrong-dtype package array is accepted."""
    result = run_fuzz(1400, seed=26, targets=("bundle", "package"), methods=METHODS)
    assert result.findings == [], result.findings[:5]
    assert set(result.per_class) >= {"fields", "arrays", "zip"}
    assert result.per_class["arrays"]["cases"] > 100 and result.per_class["arrays"]["accepted"] == 0
