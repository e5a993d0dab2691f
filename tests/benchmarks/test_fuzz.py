"""Seeded fuzzing: mutated bundles, packages, kits, cards and anchors; only DCError may escape, no inconsistent
bundle is accepted and nothing a file carries is printed raw.

No test here depends on how long the campaign takes (the machine may be loaded). The long campaign is
``python -m benchmarks fuzz --cases 50000`` (docs/results/fuzz/).
"""

from __future__ import annotations

import pytest

from benchmarks.fuzz import METHODS, TARGETS, VARIANTS, run_fuzz


@pytest.mark.slow
def test_two_thousand_five_hundred_mutated_files_end_in_the_products_error():
    """500 files a reader (5,000 until issue #36: the suite's costliest test, most of it fitting the accepted
    bundles; the search for findings is the benchmark's, 50,000 cases)."""
    result = run_fuzz(2500, seed=2026)
    assert result.findings == [], result.findings[:5]
    assert result.cases == 2500 and result.refused + result.accepted == 2500
    for target in TARGETS:  # every reader was exercised, and most mutations are refused
        stats = result.per_target[f"{target}:dc" if target in ("bundle", "package") else target]
        assert stats["cases"] == 500 and stats["refused"] > 300, (target, stats)
    # deep enough: signed inner mutations reach the application checks, so some files are still accepted
    assert result.per_target["bundle:dc"]["accepted"] > 0 and result.per_target["package:dc"]["accepted"] > 0
    assert result.accepted_lies == [] and result.unsafe_prints == []


@pytest.mark.slow
def test_structured_resigned_mutations_of_every_method_end_in_the_products_error():
    """Every method's bundle and package, re-signed with typed garbage in a field or an array of the wrong shape,
    dtype or size (issue #26): no traceback, and no wrong-shaped or wrong-dtype package array is accepted."""
    result = run_fuzz(1400, seed=26, targets=("bundle", "package"), methods=METHODS)
    assert result.findings == [], result.findings[:5]
    assert set(result.per_class) >= {"fields", "arrays", "zip"}
    assert result.per_class["arrays"]["cases"] > 100 and result.per_class["arrays"]["accepted"] == 0


@pytest.mark.slow
def test_insider_lies_are_all_refused_and_hostile_text_is_never_printed_raw():
    """Issue #32: every method's bundle (and a formal-noise one) re-signed with well-typed members that disagree with
    its arrays or the kit is refused; every bundle and package with control characters, bidi overrides or HTML in
    a text member is read (and applied) with what the CLI prints captured: nothing raw."""
    result = run_fuzz(1600, seed=32, targets=("bundle", "package"), methods=(*METHODS, *VARIANTS))
    assert result.findings == [], result.findings[:5]
    assert result.per_class["lies"]["cases"] > 100 and result.accepted_lies == [], result.accepted_lies[:5]
    assert result.per_class["text"]["cases"] > 200 and result.per_class["text"]["accepted"] > 0
    assert result.unsafe_prints == [], result.unsafe_prints[:5]
