"""Issue #35 (part B): the kit publishes only what is safe of its real sample rows — shares over groups of at least
``min_group`` rows, ranges rounded outward (no row's exact min or max), means over enough rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.data.public_stats import nice_step, rounded_range, rounded_shares
from core.data.schema import infer_schema
from tests.support.cli import WF, run


def sample(tmp_path, yes: int, rows: int = 600):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.normal(60, 9, rows).round(1),
                          "mgus": ["yes"] * yes + ["no"] * (rows - yes), "y": rng.integers(0, 2, rows)})
    frame.to_csv(tmp_path / "s.csv", index=False)
    return tmp_path / "s.csv", frame


def test_a_tiny_group_publishes_the_share_of_the_smallest_group_allowed(tmp_path):
    published = {}
    for yes in (1, 3, 9, 14):
        path, _ = sample(tmp_path, yes)
        schema, _ = infer_schema(path, label="y", with_statistics=True)
        mgus = next(f for f in schema.features if f.name == "mgus")
        published[yes] = mgus.frequencies[mgus.levels.index("yes")]
    # every count is rounded to a group of 10: 3 of 600 patients (0.005) reads as 10 of 610, as 1 does
    assert published[1] == published[3] == pytest.approx(10 / 610) and published[9] == published[14]
    assert min(published.values()) >= 10 / 610


def test_ranges_are_never_a_real_rows_min_or_max(tmp_path):
    path, frame = sample(tmp_path, 30)
    schema, _ = infer_schema(path, label="y", with_ranges=True)
    age = next(f for f in schema.features if f.name == "age")
    lo, hi = frame["age"].min(), frame["age"].max()
    step = nice_step(hi - lo)
    assert age.min <= lo and age.max >= hi and (age.min, age.max) != (lo, hi)
    assert age.min % step == pytest.approx(0) and age.max % step == pytest.approx(0)
    assert rounded_range(18.0, 95.0) == (15.0, 95.0) and rounded_range(20420, 254616) == (20000, 260000)


def test_counts_round_to_groups_and_small_samples_publish_no_mean(tmp_path):
    assert rounded_shares([597, 3]) == pytest.approx([600 / 610, 10 / 610])
    assert rounded_shares([0, 25]) == [0.0, 1.0]
    path, _ = sample(tmp_path, 2, rows=8)
    schema, _ = infer_schema(path, label="y", with_statistics=True)
    assert next(f for f in schema.features if f.name == "age").mean is None  # 8 rows < 10: no mean published


def test_kit_new_states_the_group_size(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "correct horse battery staple")
    path, _ = sample(tmp_path, 3)
    assert run("keys", "new", "--name", "a", "--out", tmp_path / "a", *WF) == 0
    assert run("kit", "new", "--identity", tmp_path / "a/a.dcid", "--name", "P", "--schema-from", path,
               "--label", "y", "--min-group", "20", "--out", tmp_path / "p.dckit") == 0
    assert "shares over groups of at least 20 rows" in capsys.readouterr().out
    from core.formats.kit import Kit

    mgus = next(f for f in Kit.load(tmp_path / "p.dckit").schema.features if f.name == "mgus")
    assert mgus.frequencies[mgus.levels.index("yes")] == pytest.approx(20 / 620)  # 3 → 20, 597 → 600
