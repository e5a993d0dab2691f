"""Issue #23 at the site: ``participant apply --validate`` gives the clinical figures of the package and of the
site's own model (equal to scikit-learn's on the written predictions), DeLong's paired test, and a decision at a
threshold the ward chooses."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import brier_score_loss, recall_score, roc_auc_score

from core.formats.identity import Identity
from core.formats.workspace import SiteWorkspace
from core.learn.clinical_metrics import delong
from core.participant import apply_package
from tests.support.cli import confirm, export_dccfl_round, refused, run
from tests.support.roundkit import make_binary_sites

PASS = "correct horse battery staple"


@pytest.fixture(scope="module")
def round_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", PASS)
    d = tmp_path_factory.mktemp("fig")
    sites = make_binary_sites(d / "data", rows=160)
    export_dccfl_round(d, sites, "F", "epochs=10", "own_model=false")  # a shared model at every site, to check
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, list(sites))) == 0
    yield d, sites
    mp.undo()


def _apply(d, name, csv, out, *extra):
    return run("participant", "apply", "--package", d / "out" / f"{name}.dcpkg", "--identity",
               d / name / f"{name}.dcid", "--csv", csv, "--out", out, *extra)


def test_validate_prints_figures_equal_to_sklearn(round_dir, capsys):
    d, sites = round_dir
    name = "site2"
    test = sites[name][1]
    capsys.readouterr()
    assert _apply(d, name, test, d / "res.csv", "--validate") == 0
    out = capsys.readouterr().out
    res = pd.read_csv(d / "res.csv")
    y = (res["label"] == "yes").to_numpy().astype(int)
    assert np.allclose(res["risk_yes"], res["prob_yes"])
    assert (res["decision"] == np.where(res["risk_yes"] >= 0.5, "yes", "no")).all()
    assert "threshold 0.500 (the default)" in out and "'yes' (the kit's second class" in out
    auc = roc_auc_score(y, res["prob_yes"])
    sens = recall_score(y, (res["prob_yes"] >= 0.5).astype(int))
    assert f"{auc:.3f} (" in out and f"{sens:.3f} ({int(((res['prob_yes'] >= 0.5) & (y == 1)).sum())}/{y.sum()})" in out
    assert f"{len(y)} rows, {y.sum()} 'yes'" in out
    # the audit holds the same figures, and the own model's
    ws = SiteWorkspace(d / name / f"{name}.workspace")
    entry = [e for e in ws.audit.entries() if e.get("event") == "apply"][-1]
    v = entry["validation"]
    assert v["package_metrics"]["auc"] == pytest.approx(auc)
    assert v["package_metrics"]["brier"] == pytest.approx(brier_score_loss(y, res["prob_yes"]))
    assert entry["threshold"] == {"value": 0.5, "how": "default", "target": None, "positive": "yes"}
    json.dumps(entry)  # strict JSON: no NaN
    local = Identity.load(d / name / f"{name}.dcid", PASS)
    got = apply_package(d / "out" / f"{name}.dcpkg", local, test, d / "res2.csv", workspace=ws, validate=True)
    P_loc = got.scored["local"]
    assert got.validation["local_metrics"]["auc"] == pytest.approx(roc_auc_score(y, P_loc[:, 1]))
    d_expected = delong(y, res["prob_yes"].to_numpy(), P_loc[:, 1])
    assert got.validation["delong"]["p_value"] == pytest.approx(d_expected["p_value"])
    assert "DeLong's paired test p =" in out and "your own model" in out


def test_threshold_given_and_chosen_by_sensitivity(round_dir, capsys):
    d, sites = round_dir
    name, test = "site3", sites["site3"][1]
    capsys.readouterr()
    assert _apply(d, name, test, d / "t.csv", "--threshold", "0.3") == 0
    out = capsys.readouterr().out
    res = pd.read_csv(d / "t.csv")
    assert (res["decision"] == np.where(res["risk_yes"] >= 0.3, "yes", "no")).all()
    assert "threshold 0.300 (as given)" in out
    assert _apply(d, name, test, d / "s.csv", "--validate", "--threshold-for-sensitivity", "0.95") == 0
    out = capsys.readouterr().out
    res = pd.read_csv(d / "s.csv")
    y = res["label"] == "yes"
    called = res["decision"] == "yes"
    assert (called & y).sum() / y.sum() >= 0.95
    assert "reaches sensitivity ≥ 0.95" in out


def test_threshold_refusals(round_dir, capsys):
    d, sites = round_dir
    name, test = "site0", sites["site0"][1]
    base = ["participant", "apply", "--package", d / "out" / f"{name}.dcpkg", "--identity",
            d / name / f"{name}.dcid", "--csv", test, "--out", d / "r.csv"]
    refused(capsys, *base, "--threshold", "1.2", expect="strictly between 0 and 1")
    refused(capsys, *base, "--threshold-for-specificity", "0.9", expect="needs labelled rows (--validate)")
    refused(capsys, *base, "--validate", "--threshold", "0.4", "--threshold-for-sensitivity", "0.9",
            expect="not both")


def test_a_package_that_never_predicts_the_minority_is_flagged(round_dir, capsys):
    """A threshold no risk reaches makes the package call every row 'no': the site is told, not shown an accuracy."""
    d, sites = round_dir
    name, test = "site0", sites["site0"][1]
    capsys.readouterr()
    assert _apply(d, name, test, d / "n.csv", "--validate", "--threshold", "0.999999") == 0
    out = capsys.readouterr().out
    assert "warning: the package never predicts 'yes' at threshold 1.00: sensitivity 0" in out
