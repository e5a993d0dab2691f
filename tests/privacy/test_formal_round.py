"""Issue #35 (part B): a whole round under the formal option — export with ``--privacy-epsilon 1``, analyst run,
apply — for the DC family, and what the analyst's outputs say about it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.support.cli import WF, analyst_of, confirm, run
from tests.support.roundkit import CLASSES, make_sites


@pytest.fixture(autouse=True)
def _passphrase(monkeypatch):
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "correct horse battery staple")


def formal_round(d, method: str, *, sites: int = 3, epsilon: str = "1") -> dict:
    """Keys, a kit with public statistics, a plain anchor, every site's export with ``--privacy-epsilon``, the
    analyst's run and every site's apply on its test rows; returns the site files."""
    data = dict(list(make_sites(d / "data", rows=160).items())[:sites])
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Formal", "--schema-from",
               d / "data/sample.csv", "--label", "label", "--method", method, "--out", d / "p.dckit") == 0
    assert run("anchor", "new", "--kit", d / "p.dckit", "--seed-csv", d / "data/seed.csv", "--plain",
               "--out", d / "p.dcanchor") == 0
    for name, (train, _) in data.items():
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
        assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "p.dcanchor",
                   "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--identity", d / name / f"{name}.dcid",
                   "--csv", train, "--out", d / "bundles" / f"{name}.dcbundle", "--privacy-epsilon", epsilon,
                   "--seed", "7", "--accept-poor-privacy") == 0
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, data)) == 0
    for name, (_, test) in data.items():
        assert run("participant", "apply", "--package", d / "out" / f"{name}.dcpkg", "--identity",
                   d / name / f"{name}.dcid", "--csv", test, "--out", d / name / "result.csv") == 0
    return data


@pytest.mark.parametrize("method", ["dc", "dccfl", "feddag"])
def test_a_whole_epsilon_round(tmp_path, method, capsys):
    data = formal_round(tmp_path, method)
    out = capsys.readouterr().out
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    formal = summary["formal_privacy"]
    assert [s["epsilon"] for s in formal["sites"]] == [1.0] * len(data)
    assert all(0 < s["delta"] < 1e-4 for s in formal["sites"])
    assert "randomised labels" in formal["figures"] and formal["not_covered"]
    report = (tmp_path / "out/report.html").read_text()
    assert "ε = 1" in report and "randomised labels" in report
    for name in data:  # every package applied; its model card says what the figures rest on
        assert len(pd.read_csv(tmp_path / name / "result.csv")) > 0
        card = next((tmp_path / "out").glob(f"{name}*.model_card.md")).read_text()
        assert "ε = 1" in card and "noised rows" in card
    assert "formal privacy" in out.lower() and "ε = 1" in out and "privacy budget: no earlier export" in out
    assert set(pd.read_csv(tmp_path / "site0/result.csv")["prediction"]) <= set(CLASSES)


def test_a_whole_epsilon_round_on_the_summary_path(tmp_path, capsys):
    """meta-lr under ``--privacy-epsilon 1``: noised coefficients, the noise's covariance added by the analyst."""
    from core.formats.envelope import open_sealed
    from core.formats.identity import Identity

    data = formal_round(tmp_path, "meta-lr")
    out = capsys.readouterr().out
    assert "(ε = 1, δ" in out  # the site's export line says what leaves and how private it is
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    formal = summary["formal_privacy"]
    assert [s["epsilon"] for s in formal["sites"]] == [1.0] * len(data)
    assert "objective perturbation" in formal["sites"][0]["mechanism"] and "coefficients" in formal["figures"]
    analyst = Identity.load(tmp_path / "analyst/analyst.dcid", "correct horse battery staple")
    bundle = open_sealed(tmp_path / "bundles/site0.dcbundle", analyst, expect_kind="bundle").payload
    assert set(bundle.arrays) == {"coef", "cov", "noise_cov"} and "classes_fitted" not in bundle.manifest
    assert "own_cv" not in bundle.manifest and "iterations" not in bundle.manifest
    site0 = next(s for s in summary["sites"] if s["site"] == "site0")
    cov = bundle.arrays["cov"] + bundle.arrays["noise_cov"]  # the combination weighs by V + N
    assert np.allclose(np.asarray(site0["se"]).ravel(), np.sqrt(np.diag(cov)))


def test_the_models_page_states_the_formal_option_first():
    """AnalystRun.views (the Models page) opens with the formal option's statement when a site used it."""
    from core.analyst import AnalystRun
    from core.methods import FitContext, ReceivedBundle, SiteInput, get_method
    from core.methods.views import Text

    rng = np.random.default_rng(0)
    method, bundles = get_method("dccfl"), []
    for i, eps in enumerate((1.0, 1.0, None)):
        X = rng.normal(size=(120, 4))
        y = (X[:, 0] > 0).astype(np.int64)
        site = SiteInput(X, y, ["a", "b"], rng.normal(size=(80, 4)), None, {"privacy_epsilon": eps},
                         scale=np.ones(4), centre=np.zeros(4))
        ex = method.site_compute(site)
        bundles.append(ReceivedBundle(f"s{i}", f"FP{i}", f"d{i}", f"e{i}",
                                      {**ex.manifest, "family": method.family, "method": "dccfl"}, ex.arrays))
    from core.privacy.formal_summary import formal_block

    result = method.fit(bundles, FitContext(["a", "b"]))
    result.summary["formal_privacy"] = formal_block(bundles, method.discloses)
    views = AnalystRun(method, result, bundles).views()
    assert isinstance(views[0], Text) and views[0].tone == "warning"
    assert "s0: ε = 1" in views[0].text and "Without the formal option: s2" in views[0].text
    assert "noised rows and randomised labels" in views[0].text
