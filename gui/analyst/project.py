"""Project page: the analyst's identity, and the project kit (created from a sample CSV, or opened).

Holds core objects only: an :class:`core.formats.identity.Identity`, a :class:`core.formats.kit.Kit` and, once both are
there, the :class:`core.analyst.AnalystRound` it hands to :class:`QtAnalystState`.

The page composes four sections, each a widget in its own module: the identity
(:mod:`gui.analyst.project_identity`), the kit opened from a file (:mod:`gui.analyst.project_kit`), and, to
create a kit, the sample and its columns (:mod:`gui.analyst.project_sample`) and the method, anchor and threat
model (:mod:`gui.analyst.project_method`). The page holds the actions that need more than one section (sign and
save the kit, open the round) and keeps every section's test hooks as its own attributes. The sections:
``identity_section``, ``kit_section``, ``sample_section``, ``method_section``.

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

from dataclasses import replace
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QGroupBox, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core.api import DCError
from core.api.analyst import AnalystRound, build_kit
from core.api.common import AnalystWorkspace, Kit, Schema, default_workspace

from .. import settings as app_settings
from ..audit_restart import refusal_text, restarted_text
from ..jobs import Job
from ..sections import forward
from .form_rows import spin_row
from .project_identity import IdentitySection
from .project_kit import KitSection
from .project_method import MethodSection
from .project_sample import SampleSection
from .state import QtAnalystState


class ProjectPage(QWidget):
    # the sections' widgets and objects, kept as the page's own test hooks
    identity = forward("identity_section", "identity", settable=True)
    identity_path = forward("identity_section", "identity_path", settable=True)
    log_n = forward("identity_section", "log_n", settable=True)
    identity_tabs = forward("identity_section", "identity_tabs")
    identity_path_edit = forward("identity_section", "identity_path_edit")
    identity_browse_button = forward("identity_section", "identity_browse_button")
    open_passphrase = forward("identity_section", "open_passphrase")
    unlock_button = forward("identity_section", "unlock_button")
    new_name = forward("identity_section", "new_name")
    new_folder = forward("identity_section", "new_folder")
    new_pass1 = forward("identity_section", "new_pass1")
    new_pass2 = forward("identity_section", "new_pass2")
    strength_label = forward("identity_section", "strength_label")
    create_identity_button = forward("identity_section", "create_identity_button")
    identity_job_panel = forward("identity_section", "identity_job_panel")
    identity_message = forward("identity_section", "identity_message")
    identity_status = forward("identity_section", "identity_status")
    fingerprint_view = forward("identity_section", "fingerprint_view")
    save_card_button = forward("identity_section", "save_card_button")
    kit = forward("kit_section", "kit")
    kit_path = forward("kit_section", "kit_path")
    kit_path_edit = forward("kit_section", "kit_path_edit")
    kit_browse_button = forward("kit_section", "kit_browse_button")
    open_kit_button = forward("kit_section", "open_kit_button")
    kit_message = forward("kit_section", "kit_message")
    audit_restart_button = forward("kit_section", "audit_restart_button")
    kit_info = forward("kit_section", "kit_info")
    export_kit_button = forward("kit_section", "export_kit_button")
    schema = forward("sample_section", "schema")
    schema_error = forward("sample_section", "schema_error")
    schema_job = forward("sample_section", "schema_job")
    columns = forward("sample_section", "columns")
    sample_edit = forward("sample_section", "sample_edit")
    sample_browse_button = forward("sample_section", "sample_browse_button")
    project_name = forward("sample_section", "project_name")
    task_combo = forward("sample_section", "task_combo")
    label_combo = forward("sample_section", "label_combo")
    id_combo = forward("sample_section", "id_combo")
    ranges_check = forward("sample_section", "ranges_check")
    statistics_check = forward("sample_section", "statistics_check")
    blocks_edit = forward("sample_section", "blocks_edit")
    schema_table = forward("sample_section", "schema_table")
    schema_job_panel = forward("sample_section", "schema_job_panel")
    classes_label = forward("sample_section", "classes_label")
    schema_notes = forward("sample_section", "schema_notes")
    method_combo = forward("method_section", "method_combo")
    method_about = forward("method_section", "method_about")
    settings_form = forward("method_section", "settings_form")
    anchor_box = forward("method_section", "anchor_box")
    anchor_kind_combo = forward("method_section", "anchor_kind_combo")
    anchor_rows_spin = forward("method_section", "anchor_rows_spin")
    collusion_check = forward("method_section", "collusion_check")
    no_method = forward("method_section", "no_method")

    def __init__(self, state: QtAnalystState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.identity_section = IdentitySection()
        self.kit_section = KitSection(lambda: self.identity)
        self.sample_section = SampleSection()
        self.method_section = MethodSection()

        left = QVBoxLayout()
        left.addWidget(self.identity_section)
        left.addWidget(self.kit_section)
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

        self.identity_section.unlocked.connect(self._identity_unlocked)
        self.kit_section.kit_set.connect(self._try_session)
        self.kit_section.audit_restart_button.restarted.connect(self._audit_restarted)
        self.sample_section.task_combo.currentIndexChanged.connect(self._task_changed)
        self.sample_section.inferring.connect(lambda: self.create_kit_button.setEnabled(False))
        self.sample_section.schema_changed.connect(self._update_create_button)
        self.method_section.changed.connect(self._update_create_button)
        self._task_changed()

    def _create_kit_box(self) -> QGroupBox:
        """The sample and its columns, the method, and the button that signs the kit."""
        box = QGroupBox(self.tr("Create a kit from a sample CSV"))
        self.create_kit_button = QPushButton(self.tr("Create and &sign kit…"))
        self.create_kit_button.clicked.connect(self.create_kit)
        self.create_kit_button.setEnabled(False)
        self.create_hint = QLabel()
        self.create_hint.setStyleSheet("color:#6b7280;")
        self.create_hint.setWordWrap(True)  # beside the button, in the room there is
        lay = QVBoxLayout(box)
        lay.addWidget(self.sample_section, 1)
        lay.addWidget(self.method_section)
        lay.addWidget(spin_row(self.create_kit_button, self.create_hint))
        return box

    # ---- identity --------------------------------------------------------------------------------------
    def unlock_identity(self) -> Job | None:
        return self.identity_section.unlock_identity()

    def create_identity(self) -> Job | None:
        return self.identity_section.create_identity()

    def save_card(self) -> None:
        self.identity_section.save_card()

    def _identity_unlocked(self) -> None:
        self._update_create_button()
        self._try_session()

    # ---- kit: open ---------------------------------------------------------------------------------------
    def open_kit(self, path: str | Path) -> bool:
        return self.kit_section.open_kit(path)

    def export_kit(self) -> None:
        self.kit_section.export_kit()

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
    def load_sample(self, path: str) -> Job | None:
        """Read the header (fast, on the UI thread), then infer the schema in a job."""
        return self.sample_section.load_sample(path)

    def infer(self) -> Job | None:
        return self.sample_section.infer()

    def _task_changed(self) -> None:
        task = self.task_combo.currentData()
        self.sample_section.show_task_options(task)
        self.method_section.set_task(task)
        self.sample_section.task_changed(task)

    def method_settings(self) -> dict:
        """The kit settings the form describes: every ordinary setting, plus advanced values that differ from
        the method's defaults. Raises DCError (ConfigError) on a value that is not valid."""
        return self.method_section.method_settings()

    def _update_create_button(self) -> None:
        ready = self.schema is not None and self.identity is not None and not self.no_method
        self.create_kit_button.setEnabled(ready)
        if self.identity is None:
            self.create_hint.setText(self.tr("Unlock or create your identity first: the kit is signed with it."))
        elif self.schema is None:
            self.create_hint.setText(self.tr("Correct the choice the message above names.") if self.schema_error
                                     and self.schema_table.has_decisions() else self.tr("Choose a sample CSV."))
        elif self.no_method:
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
                           threat=self.method_section.threat())
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
        self.kit_section.set_kit(kit, Path(path))
        self.schema_notes.show_message("ok", self.tr("Kit signed and saved to {path}. Give it (and your "
                                                     "fingerprint) to every site.").format(path=path))
        return True
