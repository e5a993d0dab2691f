"""Bundles page: drop or pick bundle files; each is verified and imported (or refused, with the reason).

Each file goes through :meth:`core.analyst.AnalystRound.try_import` in a job; imported bundles are then
re-opened with :meth:`~core.analyst.AnalystRound.received` and handed to :class:`QtAnalystState`.
Only confirmed senders are opened: a file whose sender (read from its clear header) is neither on the kit's
roster nor confirmed in the workspace is listed as waiting, nothing of it decrypted. Ticking its Confirmed box
(after comparing the fingerprint by phone or on paper) confirms the key in the workspace and imports the
file; training and export stay disabled while any site waits. Sites whose arrays are far out of scale are
flagged in the Scale column; the Exclude box leaves a site out of the next training run.

Test hooks: ``table`` (columns ``COL_*``), ``import_paths(paths) -> Job``, ``add_files_button``,
``add_folder_button``, ``drop_area``, ``job_panel``, ``message``, ``summary_label``,
``set_confirmed(fingerprint, bool) -> Job | None`` (confirming a waiting sender imports its files),
``rows_by_status(status)`` (``imported``, ``refused``, ``unconfirmed``, …), ``set_excluded(site, bool)``.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core.api import DCError
from core.api.analyst import ImportReport, scale_flags

from .. import settings as app_settings
from ..jobs import Job
from ..screen import keep_rows
from ..widgets import JobPanel, MessageLabel, plain, plain_tip
from .common import (
    COUNTS_ROLE,
    NAMES_ROLE,
    SparklineDelegate,
    ThrottledJob,
    hide_when_done,
    label_counts,
    set_fingerprint_confirmed,
)
from .state import QtAnalystState

COL_SITE, COL_FINGERPRINT, COL_CONFIRMED, COL_STATUS, COL_ROWS, COL_LABELS, COL_FILE, COL_SCALE, COL_EXCLUDE \
    = range(9)
PATH_ROLE = Qt.UserRole + 1


class DropArea(QFrame):
    """A dashed box that takes dropped files and folders."""

    dropped = Signal(list)

    def __init__(self, text: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setAcceptDrops(True)
        self.setObjectName("dropArea")
        self._style(False)
        self.label = QLabel(text)
        self.label.setAlignment(Qt.AlignCenter)
        self.label.setWordWrap(True)
        lay = QVBoxLayout(self)
        lay.addWidget(self.label)
        self.setMinimumHeight(70)

    def _style(self, hover: bool) -> None:
        self.setStyleSheet("#dropArea{border:2px dashed %s;border-radius:8px;background:%s;}"
                           % (("#2563eb", "#eff6ff") if hover else ("#9ca3af", "#f9fafb")))

    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()
            self._style(True)

    def dragLeaveEvent(self, event) -> None:  # noqa: N802
        self._style(False)

    def dropEvent(self, event) -> None:  # noqa: N802
        self._style(False)
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.dropped.emit(paths)


def expand_paths(paths: list[str | Path]) -> list[Path]:
    """Files as given; folders become their ``*.dcbundle`` files (sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.glob("*.dcbundle")))
        else:
            out.append(p)
    return out


class BundlesPage(QWidget):
    def __init__(self, state: QtAnalystState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self._job: Job | None = None
        self._cards: dict = {}  # fingerprint → sender card of files waiting for confirmation
        heading = QLabel(self.tr("<h2>Bundles</h2><p>Drop the sites' <code>.dcbundle</code> files here. Each file "
                                 "is checked (signature, project, kit version, duplicates) before it is "
                                 "imported; a refused file is listed with the reason. Tick <i>Confirmed</i> "
                                 "once you have compared a site's fingerprint with the site (by phone or on "
                                 "paper).</p>"))
        heading.setWordWrap(True)
        self.drop_area = DropArea(self.tr("Drop bundle files or folders here"))
        self.drop_area.dropped.connect(self.import_paths)
        self.add_files_button = QPushButton(self.tr("Add &files…"))
        self.add_files_button.clicked.connect(self._pick_files)
        self.add_folder_button = QPushButton(self.tr("Add a f&older…"))
        self.add_folder_button.clicked.connect(self._pick_folder)
        self.clear_refused_button = QPushButton(self.tr("C&lear refused"))
        self.clear_refused_button.clicked.connect(self.clear_refused)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_files_button)
        buttons.addWidget(self.add_folder_button)
        buttons.addStretch(1)
        buttons.addWidget(self.clear_refused_button)

        self.table = QTableWidget(0, 9)
        self.table.setHorizontalHeaderLabels([self.tr("Site"), self.tr("Fingerprint"), self.tr("Confirmed"),
                                              self.tr("Status"), self.tr("Rows"), self.tr("Labels"),
                                              self.tr("File / reason"), self.tr("Scale"), self.tr("Exclude")])
        header = self.table.horizontalHeader()
        for c in range(6):
            header.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(COL_LABELS, QHeaderView.Fixed)
        self.table.setColumnWidth(COL_LABELS, 130)
        for c in (COL_SCALE, COL_EXCLUDE):
            header.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(COL_FILE, QHeaderView.Stretch)  # the refusal reasons get the room
        header.sectionResized.connect(lambda *_: self.table.resizeRowsToContents())  # reasons re-wrap
        self.table.verticalHeader().setVisible(False)
        keep_rows(self.table, 6)  # six sites in view; the page scrolls on a small screen
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectRows)
        self.table.setItemDelegateForColumn(COL_LABELS, SparklineDelegate(self.table))
        self.table.itemChanged.connect(self._item_changed)
        self.table.setWordWrap(True)  # a refusal's whole reason is shown, over as many lines as it needs
        self.table.setTextElideMode(Qt.ElideNone)
        self.job_panel = JobPanel()
        hide_when_done(self.job_panel)
        self.message = MessageLabel()
        self.summary_label = QLabel()
        self.summary_label.setTextFormat(Qt.PlainText)  # names the sites (their cards' text)
        lay = QVBoxLayout(self)
        lay.addWidget(heading)
        lay.addWidget(self.drop_area)
        lay.addLayout(buttons)
        lay.addWidget(self.job_panel)
        lay.addWidget(self.message)
        lay.addWidget(self.table, 1)
        lay.addWidget(self.summary_label)
        self.setAcceptDrops(True)
        state.session_changed.connect(self._session_changed)

    # ---- whole page accepts drops too --------------------------------------------------------------------
    def dragEnterEvent(self, event) -> None:  # noqa: N802
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:  # noqa: N802
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.import_paths(paths)

    # ---- picking -----------------------------------------------------------------------------------------
    def _start_dir(self) -> str:
        recent = app_settings.recent("bundle-folders")
        return recent[0] if recent else ""

    def _pick_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, self.tr("Bundles"), self._start_dir(),
                                                self.tr("Bundles (*.dcbundle);;All files (*)"))
        if paths:
            self.import_paths(paths)

    def _pick_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, self.tr("Folder of bundles"), self._start_dir())
        if path:
            self.import_paths([path])

    # ---- session -----------------------------------------------------------------------------------------
    def _session_changed(self) -> None:
        self.table.setRowCount(0)
        self.message.clear_message()
        self._update_summary()
        session = self.state.session
        if session is None or not session.workspace.stored(session.kit.project_id):
            return

        def work(control):
            with self.state.workspace_lock:
                return session.received(control=control), list(session.left_out.values())

        job = ThrottledJob(work, self.tr("Opening the bundles imported earlier"))
        job.succeeded.connect(self._stored_ready)
        job.failed.connect(self._failed)
        self._job = job
        self.job_panel.run(job)

    def _stored_ready(self, result) -> None:
        """The bundles imported earlier, opened and checked again; one that no longer passes is listed as refused
        with its reason (left out of every run; its site's next bundle replaces it) and the page goes on."""
        bundles, left_out = result
        reg = self.state.session.workspace.registry(self.state.session.kit.project_id)
        for r in left_out:
            self._add_row(r)
        for b in bundles:
            entry = reg.get(b.envelope_id, {})
            report = ImportReport(Path(entry.get("file", "")), "imported earlier", "", b.site, b.fingerprint,
                                  int(b.manifest.get("n_rows", 0)), b.envelope_id,
                                  label_counts(b, len(self.state.classes)).tolist())
            self._add_row(report, self.tr("imported on {when}").format(when=entry.get("imported", "?")))
        self.state.add_bundles(bundles)
        self._update_summary()
        self._update_scale()

    # ---- import ------------------------------------------------------------------------------------------
    def import_paths(self, paths: list[str | Path]) -> Job | None:
        session = self.state.session
        if session is None:
            self.message.show_message("error", self.tr("Open a project first."))
            return None
        if self.job_panel.busy:
            self.message.show_message("warning", self.tr("Wait for the current import to finish."))
            return None
        files = expand_paths(paths)
        if not files:
            self.message.show_message("warning", self.tr("No .dcbundle files there."))
            return None
        folder = files[0].parent
        app_settings.remember("bundle-folders", str(folder))
        self.message.clear_message()

        def work(control):
            reports = []
            with self.state.workspace_lock:
                for k, p in enumerate(files):
                    control.step(0.8 * k / len(files), f"verifying {p.name}")
                    reports.append(session.try_import(p))
                ids = [r.envelope_id for r in reports if r.status == "imported"]
                bundles = session.received(ids, control=control.sub(0.8, 1.0)) if ids else []
            order = {e: k for k, e in enumerate(ids)}
            return reports, sorted(bundles, key=lambda b: order.get(b.envelope_id, len(order)))

        job = ThrottledJob(work, self.tr("Verifying {n} file(s)").format(n=len(files)))
        job.succeeded.connect(self._imported)
        job.failed.connect(self._failed)
        self._job = job
        return self.job_panel.run(job)

    def _failed(self, message: str) -> None:
        self.message.show_message("error", message)

    def _imported(self, result) -> None:
        reports, bundles = result
        by_id = {b.envelope_id: b for b in bundles}
        for r in reports:
            if r.status == "imported" and not r.label_counts and r.envelope_id in by_id:
                r.label_counts = label_counts(by_id[r.envelope_id], len(self.state.classes)).tolist()
            if r.status != "already imported":  # its row is in the table already
                self._add_row(r)
            if r.status == "unconfirmed" and r.card is not None:
                self._cards[r.fingerprint] = r.card
        self.state.add_bundles(bundles)
        n_ok = sum(r.status == "imported" for r in reports)
        n_known = sum(r.status == "already imported" for r in reports)  # the same file again: fine, not refused
        n_wait = sum(r.status == "unconfirmed" for r in reports)
        n_bad = len(reports) - n_ok - n_known - n_wait
        kind = "warning" if n_bad or n_wait else "ok" if n_ok else "info"
        total = len(self.rows_by_status("imported"))
        parts = [self.tr("{ok} imported").format(ok=n_ok)] if n_ok or not n_known else []
        if n_known:
            parts.append(self.tr("{n} already imported (nothing to do)").format(n=n_known))
        if n_bad:
            parts.append(self.tr("{bad} refused").format(bad=n_bad))
        text = ", ".join(parts) + "."
        if total > n_ok:  # e.g. after confirming one more sender: say where the project stands, not only the last step
            text += " " + self.tr("{total} bundle(s) imported in this project so far.").format(total=total)
        if n_wait:
            text += " " + self.tr("{n} file(s) wait until you confirm their sender's fingerprint.").format(n=n_wait)
        self.message.show_message(kind, text)
        self._update_pending()
        self._update_summary()
        self._update_scale()

    def _add_row(self, r: ImportReport, note: str = "") -> None:
        t = self.table
        t.blockSignals(True)
        row = t.rowCount()
        t.insertRow(row)
        refused = r.status == "refused"
        waiting = r.status == "unconfirmed"
        site = QTableWidgetItem(plain(r.site) if r.site else "—")
        site.setData(Qt.UserRole, r.envelope_id)
        fp = QTableWidgetItem(r.fingerprint or "—")
        fp.setFont(_mono(fp.font()))
        confirm = QTableWidgetItem()
        if waiting:
            confirm.setFlags(Qt.ItemIsEnabled | Qt.ItemIsUserCheckable | Qt.ItemIsSelectable)
            confirm.setCheckState(Qt.Unchecked)
            confirm.setData(Qt.UserRole, r.fingerprint)
            confirm.setToolTip(self.tr("Tick after comparing this fingerprint with the site: the file is then "
                                       "verified and imported"))
        elif not refused and r.fingerprint:
            confirm.setFlags(Qt.ItemIsEnabled | Qt.ItemIsSelectable)
            confirm.setCheckState(Qt.Checked)
            confirm.setData(Qt.UserRole, r.fingerprint)
            confirm.setToolTip(self.tr("Confirmed for this project (kit roster or earlier confirmation)"))
        else:
            confirm.setFlags(Qt.ItemIsEnabled)
        status_text = {"imported": self.tr("✓ verified, imported"),
                       "imported earlier": self.tr("✓ verified, imported earlier"),
                       "already imported": self.tr("✓ already imported"),
                       "unconfirmed": self.tr("? confirm the sender first"),
                       "refused": self.tr("✗ refused")}.get(r.status, r.status)
        status = QTableWidgetItem(status_text)
        status.setData(Qt.UserRole, r.status)
        status.setData(PATH_ROLE, str(r.path))
        status.setForeground(QColor("#b91c1c" if refused else "#92400e" if waiting else "#166534"))
        rows = QTableWidgetItem("" if refused else str(r.rows))
        rows.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
        labels = QTableWidgetItem()
        if r.label_counts:
            labels.setData(COUNTS_ROLE, list(r.label_counts))
            classes = self.state.classes
            labels.setData(NAMES_ROLE, [str(c) for c in classes])
            labels.setToolTip(", ".join(f"{classes[k] if k < len(classes) else k}: {c}"
                                        for k, c in enumerate(r.label_counts)))
        name = Path(r.path).name
        if waiting:
            file_text = self.tr("{name}: not opened — sender not confirmed").format(name=name)
        else:
            file_text = f"{name}: {r.reason}" if refused else (f"{name} — {note}" if note else name)
        file_item = QTableWidgetItem(plain(file_text))  # a refusal's reason may quote the file's text
        file_item.setToolTip(plain_tip(f"{r.path}\n{r.reason}" if refused or waiting else str(r.path)))
        if refused:
            file_item.setForeground(QColor("#b91c1c"))
        scale = QTableWidgetItem("")
        exclude = QTableWidgetItem()
        if r.status not in ("refused", "unconfirmed"):
            exclude.setFlags(Qt.ItemIsEnabled | Qt.ItemIsUserCheckable | Qt.ItemIsSelectable)
            exclude.setCheckState(Qt.Checked if r.site in self.state.excluded else Qt.Unchecked)
            exclude.setData(Qt.UserRole, r.site)
            exclude.setToolTip(self.tr("Leave this site out of training (it gets no package)"))
        else:
            exclude.setFlags(Qt.ItemIsEnabled)
        for c, item in enumerate((site, fp, confirm, status, rows, labels, file_item, scale, exclude)):
            t.setItem(row, c, item)
        t.resizeRowToContents(row)
        t.blockSignals(False)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().showEvent(event)
        QTimer.singleShot(0, self.table.resizeRowsToContents)  # wrap reasons at the width they really get

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt name)
        super().resizeEvent(event)
        QTimer.singleShot(0, self.table.resizeRowsToContents)

    def _item_changed(self, item: QTableWidgetItem) -> None:
        if item.column() == COL_EXCLUDE and item.data(Qt.UserRole):
            self.set_excluded(item.data(Qt.UserRole), item.checkState() == Qt.Checked)
            return
        if item.column() != COL_CONFIRMED or not item.data(Qt.UserRole):
            return
        status = self.table.item(item.row(), COL_STATUS)
        if status is not None and status.data(Qt.UserRole) == "unconfirmed" and item.checkState() == Qt.Checked:
            self.confirm_sender(item.data(Qt.UserRole))

    def confirm_sender(self, fingerprint: str) -> Job | None:
        """Confirm a waiting sender's key in the workspace, then verify and import its waiting files."""
        session, card = self.state.session, self._cards.get(fingerprint)
        if session is None or card is None:
            return None
        try:
            session.confirm(card, how="ticked on the Bundles page")
        except DCError as exc:
            self.message.show_message("error", exc.message)
            return None
        set_fingerprint_confirmed(fingerprint, True)
        paths = []
        for r in reversed(range(self.table.rowCount())):
            status = self.table.item(r, COL_STATUS)
            if status.data(Qt.UserRole) == "unconfirmed" and self.table.item(r, COL_FINGERPRINT).text() == fingerprint:
                paths.append(status.data(PATH_ROLE))
                self.table.removeRow(r)
        self._update_pending()
        return self.import_paths(list(reversed(paths))) if paths else None

    def set_confirmed(self, fingerprint: str, confirmed: bool = True) -> Job | None:
        """Confirm a waiting sender (as ticking its box does); returns the import job it starts, if any."""
        if confirmed and fingerprint in self._cards and fingerprint not in (
                self.state.session.confirmed_fingerprints() if self.state.session else set()):
            return self.confirm_sender(fingerprint)
        return None

    def pending_fingerprints(self) -> list[str]:
        """Fingerprints of senders waiting for confirmation, in the order their files were offered."""
        out: list[str] = []
        for r in self.rows_by_status("unconfirmed"):
            fp = self.table.item(r, COL_FINGERPRINT).text()
            if fp not in out:
                out.append(fp)
        return out

    def set_excluded(self, site: str, excluded: bool = True) -> None:
        """Leave ``site`` out of the next training run (or take it back in)."""
        self.state.set_excluded(site, excluded)
        self.table.blockSignals(True)
        for r in range(self.table.rowCount()):
            item = self.table.item(r, COL_EXCLUDE)
            if item is not None and item.data(Qt.UserRole) == site:
                item.setCheckState(Qt.Checked if excluded else Qt.Unchecked)
        self.table.blockSignals(False)
        self._update_summary()

    def _update_pending(self) -> None:
        pending = {}
        for r in range(self.table.rowCount()):
            if self.table.item(r, COL_STATUS).data(Qt.UserRole) == "unconfirmed":
                pending[self.table.item(r, COL_FINGERPRINT).text()] = self.table.item(r, COL_SITE).text()
        self.state.set_pending(pending)

    def _update_scale(self) -> None:
        """Flag sites whose shipped arrays are far out of scale relative to the others (core.robustness)."""
        flags: dict[str, list[str]] = {}
        for f in scale_flags(self.state.bundles):
            flags.setdefault(f.fingerprint, []).append(f"{f.array} {f.reason}")
        for r in range(self.table.rowCount()):
            item = self.table.item(r, COL_SCALE)
            fp = self.table.item(r, COL_FINGERPRINT).text()
            if item is None:
                continue
            if fp in flags and self.table.item(r, COL_STATUS).data(Qt.UserRole) != "refused":
                item.setText(self.tr("⚠ out of scale"))
                item.setForeground(QColor("#b91c1c"))
                item.setToolTip("; ".join(flags[fp]) + "\n" + self.tr("Consider excluding this site."))
            else:
                item.setText("")
                item.setToolTip("")

    def clear_refused(self) -> None:
        """Remove refused rows and rows still waiting for confirmation (their files were never opened)."""
        for r in reversed(range(self.table.rowCount())):
            if self.table.item(r, COL_STATUS).data(Qt.UserRole) in ("refused", "unconfirmed"):
                self.table.removeRow(r)
        self.message.clear_message()
        self._update_pending()
        self._update_summary()

    def rows_by_status(self, status: str) -> list[int]:
        return [r for r in range(self.table.rowCount())
                if self.table.item(r, COL_STATUS).data(Qt.UserRole) == status]

    def unconfirmed_sites(self) -> list[str]:
        return self.state.unconfirmed_sites()

    def _update_summary(self) -> None:
        n = len(self.state.bundles)
        refused = len(self.rows_by_status("refused"))
        unconfirmed = len(self.unconfirmed_sites())
        text = self.tr("{n} site(s) imported").format(n=n)
        if refused:
            text += self.tr(", {k} file(s) refused").format(k=refused)
        if unconfirmed:
            text += self.tr("; {k} fingerprint(s) not confirmed yet: training and export wait").format(k=unconfirmed)
        elif n:
            text += self.tr("; every fingerprint confirmed")
        if self.state.excluded:
            text += self.tr("; excluded: {sites}").format(sites=", ".join(sorted(self.state.excluded)))
        self.summary_label.setText(plain(text + "."))


def _mono(font):
    font.setFamily("monospace")
    font.setStyleHint(font.StyleHint.Monospace)
    return font
