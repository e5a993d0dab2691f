"""Clicking through a round in tests: a site's wizard page by page, the analyst's window from unlocking to
written packages, and a site's results window.

Every wait is on a signal that announces the awaited state (a job's ``ended``, a wizard page's
``completeChanged``, a state object's ``*_changed``), never a polling deadline. ``HANG`` is only a guard
against a hang, so that a busy machine is never a reason to fail.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt

PASS = "correct horse battery staple"
HANG = 1_200_000  # ms: fail a hung test with a traceback; not a deadline for a slow or busy machine


# ---- waiting -------------------------------------------------------------------------------------------------
def until(qtbot, signal, condition: Callable[[], bool], timeout: int = HANG) -> None:
    """Return once ``condition()`` holds, checking it now and again each time ``signal`` is delivered.

    Race-free: state changes on the UI thread only while events are processed, and the check and the
    connection happen with none processed in between. ``signal`` must be one emitted on the UI thread (a
    widget's or page's, not a job's ``progress``): a signal queued from a worker thread can be delivered after
    the wait is over, to a listener already gone (PySide6 crashed so, once in three loaded runs)."""
    if condition():
        return
    with qtbot.waitSignal(signal, timeout=timeout, check_params_cb=lambda *_: bool(condition())):
        pass


def wait_job(qtbot, job, timeout: int = HANG) -> None:
    """Wait for a started :class:`gui.jobs.Job` to end, its outcome signals delivered (``ended`` comes after
    ``succeeded``/``failed``/``cancelled`` and after the slots connected before it started)."""
    assert job is not None
    blocker = qtbot.waitSignal(job.ended, timeout=timeout)  # listen first, then look
    if job.running:  # ``running`` turns False just before the outcome is emitted: ``ended`` is still to come
        blocker.wait()
        return
    # it ended before we listened: its signals are queued on the UI thread once its thread is gone
    assert job.wait(timeout / 1000), f"job {job.title!r} did not end"
    QCoreApplication.sendPostedEvents()


def wait_page(qtbot, page, condition: Callable[[], bool] | None = None, timeout: int = HANG) -> None:
    """Wait until a wizard page's job has ended (``busy`` False) and ``condition()`` holds (default: the page is
    complete). A page emits ``completeChanged`` whenever either may have changed."""
    condition = condition or page.isComplete
    until(qtbot, page.completeChanged, lambda: not page.busy and condition(), timeout)


def wait_for_page(qtbot, w, name: str, timeout: int = HANG) -> None:
    """Wait until the wizard shows the page ``name`` (e.g. "done" once the export has sealed the bundle)."""
    until(qtbot, w.currentIdChanged, lambda: w.page_name() == name, timeout)


# ---- a site's wizard -----------------------------------------------------------------------------------------
def new_wizard(qtbot, kit_path: Path | None = None):
    from gui.participant import ParticipantWizard

    w = ParticipantWizard(kit_path=str(kit_path)) if kit_path is not None else ParticipantWizard()
    qtbot.addWidget(w)
    w.show()
    return w


def create_identity(qtbot, w, name: str, folder: Path, passphrase: str = PASS) -> None:
    """On the identity page: create ``name``'s identity in ``folder`` and wait until it is made."""
    ip = w.identity_page
    ip.log_n = 14
    ip.create_radio.setChecked(True)
    ip.name_edit.setText(name)
    ip.pass_edit.setText(passphrase)
    ip.pass2_edit.setText(passphrase)
    ip.folder_field.set_path(folder)
    ip.create_button.click()
    wait_page(qtbot, ip)


def open_identity(qtbot, w, identity: Path, passphrase: str = PASS) -> None:
    """On the identity page: unlock the identity file ``identity`` and wait until it is open."""
    ip = w.identity_page
    ip.open_radio.setChecked(True)
    ip.identity_field.set_path(identity)
    ip.open_pass_edit.setText(passphrase)
    ip.unlock_button.click()
    wait_page(qtbot, ip)


def wizard_with_new_identity(qtbot, name: str, folder: Path, passphrase: str = PASS):
    """A shown participant wizard whose identity page created ``name``'s identity in ``folder``."""
    w = new_wizard(qtbot)
    create_identity(qtbot, w, name, folder, passphrase)
    return w


def accept_kit(w, kit_path: Path) -> None:
    """From the identity page: Next, open the kit, type the fingerprint the analyst read out, Next."""
    w.next()
    w.kit_page.kit_field.set_path(kit_path)
    w.kit_page.fingerprint_edit.setText(w.kit_page.kit.analyst.fingerprint)
    w.next()


def create_anchor(qtbot, w, seed_csv: Path, save_to: Path, cards: list[Path] = ()) -> None:
    """On the anchor page, as the lead site: an anchor from ``seed_csv`` (encrypted to ``cards`` too), saved."""
    ap = w.anchor_page
    ap.lead_radio.setChecked(True)
    ap.seed_csv_radio.setChecked(True)
    ap.source_field.set_path(seed_csv)
    if cards:
        ap.add_cards(list(cards))
    ap.save_field.set_path(save_to)
    ap.create_button.click()
    wait_page(qtbot, ap)


def import_anchor(qtbot, w, anchor: Path) -> None:
    """On the anchor page, as another site: the lead's anchor file."""
    ap = w.anchor_page
    ap.import_radio.setChecked(True)
    ap.anchor_field.set_path(anchor)
    wait_page(qtbot, ap)


def read_csv(qtbot, w, csv: Path) -> None:
    """On the data page: read ``csv`` and wait until it is read against the kit."""
    w.data_page.set_csv(csv)
    wait_page(qtbot, w.data_page)


def accept_privacy_risk(w) -> None:
    """On the privacy page (computed): tick "I accept this risk" when a check the kit counts is poor."""
    check = w.privacy_page.check
    if check.needs_consent:
        check.consent_check.setChecked(True)


def export_bundle(qtbot, w, folder: Path, name: str) -> Path:
    """From the privacy page (computed): accept its risk if asked, Next, write ``folder/name`` and wait for the
    done page."""
    accept_privacy_risk(w)
    w.next()
    ep = w.export_page
    ep.folder_field.set_path(folder)
    ep.name_edit.setText(name)
    ep.export_button.click()
    wait_for_page(qtbot, w, "done")
    return ep.sealed.path


# ---- the analyst's window ------------------------------------------------------------------------------------
def open_analyst_window(qtbot, kit: Path, identity: Path, passphrase: str):
    """The analyst window on ``kit``, its identity unlocked (the project's session open)."""
    from gui.analyst.window import AnalystWindow

    aw = AnalystWindow(kit_path=str(kit))
    qtbot.addWidget(aw)
    aw.show()
    page = aw.project_page
    page.identity_path_edit.setText(str(identity))
    page.open_passphrase.setText(passphrase)
    with qtbot.waitSignal(aw.state.session_changed, timeout=HANG,
                          check_params_cb=lambda *_: aw.state.session is not None):
        qtbot.mouseClick(page.unlock_button, Qt.LeftButton)
    return aw


def confirm_all(qtbot, aw) -> None:
    """Tick Confirmed for every sender waiting on the Bundles page (each tick imports that sender's files)."""
    for fp in aw.bundles_page.pending_fingerprints():  # nothing is opened before its sender is confirmed
        job = aw.bundles_page.set_confirmed(fp, True)
        if job is not None:
            wait_job(qtbot, job)


def import_bundles(qtbot, aw, paths, confirm: bool = True) -> None:
    """Offer ``paths`` to the Bundles page (as a drop would) and, with ``confirm``, confirm every sender."""
    wait_job(qtbot, aw.bundles_page.import_paths([str(p) for p in paths]))
    if confirm:
        confirm_all(qtbot, aw)


def analyst_window_with_bundles(qtbot, kit: Path, identity: Path, passphrase: str, bundles: list[Path]):
    """The analyst window on ``kit``, identity unlocked, every bundle offered and every sender confirmed."""
    aw = open_analyst_window(qtbot, kit, identity, passphrase)
    import_bundles(qtbot, aw, bundles)
    assert len(aw.state.bundles) == len(bundles), aw.bundles_page.message.text()
    return aw


def train_models(qtbot, aw) -> None:
    """Press the Models page's button (Train / Cluster the data) and wait for it to succeed."""
    assert aw.show_page("models")
    mp = aw.models_page
    qtbot.mouseClick(mp.train_button, Qt.LeftButton)
    wait_job(qtbot, mp.job_panel.job)
    assert mp.last_outcome == "succeeded", mp.message.text()


def wait_metrics(qtbot, aw, rows: int) -> None:
    """The Models page shows a result just after it arrives (a zero-delay timer fills the metrics table, and that
    one queues the accuracy bars): wait for the table's ``rows`` rows, then let the queued drawing run."""
    table = aw.models_page.metrics_table
    until(qtbot, table.model().rowsInserted, lambda: table.rowCount() == rows)
    QCoreApplication.processEvents()  # the bars' zero-delay timer, queued while the table was filled


def export_packages(qtbot, aw, out: Path) -> list[Path]:
    """The Export page writes every package, the report and the summary into ``out``."""
    assert aw.show_page("export")
    aw.export_page.out_edit.setText(str(out))
    wait_job(qtbot, aw.export_page.export())
    return sorted(out.glob("*.dcpkg"))


# ---- a site's results window ---------------------------------------------------------------------------------
def results_unlock(qtbot, r, identity: Path, passphrase: str = PASS) -> None:
    """In the results window: unlock ``identity`` and wait for the job's outcome (shown, ``busy`` False)."""
    r.identity_field.set_path(identity)
    r.passphrase_edit.setText(passphrase)
    r.unlock_button.click()
    wait_job(qtbot, r.job)


def results_apply(qtbot, r) -> None:
    """Press Apply in the results window and wait for the job's outcome; it must have succeeded."""
    r.apply_button.click()
    wait_job(qtbot, r.job)
    assert r.outcome is not None, r.message.text()
