"""Page 1: this site's identity — create one or open one; show its fingerprint for the analyst."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import (
    QButtonGroup,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from core.api import (
    MIN_PASSPHRASE_CHARS,
    SCRYPT_LOG_N_DEFAULT,
    ConfigError,
    Identity,
    check_name,
    check_new_passphrase,
    safe_name,
)
from core.api.common import default_workspace

from .. import settings as app_settings
from ..widgets import FingerprintView, MessageLabel, passphrase_edit, passphrase_strength
from .common import Page, PathField, identity_file_field


class IdentityPage(Page):
    """Create a new identity (name, passphrase twice, folder) or open an existing ``.dcid``.

    Test hooks: ``create_radio``/``open_radio``; create: ``name_edit``, ``pass_edit``, ``pass2_edit``,
    ``strength``, ``folder_field``, ``create_button``; open: ``identity_field``, ``open_pass_edit``,
    ``unlock_button``; result: ``fingerprint_view``, ``workspace_field``. ``log_n`` is the scrypt work factor
    used when creating (tests lower it to 14).
    """

    def __init__(self):
        super().__init__(self.tr("Your identity"),
                         self.tr("Your identity signs what this site sends. Create one the first time; "
                                 "open it on later rounds."))
        self.log_n = SCRYPT_LOG_N_DEFAULT
        self.identity: Identity | None = None
        self.identity_path: Path | None = None

        self.create_radio = QRadioButton(self.tr("&Create a new identity for this site"))
        self.open_radio = QRadioButton(self.tr("&Open the identity this site already has"))
        group = QButtonGroup(self)
        group.addButton(self.create_radio)
        group.addButton(self.open_radio)
        choice = QHBoxLayout()
        choice.addWidget(self.create_radio)
        choice.addWidget(self.open_radio)
        choice.addStretch(1)

        # -- create
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText(self.tr("e.g. St Mary's Hospital, cardiology"))
        self.pass_edit = passphrase_edit()
        self.pass2_edit = passphrase_edit()
        self.strength = MessageLabel()
        self.folder_field = PathField("folders", "dir", title=self.tr("Where to save the identity"))
        folders = app_settings.recent("folders")
        self.folder_field.set_path(folders[0] if folders else str(Path.home() / "DC Studio"), emit=False)
        self.create_button = QPushButton(self.tr("Create &identity"))
        self.create_button.clicked.connect(self.create_identity)
        create_form = QFormLayout()
        create_form.addRow(self.tr("Site &name:"), self.name_edit)
        create_form.addRow(self.tr("&Passphrase:"), self.pass_edit)
        create_form.addRow(self.tr("&Repeat it:"), self.pass2_edit)
        create_form.addRow("", self.strength)
        create_form.addRow(self.tr("Save in &folder:"), self.folder_field)
        create_form.addRow("", self.create_button)
        create_box = QWidget()
        create_box.setLayout(create_form)

        # -- open
        self.identity_field = identity_file_field(self.tr("Open an identity"))
        self.open_pass_edit = passphrase_edit()
        self.unlock_button = QPushButton(self.tr("&Unlock"))
        self.unlock_button.clicked.connect(self.open_identity)
        open_form = QFormLayout()
        open_form.addRow(self.tr("Identity &file:"), self.identity_field)
        open_form.addRow(self.tr("&Passphrase:"), self.open_pass_edit)
        open_form.addRow("", self.unlock_button)
        open_box = QWidget()
        open_box.setLayout(open_form)

        self.stack = QStackedWidget()
        self.stack.addWidget(create_box)
        self.stack.addWidget(open_box)

        # -- result
        self.fingerprint_view = FingerprintView()
        self.who = QLabel()
        self.who.setWordWrap(True)
        self.workspace_field = PathField("workspaces", "dir", title=self.tr("Workspace folder"))
        self.workspace_field.setToolTip(self.tr("This site's private state for the project (the private map and "
                                                "the row order) is kept here. Keep it until the results come back."))
        self.other_button = QPushButton(self.tr("Use a &different identity…"))
        self.other_button.clicked.connect(lambda: self._set_identity(None, None))
        result_box = QGroupBox(self.tr("Read this to the analyst"))
        rl = QVBoxLayout(result_box)
        who = QHBoxLayout()
        who.addWidget(self.who, 1)
        who.addWidget(self.other_button)
        rl.addLayout(who)
        rl.addWidget(self.fingerprint_view)
        wl = QFormLayout()
        wl.addRow(self.tr("&Workspace folder:"), self.workspace_field)
        rl.addLayout(wl)
        self.result_box = result_box
        result_box.setVisible(False)

        self.choice = QWidget()
        self.choice.setLayout(choice)
        self.body.addWidget(self.choice)
        self.body.addWidget(self.stack)
        self.body.addWidget(result_box)
        self.body.addStretch(1)

        self.create_radio.toggled.connect(self._mode_changed)
        self.pass_edit.textChanged.connect(self._update_strength)
        self.pass2_edit.textChanged.connect(self._update_strength)
        self.pass2_edit.returnPressed.connect(self.create_identity)
        self.open_pass_edit.returnPressed.connect(self.open_identity)
        self.identity_field.changed.connect(self._forget)
        self.workspace_field.edit.textChanged.connect(self.completeChanged)
        (self.open_radio if app_settings.recent("identities") else self.create_radio).setChecked(True)
        self._mode_changed()
        self._update_strength()

    # -- state
    def _mode_changed(self) -> None:
        self.stack.setCurrentIndex(0 if self.create_radio.isChecked() else 1)
        self.message.clear_message()

    def _forget(self) -> None:
        if self.identity is not None and self.identity_path != Path(self.identity_field.path()):
            self._set_identity(None, None)

    def _update_strength(self) -> None:
        score, hint = passphrase_strength(self.pass_edit.text())
        kind = "info" if not hint else "error" if score == 0 else "warning" if score == 1 else "ok"
        words = hint or self.tr("Choose a passphrase of at least 8 characters; several words are best.")
        if self.pass2_edit.text() and self.pass2_edit.text() != self.pass_edit.text():
            kind, words = "error", self.tr("The two passphrases differ.")
        self.strength.show_message(kind, words)

    def _set_identity(self, identity: Identity | None, path: Path | None) -> None:
        self.identity, self.identity_path = identity, path
        self.result_box.setVisible(identity is not None)
        self.choice.setVisible(identity is None)
        self.stack.setVisible(identity is None)
        if identity is not None:
            card = identity.card
            self.who.setText(self.tr("<b>{name}</b> — the analyst compares this fingerprint with the one they "
                                     "see when your file arrives.").format(name=card.name))
            self.fingerprint_view.set_fingerprint(card.fingerprint)
            self.workspace_field.set_path(str(default_workspace(path)), emit=False)
            self.message.show_message("ok", self.tr("Identity ready: {path}. Keep this file and its passphrase; "
                                                    "you need both again for the results.").format(path=path))
        else:
            self.fingerprint_view.set_fingerprint("")
            self.message.clear_message()
        self.completeChanged.emit()

    def workspace(self) -> Path | None:
        text = self.workspace_field.path()
        return Path(text) if text else None

    # -- actions
    def create_identity(self) -> None:
        if self.busy:
            return
        name = self.name_edit.text().strip()
        why = check_name(name)
        if why is not None:
            self.message.show_message("error", self.tr("Choose a site name: {why}.").format(why=why))
            self.name_edit.setFocus()
            return
        passphrase = self.pass_edit.text()
        try:
            check_new_passphrase(passphrase)
        except ConfigError:
            self.message.show_message("error", self.tr("Choose a passphrase of at least {n} characters.").format(
                n=MIN_PASSPHRASE_CHARS))
            self.pass_edit.setFocus()
            return
        if passphrase != self.pass2_edit.text():
            self.message.show_message("error", self.tr("The two passphrases differ; type the same one twice."))
            self.pass2_edit.setFocus()
            return
        folder = self.folder_field.path()
        if not folder:
            self.message.show_message("error", self.tr("Choose the folder to save the identity in."))
            return
        path = Path(folder) / f"{safe_name(name)}.dcid"
        if path.exists():
            self.message.show_message("error", self.tr("{path} already exists. Open it instead, or choose another "
                                                       "folder or name.").format(path=path))
            return
        log_n = self.log_n

        def work(control):
            control.step(0.1, "making the keys")
            ident = Identity.generate(name)
            control.step(0.3, "protecting them with your passphrase")
            Path(folder).mkdir(parents=True, exist_ok=True)
            if path.exists():
                raise ConfigError(f"{path} already exists")
            ident.save(path, passphrase, log_n=log_n)
            ident.card.save(path.with_suffix(".dcpub"))
            control.step(1.0, "saved")
            return ident

        def done(ident):
            self.pass_edit.clear()
            self.pass2_edit.clear()
            app_settings.remember("identities", str(path.resolve()))
            app_settings.remember("folders", str(Path(folder).resolve()))
            self.identity_field.set_path(str(path), emit=False)
            self._set_identity(ident, path)

        self.start(work, self.tr("Creating the identity…"), done)

    def open_identity(self) -> None:
        if self.busy:
            return
        text = self.identity_field.path()
        if not text:
            self.message.show_message("error", self.tr("Choose the identity file (.dcid)."))
            return
        path = Path(text)
        passphrase = self.open_pass_edit.text()

        def done(ident):
            self.open_pass_edit.clear()
            self.identity_field.remember()
            self._set_identity(ident, path)

        def failed(text):
            self._set_identity(None, None)
            self.message.show_message("error", text)
            self.open_pass_edit.selectAll()
            self.open_pass_edit.setFocus()

        self.start(lambda control: Identity.load(path, passphrase), self.tr("Unlocking the identity…"), done,
                   failed)

    # -- wizard
    def isComplete(self) -> bool:
        return self.identity is not None and not self.busy and bool(self.workspace_field.path())
