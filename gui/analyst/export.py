"""Export page: one sealed package per site (``AnalystRound.export`` in a job), the HTML report beside
them, and a checklist of what was written where. The report can also be printed to PDF with Qt's printer
(QTextDocument + QPrinter; the report's inline SVG plots are rendered to images first, since
QTextDocument does not draw SVG).

Test hooks: ``out_edit``, ``export_button``, ``export() -> Job``, ``job_panel``, ``checklist``
(QListWidget), ``outputs`` (core RunOutputs), ``pdf_button`` (asks a path through
``QFileDialog.getSaveFileName``), ``save_pdf(path) -> Path``, ``open_folder_button``, ``message``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from PySide6.QtCore import QByteArray, QSize, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QImage, QPageSize, QPainter, QTextDocument
from PySide6.QtPrintSupport import QPrinter
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

from core.analyst import RunOutputs
from core.errors import DCError
from core.fileio import safe_name

from ..jobs import Job
from ..widgets import JobPanel, MessageLabel
from .common import ThrottledJob, hide_when_done
from .state import QtAnalystState

_SVG = re.compile(r"<svg\b.*?</svg>", re.S)
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


# the printable width of an A4 page with Qt's default margins, in the document's pixels (96 dpi)
A4_TEXT_WIDTH = 680.0


def report_document(html: str, width: float = A4_TEXT_WIDTH) -> QTextDocument:
    """The report's HTML as a QTextDocument laid out at ``width`` (what :func:`report_to_pdf` prints)."""
    doc = QTextDocument()
    images: list[tuple[str, QImage]] = []

    def replace(match: re.Match) -> str:
        image, size = _svg_image(match.group(0))
        w, h = size.width(), size.height()
        if w > width - 20:  # a plot wider than the page is scaled down, not cut at the margin
            w, h = int(width - 20), int(h * (width - 20) / w)
        name = f"dcstudio-figure-{len(images)}.png"
        images.append((name, image))
        return f'<img src="{name}" width="{w}" height="{h}">'

    # QTextDocument knows neither inline SVG nor <figure>: plots become images, figures plain paragraphs
    body = _FIGURE.sub(r'<p>\1<br><span style="color:#555555;font-size:small">\2</span></p>', html)
    body = _SVG.sub(replace, body)
    for name, image in images:
        doc.addResource(QTextDocument.ImageResource, QUrl(name), image)
    doc.setHtml(body)
    doc.setTextWidth(width)
    return doc


def report_to_pdf(html: str, path: str | Path) -> Path:
    """Print the report's HTML to a PDF file (written to a temporary name, then renamed)."""
    path = Path(path)
    doc = report_document(html)
    printer = QPrinter(QPrinter.HighResolution)
    printer.setOutputFormat(QPrinter.PdfFormat)
    printer.setPageSize(QPageSize(QPageSize.A4))
    tmp = path.with_name(f".{path.name}.tmp")
    printer.setOutputFileName(str(tmp))
    doc.print_(printer)
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

    def save_pdf(self, path: str | Path) -> Path | None:
        if self.outputs is None:
            self.message.show_message("error", self.tr("Write the packages first."))
            return None
        try:
            html = self.outputs.report.read_text(encoding="utf-8")
            out = report_to_pdf(html, path)
        except (OSError, DCError) as exc:
            self.message.show_message("error", str(exc))
            return None
        self._check(self.tr("report (PDF): {path}").format(path=out))
        self.message.show_message("ok", self.tr("Report saved as {path}.").format(path=out))
        return out

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
