"""Page 2: the project kit — open and verify it, confirm the analyst's fingerprint, see what it asks."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFormLayout, QGroupBox, QLabel, QLineEdit, QVBoxLayout

from core.api import DCError, read_fingerprint
from core.api.common import METHODS, Kit, get_method
from core.api.participant import analyst_pin_status

from ..widgets import FingerprintView, esc
from .common import ANCHOR_WORDS, LABELS_LEAVE_WORDS, Page, PathField


def kit_request_html(kit: Kit, tr=QObject.tr) -> str:
    """What the project asks of a site, in plain words (HTML); ``tr`` translates."""
    schema = kit.schema
    names = schema.feature_names
    typed = {f.name: f.type for f in schema.features}
    shown = ", ".join(esc(n) + ("" if typed[n] == "numeric" else f" ({typed[n]})") for n in names[:30]) \
        + (", …" if len(names) > 30 else "")
    lines = [tr("<b>{m} columns</b>: {names}").format(m=len(names), names=shown)]
    if schema.ignored:
        lines.append(tr("<b>Left out</b>: {cols}").format(cols="; ".join(
            f"{esc(c.name or '(no name)')} ({esc(c.reason)})" for c in schema.ignored[:20])))
    try:
        method = get_method(kit.method, kit.settings)
        title, labels_leave = method.title, method.labels_leave
        if labels_leave == "none" and method.labels_at_site:
            labels_leave = "used"
    except DCError:
        title, labels_leave = kit.method, "rows"
    if schema.label:
        classes = ", ".join(esc(c) for c in schema.classes[:20]) + (", …" if len(schema.classes) > 20 else "")
        lines.append(tr("<b>Label column</b> {label} with the classes {classes}").format(
            label=esc(schema.label), classes=classes))
    else:
        lines.append(tr("<b>No label column</b>: the project groups rows without labels"))
    if schema.id_column:
        lines.append(tr("<b>Row id column</b> {col} (it leaves only as keyed hashes the analyst cannot reverse)")
                     .format(col=esc(schema.id_column)))
    blocks = getattr(schema, "block_names", None) or []
    if len(blocks) > 1:
        lines.append(tr("<b>Feature blocks</b> (each site holds the columns of one): {blocks}").format(
            blocks=esc(schema.describe_blocks())))
    plain = getattr(METHODS.get(kit.method), "plain_title", "")
    lines.append(tr("<b>What the analyst will build</b>: {what}").format(what=esc(tr(plain)))
                 + f' <span style="color:#6b7280" title="{esc(title)}">({esc(kit.method)})</span>'
                 if plain else tr("<b>Method</b>: {title}").format(title=esc(title)))
    per_row = numbers_per_row_words(kit, tr)
    what = getattr(METHODS.get(kit.method), "what_leaves", "")
    if per_row:
        lines.append(per_row)
    elif what:  # a method whose rows never leave, not even compressed: what does
        lines.append(tr("What leaves this site: {what} (the privacy page shows exactly what, before anything is "
                        "sealed).").format(what=esc(tr(what))))
    if schema.label:
        lines.append(tr("Labels that leave: {what}").format(
            what=esc(tr(LABELS_LEAVE_WORDS.get(labels_leave, labels_leave)))))
    anchor = kit.anchor or {}
    if anchor:
        kind = str(anchor.get("kind", ""))
        lines.append(tr("Shared anchor data: {kind}, {rows:,} rows (made by one lead site, never seen by the "
                        "analyst)").format(kind=esc(tr(ANCHOR_WORDS.get(kind, kind))),
                                           rows=int(anchor.get("rows", 0))))
    lines.append(tr("<b>Threat model</b> (who your privacy check counts): {who}").format(
        who=esc(" ".join(kit.threat.lines()), quote=False)))
    return "<ul>" + "".join(f"<li>{line}</li>" for line in lines) + "</ul>"


def numbers_per_row_words(kit: Kit, tr=QObject.tr) -> str:
    """How many numbers each row keeps when it leaves (the method's own rule for the kit's encoded columns,
    :meth:`core.methods.Method.numbers_per_row`: the value the privacy page starts from and the bundle carries), in
    one sentence; "" for a method whose rows do not leave compressed."""
    cls = METHODS.get(kit.method)
    if cls is None:
        return ""
    schema = kit.schema
    blocks = list(getattr(schema, "block_names", None) or [])
    if len(blocks) > 1:  # a site holds the columns of one block
        widths = [(b, cls.numbers_per_row({}, schema.block_schema(b).width)) for b in blocks]
        if any(d is None for _, d in widths):
            return ""
        each = ", ".join(f"{d} for the block {esc(b)}" for b, d in widths)
        return tr("Your rows are compressed and scrambled on this computer before anything leaves: {each} numbers "
                  "per row (you may choose fewer on the privacy page); the secret key that does it never "
                  "leaves.").format(each=each)
    d = cls.numbers_per_row({}, schema.width)
    if d is None:
        return ""
    how = (tr("as many as your columns make once text and empty cells are coded, secretly mixed") if d == schema.width
           else tr("your columns make {m} numbers once text and empty cells are coded").format(m=schema.width))
    return tr("Your rows are compressed and scrambled on this computer before anything leaves: <b>{d} numbers per "
              "row</b> ({how}; you may keep fewer on the privacy page). The secret key that does it never "
              "leaves.").format(d=d, how=how)


class KitPage(Page):
    """Open the ``.dckit`` the analyst sent (verified by :meth:`Kit.load`) and confirm who signed it.

    The first time this workspace sees the project, the person types (or scans) the fingerprint the analyst read
    to them, and the page goes on only when it is the kit's signer (issue #26 finding 7); later kits of the
    project must carry the pinned key (checked by core), so nothing is asked.

    Test hooks: ``kit_field`` (PathField; ``set_path`` loads), ``project_label``, ``analyst_view``
    (FingerprintView), ``fingerprint_edit``, ``known_label``, ``request_label``.
    """

    def __init__(self):
        super().__init__(self.tr("The project kit"),
                         self.tr("The analyst sent you a project kit (a .dckit file). It says which columns to "
                                 "use and who the analyst is."))
        self.kit: Kit | None = None
        self.kit_path: Path | None = None
        self.kit_field = PathField("projects", "open", self.tr("DC Studio project kit (*.dckit)"),
                                   self.tr("Open the project kit"))
        self.kit_field.changed.connect(self.load_kit)
        form = QFormLayout()
        form.addRow(self.tr("Project &kit:"), self.kit_field)
        self.project_label = QLabel()
        self.project_label.setWordWrap(True)
        self.analyst_view = FingerprintView()
        self.first_use = True
        self.pin_warning: str | None = None  # why a pin there is not trusted (the fingerprint is asked again)
        self.fingerprint_edit = QLineEdit()
        self.fingerprint_edit.setPlaceholderText(self.tr("e.g. K8ZA-XT1E-2PKR-1GNP"))
        self.fingerprint_edit.setToolTip(self.tr("Ask the analyst to read you their fingerprint by phone or in "
                                                 "person and type it here (a barcode scanner can enter it from "
                                                 "their printed card). Case, spaces and dashes do not matter."))
        self.fingerprint_edit.textChanged.connect(self._typed)
        self.fingerprint_label = QLabel(self.tr("&Fingerprint the analyst read to you:"))
        self.fingerprint_label.setBuddy(self.fingerprint_edit)
        self.typed_label = QLabel()
        self.typed_label.setWordWrap(True)
        self.known_label = QLabel()
        self.known_label.setWordWrap(True)
        box = QGroupBox(self.tr("Who made it"))
        bl = QVBoxLayout(box)
        bl.addWidget(self.project_label)
        bl.addWidget(self.analyst_view)
        bl.addWidget(self.fingerprint_label)
        bl.addWidget(self.fingerprint_edit)
        bl.addWidget(self.typed_label)
        bl.addWidget(self.known_label)
        self.request_label = QLabel()
        self.request_label.setWordWrap(True)
        ask = QGroupBox(self.tr("What the project will ask of this site"))
        QVBoxLayout(ask).addWidget(self.request_label)
        self.details = [box, ask]
        self.body.addLayout(form)
        self.body.addWidget(box)
        self.body.addWidget(ask)
        self.body.addStretch(1)
        self._show(None)

    def initializePage(self) -> None:
        if self.kit is None and self.kit_field.path():
            self.load_kit(self.kit_field.path())
        elif self.kit is not None:
            self._check_roster()

    def load_kit(self, path: str) -> None:
        self.message.clear_message()
        if not path:
            self._show(None)
            return
        try:
            kit = Kit.load(path)
        except DCError as exc:
            self._show(None)
            self.message.show_message("error", str(exc))
            return
        except OSError as exc:
            self._show(None)
            self.message.show_message("error", f"{path}: {exc.strerror or exc}")
            return
        pinned = self._pinned_problem(kit)
        if pinned:
            self._show(None)
            self.message.show_message("error", pinned)
            return
        self.kit_path = Path(path)
        self.kit_field.remember()
        self._show(kit)
        if self.pin_warning:  # a pin is there but cannot be trusted: say why the fingerprint is asked again
            self.message.show_message("warning", self.pin_warning)
        self._check_roster()

    def _pinned_problem(self, kit: Kit) -> str:
        """Trust on first use: a kit for a project this workspace knows must carry the analyst key it pinned."""
        workspace = self.wizard().workspace() if self.wizard() is not None else None
        identity = self.wizard().identity if self.wizard() is not None else None
        self.first_use, self.pin_warning = True, None
        if workspace is None or identity is None:
            return ""
        try:
            # "new" also when the pin there is not signed by this identity: the fingerprint is asked again
            status, self.pin_warning = analyst_pin_status(workspace, kit, identity.card)  # another key: refused
            self.first_use = status == "new"
        except DCError as exc:
            return str(exc)
        return ""

    def analyst_confirmed(self) -> bool:
        """The analyst's key is known to this workspace, or the fingerprint typed here is the kit's signer's."""
        return self.kit is not None and (not self.first_use
                                         or read_fingerprint(self.fingerprint_edit.text())
                                         == self.kit.analyst.fingerprint)

    def _typed(self, text: str) -> None:
        typed = read_fingerprint(text)
        matches = self.kit is not None and typed == self.kit.analyst.fingerprint
        self._show_expected(self.kit is not None and (not self.first_use or matches))
        if self.kit is None or not text.strip():
            self.typed_label.setText("")
        elif matches:
            self.typed_label.setText(self.tr("✔ It matches the key that signed this kit (shown above)."))
        elif typed is not None:
            self.typed_label.setText(self.tr(
                "<span style='color:#b91c1c'>✘ {typed} is not the key that signed this kit. Do not go on: call the "
                "analyst on a number you already know and ask which key is genuine.</span>").format(typed=typed))
        else:
            self.typed_label.setText(self.tr("A fingerprint has 16 letters and digits, e.g. K8ZA-XT1E-2PKR-1GNP."))
        self.completeChanged.emit()

    def _show_expected(self, shown: bool) -> None:
        """Ask first, compare after (issue #33 item 12): on first use the kit signer's fingerprint (and its QR code,
        which holds it too) stays hidden until what the person typed matches it, so it cannot be copied into the
        box that asks what the analyst read out; a mismatch never reveals it."""
        self.analyst_view.set_fingerprint(self.kit.analyst.fingerprint if shown and self.kit is not None else "")
        self.analyst_view.setVisible(shown)

    def _check_roster(self) -> None:
        ident = getattr(self.state, "identity", None) if self.wizard() is not None else None
        if self.kit is not None and ident is not None and not self.kit.roster_allows(ident.card):
            self.message.show_message(
                "error", self.tr("This kit lists the sites it expects, and your identity ({fp}) is not one of them. "
                                 "Ask the analyst to add your public card to the kit.").format(
                    fp=ident.card.fingerprint))
        self.completeChanged.emit()

    def _show(self, kit: Kit | None) -> None:
        changed = kit is None or self.kit is None or kit.digest() != self.kit.digest()
        self.kit = kit
        for w in self.details:
            w.setVisible(kit is not None)
        if changed:
            self.fingerprint_edit.clear()
        asking = kit is not None and self.first_use
        for w in (self.fingerprint_label, self.fingerprint_edit, self.typed_label):
            w.setVisible(asking)
        self.known_label.setVisible(kit is not None and not self.first_use)
        if kit is None:
            self.kit_path = None
        else:
            self.project_label.setText(
                self.tr("<h2>{name}</h2>Signed by the analyst <b>{analyst}</b>. Its signature checks out.").format(
                    name=esc(kit.name), analyst=esc(kit.analyst.name))
                + (self.tr(" This is the first kit of this project on this computer: ask the analyst to read you "
                           "their fingerprint (by phone or in person) and type it below. It is compared with the "
                           "key that signed the kit once you have typed it.") if self.first_use else ""))
            self.known_label.setText(self.tr("This computer already works with this analyst on this project: the "
                                             "kit carries the same key as before."))
            self.request_label.setText(kit_request_html(kit, self.tr))
        self._typed(self.fingerprint_edit.text())  # the signer's fingerprint: shown only when known or matched
        self.completeChanged.emit()

    def isComplete(self) -> bool:
        if not self.analyst_confirmed():
            return False
        ident = getattr(self.state, "identity", None) if self.wizard() is not None else None
        return ident is None or self.kit.roster_allows(ident.card)
