"""The participant's desktop side, driven like a user would: the export wizard page by page, Back, cancelling
an export, and the results window applying a package the analyst's core made."""

from __future__ import annotations

import hashlib
import html
import threading
from pathlib import Path

import pandas as pd
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWizard

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")


from core.analyst import AnalystRound  # noqa: E402
from core.data.schema import infer_schema  # noqa: E402
from core.data.tabular import read_table  # noqa: E402
from core.formats.anchor import AnchorFile, anchor_for_kit, make_anchor  # noqa: E402
from core.formats.identity import Identity  # noqa: E402
from core.formats.kit import Kit  # noqa: E402
from core.formats.workspace import AnalystWorkspace, SiteWorkspace, default_workspace  # noqa: E402
from core.participant import ParticipantRound  # noqa: E402
from gui import settings as app_settings  # noqa: E402
from gui.participant import ParticipantWizard, ResultsWindow  # noqa: E402
from gui.screen import fully_visible, reveal  # noqa: E402
from tests.support.gui import (  # noqa: E402
    HANG,
    accept_kit,
    accept_privacy_risk,
    import_anchor,
    read_csv,
    results_apply,
    results_unlock,
    until,
    wait_for_page,
    wait_job,
    wait_page,
    wizard_with_new_identity,
)
from tests.support.roundkit import FEATURES, make_sites  # noqa: E402
from tests.support.typedkit import make_typed_sites  # noqa: E402

PASS = "correct horse battery staple"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """An analyst identity, a signed kit (5 epochs), the site CSVs and two ready site identities."""
    d = tmp_path_factory.mktemp("gui-participant")
    sites = make_sites(d / "data", rows=90)
    analyst = Identity.generate("Analyst")
    analyst.save(d / "analyst.dcid", PASS, log_n=14)
    schema, _ = infer_schema(d / "data/sample.csv", label="label")
    kit = Kit(name="Skewed wards", task="classification", schema=schema, method="dccfl", analyst=analyst.card,
              settings={"epochs": 5, "seed": 3, "t": 0.5, "hidden": [16], "batch_size": 64},
              anchor={"kind": "smote", "rows": 300})
    kit.save(d / "p.dckit", analyst)
    idents = {}
    for name in ("site0", "site1"):
        ident = Identity.generate(name)
        ident.save(d / f"{name}.dcid", PASS, log_n=14)
        idents[name] = ident
    return {"dir": d, "sites": sites, "analyst": analyst, "kit": Kit.load(d / "p.dckit"), "kit_path": d / "p.dckit",
            "idents": idents}


@pytest.fixture(scope="module")
def round_packages(project):
    """Both sites export through core; the analyst runs the round; returns the packages folder."""
    d, kit = project["dir"], project["kit"]
    seed = read_table(d / "data/seed.csv", kit.schema, labels=False).X
    anchor = make_anchor(kit.project_id, kit.schema.feature_names, kind="smote", rows=300, seed_rows=seed)
    anchor.save(d / "round.dcanchor")
    bundles = []
    for name, ident in project["idents"].items():
        ws = SiteWorkspace(default_workspace(d / f"{name}.dcid"))
        job = ParticipantRound(kit, project["kit_path"], ident, ws, anchor=AnchorFile.load(d / "round.dcanchor"),
                               site_settings={"seed": 1})
        job.confirm_analyst(kit.analyst, how="test")
        job.accept_privacy_risk("test: a simulated site accepts its poor verdicts")
        job.load(project["sites"][name][0])
        bundles.append(job.seal(d / "bundles" / f"{name}.dcbundle").path)
    session = AnalystRound(kit, project["analyst"], AnalystWorkspace(d / "analyst.workspace"))
    for ident in project["idents"].values():
        session.confirm(ident.card)
    ids = [r.envelope_id for r in session.import_bundles(bundles)]
    received = session.received(ids)
    session.export(session.run(received), d / "out")
    return d / "out"


def write_bad_csvs(d: Path, good: Path) -> tuple[Path, Path]:
    """The same rows with text in a numeric cell (line 4, x3) and with an empty cell (line 6, x1)."""
    frame = pd.read_csv(good, dtype=str, keep_default_na=False)
    text = frame.copy()
    text.loc[2, "x3"] = "abc"
    text_path = d / "with-text.csv"
    text.to_csv(text_path, index=False)
    empty = frame.copy()
    empty.loc[4, "x1"] = ""
    empty_path = d / "with-empty.csv"
    empty.to_csv(empty_path, index=False)
    return text_path, empty_path


def drive_to_export(qtbot, w: ParticipantWizard, project, tmp_path: Path, *, create: bool) -> None:
    """Identity → kit → anchor → data → privacy → export, as a user would."""
    d = project["dir"]
    ip = w.identity_page
    if create:
        ip.log_n = 14
        ip.create_radio.setChecked(True)
        ip.name_edit.setText("St Mary's cardiology")
        ip.pass_edit.setText("short")
        assert ip.strength.kind == "error"
        ip.pass_edit.setText(PASS)
        ip.pass2_edit.setText(PASS + "x")
        assert ip.strength.kind == "error"  # the two differ
        ip.pass2_edit.setText(PASS)
        assert ip.strength.kind == "ok"
        ip.folder_field.set_path(tmp_path / "ids")
    else:
        ip.open_radio.setChecked(True)
        ip.identity_field.set_path(d / "site1.dcid")
        ip.open_pass_edit.setText("wrong passphrase")
        ip.unlock_button.click()
        wait_page(qtbot, ip, lambda: ip.message.kind == "error")
        assert "wrong passphrase" in ip.message.text()
        ip.open_pass_edit.setText(PASS)
    assert not ip.isComplete()
    (ip.create_button if create else ip.unlock_button).click()
    wait_page(qtbot, ip)
    assert ip.fingerprint_view.text.text() == w.identity.card.fingerprint
    assert not ip.fingerprint_view.qr.pixmap().isNull()
    assert ip.workspace_field.path() == str(default_workspace(w.identity_path))
    w.next()

    assert w.page_name() == "kit"
    kp = w.kit_page
    kp.kit_field.set_path(d / "nope.dckit")
    assert kp.message.kind == "error" and kp.kit is None
    kp.kit_field.set_path(project["kit_path"])
    assert kp.kit is not None and kp.kit.project_id == project["kit"].project_id
    expected = project["analyst"].card.fingerprint
    # ask first, compare after (issue #33 item 12): nothing on the page shows the fingerprint to be typed
    assert kp.analyst_view.isHidden() and kp.analyst_view.text.text() == "" and kp.analyst_view.qr.pixmap().isNull()
    assert expected not in kp.project_label.text() + kp.request_label.text() + kp.typed_label.text()
    assert "x0" in kp.request_label.text() and "label" in kp.request_label.text()
    assert not kp.isComplete()  # first use: the fingerprint the analyst read out must be typed
    other = Identity.generate("impostor").card.fingerprint
    kp.fingerprint_edit.setText(other)
    assert not kp.isComplete() and "not the key" in kp.typed_label.text()
    assert kp.analyst_view.isHidden() and expected not in kp.typed_label.text()  # a wrong guess reveals nothing
    kp.fingerprint_edit.setText("  " + expected.lower().replace("-", " ") + " ")
    assert kp.isComplete() and "matches" in kp.typed_label.text()
    assert not kp.analyst_view.isHidden() and kp.analyst_view.text.text() == expected  # compared, then shown
    w.back()  # Back and forth keeps every choice
    assert w.page_name() == "identity" and ip.isComplete()
    w.next()
    assert w.page_name() == "kit" and kp.isComplete()
    w.next()

    assert w.page_name() == "anchor"
    ap = w.anchor_page
    assert not ap.isComplete()
    assert "never reach the analyst" in ap.secret_note.text()
    if create:
        ap.lead_radio.setChecked(True)
        ap.seed_csv_radio.setChecked(True)
        ap.source_field.set_path(d / "data/seed.csv")
        ap.save_field.set_path(tmp_path / "lead.dcanchor")
        ap.create_button.click()
        wait_page(qtbot, ap)
        assert (tmp_path / "lead.dcanchor").exists()
        assert ap.anchor.kind == "smote" and ap.anchor.rows == 300
    else:
        ap.import_radio.setChecked(True)
        ap.anchor_field.set_path(tmp_path / "lead.dcanchor")
        assert ap.isComplete()
    w.next()
    assert w.page_name() == "data"


def test_wizard_round_trip(qtbot, project, tmp_path):
    w = ParticipantWizard()
    qtbot.addWidget(w)
    w.show()
    drive_to_export(qtbot, w, project, tmp_path, create=True)
    dp = w.data_page
    good = project["sites"]["site0"][0]
    text_csv, empty_csv = write_bad_csvs(tmp_path, good)

    # text in a numeric cell: the core's sentence, and the cell highlighted in the preview
    dp.set_csv(text_csv)
    wait_page(qtbot, dp, lambda: dp.message.kind == "error")
    assert "line 4" in dp.message.text() and "'x3'" in dp.message.text() and "abc" in dp.message.text()
    assert dp.preview_model.highlight == (2, list(dp.frame.columns).index("x3"))
    assert dp.preview_model.headerData(2, 2) == "4"  # rows are labelled with their line numbers
    assert dp.format_label.text().startswith("Read as: UTF-8")
    assert not dp.isComplete()

    # a bad cell beyond the first rows is fetched and shown below them, at its line
    far = pd.read_csv(good, dtype=str, keep_default_na=False)
    far.loc[60, "x5"] = "oops"
    far.to_csv(tmp_path / "far.csv", index=False)
    dp.set_csv(tmp_path / "far.csv")
    until(qtbot, dp.preview_model.modelReset, lambda: dp.preview_model.rowCount() == 52)
    assert "line 62" in dp.message.text()
    assert dp.preview_model.highlight == (51, list(dp.frame.columns).index("x5"))
    assert dp.preview_model.headerData(51, 2) == "62"

    # an empty cell: the kit (made with today's defaults) has each site fill it with its own median
    dp.set_csv(empty_csv)
    wait_page(qtbot, dp)
    assert "1 missing cells were filled with this site's own values (x1 1)" in dp.message.text()
    roles = {dp.columns_table.item(r, 0).text(): dp.columns_table.item(r, 1).text()
             for r in range(dp.columns_table.rowCount())}
    assert roles["label"] == "label" and all(roles[f] == "feature" for f in FEATURES)

    # and a clean file
    dp.set_csv(good)
    wait_page(qtbot, dp)
    assert dp.table.n_rows == len(pd.read_csv(good))
    w.next()

    assert w.page_name() == "privacy"
    pp = w.privacy_page
    wait_page(qtbot, pp)
    assert pp.site_form.widget("reduction").value() == "pca"
    assert pp.site_form.widget("dimension").value() is None  # automatic: m − 1
    assert pp.site_form.widget("dimension").control.maximum() == len(FEATURES)
    # plain words first, technical terms one click away
    assert pp.plain_label.text().startswith("A compressed copy of your")
    assert "x_tilde" not in pp.plain_label.text() + pp.leaves_label.text() + pp.stays_label.text()
    assert pp.details_hidden() and not pp.disclosure_table.isVisible()
    pp.details_button.click()
    assert not pp.details_hidden() and pp.disclosure_table.isVisible()
    shapes = {pp.disclosure_table.item(r, 0).text(): pp.disclosure_table.item(r, 1).text()
              for r in range(pp.disclosure_table.rowCount())}
    n = dp.table.n_rows
    assert {"x_tilde", "anchor_tilde", "y"} <= set(shapes)
    m = len(FEATURES)  # m ≤ 15 columns: the reduction keeps every dimension
    assert shapes["x_tilde"] == f"{n} × {m}" and shapes["anchor_tilde"] == f"300 × {m}" and "own_cv" in shapes
    assert "Labels leave: <b>Yes</b>" in pp.leaves_label.text() and "Row ids leave: No." in pp.leaves_label.text()
    assert "KB" in pp.leaves_label.text()
    assert "anchor file" in pp.stays_label.text() and "the map that compressed your rows (no secret" in \
        pp.stays_label.text()

    # a setting change recomputes; Back and Next keep what was computed
    pp.site_form.set_value("dimension", 5)
    assert not pp.isComplete()
    wait_page(qtbot, pp, lambda: pp.isComplete() and pp.site_export.arrays["x_tilde"].shape[1] == 5)
    computed = pp.site_export
    w.back()
    assert w.page_name() == "data" and dp.isComplete()
    w.next()
    assert w.page_name() == "privacy" and pp.isComplete() and pp.site_export is computed
    accept_privacy_risk(w)  # the colluding site's check is poor (issue #35): the site accepts it, ticked
    w.next()

    assert w.page_name() == "export"
    ep = w.export_page
    assert ep.name_edit.text() == "St Mary's cardiology-Skewed wards.dcbundle"
    usb = tmp_path / "usb"
    usb.mkdir()
    ep.folder_field.set_path(usb)
    assert not ep.isComplete()
    ep.export_button.click()
    wait_for_page(qtbot, w, "done")
    bundle = usb / ep.name_edit.text()
    assert bundle.exists() and ep.sealed.path == bundle
    done = w.done_page
    assert done.digest_edit.text() == hashlib.sha256(bundle.read_bytes()).hexdigest()
    assert html.escape(bundle.name, quote=False) in done.file_label.text() and "workspace" in done.next_label.text()

    # the analyst's core imports it
    session = AnalystRound(project["kit"], project["analyst"], AnalystWorkspace(tmp_path / "analyst.ws"))
    report = session.try_import(bundle)
    assert report.status == "unconfirmed" and report.rows == 0  # not opened until the analyst confirms the site
    session.confirm(report.card)
    report = session.try_import(bundle)
    assert report.status == "imported", report.reason
    assert report.site == "St Mary's cardiology" and report.rows == n

    # Back from the last page works, and warns that a second export makes a second bundle
    w.back()
    assert w.page_name() == "export" and ep.message.kind == "info"
    # recent files were remembered
    assert str(project["kit_path"].resolve()) in app_settings.recent("projects")
    assert str(good.resolve()) in app_settings.recent("csv")


def test_cancelled_export_leaves_no_file(qtbot, project, tmp_path, monkeypatch):
    # a lead anchor file, as the other sites receive it
    d, kit = project["dir"], project["kit"]
    seed = read_table(d / "data/seed.csv", kit.schema, labels=False).X
    make_anchor(kit.project_id, kit.schema.feature_names, kind="smote", rows=300, seed_rows=seed).save(
        tmp_path / "lead.dcanchor")
    w = ParticipantWizard(kit_path=str(project["kit_path"]))
    qtbot.addWidget(w)
    w.show()
    drive_to_export(qtbot, w, project, tmp_path, create=False)
    w.data_page.set_csv(project["sites"]["site1"][0])
    wait_page(qtbot, w.data_page)
    w.next()
    wait_page(qtbot, w.privacy_page)
    accept_privacy_risk(w)
    w.next()
    ep = w.export_page
    ep.folder_field.set_path(tmp_path)
    target = ep.target()

    exporter, gate = w.exporter, threading.Event()
    real_seal = exporter.seal

    def held_seal(path, *, replace=False, control=None):  # hold the job until the user has pressed Cancel
        gate.wait(5)
        return real_seal(path, replace=replace, control=control)

    monkeypatch.setattr(exporter, "seal", held_seal)
    ep.export_button.click()
    assert ep.busy
    ep.jobs.cancel_button.click()
    gate.set()
    wait_job(qtbot, ep.job)
    assert "Cancelled" in ep.jobs.status.text() and ep.export_button.isEnabled()
    assert ep.jobs.isVisible()
    assert not target.exists() and not list(tmp_path.glob(f".{target.name}*"))
    assert w.page_name() == "export" and not ep.isComplete()

    # exporting again afterwards works
    monkeypatch.setattr(exporter, "seal", real_seal)
    ep.export_button.click()
    wait_for_page(qtbot, w, "done")
    wait_job(qtbot, ep.job)  # its end (which enables the button again) is delivered after the page turned
    assert target.exists()

    # replacing that bundle asks first (the CLI needs --force): "No" keeps the file as it is (issue #27 point 7)
    from PySide6.QtWidgets import QMessageBox

    before = target.read_bytes()
    w.back()
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or QMessageBox.No)
    ep.export_button.click()
    assert len(asked) == 1 and target.name in asked[0] and not ep.busy and target.read_bytes() == before


def test_results_window_applies_a_package(qtbot, project, round_packages, tmp_path):
    d = project["dir"]
    r = ResultsWindow()
    qtbot.addWidget(r)
    r.show()
    assert not r.apply_button.isEnabled()
    results_unlock(qtbot, r, d / "site0.dcid", "not it")
    assert r.message.kind == "error" and r.unlock_button.isEnabled()
    results_unlock(qtbot, r, d / "site0.dcid", PASS)
    assert r.identity is not None and not r.busy
    assert r.workspace_field.path() == str(default_workspace(d / "site0.dcid"))
    r.package_field.set_path(round_packages / "site0.dcpkg")
    assert "Analyst" in r.package_label.text() and "Skewed wards" in r.package_label.text()
    assert "another site" not in r.package_label.text()
    test_csv = project["sites"]["site0"][1]
    r.csv_field.set_path(test_csv)
    assert r.out_field.path() == str(test_csv.with_name(f"{test_csv.stem}-results.csv"))
    out = tmp_path / "results.csv"
    r.out_field.set_path(out)
    assert r.apply_button.isEnabled()
    assert r.plot_note.shown and "bar chart" in r.plot_note.text()  # not blank axes before apply
    results_apply(qtbot, r)
    written = pd.read_csv(out)
    rows = len(pd.read_csv(test_csv))
    assert "prediction" in written.columns and len(written) == rows
    assert set(written["prediction"]) <= set(project["kit"].schema.classes)
    assert r.results_model.rowCount() == rows and "prediction" in list(r.results_model.frame.columns)
    heights = r.bars.opts["height"]
    assert sum(heights) == rows
    assert not r.plot_note.shown
    copy = r.save_copy(tmp_path / "copy.csv")
    assert copy.read_bytes() == out.read_bytes()
    # no check asked for: nothing but which model the site uses, chosen on its own rows, and why (issue #37)
    kept = r.outcome["result"].kept_own
    choice = r.outcome["result"].choice
    assert choice["by"] == "site" and "cross-validated on your" in r.validation_label.text()
    assert ("you keep your own model" in r.validation_label.text()) == kept

    # the site checks before it trusts: the labelled rows score the package beside its own-rows model
    r.validate_check.setChecked(True)
    r.outcome = None
    results_apply(qtbot, r)
    v, text = r.outcome["result"].validation, r.validation_label.text()
    if kept:  # the package is the site's own model: shown once, never compared with itself (issue #27 point 6)
        assert v["rows"] == rows and v["local"] is None and v["own_model_package"]
        assert "your own model" in text and text.count("95 % CI") == 1 and "Recommended" not in text
        assert "local_prediction" not in pd.read_csv(out).columns
    else:
        assert v["rows"] == rows and v["local"] is not None and "Recommended" in text
        assert text.count("95 % CI") >= 2 and f"n = {rows}" in text
        assert {"local_prediction", "recommended"} <= set(pd.read_csv(out).columns)

    # a package addressed to another site is refused before anything is applied: Apply off, the reason said
    # (issue #27 point 6), and an old error goes when the right package is chosen again
    r.message.show_message("error", "a stale error from before")
    r.package_field.set_path(round_packages / "site1.dcpkg")
    assert "another site" in r.package_label.text() and "choose the package" in r.package_label.text()
    assert not r.apply_button.isEnabled() and "another site" in r.apply_button.toolTip()
    assert r.message.kind != "error"
    r.package_field.set_path(round_packages / "site0.dcpkg")
    assert r.apply_button.isEnabled() and r.apply_button.toolTip() == ""
    # a workspace that never exported to this project: refused early too
    r.workspace_field.set_path(str(tmp_path / "another.workspace"))
    assert not r.apply_button.isEnabled() and "never exported" in r.package_label.text()


def test_continue_shows_a_window_at_once(qtbot, monkeypatch):
    """Point 9: Continue shows an "Opening…" window straight away; the real window follows when loaded."""
    import sys

    from gui.app import HEAVY_MODULES, OpeningWindow, StartWindow

    start = StartWindow()
    qtbot.addWidget(start)
    start.show()
    start.remember.setChecked(False)
    start.participant.setChecked(True)
    # as on a fresh start, something is still to be loaded (a small module no one has imported yet)
    monkeypatch.setitem(HEAVY_MODULES, "participant", (*HEAVY_MODULES["participant"], "tabnanny"))
    sys.modules.pop("tabnanny", None)
    first = start.open_role(defer=True)
    assert isinstance(first, OpeningWindow) and first.isVisible() and not start.open_button.isEnabled()
    # the announcing signal (the loader's ``loaded``) is emitted on a background thread and may come before
    # anyone but the window listens, so here the condition itself is polled, with the hang guard only
    qtbot.waitUntil(lambda: isinstance(start.child, ParticipantWizard), timeout=HANG)
    qtbot.addWidget(start.child)
    assert start.child.isVisible() and not first.isVisible() and start.open_button.isEnabled()


def test_a_wizard_closed_before_any_export_leaves_no_empty_workspace(qtbot, project, round_packages, tmp_path):
    """Reading and reducing the CSV write nothing: the workspace folder appears only when the bundle is sealed,
    so a site that closes the wizard before exporting leaves no trace (the CLI's failed first export neither)."""
    w = wizard_with_new_identity(qtbot, "Leaving early", tmp_path / "ids", PASS)
    root = w.workspace()
    job = ParticipantRound(project["kit"], project["kit_path"], w.identity, root,
                           anchor=AnchorFile.load(project["dir"] / "round.dcanchor"))
    job.confirm_analyst(project["kit"].analyst, how="test")
    job.accept_privacy_risk("test: a simulated site accepts its poor verdicts")
    job.load(project["sites"]["site0"][0])
    job.compute()
    assert not root.exists()
    w.reject()
    assert not root.exists()


# ---- a kit with typed columns and published statistics: the units check --------------------------------------
@pytest.fixture(scope="module")
def typed_project(tmp_path_factory):
    """A kit made from a clinical-like sample with today's defaults (types, imputation, published statistics),
    its anchor (plain, as the lead's file reads), and site CSVs."""
    d = tmp_path_factory.mktemp("gui-typed")
    sites = make_typed_sites(d / "data", sites=1, rows=120)
    analyst = Identity.generate("Analyst")
    schema, _ = infer_schema(d / "data/sample.csv", label="outcome", with_statistics=True)
    kit = Kit(name="Clinical", task="classification", schema=schema, method="dccfl", analyst=analyst.card,
              settings={"epochs": 3, "seed": 3, "t": 0.5, "hidden": [8]}, anchor={"kind": "smote", "rows": 200})
    kit.save(d / "c.dckit", analyst)
    seed = read_table(d / "data/sample.csv", schema, labels=False).X
    anchor_for_kit(kit, seed_X=seed).save(d / "c.dcanchor")
    train = sites["site0"][0]
    frame = pd.read_csv(train, dtype=str, keep_default_na=False)
    frame["age"] = [f"{float(v) * 2.54:.1f}" if v != "NA" else v for v in frame["age"]]  # ages in another unit
    frame.to_csv(d / "inches.csv", index=False)
    return {"dir": d, "kit_path": d / "c.dckit", "anchor": d / "c.dcanchor", "train": train,
            "scaled": d / "inches.csv"}


def test_a_column_in_another_unit_is_named_and_blocks_export_until_checked(qtbot, typed_project, tmp_path):
    p = typed_project
    w = wizard_with_new_identity(qtbot, "Site A", tmp_path / "ids")
    accept_kit(w, p["kit_path"])
    import_anchor(qtbot, w, p["anchor"])
    w.next()
    dp = w.data_page
    # this site's own rows, text columns and missing cells and all: nothing to check
    read_csv(qtbot, w, p["train"])
    assert dp.units_box.isHidden() and not dp.exporter.unit_warnings
    # every age ×2.54: named, in plain words, and Next waits for the tick
    dp.set_csv(p["scaled"])
    wait_page(qtbot, dp, lambda: dp.table is not None)
    assert not dp.units_box.isHidden() and not dp.units_check.isChecked()
    text = dp.units_label.text()
    assert "1 column(s) of your file do not look like the project's sample" in text
    assert "Column 'age' does not look like the kit's" in text and "another unit" in text
    assert not dp.isComplete() and not w.button(QWizard.NextButton).isEnabled()
    reveal(dp.units_check)  # the page scrolls to it on a small screen, as a person would
    reveal(dp.units_label)
    assert fully_visible(dp.units_label) and fully_visible(dp.units_check)
    age_row = [dp.columns_table.item(r, 0).text() for r in range(dp.columns_table.rowCount())].index("age")
    assert dp.columns_table.item(age_row, 0).background().color() == QColor("#fef3c7")
    dp.units_check.setChecked(True)
    assert dp.exporter.units_checked and dp.isComplete() and w.button(QWizard.NextButton).isEnabled()
    w.next()
    pp = w.privacy_page
    wait_page(qtbot, pp)
    # the privacy page says in words which counts and scores leave
    leaves = pp.leaves_label.text()
    own = [r for r in range(pp.disclosure_table.rowCount()) if pp.disclosure_table.item(r, 0).text() == "own_cv"]
    assert len(own) == 1 and "cross-validated" in pp.disclosure_table.item(own[0], 3).toolTip()
    assert "Missing cells filled with your own values (only these counts leave): age " in leaves
    assert "Scores of a model of your own rows leave: accuracy " in leaves and "the model stays" in leaves
    accept_privacy_risk(w)
    w.next()
    ep = w.export_page
    ep.folder_field.set_path(tmp_path)
    ep.name_edit.setText("a.dcbundle")
    assert ep.export_button.isEnabled()
    dp.units_check.setChecked(False)  # unticked behind the export page's back: sealing would refuse
    ep.name_edit.setText("b.dcbundle")
    assert not ep.export_button.isEnabled() and "check the columns" in ep.target_label.text()
    dp.units_check.setChecked(True)
    ep.name_edit.setText("a.dcbundle")
    ep.export_button.click()
    wait_for_page(qtbot, w, "done")
    assert (tmp_path / "a.dcbundle").exists()


def test_an_empty_recent_projects_box_says_what_will_appear(qtbot):
    """Issue #27 point 7: the start window's empty "Recent projects" box carries a hint, which cannot be opened."""
    from gui.app import StartWindow

    start = StartWindow()
    qtbot.addWidget(start)
    assert start.recent.count() == 1
    hint = start.recent.item(0)
    assert "No project yet" in hint.text() and not hint.flags() & Qt.ItemIsEnabled
