"""Issue #27 point 4: the report's PDF, checked on its pages.

PySide6_Essentials has no QtPdf to read a PDF back, so the pages are drawn to images by ``report_pages`` —
the parts, pagination and margins ``report_to_pdf`` prints — and the PDF's own page boxes are read from its
page dictionaries. A DC-CFL report (five sites with long names, seven classes, notes, a real linkage of their
label mixes) and a GOLD report (a real fit on three small sites) are checked."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtGui import QImage, QPageLayout, QTextImageFormat  # noqa: E402

from core.learn.client_clustering import LabelDistributionClustering  # noqa: E402
from core.methods import FitContext, MethodResult, get_method  # noqa: E402
from core.methods.base import ReceivedBundle, SiteInput  # noqa: E402
from core.report import render_report  # noqa: E402
from gui.analyst.export import (  # noqa: E402
    HEADING_ROOM,
    MARGIN_MM,
    _text_size,
    page_layout,
    report_pages,
    report_parts,
    report_to_pdf,
    tables,
)
from tests.report import cards  # noqa: E402

CLASSES = [f"class {k}" for k in range(7)]
NAMES = ["Hôpital du Val-d'Oise", "Centre hospitalier universitaire de Nantes", "Klinikum Süd", "St Mary's",
         "north-referral"]
NOTE = ("its cluster's model did not beat the site's own model (cross-validated at the site) by more than 1.645 "
        "standard errors (one-sided 5 %); the site keeps its own model")


def dccfl_report() -> str:
    rng = np.random.default_rng(0)
    counts = np.array([rng.multinomial(400, p) for p in ([.4, .2, .1, .1, .1, .05, .05], [.05] * 5 + [.4, .35])
                       for _ in range(3)][:5])
    clus = LabelDistributionClustering(method="complete").fit(counts)
    sites = [{"site": n, "fingerprint": f"AB12-CD34-EF56-GH7{i}", "rows": 4537, "cluster": 1 + i % 2,
              "model": "own", "own_kind": "linear", "note": NOTE if i % 2 else "",
              "label_counts": [int(c) for c in counts[i]],
              "expected": {"accuracy": 0.81, "rows": 4537, "low": 0.7, "high": 0.87, "weak": False},
              "own_model": cards.own(rows=4537)} for i, n in enumerate(NAMES)]
    summary = {"method": "dccfl", "task": "classification", "t": 0.3, "t_auto": True, "n_clusters": 2,
               "sites": sites, "validation_curve": {"0.1": 0.7, "0.3": 0.8, "0.6": 0.75}, "settings": {},
               "inputs": [], "packages": []}
    result = MethodResult("dccfl", [({"classes": CLASSES}, {}) for _ in NAMES], summary,
                          {"distances": clus.distances_, "linkage": clus.linkage_})
    return render_report(cards.kit(tuple(CLASSES)), get_method("dccfl"), result, summary)


def gold_report() -> str:
    m = get_method("gold", {"k": 4})
    rng = np.random.default_rng(1)
    centres = np.array([[0, 0, 0], [12, 0, 0], [0, 12, 0], [12, 12, 12]], dtype=float)
    X = np.vstack([c + rng.standard_normal((90, 3)) for c in centres]) * [10, 1, 100] + [50, 5, 1000]
    bundles = []
    for i, part in enumerate(np.array_split(rng.permutation(len(X)), 3)):
        ex = m.site_compute(SiteInput(X[part], None, [], None, settings=m.check_site_settings({"seed": i})))
        bundles.append(ReceivedBundle(f"ward {i}", f"fp{i}", "d", f"e{i}",
                                      {**ex.manifest, "method": "gold", "family": m.family}, dict(ex.arrays)))
    res = m.fit(bundles, FitContext([]))
    kit = cards.kit(method="gold")
    return render_report(kit, m, res, {**res.summary, "inputs": [], "packages": []})


@pytest.fixture(scope="module")
def dccfl_html():
    return dccfl_report()


def _broken_words(doc) -> list[str]:
    """Every table cell line that ends inside a word (not after a space, a hyphen or a slash)."""
    bad = []
    for table in tables(doc):
        for r in range(table.rows()):
            for c in range(table.columns()):
                cell = table.cellAt(r, c)
                block = cell.firstCursorPosition().block()
                while block.isValid() and block.position() <= cell.lastCursorPosition().position():
                    text, layout = block.text(), block.layout()
                    for k in range(layout.lineCount() - 1):
                        end = layout.lineAt(k).textStart() + layout.lineAt(k).textLength()
                        if 0 < end < len(text) and text[end - 1] not in " -/" and text[end] != " ":
                            bad.append(f"{text[:end]}|{text[end:]}")
                    block = block.next()
    return bad


def _header_lines(doc) -> list[tuple[str, int]]:
    """(header text, lines it takes) for every table's first row."""
    out = []
    for table in tables(doc):
        for c in range(table.columns()):
            block = table.cellAt(0, c).firstCursorPosition().block()
            out.append((block.text(), block.layout().lineCount()))
    return out


def _images_fit_their_cells(doc) -> list[str]:
    """Images (the bars) wider than the table cell they sit in."""
    bad = []
    layout = doc.documentLayout()
    for table in tables(doc):
        for r in range(table.rows()):
            for c in range(table.columns()):
                cell = table.cellAt(r, c)
                block = cell.firstCursorPosition().block()
                it = block.begin()
                while not it.atEnd():
                    fmt = it.fragment().charFormat()
                    if fmt.isImageFormat():
                        width = QTextImageFormat(fmt).width()
                        if width > layout.blockBoundingRect(block).width() + 0.5:
                            bad.append(f"row {r} column {c}: {width} px")
                    it += 1
    return bad


def _right_margin_is_blank(image: QImage, dpi: float) -> bool:
    margin = round(MARGIN_MM / 25.4 * dpi)
    x0 = image.width() - margin + 2
    return all(image.pixelColor(x, y).lightness() > 250 for x in range(x0, image.width())
               for y in range(0, image.height(), 2))


def _headings_at_a_page_foot(doc) -> list[str]:
    height, layout, out = doc.pageSize().height(), doc.documentLayout(), []
    block = doc.begin()
    while block.isValid():
        if block.blockFormat().headingLevel():
            rect = layout.blockBoundingRect(block)
            if (rect.top() // height + 1) * height - rect.bottom() < HEADING_ROOM * height:
                out.append(block.text())
        block = block.next()
    return out


def _ink_in_bottom_margin(image: QImage, dpi: float) -> bool:
    margin = round(MARGIN_MM / 25.4 * dpi)
    return any(image.pixelColor(x, y).lightness() < 200 for x in range(image.width() // 3, 2 * image.width() // 3)
               for y in range(image.height() - margin, image.height()))


def _pdf_boxes(path) -> list[tuple[float, float]]:
    """(width, height) in points of each page, from the PDF's page dictionaries (Qt writes them uncompressed)."""
    return [(float(w), float(h)) for w, h in
            re.findall(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", path.read_bytes())]


@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_dccfl_report_prints_with_whole_words_labelled_bars_and_the_dendrogram(qtbot, tmp_path, dccfl_html,
                                                                               paper):
    parts = report_parts(dccfl_html, paper)
    assert any(p.landscape for p in parts), "the Sites table with its fingerprints needs a landscape page"
    for part in parts:
        width = _text_size(page_layout(paper, part.landscape)).width()
        assert all(part.doc.documentLayout().frameBoundingRect(t).width() <= width + 0.5
                   for t in tables(part.doc)), "a table wider than the printable area"
        assert _broken_words(part.doc) == []
        assert all(lines <= max(1, len(text.split())) for text, lines in _header_lines(part.doc))
        assert _images_fit_their_cells(part.doc) == []
        assert _headings_at_a_page_foot(part.doc) == []
    text = "\n".join(p.doc.toPlainText() for p in parts)
    assert "1 = class 0; 2 = class 1" in text and "7 = class 6" in text  # the bars' legend under the Sites table
    tables_text = text[: text.index("Model cards")]  # (each card repeats its site's note)
    assert "Notes:" in tables_text and tables_text.count(NOTE) == 1  # one line for both sites, not a column
    assert "Sites grouped by the method" in text  # the dendrogram's caption, under its image
    assert "cut 0.3" in dccfl_html and all(f">{n}</text>" in dccfl_html for n in ("Klinikum Süd", "St Mary's"))

    dpi = 40
    pages = report_pages(dccfl_html, paper, dpi=dpi)
    assert 3 <= len(pages) <= 16 and parts[-1].total == len(pages)  # "page i of n" counts them all (five TRIPOD cards)
    size = page_layout(paper, False).fullRect(QPageLayout.Point)
    for image, landscape in pages:
        w, h = (size.height(), size.width()) if landscape else (size.width(), size.height())
        assert abs(image.width() - w / 72 * dpi) <= 1 and abs(image.height() - h / 72 * dpi) <= 1
        assert _right_margin_is_blank(image, dpi)
        assert _ink_in_bottom_margin(image, dpi)  # "page i of n"
    assert sum(1 for image, _ in pages if not image.isNull()) == len(pages)

    pdf = report_to_pdf(dccfl_html, tmp_path / "report.pdf", paper)
    boxes = _pdf_boxes(pdf)
    assert len(boxes) == len(pages)
    for (w, h), (_, landscape) in zip(boxes, pages, strict=True):
        assert (w > h) == landscape and round(min(w, h)) == round(min(size.width(), size.height()))


def test_gold_report_bars_stay_in_their_cells_on_portrait_pages(qtbot):
    html = gold_report()
    parts = report_parts(html, "A4")
    assert not any(p.landscape for p in parts)  # its Sites table wraps its headers at spaces and fits
    for part in parts:
        assert _images_fit_their_cells(part.doc) == [] and _broken_words(part.doc) == []
        assert all(lines <= max(1, len(text.split())) for text, lines in _header_lines(part.doc))
    assert "“rows per cluster”: one bar per cluster, numbered from 1 under it" in parts[0].doc.toPlainText()
    assert "Sites grouped by the method" not in html  # GOLD clusters rows, not sites: no site tree


def test_a_table_over_two_pages_repeats_its_header(qtbot):
    from core.methods.views import Table
    from core.report import render_view

    html = render_view(Table("Many sites", ["site", "rows"], [[f"site {i}", i] for i in range(120)]))
    (part,) = report_parts(f"<html><body>{html}</body></html>", "A4")
    assert tables(part.doc)[0].format().headerRowCount() == 1
    images = report_pages(f"<html><body>{html}</body></html>", "A4", dpi=30)
    assert len(images) >= 2
