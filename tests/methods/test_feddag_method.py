"""``feddag`` behind the method seam: DC-CFL's bundle, the analyst's clustering by data and gradients, both package
kinds (one model per cluster, dual encoder) applied at the sites, a whole CLI round and a GUI round (training
kept short; core/learn's tests cover the algorithm itself, tests/test_feddag.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

from core.errors import FormatError
from core.learn.site_update import KINDS
from core.methods import FitContext, SiteInput, get_method, method_class
from core.methods.base import ReceivedBundle
from core.methods.views import Curve, Heatmap, Table
from tests.support.cli import WF, analyst_of, anchor_to, apply_packages, confirm, run
from tests.support.roundkit import CLASSES, make_sites

FAST = {"epochs": 15, "warmup_epochs": 3}
FAST_KIT = ["--set", "epochs=15", "--set", "warmup_epochs=3"]


def _concept_sites(encoder: str, rows: int = 300, **extra):
    """Four sites with identical (balanced) label histograms: sites 0, 1 under one concept, sites 2, 3 under a
    second concept whose class names are shifted by one (the same rows mean another class)."""
    X, y = make_classification(n_samples=4 * rows, n_features=8, n_informative=6, n_redundant=1, n_classes=4,
                               n_clusters_per_class=1, class_sep=2.0, random_state=3)
    anchor = np.random.default_rng(1).standard_normal((300, 8)) * X.std(0) + X.mean(0)
    m = get_method("feddag", {**FAST, "encoder": encoder, **extra})
    bundles, sites = [], []
    for k in range(4):
        idx = np.arange(k * rows, (k + 1) * rows)
        Xi, yi = X[idx], (y[idx] if k < 2 else (y[idx] + 1) % 4)
        ex = m.site_compute(SiteInput(Xi, yi, list(CLASSES), anchor, settings={"seed": k}))
        bundles.append(ReceivedBundle(f"s{k}", f"fp{k}", f"digest{k}", f"e{k}", {"family": "dc", **ex.manifest},
                                      ex.arrays))
        sites.append((Xi, yi, ex))
    return m, bundles, sites


@pytest.mark.parametrize("encoder", ["single", "dual"])
def test_planted_concepts_with_identical_label_histograms_get_their_own_clusters(encoder):
    # no own-rows candidates (with them a one-cluster α ties: every site would keep its own model) and the
    # second encoder kept without cross-validating it, so that every package here is the encoder asked for
    m, bundles, sites = _concept_sites(encoder, own_model=False, sharing_selection=False)
    counts = np.stack([np.bincount(s[1], minlength=4) for s in sites])
    assert np.abs(counts / counts.sum(1, keepdims=True) - 0.25).max() < 0.05  # DC-CFL's label distance sees nothing
    res = m.fit(bundles, FitContext(list(CLASSES)))
    s = res.summary
    cl = {x["site"]: x["cluster"] for x in s["sites"]}
    assert cl["s0"] == cl["s1"] != cl["s2"] == cl["s3"] and s["n_clusters"] == 2, cl
    assert s["t_auto"] and s["t"] == s["alpha"] and set(s["validation_curve"]) == set(s["paper_loss"])
    assert all(0.0 <= x["weight"] <= 1.0 for x in s["sites"])  # the learned per-client weights (fused view)
    assert {(e["source"], e["target"]) for e in s["graph"]} == {(1, 2), (2, 1)}
    assert s["encoder"] == encoder
    # every package is applied by the site with what it kept: the two concepts are predicted, not averaged away
    accs = []
    for (X, y, ex), (manifest, arrays) in zip(sites, res.packages, strict=True):
        assert manifest["encoder"] == encoder and ("mlp_w0" in arrays) == (encoder == "single")
        out = m.apply(manifest, arrays, ex.private_arrays, X)
        np.testing.assert_allclose(sum(out[f"prob_{c}"] for c in CLASSES), 1, atol=1e-6)
        accs.append(float(np.mean(out["prediction"] == np.asarray(CLASSES)[y])))
    assert min(accs) > 0.8, accs  # one model for both concepts could not pass 0.5 on both
    # the views: three heatmaps with the site names, the sites and graph tables, the α curve with the loss
    views = m.views(res)
    heat = [v for v in views if isinstance(v, Heatmap) and not v.title.startswith("Confusion")]
    assert len(heat) == 3 and all(v.row_labels == [x["site"] for x in s["sites"]] for v in heat)
    curve = next(v for v in views if isinstance(v, Curve) and "threshold α" in v.title)
    assert set(curve.series) == {"cross-validated accuracy", "paper's loss L"} and curve.mark == s["alpha"]
    titles = [v.title for v in views if isinstance(v, Table)]
    assert "Sites" in titles and any(t.startswith("Sharing between groups") for t in titles)
    lines = m.summary_lines(s)
    assert "α =" in lines[0] and any("→ cluster" in x for x in lines) and any("paper's loss" in x for x in lines)


def test_client_distances_match_the_fit_and_do_not_depend_on_the_bundle_order():
    m, bundles, _ = _concept_sites("single", rows=150)
    view = m.client_distances(bundles, list(CLASSES))
    assert view.distances.shape == (4, 4) and np.allclose(view.distances, view.distances.T)
    labels = view.cut(0.75)
    assert labels[0] == labels[1] != labels[2] == labels[3]
    flipped = m.client_distances(bundles[::-1], list(CLASSES))
    np.testing.assert_allclose(flipped.distances, view.distances[::-1, ::-1], atol=1e-9)
    assert method_class("feddag").threshold_setting().name == "alpha"
    # the fit too: canonical site order and derived seed, so the file order changes nothing
    a, b = m.fit(bundles, FitContext(list(CLASSES))), m.fit(bundles[::-1], FitContext(list(CLASSES)))
    assert a.summary == b.summary
    for (_, pa), (_, pb) in zip(a.packages, b.packages[::-1], strict=True):
        assert pa.keys() == pb.keys() and all(np.array_equal(pa[k], pb[k]) for k in pa)


def test_a_dual_encoder_package_that_does_not_fit_is_refused():
    m, bundles, sites = _concept_sites("dual", rows=120, own_model=False, sharing_selection=False)
    res = m.fit(bundles, FitContext(list(CLASSES)))
    (X, _, ex), (manifest, arrays) = sites[0], res.packages[0]
    bad = {k: v for k, v in arrays.items() if k != "enc2_w1"}
    with pytest.raises(FormatError):
        m.apply(manifest, bad, ex.private_arrays, X)
    with pytest.raises(FormatError, match="prior"):
        m.apply(manifest, {**arrays, "prior_logit": arrays["prior_logit"][:2]}, ex.private_arrays, X)


def _round(d: Path, monkeypatch, names=("site0", "site1", "site2", "site3"), kit_sets=()) -> dict:
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "pass phrase 1")
    sites = make_sites(d / "data", rows=160)
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "FedDAG", "--schema-from",
               d / "data/sample.csv", "--label", "label", "--method", "feddag", *FAST_KIT, *kit_sets,
               "--out", d / "p.dckit") == 0
    for name in sites:
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
    assert run("anchor", "new", "--kit", d / "p.dckit", "--seed-csv", d / "data/seed.csv",
               "--out", d / "site0/p.dcanchor", *anchor_to(d, "site0", sites)) == 0
    for k, name in enumerate(names):
        assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "site0/p.dcanchor",
                   "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                   "--identity", d / name / f"{name}.dcid", "--csv", sites[name][0], "--seed", str(k),
                   "--out", d / "bundles" / f"{name}.dcbundle") == 0
    return sites


@pytest.mark.slow
def test_a_whole_cli_round_with_feddag(tmp_path, monkeypatch, capsys):
    d = tmp_path
    sites = _round(d, monkeypatch, kit_sets=["--set", "encoder=dual"])
    capsys.readouterr()
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, sites)) == 0
    out = capsys.readouterr().out
    assert "method feddag: α =" in out and "dual encoders sharing across clusters" in out
    summary = json.loads((d / "out/summary.json").read_text())
    assert summary["method"] == "feddag" and len(summary["sites"]) == 4 and "paper_loss" in summary
    report = (d / "out/report.html").read_text()
    assert "rows are, class by class" in report and "shared model learns on each site" in report
    assert "Threshold grid" in report
    accs = []
    apply_packages(d, {name: test for name, (_, test) in sites.items()})
    for name, (_, test) in sites.items():
        res = pd.read_csv(d / name / "result.csv")
        assert len(res) == len(pd.read_csv(test))
        accs.append(float(np.mean(res["prediction"] == res["label"])))
    print(f"feddag (dual) CLI round: accuracy per site {np.round(accs, 3).tolist()}, "
          f"{summary['n_clusters']} cluster(s) at α = {summary['alpha']}")
    assert np.mean(accs) > 0.6 and min(accs) > 0.45, accs  # 4 classes: chance is 0.25


@pytest.mark.slow
@pytest.mark.usefixtures("private_settings")
def test_a_gui_round_with_feddag(qtbot, tmp_path, monkeypatch):
    pytest.importorskip("pytestqt")

    from tests.support.gui import analyst_window_with_bundles, export_packages, train_models, wait_metrics

    d = tmp_path
    _round(d, monkeypatch, names=("site0", "site1", "site2"))
    aw = analyst_window_with_bundles(qtbot, d / "p.dckit", d / "analyst/analyst.dcid", "pass phrase 1",
                                     sorted((d / "bundles").glob("*.dcbundle")))
    assert aw.show_page("clients")
    aw.clients_page.ensure_fresh()
    assert aw.clients_page.clustering is not None  # the fused distance, cut by the α line
    assert aw.clients_page.clustering.distances.shape == (3, 3)
    train_models(qtbot, aw)
    wait_metrics(qtbot, aw, 3)
    from gui.views_panel import ViewsPanel

    panel = ViewsPanel()  # the method's views, drawn as the app draws them
    qtbot.addWidget(panel)
    panel.show_views(get_method("feddag").views(aw.state.result))
    panel.finish()
    edges = bool(aw.state.result.summary["graph"])  # the cluster count depends on the fresh keys' digests
    # three distances + the confusion matrix; the Sites, per-site figures and threshold grid tables
    assert panel.kinds.count("Heatmap") == 3 + 1 and "Curve" in panel.kinds
    assert panel.kinds.count("Table") == 4 + edges  # + the per-site confusion table
    export_packages(qtbot, aw, d / "gui-out")
    assert len(list((d / "gui-out").glob("*.dcpkg"))) == 3
    report = (d / "gui-out/report.html").read_text()
    assert "rows are, class by class" in report and "Threshold grid" in report
    assert ("Sharing between groups" in report) == edges


def test_feddag_reports_epochs_and_shows_each_sites_estimate_against_its_own_rows():
    m, bundles, _ = _concept_sites("dual", rows=120, sharing_selection=False, own_model=False)
    seen: list[tuple[int, int]] = []
    m.fit(bundles, FitContext(list(CLASSES), on_epoch=lambda ep, losses: seen.append((ep, len(losses)))))
    assert seen and {ep for ep, _ in seen} == set(range(FAST["epochs"]))   # live curves on the Models page
    assert all(n >= 1 for _, n in seen)
    m, bundles, _ = _concept_sites("dual", rows=120)
    res = m.fit(bundles, FitContext(list(CLASSES)))
    s = res.summary
    for x in s["sites"]:   # DC-CFL's per-site numbers: expected vs own rows, each with n and a 95 % interval
        assert x["expected"]["rows"] > 0 and x["expected"]["low"] <= x["expected"]["accuracy"] <= x["expected"]["high"]
        # the analyst's estimate of the site's own choice (issue #37): an update never clearly worse than alone
        assert "own_model" in x and x["update"]["by"] == "site" and x["update"]["estimate"] in KINDS
        assert x["expected"]["accuracy"] >= x["own_model"]["accuracy"] - 0.05
    lines = m.summary_lines(s)
    assert sum("expected accuracy" in x and "95 % CI" in x and "alone" in x for x in lines) == len(s["sites"])
    sites_table = next(v for v in m.views(res) if isinstance(v, Table) and v.title == "Sites")
    assert "expected accuracy" in sites_table.columns and "its own rows alone" in sites_table.columns


def test_progress_names_the_stage_of_a_long_loop():
    """Issue #27 point 7: an inner loop's "epoch 204 of 800" says which stage it belongs to."""
    from core.control import JobControl
    from core.methods.feddag.similarity import _stage

    said = []
    stage = _stage(JobControl(lambda f, t: said.append((round(f, 3), t))), 0.2, 0.5, "choosing the groups of sites")
    stage.sub(0.0, 1.0).step(0.5, "epoch 204 of 800")
    assert said == [(0.35, "choosing the groups of sites: epoch 204 of 800")]
