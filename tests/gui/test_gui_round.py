"""Both roles through a whole round, by clicking: the analyst makes its identity and the kit in its window;
four sites each make an identity in the wizard, open the kit, the lead creates the anchor and the others
import it, each loads its CSV and exports; the analyst imports the bundles, moves the threshold line (the
cluster count changes), trains and exports packages; a site applies its package in the results window."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QFileDialog  # noqa: E402

from core.formats.identity import Identity  # noqa: E402
from core.formats.kit import Kit  # noqa: E402
from gui.analyst import window as analyst_window  # noqa: E402
from gui.participant import ResultsWindow  # noqa: E402
from tests.support.gui import (  # noqa: E402
    HANG,  # noqa: E402
    accept_kit,
    create_anchor,
    create_identity,
    export_bundle,
    import_anchor,
    import_bundles,
    new_wizard,
    open_identity,
    read_csv,
    results_apply,
    results_unlock,
    wait_job,
    wait_page,
)
from tests.support.roundkit import CLASSES, make_sites  # noqa: E402
from tests.support.typedkit import make_typed_sites  # noqa: E402

PASS = "correct horse battery staple"


def analyst_makes_kit(qtbot, w, d: Path, monkeypatch) -> Path:
    page = w.project_page
    page.log_n = 14
    page.identity_tabs.setCurrentIndex(1)
    page.new_name.setText("Analyst")
    page.new_folder.setText(str(d / "analyst"))
    page.new_pass1.setText(PASS)
    page.new_pass2.setText(PASS)
    with qtbot.waitSignal(page.identity_job_panel.finished, timeout=HANG):
        qtbot.mouseClick(page.create_identity_button, Qt.LeftButton)
    assert page.identity is not None, page.identity_message.text()
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(d / "data/sample.csv"), ""))
    with qtbot.waitSignal(page.schema_job_panel.finished, timeout=HANG):
        qtbot.mouseClick(page.sample_browse_button, Qt.LeftButton)
    assert page.schema is not None
    page.project_name.setText("Whole round")
    page.settings_form.set_value("epochs", 50)
    page.settings_form.set_value("t", "auto")
    kit_path = d / "round.dckit"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(kit_path), ""))
    qtbot.mouseClick(page.create_kit_button, Qt.LeftButton)
    assert kit_path.exists()
    return kit_path


def site_exports(qtbot, d: Path, name: str, kit_path: Path, csv: Path, *, lead: bool,
                 cards: list[Path] = ()) -> Path:
    """One site's wizard; the lead creates its identity and the anchor (encrypted to ``cards`` too), the
    others open the identity they made earlier (their cards had to exist for the lead's anchor)."""
    w = new_wizard(qtbot)
    if lead:
        create_identity(qtbot, w, name, d / name, PASS)
    else:
        open_identity(qtbot, w, d / name / f"{name}.dcid", PASS)
    accept_kit(w, kit_path)
    if lead:
        create_anchor(qtbot, w, d / "data/seed.csv", d / "lead.dcanchor", list(cards))
    else:
        import_anchor(qtbot, w, d / "lead.dcanchor")
    assert w.anchor_page.isComplete()
    w.next()
    read_csv(qtbot, w, csv)
    w.next()
    wait_page(qtbot, w.privacy_page)
    return export_bundle(qtbot, w, d / "usb", f"{name}.dcbundle")


@pytest.mark.slow
def test_whole_round_by_clicking(qtbot, tmp_path, monkeypatch):
    d = tmp_path
    sites = make_sites(d / "data", rows=160)
    (d / "usb").mkdir()

    aw = analyst_window.AnalystWindow()
    qtbot.addWidget(aw)
    aw.show()
    kit_path = analyst_makes_kit(qtbot, aw, d, monkeypatch)
    kit = Kit.load(kit_path)

    others = list(sites)[1:]
    for name in others:  # the other sites made their keys and sent their cards to the lead site
        ident = Identity.generate(name)
        ident.save(d / name / f"{name}.dcid", PASS, log_n=14)
        ident.card.save(d / name / f"{name}.dcpub")
    bundles = [site_exports(qtbot, d, name, kit_path, train, lead=(k == 0),
                            cards=[d / n / f"{n}.dcpub" for n in others])
               for k, (name, (train, _)) in enumerate(sites.items())]
    assert all(b.exists() for b in bundles)

    # the analyst imports the four bundles (as a drop would) and confirms their fingerprints
    import_bundles(qtbot, aw, bundles, confirm=False)
    assert len(aw.bundles_page.rows_by_status("unconfirmed")) == 4 and not aw.state.bundles
    for fp in aw.bundles_page.pending_fingerprints():  # nothing opened yet; each tick confirms a site, imports its file
        wait_job(qtbot, aw.bundles_page.set_confirmed(fp, True))
    assert len(aw.bundles_page.rows_by_status("imported")) == 4

    # the threshold line re-cuts the clients live
    assert aw.show_page("clients")
    cp = aw.clients_page
    cp.threshold_line.setValue(0.95)
    assert cp.n_clusters == 1
    cp.threshold_line.setValue(0.4)
    assert cp.n_clusters == 2  # the two label-skew groups

    # train at that threshold and export one package per site
    assert aw.show_page("models")
    mp = aw.models_page
    qtbot.mouseClick(mp.train_button, Qt.LeftButton)
    wait_job(qtbot, mp.job_panel.job)
    assert mp.last_outcome == "succeeded", mp.message.text()
    assert aw.state.result.summary["n_clusters"] == 2
    assert aw.show_page("export")
    ep = aw.export_page
    ep.out_edit.setText(str(d / "to-sites"))
    qtbot.mouseClick(ep.export_button, Qt.LeftButton)
    wait_job(qtbot, ep.job_panel.job)
    packages = sorted((d / "to-sites").glob("*.dcpkg"))
    assert len(packages) == 4 and (d / "to-sites/report.html").exists()

    # a site applies its package to its held-out rows in the results window
    name, (_, test_csv) = next(iter(sites.items()))
    r = ResultsWindow()
    qtbot.addWidget(r)
    r.show()
    results_unlock(qtbot, r, d / name / f"{name}.dcid", PASS)
    assert r.identity is not None and not r.busy, r.message.text()
    r.package_field.set_path(d / "to-sites" / f"{name}.dcpkg")
    r.csv_field.set_path(test_csv)
    r.out_field.set_path(d / "result.csv")
    results_apply(qtbot, r)
    result = pd.read_csv(d / "result.csv")
    assert list(result.columns[-5:]) == ["prediction"] + [f"prob_{c}" for c in CLASSES]
    assert kit.project_id in (d / "to-sites/summary.json").read_text()
    assert (result["prediction"] == result["label"]).mean() > 0.5  # 4 classes: chance is about 0.25


@pytest.mark.slow
def test_whole_round_on_text_columns_and_missing_cells_with_kit_defaults(qtbot, tmp_path, monkeypatch):
    """Issue #22: a clinical-like table (an id, sex F/M, a 3-level text column, a 0/1 column, free text, NA
    cells) goes through a whole round in the app with the kit's defaults: nothing typed by hand."""
    d = tmp_path
    sites = make_typed_sites(d / "data", sites=3, rows=160)
    shutil.copyfile(d / "data/sample.csv", d / "data/seed.csv")  # the lead's shareable seed rows
    (d / "usb").mkdir()
    aw = analyst_window.AnalystWindow()
    qtbot.addWidget(aw)
    aw.show()
    kit_path = analyst_makes_kit(qtbot, aw, d, monkeypatch)
    kit = Kit.load(kit_path)
    f = {c.name: c for c in kit.schema.features}
    assert (f["sex"].type, f["rx"].type, f["nodes"].type) == ("binary", "categorical", "numeric")  # 0/1, 120 rows
    assert (f["age"].missing, f["age"].indicator) == ("impute", True) and f["age"].mean is not None
    assert {c.name for c in kit.schema.ignored} == {"pid", "note"}

    others = list(sites)[1:]
    for name in others:
        ident = Identity.generate(name)
        ident.save(d / name / f"{name}.dcid", PASS, log_n=14)
        ident.card.save(d / name / f"{name}.dcpub")
    bundles = [site_exports(qtbot, d, name, kit_path, train, lead=(k == 0),
                            cards=[d / n / f"{n}.dcpub" for n in others])
               for k, (name, (train, _)) in enumerate(sites.items())]
    import_bundles(qtbot, aw, bundles)
    assert len(aw.bundles_page.rows_by_status("imported")) == 3
    assert aw.show_page("models")
    qtbot.mouseClick(aw.models_page.train_button, Qt.LeftButton)
    wait_job(qtbot, aw.models_page.job_panel.job)
    assert aw.models_page.last_outcome == "succeeded", aw.models_page.message.text()
    assert aw.show_page("export")
    aw.export_page.out_edit.setText(str(d / "to-sites"))
    qtbot.mouseClick(aw.export_page.export_button, Qt.LeftButton)
    wait_job(qtbot, aw.export_page.job_panel.job)
    assert len(list((d / "to-sites").glob("*.dcpkg"))) == 3

    # a site applies its package to held-out rows with text and NA cells, filled the way its export filled them
    name, (_, test_csv) = next(iter(sites.items()))
    r = ResultsWindow()
    qtbot.addWidget(r)
    r.show()
    results_unlock(qtbot, r, d / name / f"{name}.dcid", PASS)
    r.package_field.set_path(d / "to-sites" / f"{name}.dcpkg")
    r.csv_field.set_path(test_csv)
    r.out_field.set_path(d / "result.csv")
    results_apply(qtbot, r)
    result = pd.read_csv(d / "result.csv", keep_default_na=False)
    rows = pd.read_csv(test_csv, keep_default_na=False)
    assert len(result) == len(rows) and (rows[["age", "sex", "creat"]] == "NA").any().any()
    assert list(result.columns[-5:]) == ["prediction", "prob_no", "prob_yes", "risk_yes", "decision"]
    assert set(result["prediction"]) <= {"no", "yes"}
