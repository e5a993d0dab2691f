"""`python -m benchmarks clinical`: site rules, scores, the target check, and a whole run on a tiny synthetic table
with a text column and empty cells (shaped like the lung table, written to a temporary data folder)."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from benchmarks import clinical
from benchmarks.__main__ import build_parser, main


def lung_like(path, rows: int = 240, seed: int = 0) -> None:
    """8 institutions × 30 rows (→ 4 sites of 60), outcome ``status`` 1/2 driven by age, a text column ``sex``
    and ``ph.ecog``; empty cells in two columns; ``time`` leaks the outcome (the harness must drop it)."""
    rng = np.random.default_rng(seed)
    age = rng.normal(60, 10, rows)
    sex = rng.choice(["M", "F"], rows)
    ecog = rng.integers(0, 3, rows).astype(float)
    score = 0.15 * (age - 60) + 1.5 * (sex == "M") + 0.8 * ecog - 1.0 + rng.normal(0, 0.5, rows)
    status = np.where(score > 0, 2, 1)
    frame = pd.DataFrame({"inst": np.repeat(np.arange(1, 9), rows // 8),
                          "time": status * 100 + rng.integers(0, 9, rows), "status": status, "age": age.round(),
                          "sex": sex, "ph.ecog": ecog,
                          "wt.loss": rng.normal(5, 3, rows).round(1)})
    frame.loc[rng.choice(rows, 20, replace=False), "wt.loss"] = np.nan
    frame.loc[rng.choice(rows, 5, replace=False), "ph.ecog"] = np.nan
    frame.index = frame.index + 1
    frame.to_csv(path, index_label="", na_rep="NA")  # as published: R's row names first, NA cells


def test_contiguous_groups_close_at_the_target_and_merge_a_short_tail():
    years = pd.Series({1995: 1275, 1996: 3491, 1997: 1381, 1998: 687, 1999: 350, 2000: 245, 2001: 175, 2002: 48,
                       2003: 222})
    groups = clinical.contiguous_groups(years, 300, 300)
    assert [groups[y] for y in sorted(groups)] == [0, 1, 2, 3, 4, 5, 5, 5, 5]  # 2002+2003 (270) joins 2000-2001
    inst = pd.Series({1: 36, 2: 5, 3: 19, 4: 4, 5: 9, 6: 14, 7: 8, 10: 4, 11: 18, 12: 23, 13: 20, 15: 6, 16: 16,
                      21: 13, 22: 17, 26: 6, 32: 7, 33: 2})
    g = clinical.contiguous_groups(inst, 55, 40)
    sizes = inst.groupby(pd.Series(g)).sum()
    assert len(sizes) == 4 and sizes.min() >= 40  # the 45-patient tail is its own site
    assert clinical.contiguous_groups(pd.Series({1: 50, 2: 60, 3: 10}), 55, 40) == {1: 0, 2: 0, 3: 0}


def test_colon_rule_skews_the_labels_the_same_way_every_time():
    frame = pd.DataFrame({"id": np.arange(200), "status": np.r_[np.ones(100, int), np.zeros(100, int)]})
    sites = clinical.colon_sites(frame)
    share = frame.groupby(sites.values)["status"].mean()
    assert share.round(3).to_dict() == {"site-A": round(50 / 70, 3), "site-B": 0.5, "site-C": round(20 / 70, 3)}
    assert sites.equals(clinical.colon_sites(frame.sample(frac=1, random_state=1)).sort_index())


def test_scores_binary_and_multiclass():
    p = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    s = clinical.scores(["1", "2", "2", "2"], p, ["1", "2"])
    assert s == {"accuracy": 0.75, "auc": 1.0}
    assert math.isnan(clinical.scores(["2", "2"], p[:2], ["1", "2"])["auc"])
    p3 = np.eye(3)[[0, 1, 2, 2]] * 0.7 + 0.1
    s3 = clinical.scores(["a", "b", "c", "a"], p3, ["a", "b", "c"])
    assert s3["accuracy"] == 0.75 and 0.5 < s3["auc"] < 1.0


def _site(own, pkg, pooled, own_auc=0.7, pkg_auc=0.7):
    return {"own_lr": {"accuracy": own, "auc": own_auc}, "pooled_lr": {"accuracy": pooled, "auc": 0.8},
            "methods": {"m": {"accuracy": pkg, "auc": pkg_auc}}}


def test_target_check_rules():
    fine = clinical.target_check({"a": _site(0.80, 0.81, 0.80), "b": _site(0.70, 0.70, 0.71)}, "m")
    assert fine["pass"] and fine["gap_closed"] is None  # pooling helps ≤ 2 pt: no gap target
    low = clinical.target_check({"a": _site(0.80, 0.785, 0.80), "b": _site(0.70, 0.74, 0.70)}, "m")
    assert not low["pass_sites"] and low["sites_below"] == ["a"] and low["pass_mean"]
    auc = clinical.target_check({"a": _site(0.80, 0.80, 0.80, 0.70, 0.68)}, "m")
    assert not auc["pass"] and auc["worst_site_auc"] == pytest.approx(-0.02)
    gap = clinical.target_check({"a": _site(0.70, 0.72, 0.80), "b": _site(0.70, 0.71, 0.80)}, "m")
    assert gap["gap_closed"] == pytest.approx(0.15) and gap["pass_sites"] and not gap["pass_gap"]


def test_seeds_default_to_five_unless_given():
    assert not getattr(build_parser().parse_args(["clinical"]), "seeds_given", False)
    args = build_parser().parse_args(["clinical", "--seeds", "10", "--method", "dc", "--method", "dccfl"])
    assert args.seeds_given and args.seeds == 10 and args.method == ["dc", "dccfl"]


def test_a_whole_run_on_a_table_with_text_and_empty_cells(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DCSTUDIO_BENCH_JOBS", "1")
    lung_like(tmp_path / "clinical_lung.csv")
    out = tmp_path / "rec" / "clinical.json"
    assert main(["clinical", "--dataset", "lung", "--seeds", "1", "--method", "dc", "--data-dir", str(tmp_path),
                 "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["methods"] == ["dc"] and record["seeds"] == [0] and record["cases"] == ["lung"]
    case = record["summary"]["lung"]
    assert list(case["sites"]) == ["inst1-2", "inst3-4", "inst5-6", "inst7-8"]
    for s in case["sites"].values():
        assert (s["train_rows"], s["test_rows"]) == (45, 15)
        assert s["raw_columns"] == 4  # age, sex, ph.ecog, wt.loss: inst and the leaking time are dropped
        assert s["encoded_columns"] >= 6  # sex one-hot (2) and missing indicators beside the numbers
        for ref in ("own_lr", "pooled_lr", "pooled_hgb"):
            assert 0 <= s[ref]["accuracy"] <= 1
        assert s["methods"]["dc"]["accuracy"] >= 0.6  # a clear signal survives the round
    assert case["mean"]["pooled_lr"]["accuracy"] >= 0.8
    assert "time" not in case["product"]["dc"]["kit_columns"]
    figures = case["product"]["dc"]["figures"]  # issue #23: summary.json and report.html against sklearn
    assert figures["checked"] >= 4 * 35 and figures["mismatches"] == 0  # per site: 19 in summary, 10 + 10 in report
    md = out.with_suffix(".md").read_text()
    assert f"lung / dc: figures checked: {figures['checked']}, mismatches: 0" in md
    assert "## Target check" in md and "lung / dc:" in md and "--dataset lung --seeds 1 --method dc" in md
    assert "lung / dc:" in capsys.readouterr().out


def test_an_unknown_case_or_method_is_one_sentence(tmp_path, capsys):
    assert main(["clinical", "--dataset", "nope", "--data-dir", str(tmp_path)]) == 1
    assert "unknown clinical case 'nope'" in capsys.readouterr().err
    assert main(["clinical", "--dataset", "lung", "--method", "nope", "--data-dir", str(tmp_path)]) == 1
    assert "unknown method 'nope'" in capsys.readouterr().err
    assert main(["clinical", "--dataset", "lung", "--data-dir", str(tmp_path)]) == 1
    assert "clinical_lung.csv" in capsys.readouterr().err
