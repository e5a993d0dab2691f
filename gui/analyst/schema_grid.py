"""The Project page's schema grid: one row per column of the sample CSV, where the analyst confirms or
changes what :func:`core.data.schema.infer_schema` decided.

The grid only gathers the analyst's decisions, a :class:`core.data.schema.ColumnChoices` and the text typed in
levels cells (:attr:`SchemaGrid.level_texts`), and shows the schema core inferred with them; every rule (how a
levels text reads, which levels a type gets, that a binary column has exactly two levels, that a level is
listed once, …) is core's. Edits emit ``edited``; the page re-infers the schema with :attr:`SchemaGrid.choices`
and the levels texts and calls :meth:`SchemaGrid.show_schema` with the result (or shows core's sentence).

Cells, per row: the column's name; its type (a combo: number, binary, categorical, ordinal, left out; the
label and the row id are shown as text); its levels, comma-separated in the kit's order (binary: the first is
the reference, encoded 0; ordinal: low to high), each with the raw values merged into it ("Obs, treated (= Lev,
Lev+5FU)"), edited in core's text form ("Obs, treated=Lev|Lev+5FU", :func:`core.data.schema.parse_level_list`),
or, for a number, its sample range; its
missing-value policy (a combo); and "unseen" (a value the kit does not know goes to the column's unseen bucket:
always, so its tick is shown set and cannot be changed; columns with levels only). The page says under the grid
how many cells each column misses in the sample. A left-out
row is grey, says why in its levels cell and keeps its type combo, so the column can be brought back.
Core's notes on a column are its name's tooltip.

Test hooks: ``row_of(name)``, ``type_combo(name)``, ``missing_combo(name)``, ``levels_item(name)``,
``other_item(name)``, ``note(name)`` (why left out), ``choices``.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QComboBox, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from core.api.common import COLUMN_TYPES, MISSING_HELP, ColumnChoices, FeatureColumn, Schema, format_level_list
from core.api.common import MISSING_WORDS as MISSING_TEXT
from core.api.common import missing_choice as _missing_choice

COL_NAME, COL_TYPE, COL_LEVELS, COL_MISSING, COL_OTHER = range(5)
LEFT_OUT = "ignored"  # core's name for the type "left out" (``kit new --type COL=ignored``)
TYPE_TEXT = {"numeric": "number", "binary": "binary", "categorical": "categorical", "ordinal": "ordinal",
             LEFT_OUT: "left out"}
GREY = QColor("#9ca3af")
LEVELS_WIDTH = 140  # px: below this the grid scrolls sideways rather than hide the levels


class LevelsItem(QTableWidgetItem):
    """A levels cell: shows the levels with their merges ("Obs, treated (= Lev, Lev+5FU)") and edits their text
    form ("Obs, treated=Lev|Lev+5FU"); what the analyst types is shown as typed until core re-infers."""

    def __init__(self, shown: str, typed: str):
        super().__init__(shown)
        self._typed = typed

    def data(self, role: int):
        if role == Qt.EditRole:
            return self._typed
        return super().data(role)

    def setData(self, role: int, value) -> None:  # noqa: N802 (Qt's name)
        if role in (Qt.EditRole, Qt.DisplayRole):
            self._typed, role = value, Qt.DisplayRole
        super().setData(role, value)


class SchemaGrid(QTableWidget):
    """The schema as a grid the analyst edits (see the module docstring)."""

    edited = Signal()  # the analyst changed a decision: re-infer with ``choices``

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, 5, parent)
        self.choices = ColumnChoices()
        self.level_texts: dict[str, str] = {}  # column → its levels cell as typed, for core to parse
        self._rows: dict[str, int] = {}
        self._filling = False
        self.setHorizontalHeaderLabels([self.tr("Column"), self.tr("Type"), self.tr("Levels or range"),
                                        self.tr("Missing values"), self.tr("Unseen")])
        header = self.horizontalHeader()
        for c in (COL_NAME, COL_TYPE, COL_MISSING, COL_OTHER):
            header.setSectionResizeMode(c, QHeaderView.ResizeToContents)
        header.setSectionResizeMode(COL_LEVELS, QHeaderView.Fixed)  # the room left, at least LEVELS_WIDTH
        header.sectionResized.connect(lambda *_: self._fit_levels())
        self.horizontalHeaderItem(COL_LEVELS).setToolTip(self.tr(
            "Double-click to edit, comma-separated. The order is the kit's: binary, the first level is the "
            "reference (encoded 0); ordinal, low to high; categorical, the order of its 0/1 columns. A level "
            "typed here that the sample lacks is added. NAME=a|b reads the raw values a and b as level NAME, "
            "e.g. treated=Lev|Lev+5FU. A column left out says why here."))
        self.horizontalHeaderItem(COL_MISSING).setToolTip(self.tr(MISSING_HELP))
        self.horizontalHeaderItem(COL_OTHER).setToolTip(self.tr(
            "Unseen values → bucket. A value the kit does not know goes to the column's unseen bucket (none of its "
            "levels; halfway for a binary or ordinal column) and is counted at each site: it never stops a site"))
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QAbstractItemView.DoubleClicked | QAbstractItemView.EditKeyPressed
                             | QAbstractItemView.SelectedClicked)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self.setWordWrap(False)
        self.itemChanged.connect(self._item_changed)

    # ---- the analyst's decisions --------------------------------------------------------------------------
    def forget_all(self) -> None:
        """Forget every decision (a new sample). (Not ``reset``: that is Qt's, called by ``clearContents``.)"""
        self.choices = ColumnChoices()
        self.level_texts = {}

    def forget(self, *names: str | None) -> None:
        """Drop the decisions on ``names`` (columns that became the label or the row id)."""
        for name in names:
            if name is not None:
                self.choices.forget(name)
                self.level_texts.pop(name, None)

    def has_decisions(self) -> bool:
        """Whether the analyst changed anything the sample's detection decided."""
        return bool(self.choices.named() or self.level_texts)

    def set_type(self, name: str, kind: str) -> None:
        """The analyst's type for ``name``: one of :data:`COLUMN_TYPES` or "ignored" (left out)."""
        c = self.choices
        if kind == LEFT_OUT:
            c.ignore.add(name)
            c.types.pop(name, None)
        else:
            c.ignore.discard(name)
            c.types[name] = kind
            if kind == "numeric":  # a number has no levels and no 'other'
                self.level_texts.pop(name, None)
                c.other.discard(name)
            elif kind == "binary":  # a binary column has exactly its two levels
                c.other.discard(name)
        self.edited.emit()

    def set_levels(self, name: str, text: str) -> None:
        """The levels cell as typed; core reads it when the page re-infers (an emptied cell gives the column
        back the sample's levels)."""
        if text.strip():
            self.level_texts[name] = text
        else:
            self.level_texts.pop(name, None)
        self.edited.emit()

    def set_missing(self, name: str, policy: str) -> None:
        self.choices.missing[name] = policy
        self.edited.emit()

    def set_other(self, name: str, on: bool) -> None:
        (self.choices.other.add if on else self.choices.other.discard)(name)
        self.edited.emit()

    # ---- showing a schema --------------------------------------------------------------------------------
    def clear_rows(self) -> None:
        self._rows = {}
        self.setRowCount(0)

    def show_schema(self, columns: list[str], schema: Schema, notes: list[str] = ()) -> None:
        """One row per column of the sample, in file order, as ``schema`` (inferred with ``choices``) has it."""
        self._filling = True
        keep = self.verticalScrollBar().value()
        try:
            feats = {f.name: f for f in schema.features}
            ignored = {c.name: c.reason for c in schema.ignored}
            self.clearContents()
            self.setRowCount(len(columns))
            self._rows = {name: r for r, name in enumerate(columns)}
            for r, name in enumerate(columns):
                self._fill_row(r, name, schema, feats.get(name), ignored, notes)
        finally:
            self._filling = False
        self.resizeRowsToContents()
        self._fit_levels()
        self.verticalScrollBar().setValue(keep)

    def _fill_row(self, r: int, name: str, schema: Schema, f: FeatureColumn | None, ignored: dict[str, str],
                  notes: list[str]) -> None:
        grey = False
        if name == schema.label:
            kind, levels = self.tr("label"), ", ".join(schema.classes)  # the classes, counted under the grid
        elif name == schema.id_column:
            kind, levels = self.tr("row id"), self.tr("links a person's rows; leaves only as a keyed hash")
        elif f is not None:
            kind = None
            if f.typed:
                levels = f.levels_text
            elif f.min is not None and f.max is not None:
                levels = self.tr("{lo:.4g} to {hi:.4g}").format(lo=f.min, hi=f.max)
            else:
                levels = ""
        else:  # left out: the reason where the levels would be
            grey, kind = True, None
            levels = ignored.get(name) or next((n for n in notes if f"'{name}'" in n), "") or self.tr("left out")
        name_item = self._item(name, grey)
        said = [n for n in notes if f"'{name}'" in n]  # core's notes on this column, whole
        if f is not None:
            said.append(self.tr("In the matrix: {names}").format(names=", ".join(f.encoded_names)))
        name_item.setToolTip("\n".join(said))
        self.setItem(r, COL_NAME, name_item)
        if kind is None:
            self.setItem(r, COL_TYPE, self._item("", grey))
            self.setCellWidget(r, COL_TYPE, self._type_combo(name, f.type if f is not None else LEFT_OUT))
        else:
            self.setItem(r, COL_TYPE, self._item(kind, False))
        if f is not None and f.typed:  # shown with its merges, edited in core's text form
            levels_item = self._item(levels, grey, LevelsItem(levels, format_level_list(f.levels, f.merged)))
            levels_item.setFlags(levels_item.flags() | Qt.ItemIsEditable)
            levels_item.setToolTip(levels + "\n\n" + self.horizontalHeaderItem(COL_LEVELS).toolTip())
        elif f is not None:
            levels_item = self._item(levels, grey)
            levels_item.setForeground(QBrush(GREY))
            levels_item.setToolTip(self.tr("The sample's range (published in the kit if you tick it above)"))
        else:
            levels_item = self._item(levels, grey)
            levels_item.setToolTip(levels)
        self.setItem(r, COL_LEVELS, levels_item)
        if f is not None:
            self.setItem(r, COL_MISSING, self._item("", False))
            self.setCellWidget(r, COL_MISSING, self._missing_combo(name, _missing_choice(f)))
        else:
            self.setItem(r, COL_MISSING, self._item("", grey))
        other = self._item("", grey)
        if f is not None and f.typed:  # always on: shown ticked, not a choice (an older kit's 'other' is the same)
            other.setCheckState(Qt.Checked)
            other.setToolTip(self.horizontalHeaderItem(COL_OTHER).toolTip())
        self.setItem(r, COL_OTHER, other)

    @staticmethod
    def _item(text: str, grey: bool, item: QTableWidgetItem | None = None) -> QTableWidgetItem:
        item = QTableWidgetItem(text) if item is None else item
        item.setFlags(Qt.ItemIsEnabled | Qt.ItemIsSelectable)
        if grey:
            item.setForeground(QBrush(GREY))
        return item

    def _type_combo(self, name: str, current: str) -> QComboBox:
        combo = QComboBox()
        for kind in (*COLUMN_TYPES, LEFT_OUT):
            combo.addItem(self.tr(TYPE_TEXT[kind]), kind)
        combo.setCurrentIndex(combo.findData(current))
        combo.setToolTip(self.tr("binary: two levels, one 0/1 column; categorical: one 0/1 column per level; "
                                 "ordinal: ordered levels, one column of ranks; left out: not in the kit"))
        combo.currentIndexChanged.connect(lambda _=0, c=combo: self.set_type(name, c.currentData()))
        return combo

    def _missing_combo(self, name: str, current: str) -> QComboBox:
        combo = QComboBox()
        for policy, text in MISSING_TEXT.items():
            combo.addItem(self.tr(text), policy)
        combo.setCurrentIndex(combo.findData(current))
        combo.setToolTip(self.horizontalHeaderItem(COL_MISSING).toolTip())
        combo.currentIndexChanged.connect(lambda _=0, c=combo: self.set_missing(name, c.currentData()))
        return combo

    def _item_changed(self, item: QTableWidgetItem) -> None:
        if self._filling:
            return
        name = self.item(item.row(), COL_NAME).text() if self.item(item.row(), COL_NAME) else None
        if name is None:
            return
        if item.column() == COL_LEVELS:
            self.set_levels(name, item.text())
        elif item.column() == COL_OTHER and item.flags() & Qt.ItemIsUserCheckable:
            self.set_other(name, item.checkState() == Qt.Checked)

    def _fit_levels(self) -> None:
        """The levels column takes the width the others leave, but never less than LEVELS_WIDTH (a narrow
        window scrolls the grid sideways instead)."""
        others = sum(self.columnWidth(c) for c in range(self.columnCount()) if c != COL_LEVELS)
        width = max(LEVELS_WIDTH, self.viewport().width() - others)
        if width != self.columnWidth(COL_LEVELS):
            self.setColumnWidth(COL_LEVELS, width)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._fit_levels()

    # ---- test hooks ----------------------------------------------------------------------------------------
    def row_of(self, name: str) -> int:
        return self._rows[name]

    def type_combo(self, name: str) -> QComboBox | None:
        return self.cellWidget(self.row_of(name), COL_TYPE)

    def missing_combo(self, name: str) -> QComboBox | None:
        return self.cellWidget(self.row_of(name), COL_MISSING)

    def levels_item(self, name: str) -> QTableWidgetItem:
        return self.item(self.row_of(name), COL_LEVELS)

    def other_item(self, name: str) -> QTableWidgetItem:
        return self.item(self.row_of(name), COL_OTHER)

    def note(self, name: str) -> str:
        """Why a column is left out (its levels cell), or its levels or range."""
        return self.item(self.row_of(name), COL_LEVELS).text()
