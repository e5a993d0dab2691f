"""Export page: one sealed package per site (``AnalystRound.export`` in a job), the HTML report beside
them, and a checklist of what was written where. The report can also be printed to PDF (QTextDocument painted
page by page on a QPdfWriter, A4 or Letter, landscape pages for wide tables; the report's inline SVG plots are
rendered to images first, since QTextDocument does not draw SVG); ``report_pages`` draws the same pages as
images.

Test hooks: ``out_edit``, ``export_button``, ``export() -> Job``, ``job_panel``, ``checklist``
(QListWidget), ``outputs`` (core RunOutputs), ``pdf_button`` (asks a path through
``QFileDialog.getSaveFileName``), ``save_pdf(path) -> Job`` (prints in a job), ``open_folder_button``, ``message``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QByteArray, QLocale, QMarginsF, QRectF, QSize, QSizeF, Qt, QUrl
from PySide6.QtGui import (
    QColor,
    QDesktopServices,
    QFont,
    QImage,
    QPageLayout,
    QPageSize,
    QPainter,
    QPdfWriter,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextOption,
    QTextTable,
)
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.api import DCError, safe_name
from core.api.analyst import RunOutputs

from ..jobs import Job, QtThreadJob
from ..widgets import JobPanel, MessageLabel
from .common import ThrottledJob, hide_when_done
from .state import QtAnalystState

_SVG = re.compile(r"<svg\b.*?</svg>", re.S)
_BODY_RULE = re.compile(r"\bbody\{[^}]*\}")
_FIGURE = re.compile(r"<figure>(.*?)<figcaption>(.*?)</figcaption></figure>", re.S)


def _svg_image(svg: str, scale: float = 2.0) -> tuple[QImage, QSize]:
    renderer = QSvgRenderer(QByteArray(svg.encode("utf-8")))
    size = renderer.defaultSize()
    if not size.isValid() or size.isEmpty():
        size = QSize(400, 200)
    image = QImage(int(size.width() * scale), int(size.height() * scale), QImage.Format_ARGB32)
    image.fill(Qt.white)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    return image, size


PX_PER_INCH = 96.0  # the document's pixels (Qt's default resolution for a document without a paint device)
MARGIN_MM = 15.0
PAPERS = {"A4": QPageSize.A4, "Letter": QPageSize.Letter}


def page_layout(paper: str, landscape: bool) -> QPageLayout:
    """A4 or Letter, portrait or landscape, with the report's 15 mm margins."""
    return QPageLayout(QPageSize(PAPERS[paper]), QPageLayout.Landscape if landscape else QPageLayout.Portrait,
                       QMarginsF(MARGIN_MM, MARGIN_MM, MARGIN_MM, MARGIN_MM), QPageLayout.Millimeter)


def _full_page(paper: str, landscape: bool) -> QPageLayout:
    """The same page for the PDF writer, painted from the paper's corner (the page number sits in the margin)."""
    layout = page_layout(paper, landscape)
    layout.setMode(QPageLayout.FullPageMode)
    return layout


def _text_size(layout: QPageLayout) -> QSizeF:
    """The printable area of ``layout`` in the document's pixels."""
    r = layout.paintRect(QPageLayout.Inch)
    return QSizeF(r.width() * PX_PER_INCH, r.height() * PX_PER_INCH)


A4_TEXT_WIDTH = _text_size(page_layout("A4", False)).width()  # an A4 portrait page's printable width, in pixels


def default_paper() -> str:
    """Letter where the system's locale measures in inches (US), else A4."""
    return "Letter" if QLocale.system().measurementSystem() == QLocale.ImperialSystem else "A4"


def report_document(html: str, width: float = A4_TEXT_WIDTH) -> QTextDocument:
    """The report's HTML as a QTextDocument laid out at ``width`` (what :func:`report_to_pdf` prints).

    Lines wrap only between words (Qt's default also breaks inside a word that does not fit its column, the
    "clust er" of a narrow table column); a table whose words do not fit the width is then wider than it, which
    :func:`widest_table` measures. Design metrics keep the layout the same on screen, in images and on paper."""
    doc = QTextDocument()
    option = QTextOption()
    option.setWrapMode(QTextOption.WordWrap)
    doc.setDefaultTextOption(option)
    doc.setUseDesignMetrics(True)
    doc.setDocumentMargin(0)
    images: list[tuple[str, QImage]] = []

    def replace(match: re.Match) -> str:
        image, size = _svg_image(match.group(0))
        w, h = size.width(), size.height()
        if w > width - 20:  # a plot wider than the page is scaled down, not cut at the margin
            w, h = int(width - 20), int(h * (width - 20) / w)
        name = f"dcstudio-figure-{len(images)}.png"
        images.append((name, image))
        return f'<img src="{name}" width="{w}" height="{h}">'

    # the printed page has its own margins: no browser column (the body rule's margins indent every block)
    body = _BODY_RULE.sub("body{color:#111111}", html, count=1)
    # QTextDocument knows neither inline SVG nor <figure>: plots become images, figures plain paragraphs
    body = _FIGURE.sub(r'<p>\1<br><span style="color:#555555;font-size:small">\2</span></p>', body)
    body = _SVG.sub(replace, body)
    for name, image in images:
        doc.addResource(QTextDocument.ImageResource, QUrl(name), image)
    doc.setHtml(body)
    doc.setTextWidth(width)
    return doc


def tables(doc: QTextDocument) -> list[QTextTable]:
    """Every table of the document, in order (nested frames included)."""
    out, todo = [], [doc.rootFrame()]
    while todo:
        frame = todo.pop(0)
        if isinstance(frame, QTextTable):
            out.append(frame)
        todo[:0] = frame.childFrames()
    return out


def widest_table(doc: QTextDocument) -> float:
    """The width of the widest table as laid out (0 without tables), in the document's pixels: at most the
    text width when its columns fit, more when their words do not."""
    layout = doc.documentLayout()
    return max((layout.frameBoundingRect(t).width() for t in tables(doc)), default=0.0)


SHORT_SECTION = 0.3  # a section under this share of a portrait page's height prints beside its neighbours


@dataclass
class Part:
    """A run of the report's sections printed on pages of one orientation."""

    html: str
    landscape: bool
    doc: QTextDocument
    first: int = 0  # the number of pages before this part's
    total: int = 0  # pages in the whole report


def _sections(html: str) -> tuple[str, list[str], str]:
    """(head up to <body>, the body cut before each <h2>, the closing tags)."""
    m = re.search(r"<body[^>]*>", html)
    head, rest = (html[: m.end()], html[m.end():]) if m else ("", html)
    tail = ""
    if "</body>" in rest:
        rest, tail = rest[: rest.index("</body>")], rest[rest.index("</body>"):]
    cuts = [0, *[k.start() for k in re.finditer(r"<h2>", rest) if k.start() > 0], len(rest)]
    return head, [rest[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if rest[a:b].strip()], tail


def report_parts(html: str, paper: str) -> list[Part]:
    """The report cut into sections (at each <h2>), each on portrait pages unless one of its tables is wider
    than a portrait page's printable width, then on landscape pages (with a short section next to it);
    neighbouring sections of the same orientation share pages."""
    head, sections, tail = _sections(html)
    portrait = _text_size(page_layout(paper, False)).width()
    landscape = _text_size(page_layout(paper, True)).width()
    docs = [report_document(head + s + tail, portrait) for s in sections]
    wide = [widest_table(d) > portrait + 0.5 for d in docs]
    short = [d.size().height() < SHORT_SECTION * _text_size(page_layout(paper, False)).height() for d in docs]
    # a short section beside a landscape one joins it (no page holding only a title)
    wide = [w or (short[k] and (k + 1 < len(wide) and wide[k + 1] or k > 0 and wide[k - 1]))
            for k, w in enumerate(wide)]
    parts: list[Part] = []
    for k, section in enumerate(sections):
        if parts and parts[-1].landscape == wide[k]:
            parts[-1].html += section
        else:
            parts.append(Part(section, wide[k], None))
    first = 0
    for p in parts:
        p.html = head + p.html + tail
        p.doc = report_document(p.html, landscape if p.landscape else portrait)
        p.doc.setPageSize(_text_size(page_layout(paper, p.landscape)))
        keep_headings_with_content(p.doc)
        p.first, first = first, first + p.doc.pageCount()
    for p in parts:
        p.total = first
    return parts


HEADING_ROOM = 0.12  # a heading with less than this share of the page below it starts the next page


def keep_headings_with_content(doc: QTextDocument, rounds: int = 8) -> None:
    """Move every heading (h1–h4) that would sit at the foot of a page, with too little room under it for what it
    heads, to the top of the next page (a page break before it); the document is paginated (page size set).

    Each round lays the document out once, then walks its headings top to bottom, adding to each the shift the
    headings moved above it cause; the next round checks the estimate (a table row that then crosses a page
    edge shifts more) and moves what is still at a foot."""
    size = QSizeF(doc.pageSize())
    height = size.height()
    layout = doc.documentLayout()
    for _ in range(rounds):
        doc.setPageSize(size)  # lay the whole document out again
        headings = []
        block = doc.begin()
        while block.isValid():
            fmt = block.blockFormat()
            if 0 < fmt.headingLevel() <= 4 and fmt.pageBreakPolicy() != QTextFormat.PageBreak_AlwaysBefore:
                headings.append((block, layout.blockBoundingRect(block)))
            block = block.next()
        shift, moves = 0.0, []
        for block, rect in headings:
            top, bottom = rect.top() + shift, rect.bottom() + shift
            if (top // height + 1) * height - bottom < HEADING_ROOM * height and top % height > 1:
                moves.append(block)
                shift += (top // height + 1) * height - top
        if not moves:
            return
        for block in moves:
            fmt = block.blockFormat()
            fmt.setPageBreakPolicy(QTextFormat.PageBreak_AlwaysBefore)
            QTextCursor(block).setBlockFormat(fmt)
    doc.setPageSize(size)


def _paint_part(part: Part, paper: str, device_dpi: float, begin_page: Callable[[int], QPainter]) -> None:
    """Draw a part's pages: the document paginated at the printable area's height, each page scaled from the
    document's 96 px per inch to the device's dots and placed inside the margins, "page i of n" centred in the
    bottom margin; ``begin_page(i)`` gives the painter of page i, its origin at the paper's top-left."""
    doc = part.doc
    layout = page_layout(paper, part.landscape)
    margin = layout.paintRect(QPageLayout.Inch).topLeft()
    size = _text_size(layout)
    doc.setPageSize(size)
    scale = device_dpi / PX_PER_INCH
    font = QFont(doc.defaultFont())
    font.setPixelSize(11)
    for i in range(doc.pageCount()):
        painter = begin_page(i)
        painter.save()
        painter.translate(margin.x() * device_dpi, margin.y() * device_dpi)
        painter.scale(scale, scale)
        painter.save()
        painter.translate(0, -i * size.height())
        # clipped to the page's height only: anything wider than the text would show in the margin, not vanish
        doc.drawContents(painter, QRectF(0, i * size.height(), size.width() + margin.x() * PX_PER_INCH,
                                         size.height()))
        painter.restore()
        painter.setFont(font)
        painter.setPen(QColor("#6b7280"))
        painter.drawText(QRectF(0, size.height() + 12, size.width(), 20), int(Qt.AlignHCenter | Qt.AlignTop),
                         f"page {part.first + i + 1} of {part.total}")
        painter.restore()


def _part_images(part: Part, paper: str, dpi: float) -> list[QImage]:
    """A part's pages as white images at ``dpi``, margins included."""
    full = page_layout(paper, part.landscape).fullRect(QPageLayout.Inch)
    images: list[QImage] = []
    painters: list[QPainter] = []

    def begin_page(_: int) -> QPainter:
        if painters:
            painters[-1].end()
        image = QImage(round(full.width() * dpi), round(full.height() * dpi), QImage.Format_RGB32)
        image.fill(Qt.white)
        images.append(image)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.Antialiasing)
        painter.setRenderHint(QPainter.SmoothPixmapTransform)
        painters.append(painter)
        return painter

    _paint_part(part, paper, dpi, begin_page)
    if painters:
        painters[-1].end()
    return images


def report_pages(html: str, paper: str | None = None, dpi: float = 50.0) -> list[tuple[QImage, bool]]:
    """The PDF's pages as images (white paper; the parts, pagination and margins of :func:`report_to_pdf`),
    each with whether it is landscape."""
    paper = paper or default_paper()
    return [(image, part.landscape) for part in report_parts(html, paper)
            for image in _part_images(part, paper, dpi)]


def report_to_pdf(html: str, path: str | Path, paper: str | None = None) -> Path:
    """Print the report's HTML to a PDF file (written to a temporary name, then renamed): A4 or Letter
    (:func:`default_paper`), portrait pages, and landscape pages for sections with a table too wide for
    portrait (:func:`report_parts`)."""
    path = Path(path)
    paper = paper or default_paper()
    parts = report_parts(html, paper)
    tmp = path.with_name(f".{path.name}.tmp")
    writer = QPdfWriter(str(tmp))
    writer.setResolution(600)
    writer.setTitle(path.stem)
    writer.setCreator("DC Studio")
    writer.setPageLayout(_full_page(paper, parts[0].landscape))
    painter = QPainter(writer)
    try:
        for k, part in enumerate(parts):
            if k:
                writer.setPageLayout(_full_page(paper, part.landscape))
                writer.newPage()
            _paint_part(part, paper, writer.resolution(), lambda i: (i and writer.newPage(), painter)[1])
    finally:
        painter.end()
    if not tmp.exists() or tmp.stat().st_size == 0:
        raise OSError(f"could not write {path}")
    os.replace(tmp, path)
    return path


class ExportPage(QWidget):
    def __init__(self, state: QtAnalystState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.outputs: RunOutputs | None = None
        self._job: Job | None = None
        heading = QLabel(self.tr("<h2>Export</h2><p>Write one package per site. Each package is encrypted to "
                                 "that site and signed by you; carry each site <i>only its own</i> package. "
                                 "The report (HTML, optionally PDF) records settings, seeds, versions and the "
                                 "digest of every file in and out.</p>"))
        heading.setWordWrap(True)
        self.out_edit = QLineEdit()
        browse = QPushButton(self.tr("&Browse…"))
        browse.clicked.connect(self._browse)
        self.export_button = QPushButton(self.tr("Write &packages"))
        self.export_button.setDefault(True)
        self.export_button.clicked.connect(self.export)
        row = QHBoxLayout()
        row.addWidget(QLabel(self.tr("Output folder:")))
        row.addWidget(self.out_edit, 1)
        row.addWidget(browse)
        row.addWidget(self.export_button)
        self.job_panel = JobPanel()
        hide_when_done(self.job_panel)
        self.message = MessageLabel()
        self.warning = MessageLabel()
        self.checklist = QListWidget()
        self.checklist.setAlternatingRowColors(True)
        self.pdf_button = QPushButton(self.tr("Save the report as P&DF…"))
        self.pdf_button.clicked.connect(self._ask_pdf)
        self.open_folder_button = QPushButton(self.tr("&Open the folder"))
        self.open_folder_button.clicked.connect(self._open_folder)
        self.open_report_button = QPushButton(self.tr("Open the &report"))
        self.open_report_button.clicked.connect(self._open_report)
        after = QHBoxLayout()
        after.addWidget(self.pdf_button)
        after.addWidget(self.open_report_button)
        after.addWidget(self.open_folder_button)
        after.addStretch(1)
        lay = QVBoxLayout(self)
        lay.addWidget(heading)
        lay.addLayout(row)
        lay.addWidget(self.warning)
        lay.addWidget(self.job_panel)
        lay.addWidget(self.message)
        lay.addWidget(QLabel(self.tr("What was written where:")))
        lay.addWidget(self.checklist, 1)
        lay.addLayout(after)
        state.result_changed.connect(self._result_changed)
        self._result_changed()

    def _result_changed(self) -> None:
        s = self.state
        self.outputs = None
        self.checklist.clear()
        self.message.clear_message()
        for b in (self.pdf_button, self.open_folder_button, self.open_report_button):
            b.setEnabled(False)
        self.export_button.setEnabled(s.result is not None and not s.unconfirmed_sites(s.result_bundles))
        if s.result is not None and s.kit_path is not None and not self.out_edit.text().strip():
            self.out_edit.setText(str(Path(s.kit_path).parent / f"{safe_name(s.kit.name)}-packages"))

    def showEvent(self, event) -> None:  # noqa: N802
        unconfirmed = self.state.unconfirmed_sites(self.state.result_bundles)
        if unconfirmed:
            self.warning.show_message("warning", self.tr(
                "Fingerprints not confirmed with: {sites}. Packages are encrypted to the keys in their bundles; "
                "confirm them on the Bundles page first (export waits).").format(sites=", ".join(unconfirmed)))
        else:
            self.warning.clear_message()
        super().showEvent(event)

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, self.tr("Folder for the packages"), self.out_edit.text())
        if path:
            self.out_edit.setText(path)

    def export(self) -> Job | None:
        s = self.state
        if s.session is None or s.result is None:
            self.message.show_message("error", self.tr("Train first: there is nothing to export yet."))
            return None
        if s.unconfirmed_sites(s.result_bundles):
            self.message.show_message("error", self.tr("Confirm every site's fingerprint on the Bundles page first."))
            return None
        if self.job_panel.busy:
            return None
        out = self.out_edit.text().strip()
        if not out:
            self.message.show_message("error", self.tr("Choose an output folder."))
            return None
        out_dir = Path(out)
        session, run, bundles = s.session, s.run, s.result_bundles
        self.message.clear_message()
        self.checklist.clear()
        self.export_button.setEnabled(False)

        def work(control):
            out_dir.mkdir(parents=True, exist_ok=True)
            with s.workspace_lock:
                return session.export(run, out_dir, control)

        job = ThrottledJob(work, self.tr("Sealing {n} package(s)").format(n=len(bundles)))
        job.succeeded.connect(self._exported)
        job.failed.connect(self._failed)
        job.ended.connect(lambda: self.export_button.setEnabled(self.state.result is not None))
        self._job = job
        return self.job_panel.run(job)

    def _failed(self, message: str) -> None:
        self.message.show_message("error", message)

    def _check(self, text: str, tooltip: str = "") -> QListWidgetItem:
        item = QListWidgetItem("✓  " + text)
        item.setToolTip(tooltip)
        self.checklist.addItem(item)
        return item

    def _exported(self, outputs: RunOutputs) -> None:
        self.outputs = outputs
        self.checklist.clear()
        for b, p in zip(self.state.result_bundles, outputs.packages, strict=True):
            self._check(self.tr("package for {site}: {path} ({size:,} bytes) — for {site} only; encrypted to "
                                "{fp}").format(site=b.site, path=p.path, size=p.size, fp=b.fingerprint),
                        f"sha256 {p.digest}")
        self._check(self.tr("report: {path}").format(path=outputs.report))
        self._check(self.tr("summary (JSON): {path}").format(path=outputs.summary))
        self._check(self.tr("one audit-log entry per package: {path}").format(
            path=self.state.session.workspace.audit.path))
        self.message.show_message("ok", self.tr("{n} package(s) written to {out}.").format(
            n=len(outputs.packages), out=outputs.report.parent))
        for b in (self.pdf_button, self.open_folder_button, self.open_report_button):
            b.setEnabled(True)

    def _ask_pdf(self) -> None:
        if self.outputs is None:
            return
        default = str(self.outputs.report.with_suffix(".pdf"))
        path, _ = QFileDialog.getSaveFileName(self, self.tr("Save the report as PDF"), default,
                                              self.tr("PDF (*.pdf)"))
        if path:
            self.save_pdf(path)

    def save_pdf(self, path: str | Path) -> Job | None:
        """Print the report to ``path`` in a job (laying out and painting the pages takes seconds for a large
        round: never on the window's thread); the checklist and the message say where it went."""
        if self.outputs is None:
            self.message.show_message("error", self.tr("Write the packages first."))
            return None
        if self.job_panel.busy:
            return None
        report = self.outputs.report

        def work(control):
            control.step(0.0, "laying out and printing the pages")
            try:
                return report_to_pdf(report.read_text(encoding="utf-8"), path)
            except OSError as exc:
                raise DCError(f"the PDF could not be written ({exc.strerror or exc})", path=path) from exc

        self.message.clear_message()
        self.pdf_button.setEnabled(False)
        job = QtThreadJob(work, self.tr("Saving the report as PDF"))
        job.succeeded.connect(self._pdf_saved)
        job.failed.connect(self._failed)
        job.ended.connect(lambda: self.pdf_button.setEnabled(self.outputs is not None))
        self._job = job
        return self.job_panel.run(job)

    def _pdf_saved(self, out: Path) -> None:
        self._check(self.tr("report (PDF): {path}").format(path=out))
        self.message.show_message("ok", self.tr("Report saved as {path}.").format(path=out))

    def _open_folder(self) -> None:
        if self.outputs is not None:
            self._open(self.outputs.report.parent, self.tr("a folder"))

    def _open_report(self) -> None:
        if self.outputs is not None:
            self._open(self.outputs.report, self.tr("a web page (a browser)"))

    def _open(self, path: Path, what: str) -> bool:
        """Open ``path`` with the computer's own program; when there is none, say so and where the file is."""
        if QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            return True
        self.message.show_message("warning", self.tr(
            "This computer has no program set up to open {what}, so nothing opened. The file is at {path} — copy "
            "that path, or save the report as PDF.").format(what=what, path=path))
        return False
