"""``dcstudio demo`` (issue #22): the same numbers on every run, against each site's real own model."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from core import demo
from core.formats.identity import Identity


@pytest.fixture
def fast_keys(monkeypatch):
    """Identity files under a small scrypt work factor (the demo's keys are throwaway either way)."""
    save = Identity.save
    monkeypatch.setattr(Identity, "save", lambda self, path, passphrase, log_n=14: save(self, path, passphrase, 14))
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", demo.DEMO_PASSPHRASE)


def _table(lines: list[str]) -> list[str]:
    return [x for x in lines if re.match(r"^[a-z]+-[a-z]+\s+\d+", x)]


def _results(out) -> list[str]:
    """The printed per-site table, the per-site sentences and the result line (not the paths or fingerprints)."""
    lines: list[str] = []
    assert demo.run_demo(out, lambda *said: lines.extend(said)), lines
    start = next(i for i, x in enumerate(lines) if x.startswith("Per-site accuracy"))
    return [x for x in lines[start:] if not x.startswith("Everything is under")]


def test_two_demo_runs_print_identical_numbers(tmp_path, fast_keys):
    first, second = _results(tmp_path / "one"), _results(tmp_path / "two")
    assert first == second  # fresh keys, nonces and kit: the same numbers
    table = _table(first)
    assert len(table) == len(demo.SITES)
    for name, _ in demo.SITES:  # one sentence per site says which model it uses and why
        assert sum(x.startswith(f"{name}: ") and ("keeps its own model" in x or "shared model" in x)
                   for x in first) == 1
    result = next(x for x in first if x.startswith("Result: "))
    assert "own models" in result and "pt)" in result
    # a site that keeps its own model gets exactly its own model's predictions: same accuracy in both columns
    for row, name in zip(table, [n for n, _ in demo.SITES], strict=True):
        own, pkg = (float(v) for v in row.split()[-2:])
        if any(x.startswith(f"{name}: keeps its own model") for x in first):
            assert own == pkg


def test_the_own_model_column_is_the_model_the_site_keeps(tmp_path, fast_keys):
    """Like with like (#25): the "own model" column is the logistic regression the site trained at export and keeps
    (its ``local_prediction`` in RESULT.csv, the model a site told to keep its own uses), not another learner."""
    lines = _results(tmp_path)
    assert any("own model" in x for x in lines) and not any("local only" in x for x in lines)
    for row, (name, _) in zip(_table(lines), demo.SITES, strict=True):
        result = pd.read_csv(tmp_path / name / "results.csv")
        # a site told to keep its own model gets it as the package (no second, identical column)
        column = "local_prediction" if "local_prediction" in result else "prediction"
        kept = float((result[column] == result["diagnosis"]).mean())
        own = float(row.split()[-2])
        assert own == pytest.approx(kept, abs=5e-4), name
