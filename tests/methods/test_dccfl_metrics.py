"""Issue #23: the analyst's per-site clinical figures are sklearn's on the out-of-fold predictions of the model
each site is sent; the selection can maximise AUC or balanced accuracy; the views and summary lines show them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, confusion_matrix, recall_score, roc_auc_score

from core.methods.base import FitContext, ReceivedBundle, SiteInput
from core.methods.dc_analysis import site_line
from core.methods.dccfl import DCCFL
from core.methods.views import Curve, Heatmap, Table

FAST = {"epochs": 8}


def _bundles(n_sites=4, rows=60, K=2, m=5, seed=0):
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((K, m)) * 1.2
    anchor = rng.uniform(-4, 4, size=(150, m))
    site = DCCFL()
    out = []
    for i in range(n_sites):
        y = (rng.random(rows) < (0.25 + 0.1 * i)).astype(np.int64) if K == 2 else rng.integers(0, K, rows)
        X = means[y] + rng.standard_normal((rows, m))
        exp = site.site_compute(SiteInput(X, y, [str(k) for k in range(K)], anchor,
                                          settings={"seed": [seed, i], "dimension": m}))
        out.append(ReceivedBundle(site=f"s{i}", fingerprint="", digest="", envelope_id="", manifest=exp.manifest,
                                  arrays=exp.arrays))
    return out, [str(k) for k in range(K)]


@pytest.fixture(scope="module")
def binary_fit():
    bundles, classes = _bundles()
    return DCCFL(**FAST).fit(bundles, FitContext(classes))


def assert_site_figures_are_sklearns(res) -> None:
    """Every binary per-site figure of a DC-family summary equals scikit-learn's on ``details["oof"]``, the site's
    line says it, and the summary is strict JSON (shared by the DC-CFL and FedDAG tests)."""
    sites, oof = res.summary["sites"], res.details["oof"]
    assert len(oof) == len(sites) == 4
    for x, (rows, y, P) in zip(sites, oof, strict=True):
        m = x["metrics"]
        assert P.dtype == np.float32 and len(rows) == len(y) == m["rows"] == x["rows"]  # 5-fold: every row once
        pred = (P[:, 1] >= 0.5).astype(int)
        assert m["task"] == "binary" and m["events"] == int(y.sum())
        assert m["auc"] == pytest.approx(roc_auc_score(y, P[:, 1]))
        assert m["sensitivity"] == pytest.approx(recall_score(y, pred))
        assert m["specificity"] == pytest.approx(recall_score(y, pred, pos_label=0))
        assert m["brier"] == pytest.approx(brier_score_loss(y, P[:, 1]))
        assert m["confusion"] == confusion_matrix(y, pred, labels=[0, 1]).tolist()
        line = site_line(x)
        assert f"AUC {m['auc']:.2f}" in line and f"({'n = ' + str(m['rows'])}, {m['events']} events)" in line
    json.dumps(res.summary, allow_nan=False)  # strict JSON: undefined figures are null


def test_every_site_figure_is_sklearns_on_the_out_of_fold_predictions(binary_fit):
    assert_site_figures_are_sklearns(binary_fit)
    assert all("cross-validated" in x["metrics"]["scored"] for x in binary_fit.summary["sites"])


def test_views_show_the_table_roc_calibration_and_confusion(binary_fit):
    views = DCCFL(**FAST).views(binary_fit)
    tables = [v for v in views if isinstance(v, Table) and v.title.startswith("What each site is sent")]
    assert tables and len(tables[0].rows) == 4 and "AUC [95 % CI]" in tables[0].columns
    curves = {v.title.split(",")[0]: v for v in views if isinstance(v, Curve)}
    assert "ROC curves" in curves and all(len(s) == len(curves["ROC curves"].x) for s in
                                          curves["ROC curves"].series.values())
    assert "Calibration" in curves
    heat = [v for v in views if isinstance(v, Heatmap) and v.title.startswith("Confusion")]
    assert heat and np.allclose(heat[0].matrix.sum(axis=1), 1.0)


@pytest.mark.parametrize("metric", ["auc", "balanced_accuracy"])
def test_selection_metric_is_a_kit_setting_and_chooses_by_it(metric):
    bundles, classes = _bundles(K=3, seed=2)
    res = DCCFL(metric=metric, **FAST).fit(bundles, FitContext(classes))
    s = res.summary
    assert s["selection"]["metric"] == metric and metric.replace("_", " ") in s["selection"]["what"]
    assert all(0.0 <= v <= 1.0 for v in s["validation_curve"].values())
    for x in s["sites"]:
        m = x["metrics"]
        assert m["task"] == "multiclass" and len(m["per_class"]) == 3 and "macro-AUC" in site_line(x)
    with pytest.raises(Exception, match="metric"):
        DCCFL(metric="f1")


def test_default_metric_fits_the_outcome():
    """``auto``: the analyst selects on AUC with two classes and accuracy with more; the site's update decides on
    log-loss (core.learn.site_update); every earlier choice still works."""
    from core.learn.cluster_models import selection_metric
    from core.learn.site_update import resolve_metric

    spec = {s.name: s for s in DCCFL.settings_spec}
    assert spec["metric"].default == "auto"
    assert spec["metric"].choices == ("auto", "log_loss", "accuracy", "balanced_accuracy", "auc")
    assert selection_metric("auto", 2) == "auc" and selection_metric("auto", 3) == "accuracy"
    assert selection_metric("accuracy", 2) == "accuracy" and resolve_metric("auto") == "log_loss"
    assert resolve_metric("accuracy") == "accuracy"
