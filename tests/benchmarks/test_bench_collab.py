"""Issue #37's benchmark measures: paired AUC differences over seeds, the "Must show" checks, the clinical record's
oracle and pooled-with-site-intercepts reference, and the summary-statistics experiment (on tiny synthetic tables)."""

import json
import math

import numpy as np
import pytest

from benchmarks import clinical_gains as g
from benchmarks import summary_stats
from benchmarks.__main__ import main
from tests.benchmarks.test_bench_clinical import lung_like


def _seed(n: int, rng, quality: float):
    y = rng.integers(0, 2, n)
    good = y + rng.normal(0, 0.6, n)
    return y, good, good + rng.normal(0, quality, n)


def test_paired_auc_over_seeds():
    rng = np.random.default_rng(0)
    parts = [_seed(300, rng, 2.0) for _ in range(3)]
    same = g.paired_auc([(y, a, a) for y, a, _ in parts])
    assert same["difference"] == 0.0 and same["p_below"] == 0.5 and same["seeds"] == 3
    worse = g.paired_auc([(y, b, a) for y, a, b in parts])  # the noisier model against the better one
    assert worse["difference"] < -0.05 and worse["p_below"] < 0.001 and worse["high"] < 0
    from core.learn.clinical_metrics import delong

    one = g.paired_auc([(parts[0][0], parts[0][2], parts[0][1])])
    ref = delong(parts[0][0], parts[0][2], parts[0][1])  # one seed: DeLong's paired test itself
    assert one["difference"] == pytest.approx(ref["difference"])
    assert one["low"] == pytest.approx(ref["low"]) and one["high"] == pytest.approx(ref["high"])
    # the mean of the seeds' differences, with the seeds' variances added: narrower than one seed's interval
    assert worse["high"] - worse["low"] < ref["high"] - ref["low"]
    y = np.zeros(10, int)
    assert math.isnan(g.paired_auc([(y, y + 0.1, y + 0.2)])["difference"])  # one class: nothing to compare


def _gains(delivered, oracle, reference=0.0, p_below=0.5, events=50, slope=1.0, rows=100):
    def pair(d, p=0.5):
        return {"difference": d, "p_below": p, "low": d - 0.01, "high": d + 0.01}

    return {"own": 0.7, "in_use": 0.7 + delivered, "oracle": 0.7 + oracle, "reference": 0.7 + reference,
            "delivered": pair(delivered, p_below), "oracle_gain": pair(oracle), "reference_gain": pair(reference),
            "withheld": max(0.0, oracle - delivered), "harm_avoided": 0.0, "events": events,
            "calibration_slope": slope, "rows": rows}


def test_must_show_rules():
    # the oracle gains 0.04 on average: half of it, 0.02, is needed
    ok = g.must_show("colon", {"a": _gains(0.03, 0.05, 0.04), "b": _gains(0.01, 0.03, 0.03)})
    assert ok["pass_share"] and ok["pass_no_harm"] and ok["needed"] == pytest.approx(0.02)
    assert ok["pass_reference"] is False  # colon: 0.72 in use against 0.735 − 0.005
    short = g.must_show("x", {"a": _gains(0.0, 0.05), "b": _gains(0.01, 0.03)})
    assert not short["pass_share"] and "pass_reference" not in short
    # the oracle gains < 0.01: ≥ −0.002 is needed
    assert g.must_show("x", {"a": _gains(-0.001, 0.005)})["pass_share"]
    assert not g.must_show("x", {"a": _gains(-0.003, 0.005)})["pass_share"]
    harm = g.must_show("x", {"a": _gains(-0.025, 0.0), "b": _gains(-0.01, 0.0, p_below=0.01)})
    assert harm["sites_below"] == ["a"] and harm["sites_significantly_below"] == ["b"] and not harm["pass_no_harm"]
    calib = g.must_show("x", {"a": _gains(0, 0, events=150, slope=0.7), "b": _gains(0, 0, events=99, slope=0.1)})
    assert calib["calibration_outside"] == ["a"] and not calib["pass_calibration"] and not calib["pass"]


def test_the_smallest_third_needs_a_gain_or_the_reference_within_0_005():
    sites = {f"t/s{k}": _gains(0.012, 0.02, 0.03, rows=50 + k) for k in range(3)}
    sites |= {f"t/big{k}": _gains(-0.5, 0.0, 0.0, rows=1000) for k in range(6)}
    s = g.smallest_third(sites)
    assert s["sites"] == ["t/s0", "t/s1", "t/s2"] and s["pass"]
    sites["t/s0"] = _gains(-0.004, 0.0, -0.002, rows=50)  # the reference gains less: −0.002 − 0.005 is needed
    s = g.smallest_third(sites)
    assert s["needed"]["t/s0"] == pytest.approx(-0.007) and s["mean_needed"] == pytest.approx((-0.007 + 0.02) / 3)
    assert s["mean_gain"] == pytest.approx((-0.004 + 0.024) / 3) and s["pass"]


def test_a_method_with_kit_settings():
    from benchmarks.clinical import method_spec
    from core.errors import ConfigError

    assert method_spec("meta-lr") == ("meta-lr", {})
    assert method_spec("meta-lr:effects=fixed,ridge=2") == ("meta-lr", {"effects": "fixed", "ridge": 2.0})
    with pytest.raises(ConfigError, match="not a setting of meta-lr"):
        method_spec("meta-lr:nope=1")
    with pytest.raises(ConfigError, match="effects"):
        method_spec("meta-lr:effects=sometimes")


def test_one_step_with_the_penalty_undone_matches_the_pooled_fit_on_large_sites():
    """Each site's log-likelihood is close to quadratic at a few thousand rows: the one-step from the site fits
    (penalty undone, λ once) lands on the exact pooled fit with site intercepts."""
    from core.methods.metalr.site_logit import fit_site_logit

    rng = np.random.default_rng(1)
    beta = np.array([1.0, -0.5, 0.3])
    Xs, ys = [], []
    for base in (-1.0, 0.0, 0.8):
        X = rng.normal(size=(3000, 3))
        Xs.append(X)
        ys.append((rng.random(3000) < 1 / (1 + np.exp(-(base + X @ beta)))).astype(int))
    scale = np.vstack(Xs).std(axis=0)
    fits = [fit_site_logit(X, y, 2, lam=1.0, scale=scale) for X, y in zip(Xs, ys, strict=True)]
    a_one, b_one = summary_stats.one_step_unpenalised([f.coef for f in fits], [f.cov for f in fits], scale, 1.0)
    a_ex, b_ex = summary_stats.pooled_with_site_intercepts(Xs, ys, scale, 1.0)
    assert np.max(np.abs(b_one - b_ex)) < 0.01 and np.max(np.abs(a_one - a_ex)) < 0.01
    assert np.allclose(b_ex, beta, atol=0.1) and np.allclose(a_ex, [-1.0, 0.0, 0.8], atol=0.15)


def test_summary_stats_and_the_clinical_record_on_a_tiny_table(tmp_path, monkeypatch):
    monkeypatch.setenv("DCSTUDIO_BENCH_JOBS", "1")
    lung_like(tmp_path / "clinical_lung.csv")
    out = tmp_path / "rec" / "summary.json"
    assert main(["summary-stats", "--dataset", "lung", "--seeds", "1", "--data-dir", str(tmp_path),
                 "--json", str(out)]) == 0
    s = json.loads(out.read_text())["summary"]["lung"]
    assert set(s["mean"]) == set(summary_stats.MODELS)
    assert abs(s["gap_to_reference"]["pooled + site intercepts (exact)"]) < 0.05
    assert "## lung" in out.with_suffix(".md").read_text()

    rec = tmp_path / "rec" / "clinical.json"
    assert main(["clinical", "--dataset", "lung", "--seeds", "1", "--method", "meta-lr", "--method",
                 "meta-lr:effects=fixed", "--data-dir", str(tmp_path), "--json", str(rec)]) == 0
    case = json.loads(rec.read_text())["summary"]["lung"]
    assert set(case["must_show"]) == {"meta-lr", "meta-lr:effects=fixed"}
    for site in case["sites"].values():
        assert 0.5 <= site["pooled_si_lr"]["auc"] <= 1.0
        gains = site["gains"]["meta-lr"]
        assert gains["delivered"]["difference"] == pytest.approx(gains["in_use"] - gains["own"])
        assert set(site["methods"]["meta-lr"]["used"]) <= {"own", "shared", "intercept", "recalibrated", "blend"}
    checks = case["must_show"]["meta-lr"]
    assert {"pass_share", "pass_no_harm", "pass_calibration"} <= set(checks)
    md = rec.with_suffix(".md").read_text()
    assert "## Collaboration that pays (issue #37)" in md and "### lung / meta-lr" in md
    assert "`meta-lr`: the package as sent, before the site's check" in md
