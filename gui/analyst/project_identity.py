"""The project page's first section: the analyst's identity, opened (file + passphrase) or created (name,
folder, passphrase twice), its fingerprint, and the public card sites check the kit against."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QGroupBox, QLabel, QLineEdit, QPushButton, QTabWidget, QVBoxLayout, QWidget

from core.api import SCRYPT_LOG_N_DEFAULT, DCError, Identity, check_name, passphrase_ok

from .. import settings as app_settings
from ..jobs import Job
from ..widgets import FingerprintView, JobPanel, MessageLabel, passphrase_edit, passphrase_strength
from .common import ThrottledJob
from .form_rows import form_layout, path_row, spin_row

ANALYST_IDENTITIES = "analyst-identities"  # the analyst's recent identities, kept apart from the sites' ("identities")


class IdentitySection(QGroupBox):
    """"1. Your analyst identity". Emits ``unlocked`` once an identity is unlocked or created (``identity``,
    ``identity_path`` are set then). ``log_n`` is the scrypt work factor of a new identity (tests set 14)."""

    unlocked = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(self.tr("1. Your analyst identity"), parent)
        self.identity: Identity | None = None
        self.identity_path: Path | None = None
        self.log_n = SCRYPT_LOG_N_DEFAULT
        self._identity_job: Job | None = None
        self.identity_tabs = QTabWidget()
        self.identity_tabs.addTab(self._open_tab(), self.tr("Open existing"))
        self.identity_tabs.addTab(self._create_tab(), self.tr("Create new"))

        self.identity_job_panel = JobPanel()
        self.identity_message = MessageLabel()
        self.identity_status = QLabel(self.tr("No identity unlocked."))
        self.identity_status.setWordWrap(True)
        self.fingerprint_view = FingerprintView()
        self.fingerprint_view.setVisible(False)
        self.save_card_button = QPushButton(self.tr("Save public &card…"))
        self.save_card_button.setToolTip(self.tr("The .dcpub file sites use to check your fingerprint"))
        self.save_card_button.setEnabled(False)
        self.save_card_button.clicked.connect(self.save_card)
        lay = QVBoxLayout(self)
        lay.addWidget(self.identity_tabs)
        lay.addWidget(self.identity_job_panel)
        lay.addWidget(self.identity_message)
        lay.addWidget(self.identity_status)
        lay.addWidget(self.fingerprint_view)
        lay.addWidget(spin_row(self.save_card_button))
        self._fill_recent()

    def _open_tab(self) -> QWidget:
        w = QWidget()
        form = form_layout(w)
        self.identity_path_edit = QLineEdit()
        self.identity_path_edit.setPlaceholderText(self.tr("analyst.dcid"))
        self.identity_browse_button = QPushButton(self.tr("&Browse…"))
        self.identity_browse_button.clicked.connect(self._browse_identity)
        form.addRow(self.tr("Identity file:"), path_row(self.identity_path_edit, self.identity_browse_button))
        self.open_passphrase = passphrase_edit(self.unlock_identity)
        lab = QLabel(self.tr("&Passphrase:"))
        lab.setBuddy(self.open_passphrase)
        form.addRow(lab, self.open_passphrase)
        self.unlock_button = QPushButton(self.tr("&Unlock"))
        self.unlock_button.clicked.connect(self.unlock_identity)
        form.addRow("", spin_row(self.unlock_button))
        return w

    def _create_tab(self) -> QWidget:
        w = QWidget()
        form = form_layout(w)
        self.new_name = QLineEdit()
        self.new_name.setPlaceholderText(self.tr("e.g. Data analyst, Hospital network"))
        form.addRow(self.tr("Na&me:"), self.new_name)
        self.new_folder = QLineEdit(str(Path.home() / "DC Studio"))
        browse = QPushButton(self.tr("Choose fol&der…"))
        browse.clicked.connect(self._browse_new_folder)
        form.addRow(self.tr("Folder:"), path_row(self.new_folder, browse))
        self.new_pass1 = passphrase_edit()
        self.new_pass2 = passphrase_edit()
        self.strength_label = QLabel()
        self.new_pass1.textChanged.connect(self._strength)
        self.new_pass2.textChanged.connect(self._strength)
        form.addRow(self.tr("Passphrase:"), self.new_pass1)
        form.addRow(self.tr("Repeat:"), self.new_pass2)
        form.addRow("", self.strength_label)
        self.create_identity_button = QPushButton(self.tr("Create &identity"))
        self.create_identity_button.clicked.connect(self.create_identity)
        form.addRow("", spin_row(self.create_identity_button))
        return w

    def _fill_recent(self) -> None:
        recent = app_settings.recent(ANALYST_IDENTITIES)  # never a site's identity from the wizard's list
        if recent:
            self.identity_path_edit.setText(recent[0])
            self.identity_tabs.setCurrentIndex(0)
        else:
            self.identity_tabs.setCurrentIndex(1)

    def _browse_identity(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Open identity"), self.identity_path_edit.text(),
                                              self.tr("DC Studio identity (*.dcid)"))
        if path:
            self.identity_path_edit.setText(path)
            self.open_passphrase.setFocus()

    def _browse_new_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, self.tr("Folder for the identity"), self.new_folder.text())
        if path:
            self.new_folder.setText(path)

    def _strength(self) -> None:
        p1, p2 = self.new_pass1.text(), self.new_pass2.text()
        score, hint = passphrase_strength(p1)
        colors = ["#b91c1c", "#b45309", "#a16207", "#15803d", "#166534"]
        text = self.tr("Strength: {hint}").format(hint=hint) if hint else ""
        if p2 and p1 != p2:
            text += self.tr(" — the two passphrases differ")
        self.strength_label.setText(text)
        self.strength_label.setStyleSheet(f"color:{colors[score]};")

    def create_identity(self) -> Job | None:
        name, folder = self.new_name.text().strip(), self.new_folder.text().strip()
        p1, p2 = self.new_pass1.text(), self.new_pass2.text()
        why = check_name(name)
        problem = None
        if why is not None:
            problem = self.tr("Choose a name: {why}.").format(why=why)
        elif not folder:
            problem = self.tr("Choose a folder for the identity file.")
        elif p1 != p2:
            problem = self.tr("The two passphrases differ.")
        elif not passphrase_ok(p1):
            problem = self.tr("Choose a passphrase of at least 8 characters.")
        path = Path(folder) / f"{name}.dcid"
        if problem is None and path.exists():
            problem = self.tr("{path} already exists; open it, or choose another name.").format(path=path)
        if problem:
            self.identity_message.show_message("error", problem)
            return None
        self.identity_message.clear_message()
        log_n = int(self.log_n)

        def work(control):
            control.step(0.05, "making new keys")
            ident = Identity.generate(name)
            control.step(0.2, "protecting the private keys with your passphrase")
            path.parent.mkdir(parents=True, exist_ok=True)
            ident.save(path, p1, log_n=log_n)
            ident.card.save(path.with_suffix(".dcpub"))
            return ident, path

        return self._run_identity_job(work, self.tr("Creating the identity"))

    def unlock_identity(self) -> Job | None:
        path = self.identity_path_edit.text().strip()
        if not path:
            self.identity_message.show_message("error", self.tr("Choose your identity file (.dcid) first."))
            return None
        passphrase = self.open_passphrase.text()
        self.identity_message.clear_message()

        def work(control):
            control.step(0.1, "unlocking the identity")
            return Identity.load(path, passphrase), Path(path)

        return self._run_identity_job(work, self.tr("Unlocking the identity"))

    def _run_identity_job(self, work, title: str) -> Job:
        self.unlock_button.setEnabled(False)
        self.create_identity_button.setEnabled(False)
        job = ThrottledJob(work, title)
        job.succeeded.connect(self._identity_ready)
        job.failed.connect(self._identity_failed)
        job.ended.connect(self._identity_job_ended)
        self._identity_job = job
        return self.identity_job_panel.run(job)

    def _identity_job_ended(self) -> None:
        self.unlock_button.setEnabled(True)
        self.create_identity_button.setEnabled(True)
        self.identity_job_panel.setVisible(False)

    def _identity_failed(self, message: str) -> None:
        self.identity_message.show_message("error", message)

    def _identity_ready(self, result) -> None:
        ident, path = result
        self.identity, self.identity_path = ident, Path(path)
        self.open_passphrase.clear()
        self.new_pass1.clear()
        self.new_pass2.clear()
        self.identity_path_edit.setText(str(path))
        self.identity_tabs.setCurrentIndex(0)
        app_settings.remember(ANALYST_IDENTITIES, str(path))
        self.identity_status.setText(self.tr("Unlocked: <b>{name}</b> ({path}). Read this fingerprint to the "
                                             "sites so they can check your kit:")
                                     .format(name=ident.name, path=path))
        self.fingerprint_view.set_fingerprint(ident.card.fingerprint)
        self.fingerprint_view.setVisible(True)
        self.save_card_button.setEnabled(True)
        self.unlocked.emit()

    def save_card(self) -> None:
        if self.identity is None:
            return
        default = str(self.identity_path.with_suffix(".dcpub")) if self.identity_path else ""
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save public card"), default,
                                              self.tr("Public card (*.dcpub)"))
        if path:
            try:
                self.identity.card.save(path)
            except (DCError, OSError) as exc:
                self.identity_message.show_message("error", str(exc))
                return
            self.identity_message.show_message("ok", self.tr("Public card saved to {path}.").format(path=path))
