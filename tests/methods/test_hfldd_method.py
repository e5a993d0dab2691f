"""The distillation mode (``hfldd``): what a site ships holds no real reduced row, and a whole round runs
through the CLI and through the app by clicking (KIP and training kept short so the file runs in seconds)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.errors import FormatError
from core.formats.anchor import make_anchor
from core.methods import SiteInput, get_method
from core.methods.base import ReceivedBundle
from core.methods.dc_site import site_map
from tests.support.cli import WF, analyst_of, anchor_to, apply_packages, confirm, run
from tests.support.roundkit import CLASSES, FEATURES, make_sites

FAST_SITE = ["--kip-steps", "40", "--rows-per-class", "4"]
FAST_KIT = ["--set", "min_steps=3000", "--set", "clusters=2", "--set", "local_epochs=60"]


def _site(folder: Path, rows: int = 160):
    sites = make_sites(folder, rows=rows)
    seed = pd.read_csv(folder / "seed.csv")[FEATURES].to_numpy()
    anchor = make_anchor("ab" * 16, FEATURES, kind="smote", rows=1000, seed_rows=seed).generate()
    train = pd.read_csv(sites["site0"][0])
    y = np.array([CLASSES.index(c) for c in train["label"]])
    return train[FEATURES].to_numpy(), y, anchor


def _export(X, y, anchor, **site):
    m = get_method("hfldd", {"local_epochs": 30})
    return m, m.site_compute(SiteInput(X, y, list(CLASSES), anchor, settings={"seed": 5, "kip_steps": 40, **site}))


@pytest.mark.slow
def test_the_bundle_holds_no_real_reduced_row_and_says_what_leaves(tmp_path):
    X, y, anchor = _site(tmp_path)
    m, ex = _export(X, y, anchor)
    assert set(ex.arrays) == {"x_distilled", "y_distilled", "soft_labels", "anchor_tilde", "label_counts"}
    real = site_map(ex.private_arrays).transform(X)  # every real reduced row, as the site computes it
    Xd = ex.arrays["x_distilled"].astype(np.float64)
    gaps = np.linalg.norm(Xd[:, None, :] - real[None, :, :], axis=2)
    spacing = ex.manifest["nn_disclosure"]["spacing"]
    assert gaps.min() > 1e-3 * spacing  # every distilled row differs from every real reduced row
    assert ex.manifest["nn_disclosure"]["ratio_min"] == pytest.approx(gaps.min() / spacing, rel=1e-3, abs=1e-3)
    present = np.flatnonzero(np.bincount(y, minlength=4))
    assert sorted(set(ex.arrays["y_distilled"].tolist())) == present.tolist()
    assert len(Xd) <= 5 * len(present) and ex.arrays["soft_labels"].shape == (100, 4)
    np.testing.assert_allclose(ex.arrays["soft_labels"].sum(axis=1), 1, atol=1e-5)
    # the size comparison with DC-CFL: x_tilde + y + the whole anchor image + counts of the same site
    n, k = real.shape
    assert ex.manifest["dccfl_bundle_bytes"] == n * k * 4 + n * 4 + 1000 * k * 4 + 4 * 8
    assert ex.manifest["bundle_bytes"] == ex.shipped_bytes < ex.manifest["dccfl_bundle_bytes"] / 3
    assert "smaller" in ex.plain and "made-up" in ex.plain and "No real row" in ex.plain
    assert f"{ex.manifest['nn_disclosure']['ratio_median']:.2f}×" in ex.plain
    assert "nearest real row" in next(d for d in ex.disclosures if d.name == "x_distilled").meaning
    assert "permutation" not in ex.private_arrays  # nothing per row comes back: the map is all apply needs


@pytest.mark.slow
def test_the_default_matching_gives_each_class_the_spread_of_its_real_rows(tmp_path):
    """objective=match (default): in the site's anchor-whitened space every class's shipped rows lie as far from
    the class's real mean, in mean squared distance, as its real rows do (match_spread), and none is real."""
    from core.methods.hfldd.kip import anchor_whitening

    X, y, anchor = _site(tmp_path)
    _m, ex = _export(X, y, anchor, min_distance=0.0)  # the distillation's own spread, before the near-copy rule
    assert ex.manifest["objective"] == "match"
    mu, W, _ = anchor_whitening(ex.arrays["anchor_tilde"].astype(np.float64))
    Z = (site_map(ex.private_arrays).transform(X) - mu) @ W
    Zd = (ex.arrays["x_distilled"].astype(np.float64) - mu) @ W
    yd = ex.arrays["y_distilled"]
    for c in np.unique(yd):
        centre = Z[y == c].mean(0)
        real = ((Z[y == c] - centre) ** 2).sum(1).mean()
        shipped = ((Zd[yd == c] - centre) ** 2).sum(1).mean()
        assert shipped == pytest.approx(real, rel=1e-3)
    assert ex.manifest["nn_disclosure"]["copies"] == 0


@pytest.mark.slow
def test_early_stop_at_the_start_never_ships_the_starting_real_rows(tmp_path, monkeypatch):
    """If early stopping keeps the set KIP started from (real rows), the site distils again without a hold-out."""
    import core.methods.hfldd.method as hf

    X, y, anchor = _site(tmp_path, rows=80)
    calls = []
    real_distill = hf.distill_sites

    def stuck_first(sites, settings, control=None, **kw):
        calls.append(settings.holdout)
        out = real_distill(sites, settings, control, **kw)
        if len(calls) == 1:  # pretend the hold-out loss never improved: the starting rows come back
            Z, yz = sites[0]
            out[0].X = np.vstack([Z[yz == c][: int((out[0].y == c).sum())] for c in np.unique(out[0].y)])
        return out

    monkeypatch.setattr(hf, "distill_sites", stuck_first)
    _, ex = _export(X, y, anchor, objective="kip", min_distance=0.0)  # without the near-copy rule
    assert calls == [0.2, 0.0]
    assert ex.manifest["nn_disclosure"]["copies"] == 0 and ex.manifest["nn_disclosure"]["ratio_min"] > 1e-3
    calls.clear()
    _, ex = _export(X, y, anchor, objective="kip")  # with it, the starting rows are pushed out: no second run
    assert calls == [0.2] and ex.manifest["nn_disclosure"]["ratio_min"] >= 0.5 - 1e-3
    assert ex.manifest["near_copies"]["moved"] == ex.manifest["n_distilled"]


def test_check_bundle_refuses_what_does_not_fit(tmp_path):
    X, y, anchor = _site(tmp_path, rows=80)
    m, ex = _export(X, y, anchor)

    class Kit:
        class schema:  # noqa: N801 - stands in for the kit's schema
            classes = CLASSES

    def bundle(**change):
        arrays = {**ex.arrays, **change}
        return ReceivedBundle("s", "f", "d", "e", {**ex.manifest, "family": "hfldd"}, arrays)

    m.check_bundle(bundle(), Kit)
    bad_x = ex.arrays["x_distilled"].copy()
    bad_x[0, 0] = np.nan
    for change, words in [({"x_distilled": bad_x}, "non-finite"),
                          ({"y_distilled": ex.arrays["y_distilled"] + 4}, "class list"),
                          ({"y_distilled": ex.arrays["y_distilled"][:-1]}, "label"),
                          ({"soft_labels": ex.arrays["soft_labels"][:, :3]}, "soft labels"),
                          ({"x_distilled": ex.arrays["x_distilled"][:, :3]}, "widths"),
                          ({"label_counts": np.zeros(4, np.int64)}, "class counts")]:
        with pytest.raises(FormatError, match=words):
            m.check_bundle(bundle(**change), Kit)
    with pytest.raises(FormatError):  # a DC bundle is not a distilled one
        m.check_bundle(ReceivedBundle("s", "f", "d", "e", {"family": "dc"}, ex.arrays), Kit)


def _round(d: Path, monkeypatch, capsys, names=("site0", "site1", "site2", "site3")):
    """Kit, identities and anchor by the CLI; the sites in ``names`` export by the CLI. Returns the sites."""
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "pass phrase 1")
    sites = make_sites(d / "data", rows=160)
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Distilled", "--schema-from",
               d / "data/sample.csv", "--label", "label", "--method", "hfldd", *FAST_KIT, "--out", d / "p.dckit") == 0
    for name in sites:
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
    assert run("anchor", "new", "--kit", d / "p.dckit", "--seed-csv", d / "data/seed.csv",
               "--out", d / "site0/p.dcanchor", *anchor_to(d, "site0", sites)) == 0
    capsys.readouterr()
    for k, name in enumerate(names):
        assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "site0/p.dcanchor",
                   "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                   "--identity", d / name / f"{name}.dcid", "--csv", sites[name][0], *FAST_SITE, "--seed", str(k),
                   "--out", d / "bundles" / f"{name}.dcbundle") == 0
    return sites


@pytest.mark.slow
def test_a_whole_cli_round_in_distillation_mode(tmp_path, monkeypatch, capsys):
    d = tmp_path
    started = time.perf_counter()
    sites = _round(d, monkeypatch, capsys)
    out = capsys.readouterr().out
    assert out.count("leaves this site: ") == 4 and "made-up summary rows (4 per class)" in out
    assert "instead of your 84 rows" in out and "× smaller" in out and "x_tilde" not in out
    assert out.count("of your 112 rows are set aside at your site") == 4  # to check the package (promise.py)
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, sites)) == 0
    out = capsys.readouterr().out
    assert "trained on distilled sets" in out and "vs DC-CFL" in out
    summary = json.loads((d / "out/summary.json").read_text())
    # the "alone" column: each site's own_cv, the same in the summary and in `analyst estimate` (promise.py)
    assert all(x["model"] == "chosen at the site" and x["own_model"]["source"] == "site" for x in summary["sites"])
    assert run("analyst", "estimate", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--json", d / "estimate.json", *confirm(d, sites)) == 0
    estimated = json.loads((d / "estimate.json").read_text())["sites"]
    assert {x["site"]: x["own_model"] for x in estimated} == {x["site"]: x["own_model"] for x in summary["sites"]}
    capsys.readouterr()
    clusters = {s["site"]: s["cluster"] for s in summary["sites"]}
    # the soft labels on the anchor group the sites by their label skew (two groups asked for)
    assert clusters["site0"] == clusters["site1"] != clusters["site2"] == clusters["site3"]
    assert all(s["distilled_rows"] <= 16 and s["bundle_bytes"] < s["dccfl_bundle_bytes"] / 3 for s in summary["sites"])
    assert summary["steps_smallest_union"] >= 3000
    report = (d / "out/report.html").read_text()
    assert "sites' own models answer" in report and "Difference in label mix" in report
    assert "as DC-CFL (bytes)" in report
    accs = []
    apply_packages(d, {name: test for name, (_, test) in sites.items()})
    # each site chose between the package and its own model on the rows it set aside (28 here: too few to tell two
    # models apart, so each keeps its own), and says why
    out = capsys.readouterr().out
    assert out.count("note: you use ") == 4 and out.count("cannot be told apart") == 4
    for name, (_, test) in sites.items():
        res = pd.read_csv(d / name / "result.csv")
        assert len(res) == len(pd.read_csv(test))
        np.testing.assert_allclose(res[[f"prob_{c}" for c in CLASSES]].sum(axis=1), 1, atol=1e-5)
        accs.append(float(np.mean(res["prediction"] == res["label"])))
    print(f"hfldd CLI round: accuracy per site {np.round(accs, 3).tolist()}, "
          f"{time.perf_counter() - started:.1f} s")
    assert np.mean(accs) > 0.6 and min(accs) > 0.45, accs  # 4 classes: chance is 0.25


@pytest.mark.slow
@pytest.mark.usefixtures("private_settings")
def test_a_gui_round_in_distillation_mode(qtbot, tmp_path, monkeypatch, capsys):
    pytest.importorskip("pytestqt")

    from tests.support.gui import (
        accept_kit,
        analyst_window_with_bundles,
        export_bundle,
        export_packages,
        import_anchor,
        new_wizard,
        open_identity,
        read_csv,
        train_models,
        wait_metrics,
        wait_page,
    )

    d = tmp_path
    sites = _round(d, monkeypatch, capsys, names=("site0", "site1"))  # site2 exports by clicking
    w = new_wizard(qtbot)
    open_identity(qtbot, w, d / "site2/site2.dcid", "pass phrase 1")
    accept_kit(w, d / "p.dckit")
    import_anchor(qtbot, w, d / "site0/p.dcanchor")
    w.next()
    read_csv(qtbot, w, sites["site2"][0])
    w.next()
    pp = w.privacy_page
    assert pp.site_form.names() == ["rows_per_class", "kip_steps", "objective", "init", "reduction", "dimension",
                                     "noise"]
    pp.site_form.set_value("kip_steps", 30)
    pp.site_form.set_value("rows_per_class", 2)
    wait_page(qtbot, pp, lambda: pp.isComplete() and pp.site_export.manifest["rows_per_class"] == 2
              and pp.site_export.manifest["kip_steps"] == 30)
    assert len(pp.site_export.arrays["y_distilled"]) <= 8
    plain = pp.plain_label.text()
    assert "made-up summary rows (2 per class)" in plain and "smaller" in plain and "nearest real row" in plain
    rows = {pp.disclosure_table.item(r, 0).text() for r in range(pp.disclosure_table.rowCount())}
    assert {"x_distilled", "y_distilled", "soft_labels", "anchor_tilde", "label_counts"} <= rows
    assert "x_tilde" not in rows
    export_bundle(qtbot, w, d / "bundles", "site2.dcbundle")

    aw = analyst_window_with_bundles(qtbot, d / "p.dckit", d / "analyst/analyst.dcid", "pass phrase 1",
                                     sorted((d / "bundles").glob("*.dcbundle")))
    # Clients page: the TV heatmap with the soft-label KL matrix beside it, and the groups training will use
    assert aw.show_page("clients")
    cp = aw.clients_page
    cp.ensure_fresh()
    assert cp.clustering is not None and cp.clustering.chosen is not None
    titles = [p.getPlotItem().titleLabel.text for p in [cp.heatmap_plot, *cp.companion_plots]]
    assert cp.clustering.distances.shape == (3, 3) and len(titles) == 2  # the TV matrix and the KL matrix beside it
    assert "label mix" in titles[0] and "answer" in titles[1]
    groups = dict(zip(cp.names, cp.labels.tolist(), strict=True))
    assert groups["site0"] == groups["site1"] != groups["site2"] and cp.n_clusters == 2  # clusters=2, by label skew
    # groups are numbered as fit numbers them (by first member in the canonical site order), not by the app's order
    assert f"group {groups['site0'] + 1}: site0, site1" in cp.chosen_label.text()
    assert "models answer" in cp.method_note.text()
    assert not cp.threshold_line.isVisible() and cp.t_spin.isHidden()  # no threshold to drag
    train_models(qtbot, aw)
    wait_metrics(qtbot, aw, 3)
    trained = {x["site"]: x["cluster"] - 1 for x in aw.state.result.summary["sites"]}
    assert trained == groups  # the page showed the groups the fit trained
    export_packages(qtbot, aw, d / "gui-out")
    assert len(list((d / "gui-out").glob("*.dcpkg"))) == 3
    report = (d / "gui-out/report.html").read_text()
    assert "Sites (made-up summary rows)" in report and "sites' own models answer" in report
    assert "its own rows alone" in report and "chosen at the site" in report  # the promise's column (promise.py)


def test_hfldd_says_in_one_sentence_that_it_scores_no_site():
    from core.methods.hfldd.method import HFLDD, NOT_SCORED
    from core.methods.views import Text

    m = HFLDD()
    summary = {"method": "hfldd", "n_clusters": 1, "epochs": 3, "steps_smallest_union": 10, "sites": [],
               "scored": False, "not_scored": NOT_SCORED}
    assert m.summary_lines(summary)[-1] == NOT_SCORED and "participant apply --validate" in NOT_SCORED
    from core.methods.base import MethodResult
    views = m.views(MethodResult("hfldd", [], summary, {}))
    assert any(isinstance(v, Text) and "participant apply --validate" in v.text for v in views)
