"""Pictures of the printed report for the docs: the demo's DC-CFL report and a small GOLD round, drawn page by
page as ``report_to_pdf`` prints them (``gui.analyst.export.report_pages``), saved as ``report-*.png``.

    QT_QPA_PLATFORM=offscreen PYTHONPATH=. python docs/tools/report_screens.py docs/screenshots
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

DPI = 64  # small files: a page is about 530 × 750 pixels


def gold_report() -> str:
    """A GOLD round in process: three wards of four blobs in very different units, k chosen by silhouette."""
    from core.data.schema import FeatureColumn, Schema
    from core.formats.identity import Identity
    from core.formats.kit import Kit
    from core.methods import FitContext, get_method
    from core.methods.base import ReceivedBundle, SiteInput
    from core.report import render_report

    m = get_method("gold", {})
    rng = np.random.default_rng(1)
    centres = np.array([[0, 0, 0], [12, 0, 0], [0, 12, 0], [12, 12, 12]], dtype=float)
    X = np.vstack([c + rng.standard_normal((n, 3)) for c, n in zip(centres, (240, 160, 100, 60), strict=True)])
    X = X * [10, 1, 100] + [50, 5, 1000]
    bundles = []
    for i, part in enumerate(np.array_split(rng.permutation(len(X)), 3)):
        ex = m.site_compute(SiteInput(X[part], None, [], None, settings=m.check_site_settings({"seed": i})))
        bundles.append(ReceivedBundle(f"ward-{i + 1}", f"fp{i}", "d", f"e{i}",
                                      {**ex.manifest, "method": "gold", "family": m.family}, dict(ex.arrays)))
    res = m.fit(bundles, FitContext([]))
    kit = Kit(name="Ward clusters", task="clustering", method="gold", analyst=Identity.generate("Analyst").card,
              schema=Schema([FeatureColumn("age"), FeatureColumn("bp"), FeatureColumn("chol")]))
    return render_report(kit, m, res, {**res.summary, "inputs": [], "packages": []})


def pages_with(html: str, texts: list[str]) -> list[int]:
    """The printed page (0-based) each text first appears on."""
    from gui.analyst.export import _text_size, page_layout, report_parts

    found, first = {}, 0
    for part in report_parts(html, "A4"):
        height = _text_size(page_layout("A4", part.landscape)).height()
        part.doc.setPageSize(_text_size(page_layout("A4", part.landscape)))
        for t in texts:
            cursor = part.doc.find(t)
            if t not in found and not cursor.isNull():
                top = part.doc.documentLayout().blockBoundingRect(cursor.block()).top()
                found[t] = first + int(top // height)
        first += part.doc.pageCount()
    return [found[t] for t in texts]


def main(out_dir: Path) -> list[Path]:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage
    from PySide6.QtWidgets import QApplication

    from core.demo import run_demo
    from gui.analyst.export import report_pages

    QApplication.instance() or QApplication([])
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        if not run_demo(Path(tmp) / "demo", lambda *lines: None):
            raise RuntimeError("the demo round failed")
        dccfl = (Path(tmp) / "demo" / "to-sites" / "report.html").read_text(encoding="utf-8")
    gold = gold_report()
    written = []
    for name, html, texts in (("dccfl", dccfl, ["Sites", "Sites grouped by the method"]),
                              ("gold", gold, ["Sites"])):
        pages = report_pages(html, "A4", dpi=DPI)
        for k, (what, page) in enumerate(zip(("sites", "plots"), pages_with(html, texts), strict=False)):
            image = pages[page][0].convertToFormat(QImage.Format_Indexed8, Qt.ThresholdDither | Qt.AvoidDither)
            path = out_dir / f"report-{name}-{k + 1}-{what}.png"
            image.save(str(path), "PNG", 0)
            written.append(path)
        print(f"{name}: {len(pages)} pages, landscape: {[k + 1 for k, (_, land) in enumerate(pages) if land]}")
    return written


if __name__ == "__main__":
    for p in main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")):
        print(p, p.stat().st_size)
