"""Both roles through a whole round, by clicking: the analyst makes its identity and the kit in its window;
four sites each make an identity in the wizard, open the kit, the lead creates the anchor and the others
import it, each loads its CSV and exports; the analyst imports the bundles, moves the threshold line (the
cluster count changes), trains and exports packages; a site applies its package in the results window."""

from __future__ import annotations

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
from gui.participant import ParticipantWizard, ResultsWindow  # noqa: E402
from tests.roundkit import CLASSES, make_sites  # noqa: E402

PASS = "correct horse battery staple"
WAIT = 30_000




def wait_job(qtbot, job, timeout=WAIT):
    qtbot.waitUntil(lambda: not job.running, timeout=timeout)
    qtbot.wait(20)


def analyst_makes_kit(qtbot, w, d: Path, monkeypatch) -> Path:
    page = w.project_page
    page.log_n = 14
    page.identity_tabs.setCurrentIndex(1)
    page.new_name.setText("Analyst")
    page.new_folder.setText(str(d / "analyst"))
    page.new_pass1.setText(PASS)
    page.new_pass2.setText(PASS)
    qtbot.mouseClick(page.create_identity_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: page.identity is not None, timeout=WAIT)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(d / "data/sample.csv"), ""))
    qtbot.mouseClick(page.sample_browse_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: page.schema is not None, timeout=WAIT)
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
    w = ParticipantWizard()
    qtbot.addWidget(w)
    w.show()
    ip = w.identity_page
    ip.log_n = 14
    if lead:
        ip.create_radio.setChecked(True)
        ip.name_edit.setText(name)
        ip.pass_edit.setText(PASS)
        ip.pass2_edit.setText(PASS)
        ip.folder_field.set_path(d / name)
        ip.create_button.click()
    else:
        ip.open_radio.setChecked(True)
        ip.identity_field.set_path(d / name / f"{name}.dcid")
        ip.open_pass_edit.setText(PASS)
        ip.unlock_button.click()
    qtbot.waitUntil(ip.isComplete, timeout=WAIT)
    w.next()
    kp = w.kit_page
    kp.kit_field.set_path(kit_path)
    kp.confirm_check.setChecked(True)
    w.next()
    ap = w.anchor_page
    if lead:
        ap.lead_radio.setChecked(True)
        ap.seed_csv_radio.setChecked(True)
        ap.source_field.set_path(d / "data/seed.csv")
        ap.add_cards(list(cards))
        ap.save_field.set_path(d / "lead.dcanchor")
        ap.create_button.click()
        qtbot.waitUntil(ap.isComplete, timeout=WAIT)
    else:
        ap.import_radio.setChecked(True)
        ap.anchor_field.set_path(d / "lead.dcanchor")
    assert ap.isComplete()
    w.next()
    w.data_page.set_csv(csv)
    qtbot.waitUntil(w.data_page.isComplete, timeout=WAIT)
    w.next()
    qtbot.waitUntil(w.privacy_page.isComplete, timeout=WAIT)
    w.next()
    ep = w.export_page
    ep.folder_field.set_path(d / "usb")
    ep.name_edit.setText(f"{name}.dcbundle")
    ep.export_button.click()
    qtbot.waitUntil(lambda: w.page_name() == "done", timeout=WAIT)
    return ep.sealed.path


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
    wait_job(qtbot, aw.bundles_page.import_paths([str(b) for b in bundles]))
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
    wait_job(qtbot, mp.job_panel.job, timeout=120_000)
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
    r.identity_field.set_path(d / name / f"{name}.dcid")
    r.passphrase_edit.setText(PASS)
    r.unlock_button.click()
    qtbot.waitUntil(lambda: r.identity is not None and not r.busy, timeout=WAIT)
    r.package_field.set_path(d / "to-sites" / f"{name}.dcpkg")
    r.csv_field.set_path(test_csv)
    r.out_field.set_path(d / "result.csv")
    r.apply_button.click()
    qtbot.waitUntil(lambda: r.outcome is not None or r.message.kind == "error", timeout=WAIT)
    assert r.outcome is not None, r.message.text()
    result = pd.read_csv(d / "result.csv")
    assert list(result.columns[-5:]) == ["prediction"] + [f"prob_{c}" for c in CLASSES]
    assert kit.project_id in (d / "to-sites/summary.json").read_text()
    assert (result["prediction"] == result["label"]).mean() > 0.5  # 4 classes: chance is about 0.25
