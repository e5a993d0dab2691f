"""Project page: the analyst's identity, and the project kit (created from a sample CSV, or opened).

Holds core objects only: an :class:`core.formats.identity.Identity`, a :class:`core.formats.kit.Kit` and, once both are
there, the :class:`core.analyst.AnalystRound` it hands to :class:`QtAnalystState`.

Test hooks. Identity: ``identity_tabs`` (0 open, 1 create), ``identity_path_edit``,
``identity_browse_button``, ``open_passphrase``, ``unlock_button``, ``unlock_identity() -> Job``;
``new_name``, ``new_folder``, ``new_pass1``, ``new_pass2``, ``strength_label``, ``create_identity_button``,
``create_identity() -> Job``, ``log_n`` (scrypt work factor; tests set 14); ``fingerprint_view``,
``save_card_button``, ``identity_message``, ``identity_job_panel``.
Kit: ``kit_path_edit``, ``kit_browse_button``, ``open_kit_button``, ``open_kit(path) -> bool``,
``kit_message``, ``kit_info``, ``export_kit_button``; creating one: ``sample_edit``,
``sample_browse_button``, ``load_sample(path) -> Job``, ``project_name``, ``task_combo``, ``label_combo``,
``id_combo``, ``ranges_check``, ``statistics_check``, ``blocks_edit`` (clustering), ``schema_table`` (a
:class:`gui.analyst.schema_grid.SchemaGrid`: each column's type, levels, missing values and "other"; an edit
re-infers the schema in ``schema_job`` with the grid's choices), ``classes_label``, ``schema_notes`` (the
grid's message area), ``schema_job_panel``, ``method_combo``, ``method_about``, ``settings_form`` (a
:class:`gui.settings_form.SettingsForm` generated from the method's declared settings:
``settings_form.set_value(name, value)``), ``anchor_box``, ``anchor_kind_combo``, ``anchor_rows_spin``,
``collusion_check`` (the kit's threat model), ``create_kit_button`` (asks the path
through ``QFileDialog.getSaveFileName``), ``build_kit() -> Kit``. Objects: ``identity``, ``kit``,
``schema``.
"""

from __future__ import annotations

import shutil
from copy import deepcopy
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from core.api import SCRYPT_LOG_N_DEFAULT, DCError, Identity, ThreatModel, check_name, passphrase_ok
from core.api.analyst import AnalystRound, build_kit, default_anchor_kind
from core.api.common import (
    METHODS,
    AnalystWorkspace,
    Kit,
    Schema,
    default_workspace,
    infer_schema,
    methods_for,
    preview,
)

from .. import settings as app_settings
from ..audit_restart import AuditRestartButton, refusal_text, restarted_text
from ..jobs import Job
from ..settings_form import SettingsForm
from ..widgets import FingerprintView, JobPanel, MessageLabel, esc, passphrase_edit, passphrase_strength
from .common import TERMS, ThrottledJob
from .schema_grid import SchemaGrid
from .state import QtAnalystState

LABEL_GUESSES = ("label", "class", "target", "y", "outcome", "diagnosis")


def _spin_row(*widgets: QWidget) -> QWidget:
    """Widgets side by side at their natural size, left-aligned."""
    w = QWidget()
    lay = QHBoxLayout(w)
    lay.setContentsMargins(0, 0, 0, 0)
    for x in widgets:
        lay.addWidget(x)
    lay.addStretch(1)
    return w


def _path_row(edit: QLineEdit, *buttons: QWidget) -> QWidget:
    """A path field that takes the width, with its buttons after it."""
    w = QWidget()
    lay = QHBoxLayout(w)
    lay.setContentsMargins(0, 0, 0, 0)
    edit.setMinimumWidth(edit.fontMetrics().horizontalAdvance("x" * 12))  # the end of a path stays readable
    lay.addWidget(edit, 1)
    for b in buttons:
        lay.addWidget(b)
    return w


def _form(parent: QWidget | None = None) -> QFormLayout:
    form = QFormLayout(parent) if parent is not None else QFormLayout()
    form.setFieldGrowthPolicy(QFormLayout.ExpandingFieldsGrow)
    # a row too wide for its column puts its field under its label: nothing is cut at 125 % (issue #33 item 14)
    form.setRowWrapPolicy(QFormLayout.WrapLongRows)
    return form


def _short_combo() -> QComboBox:
    combo = QComboBox()
    combo.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(18)
    return combo



ANALYST_IDENTITIES = "analyst-identities"  # the analyst's recent identities, kept apart from the sites' ("identities")


class ProjectPage(QWidget):
    def __init__(self, state: QtAnalystState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.identity: Identity | None = None
        self.identity_path: Path | None = None
        self.kit: Kit | None = None
        self.kit_path: Path | None = None
        self.schema: Schema | None = None
        self.schema_error: str | None = None  # core's sentence on the sample or on a choice in the grid
        self.columns: list[str] = []
        self.notes: list[str] = []
        self.log_n = SCRYPT_LOG_N_DEFAULT
        self._schema_job: Job | None = None
        self._identity_job: Job | None = None

        left = QVBoxLayout()
        left.addWidget(self._identity_box())
        left.addWidget(self._kit_box())
        left.addStretch(1)
        right = QVBoxLayout()
        right.addWidget(self._create_kit_box())
        cols = QHBoxLayout()
        cols.addLayout(left, 3)
        cols.addLayout(right, 7)  # the schema grid takes the room
        outer = QVBoxLayout(self)  # the window's page scroll (gui.screen.PageScroll) scrolls it on a small screen
        heading = QLabel(self.tr("<h2>Project</h2><p>Unlock your analyst identity, then open the project kit or "
                                 "create one from a sample CSV. The kit is signed with your identity; sites "
                                 "check your fingerprint before they send anything.</p>"))
        heading.setWordWrap(True)
        outer.addWidget(heading)
        outer.addLayout(cols, 1)
        self._fill_recent()
        self._task_changed()

    # ---- layout --------------------------------------------------------------------------------------
    def _identity_box(self) -> QGroupBox:
        box = QGroupBox(self.tr("1. Your analyst identity"))
        self.identity_tabs = QTabWidget()
        # open
        w = QWidget()
        form = _form(w)
        self.identity_path_edit = QLineEdit()
        self.identity_path_edit.setPlaceholderText(self.tr("analyst.dcid"))
        self.identity_browse_button = QPushButton(self.tr("&Browse…"))
        self.identity_browse_button.clicked.connect(self._browse_identity)
        form.addRow(self.tr("Identity file:"), _path_row(self.identity_path_edit, self.identity_browse_button))
        self.open_passphrase = passphrase_edit(self.unlock_identity)
        lab = QLabel(self.tr("&Passphrase:"))
        lab.setBuddy(self.open_passphrase)
        form.addRow(lab, self.open_passphrase)
        self.unlock_button = QPushButton(self.tr("&Unlock"))
        self.unlock_button.clicked.connect(self.unlock_identity)
        form.addRow("", _spin_row(self.unlock_button))
        self.identity_tabs.addTab(w, self.tr("Open existing"))
        # create
        w = QWidget()
        form = _form(w)
        self.new_name = QLineEdit()
        self.new_name.setPlaceholderText(self.tr("e.g. Data analyst, Hospital network"))
        form.addRow(self.tr("Na&me:"), self.new_name)
        self.new_folder = QLineEdit(str(Path.home() / "DC Studio"))
        browse = QPushButton(self.tr("Choose fol&der…"))
        browse.clicked.connect(self._browse_new_folder)
        form.addRow(self.tr("Folder:"), _path_row(self.new_folder, browse))
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
        form.addRow("", _spin_row(self.create_identity_button))
        self.identity_tabs.addTab(w, self.tr("Create new"))

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
        lay = QVBoxLayout(box)
        lay.addWidget(self.identity_tabs)
        lay.addWidget(self.identity_job_panel)
        lay.addWidget(self.identity_message)
        lay.addWidget(self.identity_status)
        lay.addWidget(self.fingerprint_view)
        lay.addWidget(_spin_row(self.save_card_button))
        return box

    def _kit_box(self) -> QGroupBox:
        box = QGroupBox(self.tr("2. Project kit"))
        form = _form()
        self.kit_path_edit = QLineEdit()
        self.kit_path_edit.setPlaceholderText(self.tr("project.dckit"))
        self.kit_browse_button = QPushButton(self.tr("Br&owse…"))
        self.kit_browse_button.clicked.connect(self._browse_kit)
        self.open_kit_button = QPushButton(self.tr("Open &kit"))
        self.open_kit_button.clicked.connect(lambda: self.open_kit(self.kit_path_edit.text()))
        form.addRow(self.tr("Existing kit:"),
                    _path_row(self.kit_path_edit, self.kit_browse_button, self.open_kit_button))
        self.kit_message = MessageLabel()
        self.audit_restart_button = AuditRestartButton()  # offered when the workspace's audit log is refused
        self.audit_restart_button.restarted.connect(self._audit_restarted)
        self.audit_restart_button.failed.connect(lambda text: self.kit_message.show_message("error", text))
        self.kit_info = QLabel(self.tr("No kit open. Open one, or create one on the right."))
        self.kit_info.setWordWrap(True)
        self.kit_info.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.export_kit_button = QPushButton(self.tr("Save a cop&y of the kit…"))
        self.export_kit_button.setToolTip(self.tr("Copy the signed kit to removable media for the sites"))
        self.export_kit_button.setEnabled(False)
        self.export_kit_button.clicked.connect(self.export_kit)
        lay = QVBoxLayout(box)
        lay.addLayout(form)
        lay.addWidget(self.kit_message)
        lay.addWidget(self.audit_restart_button, 0, Qt.AlignLeft)
        lay.addWidget(self.kit_info)
        lay.addWidget(_spin_row(self.export_kit_button))
        return box

    def _create_kit_box(self) -> QGroupBox:
        box = QGroupBox(self.tr("Create a kit from a sample CSV"))
        form = _form()
        self.sample_edit = QLineEdit()
        self.sample_edit.setPlaceholderText(self.tr("a small CSV with the project's columns"))
        self.sample_edit.editingFinished.connect(lambda: self.load_sample(self.sample_edit.text()))
        self.sample_browse_button = QPushButton(self.tr("Bro&wse…"))
        self.sample_browse_button.clicked.connect(self._browse_sample)
        form.addRow(self.tr("&Sample CSV:"), _path_row(self.sample_edit, self.sample_browse_button))
        self.project_name = QLineEdit()
        form.addRow(self.tr("Project &name:"), self.project_name)
        self.task_combo = _short_combo()
        self.task_combo.addItem(self.tr("Classification (predict a label)"), "classification")
        self.task_combo.addItem(self.tr("Clustering (group the rows)"), "clustering")
        self.task_combo.setSizeAdjustPolicy(QComboBox.AdjustToContents)  # two short choices: never elided
        self.task_combo.currentIndexChanged.connect(self._task_changed)
        form.addRow(self.tr("&Task:"), self.task_combo)
        self.label_combo = _short_combo()
        self.label_combo.activated.connect(lambda _: self.infer())
        form.addRow(self.tr("&Label column:"), self.label_combo)
        self.id_combo = _short_combo()
        self.id_combo.activated.connect(lambda _: self.infer())
        form.addRow(self.tr("Row i&d column:"), self.id_combo)
        self.ranges_check = QCheckBox(self.tr("Publish the sample's min/max ranges in the kit"))
        self.ranges_check.setToolTip(self.tr("Public ranges let the lead site make a uniform or Gaussian anchor"))
        form.addRow("", self.ranges_check)
        self.statistics_check = QCheckBox(self.tr("Publish the sample's averages and spreads in the kit"))
        self.statistics_check.setToolTip(self.tr("Each site compares its columns with them before export, to catch a "
                                                 "column in another unit (inches for centimetres, 1/2 for 0/1)"))
        self.statistics_check.setChecked(True)
        form.addRow("", self.statistics_check)
        self.blocks_edit = QLineEdit()
        self.blocks_edit.setPlaceholderText(self.tr("optional, e.g. clinical=age,bmi;lab=crp,hb (sites holding "
                                                    "different columns of the same people)"))
        self.blocks_edit.setToolTip(self.tr("Feature blocks (vertical partition): NAME=col,col;NAME=col,…  "
                                            "Needs a row id column to link the blocks."))
        form.addRow(self.tr("Feature &blocks:"), self.blocks_edit)
        self._create_form = form

        self.schema_table = SchemaGrid()
        self.schema_table.setMinimumHeight(230)  # eight rows
        self.schema_table.setMaximumHeight(320)
        self.schema_table.edited.connect(self.infer)
        self.schema_job_panel = JobPanel()
        self.classes_label = QLabel()
        self.classes_label.setWordWrap(True)
        self.schema_notes = MessageLabel()

        method_box = QGroupBox(self.tr("Method"))
        mform = _form(method_box)
        self.method_combo = _short_combo()
        self.method_combo.setMinimumContentsLength(22)
        # a method's name and title are long: the combo takes the row's width (elided only in a narrow window)
        self.method_combo.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)
        self.method_combo.currentIndexChanged.connect(self._method_changed)
        self.method_combo.setToolTip("\n".join(f"{n}: {c.title}" for n, c in METHODS.items()))
        mform.addRow(self.tr("&Method:"), self.method_combo)
        self.method_about = QLabel()
        self.method_about.setWordWrap(True)
        self.method_about.setStyleSheet("color:#4b5563;")
        mform.addRow(self.method_about)
        self.settings_form = SettingsForm()
        mform.addRow(self.settings_form)

        anchor_box = self.anchor_box = QGroupBox(self.tr("Anchor (made by the lead site, never seen by you)"))
        aform = _form(anchor_box)
        self.anchor_kind_combo = _short_combo()
        for kind, text in (("smote", self.tr("extended SMOTE from a small seed set")),
                           ("uniform", self.tr("uniform within public ranges")),
                           ("gaussian", self.tr("Gaussian"))):
            self.anchor_kind_combo.addItem(text, kind)
        self.anchor_kind_combo.setToolTip(self.tr(TERMS["anchor"]))
        aform.addRow(self.tr("Kind:"), self.anchor_kind_combo)
        self.anchor_rows_spin = QSpinBox()
        self.anchor_rows_spin.setRange(10, 100000)
        self.anchor_rows_spin.setValue(1000)
        aform.addRow(self.tr("Rows:"), self.anchor_rows_spin)
        self.collusion_check = QCheckBox(self.tr("A site may work with me"))
        self.collusion_check.setToolTip(self.tr(
            "The kit's threat model, shown to every site before export. Ticked (the default): each site's privacy "
            "check counts what the analyst and one other site, which holds the anchor, could rebuild. Unticked: "
            "the kit declares that sites do not work with the analyst; those attacks are still shown to the "
            "sites, not counted."))
        self.collusion_check.setChecked(True)
        aform.addRow(self.tr("Threat model:"), self.collusion_check)

        self.create_kit_button = QPushButton(self.tr("Create and &sign kit…"))
        self.create_kit_button.clicked.connect(self.create_kit)
        self.create_kit_button.setEnabled(False)
        self.create_hint = QLabel()
        self.create_hint.setStyleSheet("color:#6b7280;")
        self.create_hint.setWordWrap(True)  # beside the button, in the room there is
        lay = QVBoxLayout(box)
        lay.addLayout(form)
        lay.addWidget(self.schema_job_panel)
        lay.addWidget(self.schema_table, 1)
        lay.addWidget(self.classes_label)
        lay.addWidget(self.schema_notes)
        lay.addWidget(method_box)
        lay.addWidget(anchor_box)
        lay.addWidget(_spin_row(self.create_kit_button, self.create_hint))
        return box

    def _fill_recent(self) -> None:
        recent = app_settings.recent(ANALYST_IDENTITIES)  # never a site's identity from the wizard's list
        if recent:
            self.identity_path_edit.setText(recent[0])
            self.identity_tabs.setCurrentIndex(0)
        else:
            self.identity_tabs.setCurrentIndex(1)

    # ---- identity --------------------------------------------------------------------------------------
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
        self._update_create_button()
        self._try_session()

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

    # ---- kit: open ---------------------------------------------------------------------------------------
    def _browse_kit(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Open project kit"), self.kit_path_edit.text(),
                                              self.tr("Project kit (*.dckit)"))
        if path:
            self.open_kit(path)

    def open_kit(self, path: str | Path) -> bool:
        path = str(path).strip()
        self.kit_path_edit.setText(path)
        if not path:
            self.kit_message.show_message("error", self.tr("Choose a kit file (.dckit) first."))
            return False
        try:
            kit = Kit.load(path, expect_analyst=self.identity.card if self.identity else None)
        except DCError as exc:
            self.kit_message.show_message("error", str(exc))
            return False
        self._set_kit(kit, Path(path))
        return True

    def _set_kit(self, kit: Kit, path: Path) -> None:
        self.kit, self.kit_path = kit, path
        self.kit_message.clear_message()
        s = kit.schema
        chosen = ", ".join(f"{k} = {v}" for k, v in kit.settings.items())
        left = self.tr(", {k} left out ({names})").format(
            k=len(s.ignored), names=esc(", ".join(c.name or "(no name)" for c in s.ignored))) \
            if s.ignored else ""
        self.kit_info.setText(self.tr(
            "<b>{name}</b> — {task}, method <b>{method}</b>{t}<br>{n} feature columns ({w} matrix columns){left}; "
            "label <i>{label}</i> with classes {classes}<br>project id <code>{pid}</code><br>signed by {analyst} "
            "(<code>{fp}</code>)<br>file: {path}").format(
            name=kit.name, task=kit.task, method=kit.method, t=f" ({chosen})" if chosen else "",
            n=len(s.features), w=s.width, left=left,
            label=s.label or "—", classes=", ".join(s.classes) or "—", pid=kit.project_id,
            analyst=kit.analyst.name, fp=kit.analyst.fingerprint, path=path))
        self.export_kit_button.setEnabled(True)
        self._try_session()

    def export_kit(self) -> None:
        if self.kit_path is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save a copy of the kit"),
                                              str(self.kit_path), self.tr("Project kit (*.dckit)"))
        if path and Path(path).resolve() != self.kit_path.resolve():
            try:
                shutil.copyfile(self.kit_path, path)
            except OSError as exc:
                self.kit_message.show_message("error", str(exc))
                return
            self.kit_message.show_message("ok", self.tr("Kit copied to {path}.").format(path=path))

    def _try_session(self) -> None:
        if self.kit is None or self.identity is None:
            if self.kit is not None:
                self.kit_message.show_message("info", self.tr("Unlock your identity to work on this project."))
            return
        try:
            ws = AnalystWorkspace(default_workspace(self.identity_path))
            session = AnalystRound(self.kit, self.identity, ws)
        except (DCError, OSError) as exc:
            offered = self.audit_restart_button.offer(exc, self.identity)
            self.kit_message.show_message("error", refusal_text(exc) if offered else str(exc))
            return
        self.audit_restart_button.offer(None, None)
        app_settings.remember("projects", str(self.kit_path))
        self.kit_message.show_message("ok", self.tr("Project open. Workspace: {ws}. Next: import the bundles.")
                                      .format(ws=ws.root))
        self.state.set_session(session, self.kit_path, self.identity_path)

    def _audit_restarted(self, result) -> None:
        """The new log is written: say so, and open the project again."""
        self.kit_message.show_message("ok", restarted_text(result))
        self._try_session()
        if self.state.session is not None:
            self.kit_message.show_message("ok", restarted_text(result).replace(" Try again.", " The project is open."))

    # ---- kit: create ------------------------------------------------------------------------------------
    def _browse_sample(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, self.tr("Sample CSV"), self.sample_edit.text(),
                                              self.tr("CSV files (*.csv *.txt *.tsv);;All files (*)"))
        if path:
            self.load_sample(path)

    def load_sample(self, path: str) -> Job | None:
        """Read the header (fast, on the UI thread), then infer the schema in a job."""
        path = path.strip()
        self.sample_edit.setText(path)
        if not path:
            return None
        try:
            frame, fmt = preview(path, nrows=20)
        except DCError as exc:
            self.schema_notes.show_message("error", str(exc))
            return None
        self.columns = list(frame.columns)
        self.schema_table.forget_all()
        if not self.project_name.text().strip():
            self.project_name.setText(Path(path).stem.replace("_", " ").replace("-", " ").title())
        guess = next((c for c in self.columns if c.lower() in LABEL_GUESSES), None)
        self._fill_column_combos(guess)
        self.schema_notes.show_message("info", self.tr("Read as {fmt}.").format(fmt=fmt.describe()))
        return self.infer()

    def _fill_column_combos(self, label_guess: str | None) -> None:
        for combo in (self.label_combo, self.id_combo):
            combo.blockSignals(True)
            combo.clear()
            combo.addItem(self.tr("(none)"), None)
            for c in self.columns:
                combo.addItem(c, c)
            combo.blockSignals(False)
        clustering = self.task_combo.currentData() == "clustering"
        if label_guess and not clustering:
            self.label_combo.setCurrentIndex(self.columns.index(label_guess) + 1)
        elif self.columns and not clustering:
            self.label_combo.setCurrentIndex(len(self.columns))

    def infer(self) -> Job | None:
        path = self.sample_edit.text().strip()
        if not path or not self.columns:
            return None
        label, id_col = self.label_combo.currentData(), self.id_combo.currentData()
        self.schema_table.forget(label, id_col)  # a column that became the label or id has no type
        choices, level_texts = deepcopy(self.schema_table.choices), dict(self.schema_table.level_texts)
        if self._schema_job is not None and self._schema_job.running:
            self._schema_job.cancel()
        self.create_kit_button.setEnabled(False)

        def work(control):
            for name, text in level_texts.items():  # core reads the levels cells (a wrong merge fails here)
                choices.set_levels(name, text)
            control.step(0.1, "reading the sample")
            return infer_schema(path, label=label, id_column=id_col, with_ranges=True, choices=choices)

        job = ThrottledJob(work, self.tr("Reading the sample"))
        job.succeeded.connect(lambda res, j=job: self._schema_ready(j, res))
        job.failed.connect(lambda msg, j=job: self._schema_failed(j, msg))
        self._schema_job = job
        return self.schema_job_panel.run(job)

    @property
    def schema_job(self) -> Job | None:
        """The latest schema inference (started by a new sample, a label/id choice or an edit in the grid)."""
        return self._schema_job

    def _schema_failed(self, job: Job, message: str) -> None:
        if job is not self._schema_job:
            return
        self.schema, self.schema_error = None, message
        self.schema_job_panel.setVisible(False)
        if not self.schema_table.has_decisions():  # the sample itself: nothing to show
            self.schema_table.clear_rows()
            self.classes_label.clear()
        # else the grid keeps the analyst's edit, to be corrected; core's sentence says what is wrong
        self.schema_notes.show_message("error", message)
        self._update_create_button()

    def _schema_ready(self, job: Job, result) -> None:
        if job is not self._schema_job:
            return
        self.schema_job_panel.setVisible(False)
        self.schema, self.notes = result
        self.schema_error = None
        self.schema_table.show_schema(self.columns, self.schema, self.notes)
        classes = self.schema.classes
        self.classes_label.setText(self.tr("Classes ({n}): {classes}").format(n=len(classes),
                                                                              classes=", ".join(classes))
                                   if classes else self.tr("No label column: rows are not labelled."))
        s = self.schema
        summary = self.tr("{n} feature columns ({m} matrix columns), {k} left out. Change a type, the levels or "
                          "the missing values in the grid.").format(n=len(s.features), m=s.width, k=len(s.ignored))
        shares = [f"{f.name} {100 * f.missing_share:.0f} %" if f.missing_share >= 0.01 else f"{f.name} < 1 %"
                  for f in s.features if f.missing_share]
        if shares:
            summary += " " + self.tr("Missing in the sample, as the kit publishes it (over groups of at least 10 "
                                     "rows): {shares}.").format(shares=", ".join(shares))
        # a note on a feature or left-out column is in its row (the Note cell's tooltip); the rest are said here
        in_grid = s.feature_names + [c.name for c in s.ignored if c.name]
        rest = [n for n in self.notes if not any(f"'{c}'" in n for c in in_grid)]
        self.schema_notes.show_message("warning" if rest else "info",
                                       summary + (" " + "; ".join(rest) + "." if rest else ""))
        self._update_create_button()

    def _task_changed(self) -> None:
        task = self.task_combo.currentData()
        clustering = task == "clustering"
        self.blocks_edit.setVisible(clustering)
        self._create_form.labelForField(self.blocks_edit).setVisible(clustering)
        # a uniform anchor (the clustering default) needs public ranges
        self.ranges_check.setChecked(clustering)
        self.anchor_kind_combo.setCurrentIndex(self.anchor_kind_combo.findData(default_anchor_kind(task)))
        self.method_combo.blockSignals(True)
        self.method_combo.clear()
        for cls in methods_for(task):  # the task's default method first
            self.method_combo.addItem(f"{cls.name} — {cls.title}", cls.name)
        self.method_combo.blockSignals(False)
        self._method_changed()
        if self.columns:
            self._fill_column_combos(None if task == "clustering" else
                                     next((c for c in self.columns if c.lower() in LABEL_GUESSES), None))
            self.infer()

    def _method_changed(self) -> None:
        name = self.method_combo.currentData()
        cls = METHODS.get(name) if name else None
        self.settings_form.set_specs(() if cls is None else
                                     tuple(s for s in cls.settings_spec if s.side == "analyst"))
        self.method_about.setText("" if cls is None else self.tr("What leaves each site: {w}.").format(
            w=cls.what_leaves or self.tr("as the method describes at export")))
        self.anchor_box.setVisible(cls is not None and cls.needs_anchor)
        self.no_method = cls is None
        self._update_create_button()

    def method_settings(self) -> dict:
        """The kit settings the form describes: every ordinary setting, plus advanced values that differ from
        the method's defaults. Raises DCError (ConfigError) on a value that is not valid."""
        return self.settings_form.values()

    def _update_create_button(self) -> None:
        ready = self.schema is not None and self.identity is not None and not getattr(self, "no_method", True)
        self.create_kit_button.setEnabled(ready)
        if self.identity is None:
            self.create_hint.setText(self.tr("Unlock or create your identity first: the kit is signed with it."))
        elif self.schema is None:
            self.create_hint.setText(self.tr("Correct the choice the message above names.") if self.schema_error
                                     and self.schema_table.has_decisions() else self.tr("Choose a sample CSV."))
        elif getattr(self, "no_method", True):
            self.create_hint.setText(self.tr("No method is available for this task yet."))
        else:
            self.create_hint.setText("")

    def build_kit(self) -> Kit:
        """The kit the form describes (not yet signed or saved). Raises DCError with the reason."""
        from core.api import ConfigError

        if self.schema is None and self.schema_error:
            raise ConfigError(self.schema_error)
        if self.identity is None or self.schema is None:
            raise ConfigError("unlock your identity and choose a sample CSV first")
        feats = list(self.schema.features)  # inferred with the grid's choices: left-out columns are in ignored
        ranges = self.ranges_check.isChecked()
        if not ranges:  # the sample's ranges stay unpublished
            feats = [replace(f, min=None, max=None) for f in feats]
        if not ranges and not self.statistics_check.isChecked():  # nor its statistics; types and policies stay
            feats = [replace(f, mean=None, std=None, frequencies=None, missing_share=None, class_mean=None,
                             class_std=None) for f in feats]
        label = self.schema.label
        if not label:
            feats = [replace(f, class_mean=None, class_std=None) for f in feats]
        schema = Schema(features=feats, label=label, classes=list(self.schema.classes) if label else [],
                        id_column=self.schema.id_column, ignored=list(self.schema.ignored),
                        missing_tokens=list(self.schema.missing_tokens))
        kit, _ = build_kit(name=self.project_name.text(), schema=schema, analyst=self.identity.card,
                           task=self.task_combo.currentData(), method=self.method_combo.currentData(),
                           settings=self.method_settings(), blocks=self.blocks_edit.text().strip() or None,
                           anchor_kind=self.anchor_kind_combo.currentData(),
                           anchor_rows=self.anchor_rows_spin.value(),
                           threat=ThreatModel(collusion=self.collusion_check.isChecked()))
        return kit

    def create_kit(self) -> bool:
        try:
            kit = self.build_kit()
        except DCError as exc:
            self.kit_message.show_message("error", str(exc))
            self.schema_notes.show_message("error", str(exc))
            return False
        folder = self.identity_path.parent if self.identity_path else Path.home()
        default = str(folder / (kit.name.replace(" ", "-").lower() + ".dckit"))
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save the signed kit"), default,
                                              self.tr("Project kit (*.dckit)"))
        if not path:
            return False
        if not path.endswith(".dckit"):
            path += ".dckit"
        try:
            kit.save(path, self.identity)
        except (DCError, OSError) as exc:
            self.kit_message.show_message("error", str(exc))
            return False
        self.kit_path_edit.setText(path)
        self._set_kit(kit, Path(path))
        self.schema_notes.show_message("ok", self.tr("Kit signed and saved to {path}. Give it (and your "
                                                     "fingerprint) to every site.").format(path=path))
        return True
