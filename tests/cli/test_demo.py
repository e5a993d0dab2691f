"""``dcstudio demo`` (issues #22, #37): the same numbers on every run, against each site's real own model, and a
gain: the demo's small clinics use a shared or updated model and do better on their held-out rows."""

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
    start = next(i for i, x in enumerate(lines) if x.startswith("Per-site AUC"))
    return [x for x in lines[start:] if not x.startswith("Everything is under")]


def test_two_demo_runs_print_identical_numbers_and_a_gain(tmp_path, fast_keys):
    first, second = _results(tmp_path / "one"), _results(tmp_path / "two")
    assert first == second  # fresh keys, nonces and kit: the same numbers
    table = _table(first)
    assert len(table) == len(demo.SITES)
    for name, _ in demo.SITES:  # one sentence per site says which model it uses and why
        assert sum(x.startswith(f"{name}: uses ") and "cross-validated on your" in x for x in first) == 1
    result = next(x for x in first if x.startswith("Result: "))
    used = int(re.search(r"Result: (\d+) of 5 clinics use a shared or updated model", result).group(1))
    gain = float(re.search(r"for their own \(([+-][0-9.]+)\)", result).group(1))
    assert used >= 3 and gain > 0.02 and "Why: " in result  # what the product is for, said in a sentence
    for row in table:  # AUC and accuracy of the own model and of the model in use, and which model that is
        own_auc, use_auc, own_acc, use_acc, kind = row.split()[-5:]
        assert kind in ("own", "shared", "intercept", "recalibrated", "blend")
        if kind == "own":
            assert own_auc == use_auc and own_acc == use_acc


def test_the_own_model_column_is_the_model_the_site_keeps(tmp_path, fast_keys):
    """Like with like (#25): the "own" columns are the logistic regression the site trained at export and keeps (its
    ``local_prediction`` in RESULT.csv), not another learner."""
    lines = _results(tmp_path)
    for row, (name, _) in zip(_table(lines), demo.SITES, strict=True):
        result = pd.read_csv(tmp_path / name / "results.csv")
        column = "local_prediction" if "local_prediction" in result else "prediction"
        kept = float((result[column] == result[demo.LABEL]).mean())
        own_acc = float(row.split()[-3])
        assert own_acc == pytest.approx(kept, abs=5e-4), name
