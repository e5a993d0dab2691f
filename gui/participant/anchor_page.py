"""Page 3: the shared anchor — import the file from the lead site, or make it if this site is the lead."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QStackedWidget,
    QWidget,
)

from core.api import DCError, PublicCard, safe_name
from core.api.common import read_table
from core.api.participant import ANCHOR_KINDS as KINDS
from core.api.participant import AnchorFile, anchor_for_kit, encoded_ranges, load_anchor

from .. import settings as app_settings
from ..widgets import MessageLabel, plain
from .common import ANCHOR_WORDS, Page, PathField

SEED_ROWS = 100


class AnchorPage(Page):
    """The anchor secret seeds the synthetic rows every site reduces alongside its own; sites only.

    Test hooks: ``import_radio``/``lead_radio``; import: ``anchor_field``; lead: ``kind_combo``,
    ``rows_spin``, ``seed_csv_radio``/``own_csv_radio``, ``source_field`` (the CSV), ``add_cards(paths)`` /
    ``cards`` (the other sites' public cards: the file is encrypted to them and to this site), ``save_field``
    (where to write the .dcanchor), ``create_button``. ``anchor``/``anchor_path`` hold the result.
    """

    def __init__(self):
        super().__init__(self.tr("The shared anchor"),
                         self.tr("All sites of a project reduce the same synthetic 'anchor' rows along with their "
                                 "own. One lead site makes the anchor file and gives it to the other sites."))
        self.anchor: AnchorFile | None = None
        self.anchor_path: Path | None = None
        self._project: str | None = None

        self.import_radio = QRadioButton(self.tr("&Import the anchor file I received from the lead site"))
        self.lead_radio = QRadioButton(self.tr("This site is the &lead: create the anchor file"))
        group = QButtonGroup(self)
        group.addButton(self.import_radio)
        group.addButton(self.lead_radio)

        self.anchor_field = PathField("anchors", "open", self.tr("DC Studio anchor (*.dcanchor)"),
                                      self.tr("Open the anchor file"))
        self.anchor_field.changed.connect(self.load_anchor)
        imp = QFormLayout()
        imp.addRow(self.tr("Anchor &file:"), self.anchor_field)
        imp_box = QWidget()
        imp_box.setLayout(imp)

        self.kind_combo = QComboBox()
        for kind in KINDS:
            words = ANCHOR_WORDS[kind]
            self.kind_combo.addItem(self.tr(words[0].upper() + words[1:]), kind)
        self.rows_spin = QSpinBox()
        self.rows_spin.setRange(10, 1_000_000)
        self.rows_spin.setSingleStep(100)
        self.rows_spin.setValue(1000)
        self.seed_csv_radio = QRadioButton(self.tr("a small &seed CSV that may be shared between sites"))
        self.own_csv_radio = QRadioButton(self.tr("my &own CSV (only its column statistics: {n} synthetic seed "
                                                  "rows, no real row)").format(n=SEED_ROWS))
        self.seed_csv_radio.setChecked(True)
        src_group = QButtonGroup(self)
        src_group.addButton(self.seed_csv_radio)
        src_group.addButton(self.own_csv_radio)
        src = QHBoxLayout()
        src.addWidget(self.seed_csv_radio)
        src.addWidget(self.own_csv_radio)
        src.addStretch(1)
        self.source_field = PathField("csv", "open", self.tr("CSV files (*.csv *.txt);;All files (*)"),
                                      self.tr("Choose the CSV"))
        self.save_field = PathField("anchors", "save", self.tr("DC Studio anchor (*.dcanchor)"),
                                    self.tr("Save the anchor file as"))
        self.cards: list[PublicCard] = []
        self.cards_label = QLabel(self.tr("none yet: only this site could open the file"))
        self.cards_label.setWordWrap(True)
        self.cards_label.setTextFormat(Qt.PlainText)  # the cards' names are other parties' text
        self.add_cards_button = QPushButton(self.tr("Add the other sites' &cards…"))
        self.add_cards_button.clicked.connect(self._pick_cards)
        cards_row = QHBoxLayout()
        cards_row.addWidget(self.cards_label, 1)
        cards_row.addWidget(self.add_cards_button)
        self.create_button = QPushButton(self.tr("Create the &anchor file"))
        self.create_button.clicked.connect(self.create_anchor)
        lead = QFormLayout()
        lead.addRow(self.tr("&Kind:"), self.kind_combo)
        lead.addRow(self.tr("&Rows:"), self.rows_spin)
        lead.addRow(self.tr("Made from:"), src)
        lead.addRow(self.tr("&CSV:"), self.source_field)
        lead.addRow(self.tr("Encrypted to:"), cards_row)
        lead.addRow(self.tr("&Save as:"), self.save_field)
        lead.addRow("", self.create_button)
        lead_box = QWidget()
        lead_box.setLayout(lead)

        self.stack = QStackedWidget()
        self.stack.addWidget(imp_box)
        self.stack.addWidget(lead_box)
        self.secret_note = MessageLabel()
        self.secret_note.show_message(
            "warning", self.tr("The anchor file is a secret shared between sites only. It must never reach the "
                               "analyst: with it, the analyst could undo every site's private reduction. "
                               "Carry it to the other sites on separate media, not with your bundle."))
        self.summary = QLabel()
        self.summary.setWordWrap(True)

        self.body.addWidget(self.import_radio)
        self.body.addWidget(self.lead_radio)
        self.body.addWidget(self.stack)
        self.body.addWidget(self.summary)
        self.body.addWidget(self.secret_note)
        self.body.addStretch(1)
        self.import_radio.toggled.connect(lambda on: self.stack.setCurrentIndex(0 if on else 1))
        self.kind_combo.currentIndexChanged.connect(self._kind_changed)
        self.import_radio.setChecked(True)

    # -- state
    def initializePage(self) -> None:
        kit = self.state.kit
        if kit.project_id != self._project:
            self._project = kit.project_id
            self._set_anchor(None, None)
            k = self.kind_combo.findData(kit.anchor.get("kind", "smote"))
            self.kind_combo.setCurrentIndex(max(k, 0))
            self.rows_spin.setValue(int(kit.anchor.get("rows", 1000)))
            ident_path = self.state.identity_path
            folder = ident_path.parent if ident_path is not None else Path.home()
            self.save_field.set_path(str(folder / f"{safe_name(kit.name)}.dcanchor"), emit=False)
            if self.anchor_field.path():
                self.load_anchor(self.anchor_field.path())

    def _kind_changed(self) -> None:
        smote = self.kind_combo.currentData() == "smote"
        self.seed_csv_radio.setEnabled(smote)
        if not smote:
            self.own_csv_radio.setChecked(True)

    def _set_anchor(self, anchor: AnchorFile | None, path: Path | None) -> None:
        self.anchor, self.anchor_path = anchor, path
        if anchor is None:
            self.summary.setText("")
        else:
            self.summary.setText(self.tr("Anchor ready: <b>{file}</b> — {kind}, {rows:,} rows, made {created}.").format(
                file=path.name, kind=ANCHOR_WORDS.get(anchor.kind, anchor.kind), rows=anchor.generated_rows,
                created=anchor.created[:10]))
        self.completeChanged.emit()

    # -- actions
    def _pick_cards(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, self.tr("The other sites' public cards"), "",
                                                self.tr("Public cards (*.dcpub);;All files (*)"))
        if paths:
            self.add_cards(paths)

    def add_cards(self, paths: list[str | Path]) -> None:
        """Add sites' public cards: the anchor file will be encrypted to each (and to this site)."""
        self.message.clear_message()
        for p in paths:
            try:
                card = PublicCard.load(p)
            except DCError as exc:
                self.message.show_message("error", str(exc))
                return
            if all(c.key_id != card.key_id for c in self.cards):
                self.cards.append(card)
        self.cards_label.setText(plain("; ".join(f"{c.name} ({c.fingerprint})" for c in self.cards)))

    def load_anchor(self, path: str) -> None:
        self.message.clear_message()
        if not path or self.wizard() is None or self.state.kit is None:
            self._set_anchor(None, None)
            return
        try:
            anchor = load_anchor(path, self.state.kit, self.state.identity)
        except DCError as exc:
            self._set_anchor(None, None)
            self.message.show_message("error", str(exc))
            return
        except OSError as exc:
            self._set_anchor(None, None)
            self.message.show_message("error", f"{path}: {exc.strerror or exc}")
            return
        self.anchor_field.remember()
        self._set_anchor(anchor, Path(path))

    def create_anchor(self) -> None:
        if self.busy:
            return
        kit = self.state.kit
        kind = self.kind_combo.currentData()
        rows = self.rows_spin.value()
        source = self.source_field.path()
        out = self.save_field.path()
        from_seed = self.seed_csv_radio.isChecked() and kind == "smote"
        schema = kit.schema
        ranges = encoded_ranges(schema)
        if not source and not (ranges is not None and kind != "smote"):
            self.message.show_message("error", self.tr("Choose the CSV the anchor is made from."))
            return
        if not out:
            self.message.show_message("error", self.tr("Choose where to save the anchor file."))
            return

        own = self.state.identity
        recipients = ([own.card] if own is not None else []) + [c for c in self.cards
                                                                 if own is None or c.key_id != own.card.key_id]
        if not recipients:
            self.message.show_message("error", self.tr("Open this site's identity first."))
            return

        def work(control):
            local = seed = None
            if source:
                control.step(0.1, "reading the CSV")
                X = read_table(source, schema, labels=False,
                               control=control.sub(0.1, 0.7)).X
                if from_seed:
                    seed = X
                else:
                    local = X
            control.step(0.8, "making the anchor")
            anchor = anchor_for_kit(kit, kind=kind, rows=rows, local_X=local, seed_X=seed, seed_rows=SEED_ROWS)
            control.step(0.9, "saving it")
            anchor.save(out, recipients)
            return anchor

        def done(anchor):
            self.source_field.remember()
            app_settings.remember("anchors", str(Path(out).resolve()))
            self.anchor_field.set_path(out, emit=False)
            self._set_anchor(anchor, Path(out))
            names = ", ".join(c.name for c in recipients)
            text = self.tr("Anchor file written to {out}, encrypted to {names}. Give a copy to each of the other "
                           "sites, never to the analyst.").format(out=out, names=names)
            if from_seed:
                text += " " + self.tr("The seed rows you declared shareable travel inside it to every site.")
            self.message.show_message("ok" if len(recipients) > 1 else "warning", text)

        self.start(work, self.tr("Creating the anchor…"), done)

    def isComplete(self) -> bool:
        return self.anchor is not None and not self.busy
