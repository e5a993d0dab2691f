"""Issue #23 in the site's results window: ROC and calibration of the package beside the site's own model, the
figures, and writing the results again at a threshold chosen by a sensitivity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from gui.participant import ResultsWindow  # noqa: E402
from gui.screen import fully_visible  # noqa: E402
from tests.support.cli import confirm, export_dccfl_round, run  # noqa: E402
from tests.support.gui import results_apply, results_unlock, wait_job  # noqa: E402
from tests.support.roundkit import make_binary_sites  # noqa: E402

PASS = "correct horse battery staple"


@pytest.fixture(scope="module")
def binary_round(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", PASS)
    d = tmp_path_factory.mktemp("gui-fig")
    sites = make_binary_sites(d / "data", rows=160)
    export_dccfl_round(d, sites, "G", "epochs=8", "own_model=false")  # every site gets a shared model to check
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, list(sites))) == 0
    mp.undo()
    return d, sites


def test_results_window_shows_curves_and_rewrites_at_a_new_threshold(qtbot, binary_round, tmp_path):
    import json

    d, sites = binary_round
    summary = json.loads((d / "out/summary.json").read_text())
    shared = [x["site"] for x in summary["sites"] if x.get("model") != "own"]
    assert shared, summary["sites"]  # a site sent a shared model: it is drawn beside the site's own
    name, test = shared[0], sites[shared[0]][1]
    r = ResultsWindow()
    qtbot.addWidget(r)
    r.resize(1366, 768)
    r.show()
    results_unlock(qtbot, r, d / name / f"{name}.dcid")
    r.workspace_field.set_path(d / name / f"{name}.workspace")
    r.package_field.set_path(d / "out" / f"{name}.dcpkg")
    r.csv_field.set_path(test)
    out = tmp_path / "res.csv"
    r.out_field.set_path(out)
    r.validate_check.setChecked(True)
    results_apply(qtbot, r)
    written = pd.read_csv(out)
    y = (written["label"] == "yes").to_numpy().astype(int)
    # both curves, AUCs in the legend equal to sklearn's on the written risks
    assert set(r.roc_curves) == {"package", "local"} and set(r.calibration_curves) == {"package", "local"}
    legend = [label.text for _, label in r.roc_plot.getPlotItem().legend.items]
    assert any(f"AUC {roc_auc_score(y, written['risk_yes']):.3f}" in t for t in legend)
    assert r.risk_bars is not None and r.tabs.currentWidget() is r.check_tab
    assert r.figures_table.rowCount() >= 8 and r.figures_table.item(0, 0).text().startswith("AUC")
    assert r.threshold_box.isVisible() and "Written at 0.500" in r.threshold_label.text()
    # choose the threshold by a sensitivity, then write again: the file and the label follow
    r.threshold_mode.setCurrentIndex(r.threshold_mode.findData("sensitivity"))
    r.threshold_spin.setValue(0.95)
    t = r.chosen_threshold()
    assert t is not None and "sensitivity <b>" in r.threshold_label.text()
    r.rewrite_button.click()
    wait_job(qtbot, r.job)
    again = pd.read_csv(out)
    assert (again["decision"] == np.where(again["risk_yes"] >= t, "yes", "no")).all()
    called = again["decision"] == "yes"
    assert (called & (y == 1)).sum() / y.sum() >= 0.95
    assert f"Written at {t:.3f}" in r.threshold_label.text()
    assert r.outcome["result"].threshold["how"] == "sensitivity"
    # the rewrite was asked for: answered as done (green), not as a warning about the package applied twice
    assert r.message.kind == "ok" and "again" in r.message.text() and "already applied" not in r.message.text()
    for w in (r.roc_plot, r.calibration_plot, r.rewrite_button, r.threshold_spin):
        assert fully_visible(w), w
