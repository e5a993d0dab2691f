"""The method seam's contract: a method written in this one file, registered from the test, goes through a
whole CLI round, a GUI round (both roles, by clicking) and the report, with no other file edited.

The toy method ships each site's column means and class counts (no anchor), and predicts for a row the
majority class of the site whose means are nearest — deliberately simple, so every failure here is the
seam's, not the method's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.errors import FormatError
from core.methods import METHODS, SUMMARIES, FitContext, Method, MethodResult, Release, register, unregister
from core.methods.base import Disclosure, ReceivedBundle, SiteExport, SiteInput
from core.methods.settings import Setting
from core.methods.views import Bars, Table
from tests.support.cli import WF, analyst_of, confirm, run
from tests.support.gui import (
    accept_kit,
    analyst_window_with_bundles,
    export_bundle,
    export_packages,
    read_csv,
    train_models,
    wait_metrics,
    wait_page,
    wizard_with_new_identity,
)
from tests.support.roundkit import FEATURES, make_sites


class NearestSiteMajority(Method):
    """Ship column means; predict the majority class of the nearest site."""

    name = "toy_nearest_site"
    title = "Toy: the majority class of the nearest site"
    task = "classification"
    family = "toy_nearest_site"
    labels_leave = "counts"
    needs_anchor = False
    what_leaves = "the mean of each column and how many rows are in each class"
    discloses = Release(SUMMARIES, rows="means")
    settings_spec = (
        Setting("distance", "choice", "euclidean", "how near a row is to a site's means",
                choices=("euclidean", "manhattan")),
        Setting("decimals", "int", 6, "decimals the shipped means keep", low=0, high=12, side="site"),
    )

    def site_compute(self, site: SiteInput, control=None) -> SiteExport:
        means = np.round(site.X.mean(axis=0, keepdims=True), int(site.settings["decimals"]))
        counts = np.bincount(site.y, minlength=len(site.classes)).astype(np.int64)
        return SiteExport({"means": means, "label_counts": counts}, {"n_rows": int(len(site.X))}, {}, {},
                          [Disclosure("means", means.shape, "float64", "the mean of each column"),
                           Disclosure("label_counts", counts.shape, "int64", "rows of each class")],
                          ["your rows"])

    def check_bundle(self, bundle: ReceivedBundle, kit) -> None:
        super().check_bundle(bundle, kit)
        m = bundle.arrays.get("means")
        if m is None or m.shape != (1, len(kit.schema.features)):
            raise FormatError("bundle lacks one mean per column")

    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        means = np.vstack([b.arrays["means"] for b in bundles])
        majority = np.array([int(np.argmax(b.arrays["label_counts"])) for b in bundles])
        context.control.step(1.0, "done")
        package = {"means": means, "majority": majority}
        packages = [({"method": self.name, "classes": context.classes}, package) for _ in bundles]
        sites = [{"site": b.site, "fingerprint": b.fingerprint, "rows": int(b.manifest["n_rows"]),
                  "majority": context.classes[k]} for b, k in zip(bundles, majority, strict=True)]
        return MethodResult(self.name, packages, {"method": self.name, "task": self.task, "sites": sites,
                                                  "settings": self.settings})

    def apply(self, manifest, arrays, private_arrays, X):
        order = 1 if self.settings["distance"] == "manhattan" else 2
        d = np.linalg.norm(X[:, None, :] - arrays["means"][None, :, :], ord=order, axis=2)
        return {"prediction": np.asarray(manifest["classes"], dtype=object)[arrays["majority"][d.argmin(axis=1)]]}

    def summary_lines(self, summary: dict) -> list[str]:
        return [f"toy: {x['site']} → {x['majority']}" for x in summary["sites"]]

    def views(self, result: MethodResult):
        sites = result.summary["sites"]
        return [Table("Toy sites", ["site", "rows", "majority"], [[x["site"], x["rows"], x["majority"]]
                                                                  for x in sites]),
                Bars("Toy rows per site", [x["site"] for x in sites], [float(x["rows"]) for x in sites])]


@pytest.fixture
def toy_method():
    register(NearestSiteMajority)
    yield NearestSiteMajority
    unregister(NearestSiteMajority.name)
    assert NearestSiteMajority.name not in METHODS


def _cli_round(d: Path, monkeypatch) -> dict:
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "pass phrase 1")
    sites = dict(list(make_sites(d / "data", rows=120).items())[:2])
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Toy", "--schema-from",
               d / "data/sample.csv", "--label", "label", "--method", NearestSiteMajority.name,
               "--set", "distance=manhattan", "--out", d / "toy.dckit") == 0
    for name, (train, _) in sites.items():
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
        # no --anchor: the method needs none; --decimals is the toy's own site-side setting
        assert run("participant", "export", "--kit", d / "toy.dckit", "--identity", d / name / f"{name}.dcid",
                   "--analyst-fingerprint", analyst_of(d / "toy.dckit"), "--accept-poor-privacy",
                   "--csv", train, "--decimals", "3", "--out", d / "bundles" / f"{name}.dcbundle") == 0
    return sites


def test_a_method_in_one_file_runs_a_whole_cli_round_and_report(tmp_path, monkeypatch, capsys, toy_method):
    d = tmp_path
    sites = _cli_round(d, monkeypatch)
    assert run("analyst", "run", "--kit", d / "toy.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, sites)) == 0
    out = capsys.readouterr().out
    assert "toy: site0 → " in out and "toy: site1 → " in out  # the method's own summary lines
    report = (d / "out/report.html").read_text()
    assert "Toy sites" in report and "Toy rows per site" in report and toy_method.title in report
    summary = json.loads((d / "out/summary.json").read_text())
    assert summary["settings"] == {"distance": "manhattan"}
    for name, (_, test) in sites.items():
        assert run("participant", "apply", "--package", d / "out" / f"{name}.dcpkg", "--identity",
                   d / name / f"{name}.dcid", "--csv", test, "--out", d / f"{name}-result.csv") == 0
        result = pd.read_csv(d / f"{name}-result.csv")
        assert set(result["prediction"]) <= {"a", "b", "c", "d"} and len(result) == len(pd.read_csv(test))


def test_the_cli_help_and_checks_come_from_the_declarations(tmp_path, monkeypatch, capsys, toy_method):
    with pytest.raises(SystemExit):
        run("kit", "new", "--help")
    text = capsys.readouterr().out
    assert toy_method.name in text and "distance: how near a row is to a site's means" in text
    with pytest.raises(SystemExit):
        run("participant", "export", "--help")
    assert "--decimals" in capsys.readouterr().out
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "pass phrase 1")
    make_sites(tmp_path / "data", rows=40)
    assert run("keys", "new", "--name", "analyst", "--out", tmp_path, *WF) == 0
    code = run("kit", "new", "--identity", tmp_path / "analyst.dcid", "--name", "Toy", "--schema-from",
               tmp_path / "data/sample.csv", "--label", "label", "--method", toy_method.name,
               "--set", "distance=chebyshev", "--out", tmp_path / "bad.dckit")
    err = capsys.readouterr().err
    assert code == 1 and "setting 'distance' must be euclidean | manhattan" in err
    assert not (tmp_path / "bad.dckit").exists()


@pytest.mark.slow
@pytest.mark.usefixtures("private_settings")
def test_a_method_in_one_file_runs_a_gui_round(qtbot, tmp_path, monkeypatch, toy_method):
    pytest.importorskip("pytestqt")
    d = tmp_path
    sites = _cli_round(d, monkeypatch)  # kit and one bundle made by the CLI; a second site exports by clicking
    _, (train_csv, _) = next(iter(sites.items()))
    w = wizard_with_new_identity(qtbot, "clicker2", d / "clicker2")
    accept_kit(w, d / "toy.dckit")
    assert w.page_name() == "data"  # the anchor page is skipped: the method needs no anchor
    read_csv(qtbot, w, train_csv)
    w.next()
    pp = w.privacy_page
    assert pp.site_form.names() == ["decimals"]  # the toy's own site setting, generated
    pp.site_form.set_value("decimals", 2)
    wait_page(qtbot, pp, lambda: pp.isComplete() and pp.site_export.arrays["means"].shape == (1, 8))
    # a new method is scored at the site (promise.py): its check rows stay out of what it computes
    every, held = pd.read_csv(train_csv)[FEATURES].to_numpy(), pp.site_export.private_arrays["check_x"]
    expected = np.round((every.sum(axis=0) - held.sum(axis=0)) / (len(every) - len(held)), 2)
    assert 0 < len(held) < len(every)
    assert np.allclose(pp.site_export.arrays["means"][0], expected)  # the site's choice reached site_compute
    rows = {pp.disclosure_table.item(r, 0).text() for r in range(pp.disclosure_table.rowCount())}
    assert rows == {"means", "label_counts", "own_cv", "rows_kept_at_site"}  # own_cv: the own model's scores
    export_bundle(qtbot, w, d / "bundles", "clicker2.dcbundle")

    aw = analyst_window_with_bundles(qtbot, d / "toy.dckit", d / "analyst/analyst.dcid", "pass phrase 1",
                                     sorted((d / "bundles").glob("*.dcbundle")))
    assert aw.clients_page.clustering is None  # the toy does not group sites
    train_models(qtbot, aw)
    wait_metrics(qtbot, aw, 3)
    export_packages(qtbot, aw, d / "gui-out")
    assert len(list((d / "gui-out").glob("*.dcpkg"))) == 3
    assert "Toy sites" in (d / "gui-out/report.html").read_text()


def test_no_code_outside_the_methods_names_a_method():
    """Pipelines, CLI, app and report go through the seam: no string literal outside ``core/methods`` (and the
    benchmarks and simulations, which study particular methods) is a registered method's name."""
    import ast

    root = Path(__file__).resolve().parents[2]
    names = set(METHODS)
    offenders = []
    for top in ("core", "gui"):
        for path in (root / top).rglob("*.py"):
            rel = path.relative_to(root).as_posix()
            if rel.startswith("core/methods/"):
                continue
            for node in ast.walk(ast.parse(path.read_text(), rel)):
                if isinstance(node, ast.Constant) and node.value in names:
                    offenders.append(f"{rel}:{node.lineno} {node.value!r}")
    assert not offenders, offenders


# ---- the promise (core/methods/promise.py): no site gets something worse than its own model ----------------------
FAST = {"epochs": 20, "min_steps": 1500, "local_epochs": 30}  # known settings only (Method.with_known)
FAST_SITE = {"kip_steps": 30, "rows_per_class": 3}


def _conflicting_sites(seed: int = 0):
    """Four small label-skewed sites where pooling hurts: sites 2 and 3 label the same clusters the other way
    round (three classes, 44 training rows, 90 test rows each)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3, size=(3, 6))
    mixes = [[0.5, 0.4, 0.1], [0.4, 0.4, 0.2], [0.1, 0.4, 0.5], [0.2, 0.4, 0.4]]
    flip = np.array([2, 1, 0])

    def draw(n, mix, flipped):
        k = rng.choice(3, n, p=mix)
        X = centres[k] + rng.normal(0, 1.6, size=(n, 6))
        return X, (flip[k] if flipped else k).astype(np.int64)

    sites = [(*draw(44, mix, s >= 2), *draw(90, mix, s >= 2)) for s, mix in enumerate(mixes)]
    anchor = rng.normal(0, 4, size=(400, 6))
    return sites, anchor


@pytest.mark.parametrize("name", [n for n, c in METHODS.items() if c.task == "classification"])
def test_no_site_is_sent_something_worse_than_its_own_model(name):
    """Every registered classification method: applied through the seam, every site chooses on its own rows
    (core.learn.site_update: paired with the shared model's out-of-fold predictions, or on the rows it set aside),
    no site's result on its test rows is worse than its own model by more than MARGIN_SE paired standard errors,
    and the summary's "alone" number of every site is the own_cv its bundle carried (the same number the report's
    and `analyst estimate`'s column shows)."""
    from benchmarks.small_sites import run_round
    from core.learn.own_cv import MARGIN_SE
    from core.methods.promise import paired_se

    sites, anchor = _conflicting_sites()
    method = METHODS[name].with_known(FAST)
    rows, result, _ = run_round(method, sites, ["a", "b", "c"], anchor, 0, FAST_SITE)
    for r in rows:
        assert r["used"] in ("package", "own", "updated") and r["chosen_by"] == "site"
        assert r["paired_on"] == ("set-aside" if name == "hfldd" else "all")
        gap = r["package"] - r["own_model"]
        assert gap >= -MARGIN_SE * paired_se(r["right"], r["own_right"]) - 1e-9, (name, r)
        assert r["expected_own"] == pytest.approx(r["own_cv"])  # the "alone" number is the site's own_cv
    table = next(v for v in method.views(result) if isinstance(v, Table) and "its own rows alone" in v.columns)
    shown = [row[table.columns.index("its own rows alone")] for row in table.rows]
    assert all(str(row).startswith(f"{x['own_model']['accuracy']:.3f}") for row, x in
               zip(shown, result.summary["sites"], strict=True))
