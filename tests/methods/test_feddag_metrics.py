"""Issue #23 for FedDAG and DC: each site's clinical figures are sklearn's on the out-of-fold predictions of the
model it is sent; DC prints them per site; the views add per-cluster ROC and calibration curves."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from core.methods.base import FitContext, MethodResult
from core.methods.dc_analysis import metric_views, site_line
from core.methods.dccfl import DC
from core.methods.feddag.method import FedDAG
from core.methods.views import Curve, Heatmap, Table
from tests.methods.test_dccfl_metrics import _bundles, assert_site_figures_are_sklearns

FAST = {"epochs": 8, "warmup_rounds": 1, "warmup_epochs": 2, "fusion_steps": 10}


@pytest.fixture(scope="module")
def feddag_fit():
    bundles, classes = _bundles()
    return FedDAG(**FAST).fit(bundles, FitContext(classes))


def test_feddag_site_figures_are_sklearns_on_the_out_of_fold_predictions(feddag_fit):
    assert_site_figures_are_sklearns(feddag_fit)
    lines = FedDAG(**FAST).summary_lines(feddag_fit.summary)
    assert sum("AUC" in line for line in lines) == 4


def test_feddag_dual_encoder_sites_are_scored_too():
    bundles, classes = _bundles(seed=3)
    res = FedDAG(encoder="dual", sharing=False, sharing_selection=False, own_model=False, global_candidate=False,
                 **FAST).fit(bundles, FitContext(classes))
    assert "dual" in res.summary["cluster_models"] and any(x["model"] == "cluster" for x in res.summary["sites"])
    for x, (_, y, P) in zip(res.summary["sites"], res.details["oof"], strict=True):
        assert x["metrics"]["auc"] == pytest.approx(roc_auc_score(y, P[:, 1]))


def test_feddag_views_show_the_clinical_figures(feddag_fit):
    views = FedDAG(**FAST).views(feddag_fit)
    assert any(isinstance(v, Table) and v.title.startswith("What each site is sent") for v in views)
    assert any(isinstance(v, Curve) and v.title.startswith("ROC curves") for v in views)


def test_dc_prints_every_site_with_its_figures_and_keeps_the_plots():
    bundles, classes = _bundles(seed=1)
    dc = DC(epochs=8)
    res = dc.fit(bundles, FitContext(classes))
    lines = dc.summary_lines(res.summary)
    assert len(lines) == 1 + 4 and all("AUC" in line and "events" in line for line in lines[1:])
    views = dc.views(res)
    titles = [getattr(v, "title", "") for v in views]
    assert any(t.startswith("ROC curves") for t in titles) and any(t.startswith("Calibration") for t in titles)
    assert any(isinstance(v, Heatmap) and v.title.startswith("Confusion") for v in views)
    assert not any("per cluster" in t for t in titles)   # one cluster: the pooled curves say it all


def test_per_cluster_curves_pool_each_clusters_members():
    rng = np.random.default_rng(0)
    sites, oof = [], []
    for i, (cluster, n) in enumerate([(1, 40), (1, 30), (2, 50), (3, 20)]):
        y = (rng.random(n) < 0.4).astype(np.int64)
        p = np.clip(0.3 * y + 0.7 * rng.random(n), 0, 1).astype(np.float32)
        oof.append((np.arange(n), y, np.column_stack([1 - p, p])))
        sites.append({"site": f"s{i}", "rows": n, "cluster": cluster, "metrics": {"task": "binary", "rows": n,
                      "events": int(y.sum()), "threshold": 0.5, "auc": 0.7, "auc_low": 0.6, "auc_high": 0.8,
                      "sensitivity": 0.5, "specificity": 0.5, "ppv": 0.5, "npv": 0.5, "brier": 0.2,
                      "calibration_slope": 1.0, "calibration_intercept": 0.0}})
    res = MethodResult("dccfl", [({"classes": ["0", "1"]}, {})], {"sites": sites}, {"oof": oof})
    curves = {v.title: v for v in metric_views(res) if isinstance(v, Curve)}
    roc = next(v for t, v in curves.items() if t.startswith("ROC curves per cluster"))
    y1 = np.concatenate([oof[0][1], oof[1][1]])
    name = f"cluster 1 (70 rows, {int(y1.sum())} events)"
    assert list(roc.series)[0] == name and "chance" in roc.series   # the largest cluster first
    fpr_grid = np.asarray(roc.x)
    from sklearn.metrics import roc_curve
    fpr, tpr, _ = roc_curve(y1, np.concatenate([oof[0][2][:, 1], oof[1][2][:, 1]]))
    assert np.allclose(roc.series[name], np.interp(fpr_grid, fpr, tpr), atol=1e-4)
    cal = next(v for t, v in curves.items() if t.startswith("Calibration per cluster"))
    assert len(cal.x) == 10 and set(cal.series) == {*[n for n in roc.series if n != "chance"], "ideal"}
    obs = np.asarray(cal.series[name], float)
    assert np.all((obs[np.isfinite(obs)] >= 0) & (obs[np.isfinite(obs)] <= 1))


@pytest.mark.parametrize("metric", ["auc", "balanced_accuracy"])
def test_feddag_selection_metric_is_a_kit_setting_and_chooses_by_it(metric):
    bundles, classes = _bundles(K=3, seed=2)
    res = FedDAG(metric=metric, **FAST).fit(bundles, FitContext(classes))
    s = res.summary
    assert s["selection"]["metric"] == metric and metric.replace("_", " ") in s["selection"]["what"]
    assert all(0.0 <= v <= 1.0 for v in s["validation_curve"].values())
    assert all(x["metrics"]["task"] == "multiclass" and "macro-AUC" in site_line(x) for x in s["sites"])
    with pytest.raises(Exception, match="metric"):
        FedDAG(metric="f1")
