"""Issue #15: the site checks before it trusts. The own-rows model is kept in the workspace, never shipped;
``participant apply --validate`` scores the package beside it with n and 95 % intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.formats.anchor import AnchorFile
from core.formats.envelope import open_sealed
from core.formats.identity import Identity
from core.formats.kit import Kit
from core.formats.workspace import SiteWorkspace
from core.learn.local_model import NAMES, fit_local_model, local_predict_proba
from core.learn.own_cv import OOF_ARRAYS
from core.participant import ParticipantRound
from tests.support.cli import confirm, export_dccfl_round, run
from tests.support.roundkit import make_sites

PASS = "correct horse battery staple"
SHIPPED = {"x_tilde", "anchor_tilde", "label_counts", "y"}


def test_local_model_learns_and_predicts_without_torch_or_pickle():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) * [1, 10, 100, 0.1]
    y = (X[:, 0] + X[:, 1] / 10 > 0).astype(np.int64) + 2 * (X[:, 2] > 0)
    arrays = fit_local_model(X, y, 4)
    assert set(arrays) == set(NAMES) and all(a.dtype == np.float64 for a in arrays.values())
    acc = np.mean(local_predict_proba(arrays, X).argmax(1) == y)
    assert acc > 0.9


@pytest.fixture(scope="module")
def round_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", PASS)
    d = tmp_path_factory.mktemp("val")
    sites = make_sites(d / "data", rows=120)
    export_dccfl_round(d, sites, "V", "epochs=10", "own_model=false")  # every site gets a shared model to check
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, list(sites))) == 0
    yield d, sites
    mp.undo()


def test_bundle_carries_nothing_extra(round_dir):
    d, sites = round_dir
    analyst = Identity.load(d / "analyst/analyst.dcid", PASS)
    for name in sites:
        opened = open_sealed(d / "bundles" / f"{name}.dcbundle", analyst, expect_kind="bundle")
        assert set(opened.payload.arrays) == SHIPPED
        assert not any("local" in k for k in opened.payload.manifest)
        ws = d / name / f"{name}.workspace"
        kept = {p.stem for p in ws.rglob("*.npy")}
        assert set(NAMES) <= kept  # the own-rows model stays in the workspace, as plain .npy arrays
    # the same export without the own-rows model ships exactly the same arrays and manifest
    name, (train, _) = next(iter(sites.items()))
    kit = Kit.load(d / "p.dckit")
    made = []
    for with_local in (False, True):
        job = ParticipantRound(kit, d / "p.dckit", Identity.load(d / name / f"{name}.dcid", PASS),
                               SiteWorkspace(d / f"ws{with_local}"), anchor=AnchorFile.load(d / "p.dcanchor"),
                               site_settings={"seed": 4})
        job.confirm_analyst(kit.analyst, how="test")
        job.local_baseline = with_local
        job.load(train)
        made.append(job.compute())
    # ... and the same manifest but for the own model's cross-validated scores (issue #22), disclosed
    extra = {k: v for k, v in made[1].manifest.items() if k not in made[0].manifest}
    assert set(extra) == {"own_cv"} and {k: v for k, v in made[1].manifest.items() if k != "own_cv"} == made[0].manifest
    cv = extra["own_cv"]
    assert set(cv) == {"accuracy", "balanced_accuracy", "auc", "log_loss", "rows", "folds", "repeats", "model"}
    assert all(isinstance(v, int | float | str) for v in cv.values()) and cv["rows"] == job.table.n_rows
    assert "own_cv" in [x.name for x in made[1].disclosures] and "own_cv" not in [x.name for x in made[0].disclosures]
    assert sorted(made[0].arrays) == sorted(made[1].arrays)
    assert all(np.array_equal(made[0].arrays[k], made[1].arrays[k]) for k in made[0].arrays)
    # the own-rows model and its out-of-fold probabilities (the site's half of its paired choice, issue #37)
    assert set(made[1].private_arrays) - set(made[0].private_arrays) == set(NAMES) | set(OOF_ARRAYS)


def test_apply_validate_scores_package_beside_own_model(round_dir, capsys):
    import json

    d, sites = round_dir
    summary = json.loads((d / "out/summary.json").read_text())
    shared = [x["site"] for x in summary["sites"] if x.get("model") != "own"]
    assert shared, summary["sites"]  # a site sent a shared model (one told to keep its own has nothing to compare)
    name, test = shared[0], sites[shared[0]][1]
    capsys.readouterr()
    assert run("participant", "apply", "--package", d / "out" / f"{name}.dcpkg", "--identity",
               d / name / f"{name}.dcid", "--csv", test, "--out", d / "res.csv", "--validate") == 0
    out = capsys.readouterr().out
    assert "the analyst's package:" in out and "your own-rows model:" in out and "recommended:" in out
    assert out.count("95 % CI") >= 2 and f"n = {len(pd.read_csv(test))}" in out
    res = pd.read_csv(d / "res.csv")
    truth = res["label"].to_numpy()
    pkg, loc, rec = (np.mean(res[c].to_numpy() == truth) for c in ("prediction", "local_prediction", "recommended"))
    assert rec == max(pkg, loc) or (pkg == loc and rec == pkg)
    assert f"{pkg:.3f}" in out and f"{loc:.3f}" in out


@pytest.mark.slow
def test_a_package_that_says_keep_your_own_applies_the_sites_own_model(tmp_path, monkeypatch, capsys):
    """Sites of 21 training rows: each keeps its own model (fewer than 30 paired rows cannot tell two models apart);
    applying the package gives exactly the own-rows model's predictions, and the site is told so."""
    import json

    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", PASS)
    sites = make_sites(tmp_path / "data", rows=30)
    export_dccfl_round(tmp_path, sites, "K", "epochs=5")
    assert run("analyst", "run", "--kit", tmp_path / "p.dckit", "--identity", tmp_path / "analyst/analyst.dcid",
               "--bundles", tmp_path / "bundles", "--out", tmp_path / "out", *confirm(tmp_path, list(sites))) == 0
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    kept = [x["site"] for x in summary["sites"] if x.get("model") == "own" and x.get("own_kind") == "linear"]
    assert kept, summary["sites"]
    for name in kept:
        capsys.readouterr()
        out_csv = tmp_path / f"{name}-res.csv"
        assert run("participant", "apply", "--package", tmp_path / "out" / f"{name}.dcpkg", "--identity",
                   tmp_path / name / f"{name}.dcid", "--csv", sites[name][1], "--out", out_csv, "--validate") == 0
        out = capsys.readouterr().out
        assert "cannot be told apart" in out and "you keep your own model" in out
        # the model in use IS the own model: scored once, never compared with itself (issue #27 point 6); the shared
        # model as sent is scored beside it (what the site's choice left aside)
        assert "the model you use (your own model):" in out and "your own-rows model:" not in out
        assert "shared, as sent" in out
        res = pd.read_csv(out_csv)
        assert "local_prediction" not in res and res["prediction"].notna().all()
