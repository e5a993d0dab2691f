"""The desktop app appends to the audit log through core: a damaged log's refusal reaches the user in the results
window and in the analyst window, nothing is written, and the window offers "Start a new audit log…" with the
identity it holds (no terminal command to type), after which the work goes on."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from core.formats.workspace import default_workspace  # noqa: E402
from gui.participant import ResultsWindow  # noqa: E402
from tests.gui.test_gui_participant import PASS, project, round_packages  # noqa: E402, F401 (fixtures)
from tests.support.gui import HANG, results_unlock, wait_job  # noqa: E402


def _refused_on_unlock(qtbot, project):  # noqa: F811 (the fixture, passed on)
    """The analyst window, its identity unlocked against an audit log that no longer verifies: (window, its
    Project page showing the refusal)."""
    from gui.analyst.window import AnalystWindow

    aw = AnalystWindow(kit_path=str(project["kit_path"]))
    qtbot.addWidget(aw)
    aw.show()
    page = aw.project_page
    page.identity_path_edit.setText(str(project["dir"] / "analyst.dcid"))
    page.open_passphrase.setText(PASS)
    page.unlock_button.click()
    qtbot.waitUntil(lambda: page.kit_message.kind == "error", timeout=HANG)
    return aw, page

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
        assert "start a new audit log" in r.message.text() and "head file" in r.message.text()
        assert r.audit_restart_button.isVisible()
        assert not out.exists() and not log.exists()
    finally:
        log.write_bytes(kept)


def test_analyst_window_shows_the_refusal_of_an_edited_log(qtbot, project, round_packages):  # noqa: F811

    d = project["dir"]
    log = default_workspace(d / "analyst.dcid") / "audit.jsonl"
    kept = log.read_bytes()
    log.write_bytes(kept.replace(b'"event":"import"', b'"event":"imp0rt"', 1))
    try:
        aw, page = _refused_on_unlock(qtbot, project)
        assert "wrong signature" in page.kit_message.text() and "start a new audit log" in page.kit_message.text()
        assert aw.state.session is None and page.audit_restart_button.isVisible()
    finally:
        log.write_bytes(kept)


# ---- the way on from a refused log (issue #33 item 9, issue #32) ----------------------------------------------

def _restart_through_the_button(qtbot, button, reason: str) -> None:
    """Click "Start a new audit log…", type the reason in its dialog, accept, and wait for the new log."""
    assert button.isVisible() and button.text().startswith("Start a new audit log")
    button.click()
    dialog = button.dialog
    assert dialog is not None and dialog.isVisible()
    ok = dialog.ok_button
    assert not ok.isEnabled()  # a reason is required
    dialog.reason_edit.setText(reason)
    assert ok.isEnabled()
    with qtbot.waitSignal(button.restarted, timeout=HANG):
        ok.click()


def test_results_window_offers_a_new_log_with_its_identity_and_then_applies(  # noqa: F811
        qtbot, project, round_packages, tmp_path):  # noqa: F811
    """A deleted site log: the window says what is wrong without a terminal command or "YOUR.dcid", offers "Start a
    new audit log…" with the unlocked identity filled in, asks why, starts the log (nothing exported removed), and
    the package then applies."""
    from core.formats.audit import AuditLog

    d = project["dir"]
    ws = default_workspace(d / "site1.dcid")
    log, head = ws / "audit.jsonl", ws / "audit.head"
    kept = log.read_bytes(), head.read_bytes()
    exports = sorted(p.name for p in ws.glob("projects/*/exports/*"))
    log.unlink()
    try:
        r = ResultsWindow()
        qtbot.addWidget(r)
        r.show()
        results_unlock(qtbot, r, d / "site1.dcid", PASS)
        assert not r.audit_restart_button.isVisible()
        r.package_field.set_path(round_packages / "site1.dcpkg")
        r.csv_field.set_path(project["sites"]["site1"][1])
        out = tmp_path / "results.csv"
        r.out_field.set_path(out)
        r.apply_button.click()
        wait_job(qtbot, r.job)
        text = r.message.text()
        assert r.outcome is None and r.message.kind == "error" and "head file" in text
        assert "YOUR.dcid" not in text and "no export is removed" in text and "kept beside" not in text
        assert r.audit_restart_button.identity is r.identity and r.audit_restart_button.workspace == ws
        _restart_through_the_button(qtbot, r.audit_restart_button, "log deleted (GUI test)")
        assert not r.audit_restart_button.isVisible() and r.message.kind == "ok"
        start = AuditLog(log).entries()[0]
        assert start["reason"] == "log deleted (GUI test)" and start["owner"]["name"] == "site1"
        assert "no old log" in r.message.text()
        assert sorted(p.name for p in ws.glob("projects/*/exports/*")) == exports
        r.apply_button.click()
        wait_job(qtbot, r.job)
        assert r.outcome is not None and out.exists()
    finally:
        log.write_bytes(kept[0])
        head.write_bytes(kept[1])


def test_analyst_window_offers_a_new_log_and_opens_the_project(qtbot, project, round_packages):  # noqa: F811

    d = project["dir"]
    ws = default_workspace(d / "analyst.dcid")
    log, head = ws / "audit.jsonl", ws / "audit.head"
    kept = log.read_bytes(), head.read_bytes()
    log.write_bytes(kept[0].replace(b'"event":"import"', b'"event":"imp0rt"', 1))
    try:
        aw, page = _refused_on_unlock(qtbot, project)
        assert "wrong signature" in page.kit_message.text() and "YOUR.dcid" not in page.kit_message.text()
        assert page.audit_restart_button.isVisible() and aw.state.session is None
        _restart_through_the_button(qtbot, page.audit_restart_button, "edited log (GUI test)")
        assert aw.state.session is not None and page.kit_message.kind == "ok"
        assert "kept as audit.before-" in page.kit_message.text()
    finally:
        log.write_bytes(kept[0])
        head.write_bytes(kept[1])


def test_kit_page_asks_the_fingerprint_again_when_the_pin_is_not_signed(qtbot, project, round_packages):  # noqa: F811
    """A pin re-pointed by hand (or an earlier version's unsigned one) is not trusted: the kit page says so and asks
    for the analyst's fingerprint as on first use (issue #32 finding 4)."""
    from tests.support.gui import new_wizard, open_identity

    d = project["dir"]
    pin = next(default_workspace(d / "site1.dcid").glob("projects/*/analyst.json"))
    kept = pin.read_bytes()
    pin.write_text(json.dumps(json.loads(kept)["body"]))  # the plain form: nobody's signature
    try:
        w = new_wizard(qtbot)
        open_identity(qtbot, w, d / "site1.dcid")
        w.next()
        kp = w.kit_page
        kp.kit_field.set_path(project["kit_path"])
        assert kp.kit is not None and kp.first_use and not kp.isComplete()
        assert kp.message.kind == "warning" and "analyst pin" in kp.message.text()
        assert "earlier version" in kp.message.text()
        kp.fingerprint_edit.setText(project["analyst"].card.fingerprint)
        assert kp.isComplete()
    finally:
        pin.write_bytes(kept)


def test_a_wizard_page_offers_a_new_log_when_its_job_is_refused(qtbot, project, round_packages):  # noqa: F811
    """Every wizard page runs its jobs through one base class: a job refused by the audit log (here the export's first
    step, binding the owner, with the log deleted) shows the refusal and the button with the wizard's identity."""
    from core.formats.workspace import SiteWorkspace
    from tests.support.gui import new_wizard, open_identity, wait_page

    d = project["dir"]
    ws = default_workspace(d / "site1.dcid")
    log, head = ws / "audit.jsonl", ws / "audit.head"
    kept = log.read_bytes(), head.read_bytes()
    log.unlink()
    try:
        w = new_wizard(qtbot)
        open_identity(qtbot, w, d / "site1.dcid")
        page = w.identity_page
        page.start(lambda control: SiteWorkspace(ws).audit.bind(w.identity), "binding", lambda _: None)
        wait_page(qtbot, page, lambda: page.message.kind == "error")
        assert page.audit_restart_button.isVisible() and "YOUR.dcid" not in page.message.text()
        assert page.audit_restart_button.identity is w.identity
        _restart_through_the_button(qtbot, page.audit_restart_button, "wizard test")
        assert page.message.kind == "info" and SiteWorkspace(ws).audit.verify() == 1
    finally:
        log.write_bytes(kept[0])
        head.write_bytes(kept[1])


def test_results_window_asks_the_analyst_fingerprint_when_the_pin_is_not_signed(qtbot, project, round_packages,  # noqa: F811
                                                                                tmp_path):
    """An earlier version's unsigned pin: apply is refused with the way on, the window shows the analyst fingerprint
    field, and the fingerprint the analyst reads out lets the package apply (the pin is signed again)."""
    d = project["dir"]
    pin = next(default_workspace(d / "site1.dcid").glob("projects/*/analyst.json"))
    kept = pin.read_bytes()
    pin.write_text(json.dumps(json.loads(kept)["body"]))
    try:
        r = ResultsWindow()
        qtbot.addWidget(r)
        r.show()
        results_unlock(qtbot, r, d / "site1.dcid", PASS)
        assert r.fingerprint_edit.isHidden()
        r.package_field.set_path(round_packages / "site1.dcpkg")
        r.csv_field.set_path(project["sites"]["site1"][1])
        r.out_field.set_path(tmp_path / "results.csv")
        r.apply_button.click()
        wait_job(qtbot, r.job)
        assert r.outcome is None and "analyst pin" in r.message.text() and not r.fingerprint_edit.isHidden()
        assert not r.audit_restart_button.isVisible()  # not an audit refusal
        r.fingerprint_edit.setText(project["analyst"].card.fingerprint)
        r.apply_button.click()
        wait_job(qtbot, r.job)
        assert r.outcome is not None and json.loads(pin.read_text())["format"] == "dcstudio/signed-state/v1"
    finally:
        pin.write_bytes(kept)
