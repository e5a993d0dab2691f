"""Benchmark figures rendered with pyqtgraph, offscreen (core never imports Qt, so PNGs are made here).

``python docs/tools/figures.py dccfl IN.json OUT.png``: the DC-CFL paper's Figure 2 — mean test accuracy versus
communication rounds of the multi-round baselines (10 local epochs per round), one panel per data set and
split of the record, with DC-CFL's single-round accuracy (paper recipe and product defaults) as dashed
horizontal lines. Reads the ``curves`` mapping that ``dcstudio bench dccfl --json`` writes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

COLORS = {"FedAvg": "#6b7280", "FedProx": "#a855f7", "Ditto": "#f59e0b", "FedClust": "#2563eb",
          "DC-CFL": "#dc2626", "DC-CFL (product defaults)": "#16a34a"}


def render_dccfl_curves(curves: dict[str, dict], out_png: str | Path, *, panel_w: int = 520, panel_h: int = 360,
                        cols: int = 2) -> Path:
    """Draw every ``dataset/split`` panel of ``curves`` into one PNG (offscreen Qt) and return its path."""
    if not curves:
        raise ValueError("the record has no accuracy-versus-rounds curves (was it run with --quick?)")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import pyqtgraph as pg
    import pyqtgraph.exporters  # noqa: F401  (registers pg.exporters)
    from pyqtgraph.Qt import QtCore

    app = pg.mkQApp()
    pg.setConfigOptions(background="w", foreground="k", antialias=True)
    win = pg.GraphicsLayoutWidget()
    keys = list(curves)
    cols = max(1, min(cols, len(keys)))
    rows = -(-len(keys) // cols)
    win.resize(cols * panel_w, rows * panel_h)
    for i, key in enumerate(keys):
        c = curves[key]
        plot = win.addPlot(row=i // cols, col=i % cols, title=key.replace("/", " "))
        plot.setLabel("bottom", "communication rounds")
        plot.setLabel("left", "mean test accuracy")
        plot.getAxis("left").enableAutoSIPrefix(False)
        plot.showGrid(x=True, y=True, alpha=0.2)
        legend = plot.addLegend(offset=(-10, -10), labelTextSize="8pt")
        rounds = c["rounds"]
        order = [n for n in COLORS if n in c["series"]] + [n for n in c["series"] if n not in COLORS]
        for name in order:
            plot.plot(rounds, c["series"][name]["mean"], pen=pg.mkPen(COLORS.get(name, "#000"), width=2), name=name)
        for name, level in (("DC-CFL", c.get("dccfl")), ("DC-CFL (product defaults)", c.get("dccfl_product"))):
            if level is None:
                continue
            pen = pg.mkPen(COLORS[name], width=2, style=QtCore.Qt.PenStyle.DashLine)
            plot.plot([rounds[0], rounds[-1]], [level, level], pen=pen, name=f"{name} (1 round)")
        legend.setBrush(pg.mkBrush(255, 255, 255, 200))
    win.show()
    app.processEvents()
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    exporter = pg.exporters.ImageExporter(win.ci)
    exporter.parameters()["width"] = cols * panel_w
    exporter.export(str(out))
    win.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python docs/tools/figures.py", description=__doc__.splitlines()[0])
    ap.add_argument("experiment", choices=["dccfl"])
    ap.add_argument("input", help="the benchmark JSON record")
    ap.add_argument("output", help="the PNG to write")
    args = ap.parse_args(argv)
    try:
        record = json.loads(Path(args.input).read_text())
        path = render_dccfl_curves(record.get("curves") or {}, args.output)
    except (OSError, ValueError) as exc:
        print(f"{args.input}: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
