"""Clicking through a round in tests: a site's wizard up to its privacy page, its export, and the analyst's
window from unlocking to written packages. Each step waits the way a person would (for the page, not a
fixed time)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

WAIT = 30_000


def wizard_with_new_identity(qtbot, name: str, folder: Path, passphrase: str = "correct horse battery staple"):
    """A shown participant wizard whose identity page created ``name``'s identity in ``folder``."""
    from gui.participant import ParticipantWizard

    w = ParticipantWizard()
    qtbot.addWidget(w)
    w.show()
    ip = w.identity_page
    ip.log_n = 14
    ip.create_radio.setChecked(True)
    ip.name_edit.setText(name)
    ip.pass_edit.setText(passphrase)
    ip.pass2_edit.setText(passphrase)
    ip.folder_field.set_path(folder)
    ip.create_button.click()
    qtbot.waitUntil(ip.isComplete, timeout=WAIT)
    return w


def accept_kit(w, kit_path: Path) -> None:
    """From the identity page: Next, open the kit, tick that the fingerprint was compared, Next."""
    w.next()
    w.kit_page.kit_field.set_path(kit_path)
    w.kit_page.confirm_check.setChecked(True)
    w.next()


def export_bundle(qtbot, w, folder: Path, name: str) -> Path:
    """From the privacy page (computed): Next, write ``folder/name`` and wait for the done page."""
    w.next()
    ep = w.export_page
    ep.folder_field.set_path(folder)
    ep.name_edit.setText(name)
    ep.export_button.click()
    qtbot.waitUntil(lambda: w.page_name() == "done", timeout=WAIT)
    return ep.sealed.path


def analyst_window_with_bundles(qtbot, kit: Path, identity: Path, passphrase: str, bundles: list[Path]):
    """The analyst window on ``kit``, identity unlocked, every bundle offered and every sender confirmed."""
    from gui.analyst.window import AnalystWindow

    aw = AnalystWindow(kit_path=str(kit))
    qtbot.addWidget(aw)
    aw.show()
    page = aw.project_page
    page.identity_path_edit.setText(str(identity))
    page.open_passphrase.setText(passphrase)
    qtbot.mouseClick(page.unlock_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: aw.state.session is not None, timeout=WAIT)
    job = aw.bundles_page.import_paths([str(p) for p in bundles])
    qtbot.waitUntil(lambda: not job.running, timeout=WAIT)
    qtbot.waitUntil(lambda: len(aw.bundles_page.pending_fingerprints()) == len(bundles), timeout=5_000)
    for fp in aw.bundles_page.pending_fingerprints():  # nothing is opened before its sender is confirmed
        job = aw.bundles_page.set_confirmed(fp, True)
        qtbot.waitUntil(lambda job=job: not job.running, timeout=WAIT)
    qtbot.waitUntil(lambda: len(aw.state.bundles) == len(bundles), timeout=5_000)
    return aw


def train_models(qtbot, aw) -> None:
    """Press the Models page's button (Train / Cluster the data) and wait for it to succeed."""
    assert aw.show_page("models")
    mp = aw.models_page
    qtbot.mouseClick(mp.train_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: mp.last_outcome is not None, timeout=120_000)
    assert mp.last_outcome == "succeeded", mp.message.text()


def export_packages(qtbot, aw, out: Path) -> list[Path]:
    """The Export page writes every package, the report and the summary into ``out``."""
    assert aw.show_page("export")
    aw.export_page.out_edit.setText(str(out))
    job = aw.export_page.export()
    qtbot.waitUntil(lambda: not job.running, timeout=WAIT)
    return sorted(out.glob("*.dcpkg"))
