"""The analyst window, driven the way a user would (pytest-qt, offscreen).

One small project is built with core once per module (4 sites in two opposite label-skew groups, plus a
tampered, a duplicate and a foreign bundle); every test works on its own copy of it.
"""

from __future__ import annotations

import html
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QFileDialog, QLabel, QWidget  # noqa: E402

from benchmarks.simulation.projects import build_project, fake_clustering_result  # noqa: E402
from core.data.missing import HELP as MISSING_HELP  # noqa: E402
from core.data.missing import WORDS as MISSING_WORDS  # noqa: E402
from core.errors import DCError  # noqa: E402
from core.formats.identity import Identity  # noqa: E402
from core.formats.kit import Kit  # noqa: E402
from gui.analyst.bundles import COL_CONFIRMED, COL_FILE, COL_LABELS, COL_STATUS  # noqa: E402
from gui.analyst.common import COUNTS_ROLE, NAMES_ROLE  # noqa: E402
from gui.analyst.models import NOTE_WIDTH  # noqa: E402
from gui.analyst.schema_grid import COL_LEVELS, COL_NAME, COL_TYPE, GREY  # noqa: E402
from gui.analyst.window import AnalystWindow  # noqa: E402
from gui.widgets import passphrase_strength, plain_tip  # noqa: E402
from tests.support.gui import (  # noqa: E402
    HANG,
    confirm_all,
    import_bundles,
    open_analyst_window,
    until,
    wait_job,
    wait_metrics,
)
from tests.support.typedkit import make_typed_sites  # noqa: E402

PASS = "correct horse battery staple"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("analyst-gui")
    return build_project(root / "p", n_sites=4, rows=150, epochs=4, groups=2,
                         names=["site0", "site1", "site2", "site3"], extras=True)




@pytest.fixture
def project(built, tmp_path):
    """A private copy of the built project (its workspace is written by the tests)."""
    dest = tmp_path / "copy"
    shutil.copytree(built.root, dest)

    def moved(p: Path) -> Path:
        return dest / p.relative_to(built.root)

    built_copy = type(built)(dest, moved(built.identity), built.passphrase, moved(built.kit), moved(built.sample),
                             [moved(b) for b in built.bundles], list(built.sites),
                             {k: moved(v) for k, v in built.extras.items()})
    return built_copy


def open_window(qtbot, project) -> AnalystWindow:
    return open_analyst_window(qtbot, project.kit, project.identity, project.passphrase)


def import_all(qtbot, w, project, extras=True, confirm=True):
    paths = list(project.bundles)
    if extras:
        paths += [project.extras[k] for k in ("tampered", "duplicate", "foreign")]
    import_bundles(qtbot, w, paths, confirm=confirm)


# ---- project ----------------------------------------------------------------------------------------------
def test_passphrase_strength_hint():
    assert passphrase_strength("")[0] == 0
    assert "short" in passphrase_strength("abc")[1]
    assert passphrase_strength("aaaaaaaa")[0] <= 1
    assert passphrase_strength("correct horse battery staple")[0] >= 3


def test_create_identity_and_kit_by_clicking(qtbot, tmp_path, project, monkeypatch):
    w = AnalystWindow()
    qtbot.addWidget(w)
    w.show()
    page = w.project_page
    assert not w.show_page("bundles")  # nothing open yet
    page.log_n = 14
    page.identity_tabs.setCurrentIndex(1)
    page.new_name.setText("Analyst A")
    page.new_folder.setText(str(tmp_path / "ids"))
    qtbot.keyClicks(page.new_pass1, "short")
    assert "short" in page.strength_label.text()
    page.new_pass1.setText(PASS)
    page.new_pass2.setText(PASS + "x")
    assert "differ" in page.strength_label.text()
    qtbot.mouseClick(page.create_identity_button, Qt.LeftButton)
    assert page.identity_message.kind == "error" and "differ" in page.identity_message.text()
    page.new_pass2.setText(PASS)
    with qtbot.waitSignal(page.identity_job_panel.finished, timeout=HANG):
        qtbot.mouseClick(page.create_identity_button, Qt.LeftButton)
    assert page.identity is not None, page.identity_message.text()
    dcid = tmp_path / "ids" / "Analyst A.dcid"
    assert dcid.exists() and dcid.with_suffix(".dcpub").exists()
    assert page.fingerprint_view.text.text() == page.identity.card.fingerprint
    assert page.fingerprint_view.isVisible()

    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path / "card.dcpub"), ""))
    qtbot.mouseClick(page.save_card_button, Qt.LeftButton)
    assert (tmp_path / "card.dcpub").exists()

    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(project.sample), ""))
    with qtbot.waitSignal(page.schema_job_panel.finished, timeout=HANG):
        qtbot.mouseClick(page.sample_browse_button, Qt.LeftButton)
    assert page.schema is not None
    assert page.label_combo.currentData() == "label"
    grid = page.schema_table
    assert grid.rowCount() == 9  # 8 features + the label
    assert [grid.type_combo(f"x{j}").currentData() for j in range(8)] == ["numeric"] * 8
    assert grid.item(grid.row_of("label"), COL_TYPE).text() == "label"
    assert grid.levels_item("label").text() == "a, b, c, d"
    assert " to " in grid.levels_item("x0").text()  # the sample's range shown
    assert "a, b, c, d" in page.classes_label.text()
    grid.type_combo("x7").setCurrentIndex(grid.type_combo("x7").findData("ignored"))  # leave x7 out
    wait_job(qtbot, page.schema_job)
    assert grid.note("x7") == "left out by the analyst"
    page.project_name.setText("Clicked project")
    assert page.method_combo.currentData() == "dccfl"
    form = page.settings_form
    form.set_value("t", 0.35)
    form.set_value("epochs", 7)
    form.set_value("alignment", "affine")
    page.ranges_check.setChecked(True)
    kit_path = tmp_path / "clicked.dckit"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(kit_path), ""))
    assert page.create_kit_button.isEnabled()
    qtbot.mouseClick(page.create_kit_button, Qt.LeftButton)
    kit = Kit.load(kit_path, expect_analyst=page.identity.card)
    assert kit.name == "Clicked project" and kit.method == "dccfl"
    assert kit.schema.feature_names == [f"x{j}" for j in range(7)]
    assert [(c.name, c.reason) for c in kit.schema.ignored] == [("x7", "left out by the analyst")]
    assert kit.schema.features[0].min is not None
    assert kit.settings["t"] == 0.35 and kit.settings["epochs"] == 7 and kit.settings["alignment"] == "affine"
    assert w.state.session is not None and w.state.session.kit.project_id == kit.project_id
    assert w.state.t_choice == 0.35
    assert w.show_page("bundles")
    # the form is generated from the method's declarations: a clustering kit offers the distance scaling,
    # and the form carries it into the kit's settings
    assert form.widget("scaling") is None and form.widget("t") is not None
    page.task_combo.setCurrentIndex(page.task_combo.findData("clustering"))
    assert page.method_combo.currentData() == "dcclustering" and form.widget("scaling") is not None
    assert form.widget("t") is None and not page.anchor_box.isHidden()
    assert page.method_settings()["scaling"] == "range"
    form.set_value("scaling", "raw")
    assert page.method_settings()["scaling"] == "raw"
    form.set_value("k_range", [2, 1])  # an advanced setting, checked against its declaration
    with pytest.raises(DCError, match="k_range"):
        page.method_settings()


def test_schema_grid_types_levels_and_missing_values(qtbot, tmp_path):
    """The analyst changes types, levels, missing values and 'other' in the grid; a wrong choice is one sentence
    in the message area; the kit is built from what the grid shows."""
    make_typed_sites(tmp_path, sites=1, rows=20)
    w = AnalystWindow()
    qtbot.addWidget(w)
    page, grid = w.project_page, w.project_page.schema_table
    page.identity = Identity.generate("Analyst")
    wait_job(qtbot, page.load_sample(str(tmp_path / "sample.csv")))
    assert page.label_combo.currentData() == "outcome"
    # what core detected: text and 0/1 columns typed, the identifier and free text left out (grey, with why)
    assert grid.type_combo("sex").currentData() == "binary" and grid.levels_item("sex").text() == "F, M"
    assert grid.type_combo("rx").currentData() == "categorical" and grid.levels_item("rx").text() == \
        "Lev, Lev+5FU, Obs"
    # the share the kit publishes (12 % of the sample: 6 cells, counted as a group of 10; the rest rounded to 50)
    assert grid.missing_combo("age").currentData() == "impute+indicator" and "age 17 %" in page.schema_notes.text()
    # the policy in core's one vocabulary: the words kit show and the model card use, core's explanation as the tip
    combo = grid.missing_combo("age")
    assert [(combo.itemData(i), combo.itemText(i)) for i in range(combo.count())] == list(MISSING_WORDS.items())
    assert combo.currentText() == "impute + indicator" and combo.toolTip() == MISSING_HELP
    assert grid.type_combo("pid").currentData() == "ignored" and grid.note("pid").startswith("identifier")
    assert grid.item(grid.row_of("pid"), COL_NAME).foreground().color() == GREY
    assert grid.missing_combo("pid") is None

    def edit(action) -> None:
        action()
        wait_job(qtbot, page.schema_job)

    def choose(combo, value) -> None:
        edit(lambda: combo.setCurrentIndex(combo.findData(value)))

    # wrong choices: one sentence from core, nothing built
    choose(grid.type_combo("rx"), "binary")
    assert page.schema_notes.kind == "error"
    assert page.schema_notes.text() == "feature 'rx' is binary but has 3 level(s); a binary column has exactly two"
    assert not page.create_kit_button.isEnabled()
    with pytest.raises(DCError, match="binary but has 3"):
        page.build_kit()
    choose(grid.type_combo("rx"), "ordinal")
    assert page.schema_notes.kind != "error" and page.create_kit_button.isEnabled()
    edit(lambda: grid.levels_item("rx").setText("Obs, Lev, Lev+5FU"))  # low to high
    assert grid.other_item("rx").checkState() == Qt.Checked  # unseen values: always to the bucket
    assert not grid.other_item("rx").flags() & Qt.ItemIsUserCheckable
    edit(lambda: grid.levels_item("sex").setText("M, M"))
    assert page.schema_notes.kind == "error"
    assert page.schema_notes.text() == "feature 'sex' lists level 'M' more than once"
    edit(lambda: grid.levels_item("sex").setText("M"))  # M the reference; the sample's F follows
    assert grid.levels_item("sex").text() == "M, F"
    choose(grid.missing_combo("creat"), "refuse")
    # a column left out, then brought back with another type
    choose(grid.type_combo("nodes"), "ignored")
    assert grid.note("nodes") == "left out by the analyst" and grid.missing_combo("nodes") is None
    choose(grid.type_combo("nodes"), "categorical")
    # merging levels: the cell edits core's text form and shows the merges as kit show does
    cell = grid.model().index(grid.row_of("rx"), COL_LEVELS)
    assert grid.model().data(cell, Qt.EditRole) == "Obs, Lev, Lev+5FU"
    edit(lambda: grid.model().setData(cell, "Obs, treated=", Qt.EditRole))  # as the cell's editor commits
    assert page.schema_notes.kind == "error" and page.schema_notes.text() == (
        "a merged level is NAME=value|value|…, e.g. treated=Lev|Lev+5FU; got 'treated='")
    assert grid.levels_item("rx").text() == "Obs, treated=" and not page.create_kit_button.isEnabled()
    edit(lambda: grid.levels_item("rx").setText("Obs, Lev, treated=Lev|Lev+5FU"))
    assert page.schema_notes.text() == ("feature 'rx' merges 'Lev' into level 'treated', but 'Lev' is a level of "
                                        "its own")
    edit(lambda: grid.model().setData(grid.model().index(grid.row_of("rx"), COL_LEVELS), "Obs, treated=Lev|Lev+5FU",
                                      Qt.EditRole))
    assert page.schema_notes.kind != "error"
    assert grid.levels_item("rx").text() == "Obs, treated (= Lev, Lev+5FU)"
    assert grid.levels_item("rx").data(Qt.EditRole) == "Obs, treated=Lev|Lev+5FU"
    assert "In the matrix: rx" in grid.item(grid.row_of("rx"), COL_NAME).toolTip()  # an ordinal: one column of ranks

    page.project_name.setText("Typed")
    kit = page.build_kit()
    f = {c.name: c for c in kit.schema.features}
    assert list(f) == ["age", "sex", "rx", "nodes", "creat"]
    assert f["sex"].type == "binary" and f["sex"].levels == ["M", "F"]
    assert f["rx"].type == "ordinal" and f["rx"].levels == ["Obs", "treated"] and not f["rx"].other
    assert f["rx"].merged == {"treated": ["Lev", "Lev+5FU"]}
    assert f["nodes"].type == "categorical" and f["nodes"].levels == ["0", "1"]
    assert (f["creat"].missing, f["creat"].indicator) == ("refuse", False)
    assert (f["age"].missing, f["age"].indicator) == ("impute", True)
    assert kit.schema.encoded_names == ["age", "age (missing)", "sex=F", "sex (missing)", "rx", "nodes=0", "nodes=1",
                                        "creat"]
    assert {c.name: c.reason.split(":")[0] for c in kit.schema.ignored} == {"pid": "identifier",
                                                                             "note": "identifier"}
    # a new sample forgets the choices
    wait_job(qtbot, page.load_sample(str(tmp_path / "sample.csv")))
    assert grid.type_combo("rx").currentData() == "categorical" and grid.type_combo("nodes").currentData() == "numeric"


def test_the_analyst_is_never_offered_a_sites_identity(qtbot, tmp_path):
    """Issue #27 point 7: the wizard's recent identities (the sites') and the analyst's are separate lists."""
    from gui import settings as app_settings

    site_id = tmp_path / "site.dcid"
    site_id.write_text("x")
    app_settings.remember("identities", str(site_id))
    w = AnalystWindow()
    qtbot.addWidget(w)
    assert w.project_page.identity_path_edit.text() == ""


def test_open_kit_with_wrong_passphrase_is_inline_error(qtbot, project):
    w = AnalystWindow(kit_path=str(project.kit))
    qtbot.addWidget(w)
    page = w.project_page
    assert page.kit is not None and "Unlock" in page.kit_message.text()
    page.identity_path_edit.setText(str(project.identity))
    page.open_passphrase.setText("wrong passphrase")
    wait_job(qtbot, page.unlock_identity())
    assert page.identity_message.kind == "error" and page.identity_message.text()
    assert "Traceback" not in page.identity_message.text()
    assert w.state.session is None


# ---- bundles ----------------------------------------------------------------------------------------------
def test_import_shows_refusals_with_reasons(qtbot, project):
    w = open_window(qtbot, project)
    bp = w.bundles_page
    import_all(qtbot, w, project, confirm=False)
    # nothing from an unconfirmed sender is opened: the files wait, training waits
    assert w.state.bundles == [] and len(bp.rows_by_status("unconfirmed")) == 6
    assert "not confirmed" in bp.summary_label.text()
    assert not w.models_page.train_button.isEnabled()
    assert len(bp.rows_by_status("refused")) == 1  # the foreign project's file is refused from its header
    confirm_all(qtbot, w)
    assert len(w.state.bundles) == 4 and not w.state.pending
    assert sorted(b.site for b in w.state.bundles) == ["site0", "site1", "site2", "site3"]
    # after the last sender's tick the message says where the project stands, not only that one import
    assert "4 bundle(s) imported in this project so far" in bp.message.text()
    ok, refused = bp.rows_by_status("imported"), bp.rows_by_status("refused")
    assert len(ok) == 4 and len(refused) == 2  # a copy of an imported bundle is "already imported", not refused
    reasons = {bp.table.item(r, COL_FILE).text().split(":")[0]: bp.table.item(r, COL_FILE).text() for r in refused}
    assert "signature" in reasons["tampered.dcbundle"]
    assert "project" in reasons["foreign.dcbundle"]
    for r in refused:
        assert "refused" in bp.table.item(r, COL_STATUS).text()
    counts = bp.table.item(ok[0], COL_LABELS).data(COUNTS_ROLE)
    assert len(counts) == 4 and sum(counts) == 150
    assert bp.table.item(ok[0], COL_LABELS).data(NAMES_ROLE) == list(w.state.classes)  # bars name their classes
    # a refusal's whole reason is shown: wrapped, never elided with "…"
    assert bp.table.wordWrap() and bp.table.textElideMode() == Qt.ElideNone
    tip = bp.table.item(refused[0], COL_FILE).toolTip()  # rich text, escaped: a reason quoting a file is never markup
    assert tip.startswith("<qt>") and html.unescape(tip.removeprefix("<qt>").removesuffix("</qt>")).endswith(
        bp.table.item(refused[0], COL_FILE).text().split(": ", 1)[1])
    assert "2 file(s) refused" in bp.summary_label.text()
    # confirming a fingerprint is an explicit action, remembered in the project's workspace
    assert all(bp.table.item(r, COL_CONFIRMED).checkState() == Qt.Checked for r in ok)
    assert {b.fingerprint for b in w.state.bundles} <= w.state.session.confirmed_fingerprints()
    assert "every fingerprint confirmed" in bp.summary_label.text()
    # the same folder dropped again: duplicates are fine, said neutrally, never "0 imported, 4 refused"
    import_bundles(qtbot, w, list(project.bundles), confirm=False)
    assert bp.message.kind == "info" and bp.message.text().startswith("4 already imported (nothing to do).")
    # a second window on the same project re-opens the imported bundles and remembers the ticks
    w2 = open_window(qtbot, project)
    until(qtbot, w2.state.bundles_changed, lambda: len(w2.state.bundles) == 4)
    rows = w2.bundles_page.rows_by_status("imported earlier")
    assert len(rows) == 4
    assert all(w2.bundles_page.table.item(r, COL_CONFIRMED).checkState() == Qt.Checked for r in rows)


# ---- clients ----------------------------------------------------------------------------------------------
def test_threshold_line_recuts_clusters(qtbot, project):
    w = open_window(qtbot, project)
    import_all(qtbot, w, project, extras=False)
    assert w.show_page("clients")
    cp = w.clients_page
    assert cp.clustering is not None and cp.clustering.distances.shape == (4, 4)
    assert cp.heatmap_image.image is not None
    line = cp.threshold_line
    seen = []
    line.sigPositionChanged.connect(lambda *_: seen.append(line.value()))
    line.setValue(0.95)  # what a drag does: sets the value and emits sigPositionChanged
    assert seen and cp.n_clusters == 1 and "1 group" in cp.clusters_label.text()
    line.setValue(0.5)
    assert cp.n_clusters == 2 and "2 groups" in cp.clusters_label.text()
    groups = sorted(tuple(int(i) for i in np.flatnonzero(cp.labels == k)) for k in range(2))
    assert groups == [(0, 2), (1, 3)]  # sites alternate between the two label skews
    line.setValue(0.0)
    assert cp.n_clusters == 4
    line.setValue(0.5)
    assert w.state.t_choice == 0.5 and not cp.auto_t_check.isChecked()
    assert abs(cp.t_spin.value() - 0.5) < 1e-9
    cp.t_spin.setValue(0.95)  # the spin box moves the line too
    assert abs(line.value() - 0.95) < 1e-9 and cp.n_clusters == 1
    cp.auto_t_check.setChecked(True)
    assert w.state.t_choice == "auto"
    assert "automatic" in w.models_page.t_label.text()


# ---- models and export -------------------------------------------------------------------------------------
def test_train_then_export_packages_report_and_pdf(qtbot, project, tmp_path, monkeypatch):
    w = open_window(qtbot, project)
    import_all(qtbot, w, project, extras=False)
    assert not w.show_page("export")
    w.clients_page.auto_t_check.setChecked(True)
    assert w.show_page("models")
    mp = w.models_page
    assert mp.run_form.widget("epochs").value() == 4
    # before training the plots say what will appear instead of showing blank axes
    assert mp.loss_note.shown and mp.accuracy_note.shown and "Train" in mp.loss_note.text()
    assert not mp.loss_plot.getPlotItem().getAxis("bottom").isVisible()
    assert mp.t_label.toolTip() and w.project_page.method_combo.toolTip()  # the analyst's terms are explained
    progress = []
    qtbot.mouseClick(mp.train_button, Qt.LeftButton)
    mp.job_panel.job.progress.connect(lambda f, text: progress.append((f, text)))
    wait_job(qtbot, mp.job_panel.job)
    assert mp.last_outcome == "succeeded", mp.message.text()
    wait_metrics(qtbot, w, 4)  # the page shows the result just after it arrives
    result = w.state.result
    assert result is not None
    t = mp.metrics_table
    assert t.rowCount() == 4
    headers = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    assert headers[:6] == ["Site", "Group", "Rows", "Model the site uses", "Expected accuracy",
                           "Own rows alone"]
    assert all(headers)  # every column has a header (issue #33 item 10)
    for r in range(4):  # every accuracy shown carries its row count and a 95 % interval
        text = t.item(r, 4).text()
        assert 0.0 <= float(text.split()[0]) <= 1.0 and "n = " in text and "95 % CI" in text
    assert {t.item(r, 0).text() for r in range(4)} == set(project.sites)
    if "Note" in headers:  # a site's reason (e.g. why it keeps its own model) has a header, is last and is whole
        c = headers.index("Note")
        assert c == len(headers) - 1
        notes = [t.item(r, c) for r in range(4) if t.item(r, c) is not None and t.item(r, c).text()]
        assert all(n.toolTip() == plain_tip(n.text()) for n in notes)
        assert t.columnWidth(c) >= NOTE_WIDTH and t.wordWrap()  # wrapped, whole
    # live loss curves: one per final model (cluster models, plus any site's own-rows model), one point per epoch
    assert len(mp.loss_curves) == result.summary["final_models"]
    if result.summary["final_models"]:
        xs, _ = next(iter(mp.loss_curves.values())).getData()
        assert list(xs) == [1, 2, 3, 4]
    else:  # every site keeps its own linear model (4 epochs are few): nothing is trained epoch by epoch
        assert all(x["model"] == "own" for x in result.summary["sites"])
    assert "mean expected accuracy" in mp.result_label.text()
    # issue #23: the run's per-site clinical figures are on the Results tab, shown first
    until(qtbot, mp.views.drawn, lambda: bool(mp.views.kinds) and mp.views.done)  # drawn a view per turn
    assert mp.result_tabs.currentWidget() is mp.views and "Heatmap" in mp.views.kinds
    assert any(isinstance(x, QWidget) and "What each site is sent" in x.findChild(QLabel).text()
               for x, k in zip(mp.views.widgets, mp.views.kinds, strict=True) if k == "Table")
    assert not mp.accuracy_note.shown and mp.loss_note.shown == (result.summary["final_models"] == 0)
    fractions = [f for f, _ in progress]
    assert fractions == sorted(fractions)  # one monotone bar
    assert any("training the final model" in text for _, text in progress)
    # the Clients page shows the automatic t and its validation curve (drawn when shown)
    assert w.show_page("clients")
    assert "Automatic t" in w.clients_page.auto_t_label.text()
    assert len(w.clients_page.validation_plot.getPlotItem().listDataItems()) == 1

    assert w.show_page("export")
    ep = w.export_page
    out = tmp_path / "out"
    ep.out_edit.setText(str(out))
    qtbot.mouseClick(ep.export_button, Qt.LeftButton)
    wait_job(qtbot, ep.job_panel.job)
    assert ep.outputs is not None, ep.message.text()
    for site in project.sites:
        assert (out / f"{site}.dcpkg").exists()
    assert (out / "report.html").read_text().startswith("<!doctype html>")
    assert (out / "summary.json").exists()
    texts = [ep.checklist.item(i).text() for i in range(ep.checklist.count())]
    assert sum("package for" in x for x in texts) == 4 and any("report.html" in x for x in texts)
    pdf = out / "report.pdf"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(pdf), ""))
    qtbot.mouseClick(ep.pdf_button, Qt.LeftButton)
    wait_job(qtbot, ep.job_panel.job)  # printed in a job, off the window's thread
    assert pdf.exists() and pdf.read_bytes()[:4] == b"%PDF" and pdf.stat().st_size > 2000
    assert any("report.pdf" in ep.checklist.item(i).text() for i in range(ep.checklist.count()))
    # a PC without a browser: "Open the report" says so and where the file is, instead of doing nothing
    from PySide6.QtGui import QDesktopServices

    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: False)
    qtbot.mouseClick(ep.open_report_button, Qt.LeftButton)
    assert ep.message.kind == "warning" and str(out / "report.html") in ep.message.text()


def test_cancel_training_keeps_nothing(qtbot, project, tmp_path):
    w = open_window(qtbot, project)
    import_all(qtbot, w, project, extras=False)
    w.clients_page.set_threshold(0.5)
    mp = w.models_page
    mp.run_form.set_value("epochs", 3000)
    job = mp.train()
    until(qtbot, mp.job_panel.bar.valueChanged, lambda: mp.job_panel.bar.value() > 0)  # training is under way
    assert job.running
    qtbot.mouseClick(mp.job_panel.cancel_button, Qt.LeftButton)
    wait_job(qtbot, job)
    assert mp.last_outcome == "cancelled"
    assert w.state.result is None
    assert "cancelled" in mp.message.text().lower()
    assert not mp.job_panel.isHidden() and "nothing" in mp.job_panel.status.text().lower()
    assert not w.show_page("export")
    ep = w.export_page
    assert not ep.export_button.isEnabled()
    ep.out_edit.setText(str(tmp_path / "never"))
    assert ep.export() is None
    assert not (tmp_path / "never").exists()
    assert mp.train_button.isEnabled()


# ---- data clustering ---------------------------------------------------------------------------------------
def test_data_clustering_page_draws_the_details_contract(qtbot):
    from gui.analyst.clustering import DataClusteringPage
    from gui.analyst.state import QtAnalystState

    page = DataClusteringPage(QtAnalystState())
    qtbot.addWidget(page)
    result = fake_clustering_result(n=300, k=3)
    page.show_result(result)
    assert page.has_result
    page.views.finish()  # (drawn a view per event-loop turn otherwise)
    kinds = page.views.kinds
    assert kinds.count("Scatter") == 1 and kinds.count("Curve") == 2 and "Bars" in kinds and "Table" in kinds
    scatter = page.views.widgets[kinds.index("Scatter")]
    dots = [i for i in scatter.getPlotItem().items if type(i).__name__ == "ScatterPlotItem"]
    assert len(dots[0].data) == 300  # every row drawn


# ---- stall probe ---------------------------------------------------------------------------------------------
def test_measure_stall_reports_gaps(qtbot):
    import threading

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gui.jobs import Job
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "tools"))
    from stall import measure_stall

    # the job ends once the event loop has run 20 turns of a second 5 ms timer (and 0.2 s have passed), so the
    # probe's own 5 ms timer has ticked more than 10 times however busy the machine (0.2 s alone did not promise it)
    turns, counted = threading.Event(), []
    counter = QTimer()
    counter.setInterval(5)
    counter.timeout.connect(lambda: (counted.append(1), len(counted) >= 20 and turns.set()))
    counter.start()
    job = Job(lambda control: (time.sleep(0.2), turns.wait(HANG / 1000)), "sleep")
    m = measure_stall(QApplication.instance(), job, interval_ms=5, tail_ms=50)
    counter.stop()
    assert turns.is_set() and len(counted) >= 20
    assert not m["timed_out"] and m["ticks"] > 10
    assert m["seconds"] >= 0.2 and m["longest_ms"] >= 4


def test_clustering_kit_round_through_the_window(qtbot, tmp_path):
    from benchmarks.simulation.projects import build_clustering_project
    from core.methods import METHODS

    if "dcclustering" not in METHODS:
        pytest.skip("no dcclustering method in core yet")
    project = build_clustering_project(tmp_path / "c", n_sites=3, rows=120, k=3)
    w = open_window(qtbot, project)
    assert w.nav.item(w.PAGE_KEYS.index("clients")).isHidden()
    assert not w.nav.item(w.PAGE_KEYS.index("clustering")).isHidden()
    assert not w.show_page("clustering")  # nothing to show yet
    wait_job(qtbot, w.bundles_page.import_paths([str(p) for p in project.bundles]))
    confirm_all(qtbot, w)
    assert len(w.state.bundles) == 3
    mp = w.models_page
    assert "Cluster" in mp.train_button.text()
    assert mp.loss_plot.isHidden() and mp.accuracy_plot.isHidden()  # no empty epoch/accuracy plots
    wait_job(qtbot, mp.train())
    assert mp.last_outcome == "succeeded", mp.message.text()
    wait_metrics(qtbot, w, 3)
    cp = w.clustering_page
    assert cp.has_result and w.show_page("clustering")
    until(qtbot, cp.views.drawn, lambda: cp.views.done)
    assert "Scatter" in cp.views.kinds and cp.views.kinds.count("Curve") == 2
    assert mp.metrics_table.rowCount() == 3
    out = tmp_path / "out"
    w.export_page.out_edit.setText(str(out))
    wait_job(qtbot, w.export_page.export())
    assert all((out / f"{s}.dcpkg").exists() for s in project.sites) and (out / "report.html").exists()


def test_many_qt_calls_do_not_exhaust_none(qtbot):
    """PySide6 6.12.0 on Python < 3.12 drops a reference to None per void Qt call (gui.analyst works
    around it); without the work-around this loop aborts the interpreter."""
    import sys

    from PySide6.QtWidgets import QLabel

    label = QLabel()
    qtbot.addWidget(label)
    before = sys.getrefcount(None)
    for _ in range(30_000):
        label.setText("x")
    assert sys.getrefcount(None) > 1000 or before > 1 << 39


def test_report_pdf_keeps_fingerprints_and_headers_on_one_line(qtbot):
    """Point 6: the report's heatmap names the sites and shows the values, and in the document the PDF is
    printed from (QTextDocument at A4 portrait width) no fingerprint or column header is broken over lines.
    (The PDF paints this very layout, scaled: see tests/gui/test_report_pages.py for the printed pages.)"""
    from PySide6.QtGui import QTextCursor

    from core.data.schema import FeatureColumn, Schema
    from core.formats.identity import Identity
    from core.formats.kit import Kit
    from core.methods import MethodResult, get_method
    from core.report import render_report
    from gui.analyst.export import report_document

    classes = [f"class {k}" for k in range(7)]
    names = ["Hôpital du Val-d'Oise", "Centre hospitalier universitaire de Nantes", "Klinikum Süd", "St Mary's"]
    fps = [Identity.generate(n).card.fingerprint for n in names]
    schema = Schema([FeatureColumn(f"x{j}") for j in range(4)], label="y", classes=classes)
    kit = Kit(name="PDF check", task="classification", schema=schema,
              method="dccfl", analyst=Identity.generate("A").card)
    sites = [{"site": n, "fingerprint": f, "rows": 4537, "cluster": 1 + i % 2, "holdout_accuracy": 0.8,
              "label_counts": [5, 4, 3, 2, 1, 9, 8]} for i, (n, f) in enumerate(zip(names, fps, strict=True))]
    summary = {"method": "dccfl", "t": 0.5, "n_clusters": 2, "sites": sites, "validation_curve": {"0.5": 0.8},
               "settings": {}, "inputs": [], "packages": []}
    M = np.array([[0, .3, .6, .2], [.3, 0, .5, .4], [.6, .5, 0, .1], [.2, .4, .1, 0]])
    html = render_report(kit, get_method("dccfl"), MethodResult("dccfl", [], summary, {"distances": M}), summary)
    assert "1 · Hôpital du Val-d'Oise" in html and ">0.60<" in html
    doc = report_document(html)
    for text in [*fps, "fingerprint"]:
        cursor = doc.find(text)
        assert not cursor.isNull(), text
        block = cursor.block()
        layout = block.layout()
        start = cursor.selectionStart() - block.position()
        end = cursor.selectionEnd() - block.position() - 1
        assert layout.lineForTextPosition(start).lineNumber() == layout.lineForTextPosition(end).lineNumber(), text
    assert QTextCursor  # (imported for the find() result type)


def test_models_page_warns_when_a_model_never_predicts_the_minority_class(qtbot):
    """Issue #23: a banner above the results, and the ROC / calibration views on the Results tab."""
    from core.analyst import AnalystRun
    from core.methods import MethodResult
    from core.methods.views import Curve
    from gui.analyst.models import ModelsPage
    from gui.analyst.state import QtAnalystState
    from tests.report.cards import dccfl_summary

    class Stub:  # the one thing the page asks a run's method: its views
        def views(self, result):
            return [Curve("ROC curves", [0, 0.5, 1], {"North": [0, 0.7, 1], "chance": [0, 0.5, 1]}),
                    Curve("Calibration", [0.1, 0.5], {"observed": [0.2, 0.4], "ideal": [0.1, 0.5]})]

    state = QtAnalystState()
    page = ModelsPage(state)
    qtbot.addWidget(page)
    summary = dccfl_summary(never_site="North")
    state.set_run(AnalystRun(Stub(), MethodResult("dccfl", [], summary), []))
    until(qtbot, page.views.drawn, lambda: page.views.kinds == ["Curve", "Curve"] and page.views.done)
    assert page.minority_warning.kind == "error" and "North" in page.minority_warning.text()
    assert page.result_tabs.currentWidget() is page.views and len(page.views.plots) == 2
    summary["sites"][0]["metrics"]["never_predicts_minority"] = False
    state.set_run(AnalystRun(Stub(), MethodResult("dccfl", [], summary), []))
    qtbot.waitUntil(lambda: page.minority_warning.kind == "", timeout=HANG)
