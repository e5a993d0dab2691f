"""``python -m benchmarks privacy``: one small cell through every lever, the record's target line, the timing."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks import privacy as P


def test_a_cell_measures_every_lever_and_the_record_names_the_target(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((900, 5)) @ rng.standard_normal((5, 5))
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(5)])
    frame["label"] = np.where(X[:, 0] + X[:, 1] > 0, "p", "q")
    frame.to_csv(tmp_path / "toy.csv", index=False)
    monkeypatch.setattr(P, "SITE_ROWS", 600)
    monkeypatch.setattr(P, "ANCHOR_ROWS", 300)
    cell = P.run_cell("toy", 0, str(tmp_path), quick=True)
    levers = {(r["method"], r["lever"]) for r in cell["results"]}
    assert ("dccfl", "default") in levers and ("dccfl", "noise 2") in levers and ("gold", "default") in levers
    default = next(r for r in cell["results"] if r["lever"] == "default" and r["method"] == "dccfl")
    assert default["collusion.median_cell_error"] < 0.01 and "collusion" in default["poor"]
    eps = next(r for r in cell["results"] if r["lever"] == "ε 10")
    assert eps["collusion.median_cell_error"] > default["collusion.median_cell_error"]
    summary = P.summarise([cell])
    assert summary["toy"]["target"]["reached_by"]  # strong noise reaches it on this table
    text = P.markdown({"command": "c", "seeds": [0], "commit": None, "machine": "m", "wall_seconds": 1.0,
                       "load": 0.0, "summary": summary})
    assert "| dccfl | default |" in text and "Best accuracy among them" in text


def test_timing_compares_the_assessment_with_the_whole_export():
    out = P.timing(3000, columns=6, say=lambda *_: None)
    assert out["assess_seconds"] > 0 and out["export_seconds"] > out["assess_seconds"]
    assert out["assess_share"] == out["assess_seconds"] / out["export_seconds"]


def test_timing_runs_each_method_named_and_quick_times_the_assessment_alone(tmp_path):
    from benchmarks.__main__ import build_parser

    args = build_parser().parse_args(["privacy", "--rows", "1200", "--method", "dccfl", "--method", "gold",
                                      "--json", str(tmp_path / "t.json")])
    out = P.run_from_args(args, say=lambda *_: None)
    assert [r["method"] for r in out["runs"]] == ["dccfl", "gold"]
    assert all(r["rows"] == 1200 and r["dataset"] == "synthetic" for r in out["runs"])
    assert "--method gold" in out["command"] and (tmp_path / "t.json").is_file()
    quick = P.run_from_args(build_parser().parse_args(["privacy", "--rows", "1500", "--quick", "--method", "gold"]),
                            say=lambda *_: None)
    assert quick["method"] == "gold" and quick["rows"] == 1500 and quick["export_rows"] == 1500
    assert quick["assess_seconds"] > 0 and quick["command"].endswith("--quick")


def test_privacy_round_cross_check_and_target_reading():
    """``python -m benchmarks privacy-round``: agreement within 10 % (a floor near zero), and the cheapest grid
    setting that keeps every site's colluding rebuild under 5 % of rows, ranked by AUC for two classes."""
    from benchmarks import privacy_round as R

    assert R.agrees(0.10, 0.109, R.ABS_ERROR) and not R.agrees(0.10, 0.13, R.ABS_ERROR)
    assert R.agrees(0.0, 0.004, R.ABS_ERROR) and R.agrees(1.0, 0.95, R.ABS_SHARE)
    privacy = {"findings": [
        {"attack": "analyst_alone", "by_attack": {"eigen": {"median_cell_error": 0.2, "within_10pct": 0.1}}},
        {"attack": "collusion", "by_attack": {"empirical_prior": {"median_cell_error": 0.3, "within_10pct": 0.0}}}]}
    check = R.cross_check(privacy, {"eigen": (0.21, 0.1), "posterior_mean": (0.5, 0.0)})
    assert check["eigen"]["agree"] and not check["posterior_mean"]["agree"] and "least_squares" not in check

    def site(costs: dict) -> dict:
        summary = {a: {"verdict": "poor", "strongest": "x", "median_cell_error": 0.1, "within_10pct": 0.0,
                       "by_attack": {}} for a in ("collusion", "analyst_alone")}
        part = {"privacy": {**summary, "membership_auc": 0.5, "verdict": "poor"}, "reference": {},
                "cross_check": {}, "accuracy": 0.8, "auc": 0.8}
        grid = {}
        for setting, _ in R.GRID:
            within, acc, auc = costs.get(setting, (0.5, 0.0, 0.0))
            grid[setting] = {**part, "privacy": {**part["privacy"], "collusion": {**summary["collusion"],
                                                                                  "within_10pct": within}},
                             "reference": {"posterior_mean": (0.3, within)}, "accuracy_cost": acc, "auc_cost": auc}
        return {"rows": 100, "classes": 2, "default": part, "grid": grid}

    costs = {"noise 0.5": (0.01, 3.0, 0.01), "noise 1": (0.0, 1.0, 0.03), "noise 2": (0.2, 0.0, 0.0)}
    out = R.summarise([{"table": "t", "seed": 0, "sites": {"a": site(costs), "b": site(costs)}}])["t"]
    assert out["ranked_by"] == "AUC" and out["reached_by"] == ["noise 0.5", "noise 1"]
    assert out["best"]["setting"] == "noise 0.5" and out["best"]["small"]  # 0.01 AUC, though 3 pt of accuracy
    text = R.markdown({"command": "c", "seeds": [0], "commit": None, "machine": "m", "wall_seconds": 60.0,
                       "load": 0.0, "summary": {"t": out}})
    assert "reached at the least cost (AUC) by **noise 0.5**" in text and "within 0.02 AUC" in text
