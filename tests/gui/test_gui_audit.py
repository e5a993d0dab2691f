"""The desktop app appends to the audit log through core: a damaged log's refusal (one sentence naming
`dcstudio audit new`) reaches the user in the results window and in the analyst window, and nothing is written."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from core.formats.workspace import default_workspace  # noqa: E402
from gui.participant import ResultsWindow  # noqa: E402
from tests.gui.test_gui_participant import PASS, project, round_packages  # noqa: E402, F401 (fixtures)
from tests.support.gui import HANG, results_unlock, wait_job  # noqa: E402


def test_results_window_shows_the_refusal_of_a_deleted_log(qtbot, project, round_packages, tmp_path):  # noqa: F811
    d = project["dir"]
    log = default_workspace(d / "site1.dcid") / "audit.jsonl"
    kept = log.read_bytes()
    log.unlink()
    try:
        r = ResultsWindow()
        qtbot.addWidget(r)
        r.show()
        results_unlock(qtbot, r, d / "site1.dcid", PASS)
        r.package_field.set_path(round_packages / "site1.dcpkg")
        r.csv_field.set_path(project["sites"]["site1"][1])
        out = tmp_path / "results.csv"
        r.out_field.set_path(out)
        r.apply_button.click()
        wait_job(qtbot, r.job)
        assert r.outcome is None and r.message.kind == "error"
        assert "dcstudio audit new" in r.message.text() and "head file" in r.message.text()
        assert not out.exists() and not log.exists()
    finally:
        log.write_bytes(kept)


def test_analyst_window_shows_the_refusal_of_an_edited_log(qtbot, project, round_packages):  # noqa: F811
    from gui.analyst.window import AnalystWindow

    d = project["dir"]
    log = default_workspace(d / "analyst.dcid") / "audit.jsonl"
    kept = log.read_bytes()
    log.write_bytes(kept.replace(b'"event":"import"', b'"event":"imp0rt"', 1))
    try:
        aw = AnalystWindow(kit_path=str(project["kit_path"]))
        qtbot.addWidget(aw)
        aw.show()
        page = aw.project_page
        page.identity_path_edit.setText(str(d / "analyst.dcid"))
        page.open_passphrase.setText(PASS)
        page.unlock_button.click()
        qtbot.waitUntil(lambda: page.kit_message.kind == "error", timeout=HANG)
        assert "wrong signature" in page.kit_message.text() and "dcstudio audit new" in page.kit_message.text()
        assert aw.state.session is None
    finally:
        log.write_bytes(kept)
