"""Accuracy-versus-rounds panels as one standalone SVG (paper Figure 2), drawn without a plotting library.

Input: the ``curves`` mapping of the dccfl benchmark record, ``{"dataset/split": {"rounds": [1..R],
"dccfl": a, "dccfl_product": b, "series": {method: {"mean": [...], "std": [...]}}}}``. Each panel draws
the mean curves of the multi-round methods and DC-CFL's single-round accuracy as horizontal lines.
"""

from __future__ import annotations

import html

COLORS = {"FedAvg": "#6b7280", "FedProx": "#a855f7", "Ditto": "#f59e0b", "FedClust": "#2563eb",
          "DC-CFL": "#dc2626", "DC-CFL (product defaults)": "#16a34a"}


def _panel(key: str, c: dict, x0: float, y0: float, w: float, h: float) -> str:
    pad_l, pad_b, pad_t = 44.0, 28.0, 22.0
    rounds = c["rounds"]
    values = [v for s in c["series"].values() for v in s["mean"]] + [c["dccfl"], c.get("dccfl_product", c["dccfl"])]
    lo, hi = min(values), max(values)
    lo, hi = max(0.0, lo - 0.02), min(1.0, hi + 0.02)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.05, hi + 0.05
    r1 = max(rounds[-1], 2)

    def px(r: float) -> float:
        return x0 + pad_l + (r - 1) / (r1 - 1) * (w - pad_l - 10)

    def py(v: float) -> float:
        return y0 + pad_t + (hi - v) / (hi - lo) * (h - pad_t - pad_b)

    parts = [f'<text x="{x0 + w / 2:.1f}" y="{y0 + 14:.1f}" font-size="12" text-anchor="middle" '
             f'font-weight="bold">{html.escape(key.replace("/", " "))}</text>',
             f'<line x1="{px(1):.1f}" y1="{py(lo):.1f}" x2="{px(r1):.1f}" y2="{py(lo):.1f}" stroke="#555"/>',
             f'<line x1="{px(1):.1f}" y1="{py(lo):.1f}" x2="{px(1):.1f}" y2="{py(hi):.1f}" stroke="#555"/>']
    for frac in (0.0, 0.5, 1.0):
        v = lo + frac * (hi - lo)
        parts.append(f'<text x="{px(1) - 4:.1f}" y="{py(v) + 4:.1f}" font-size="10" text-anchor="end">{v:.2f}</text>')
    for r in sorted({1, r1 // 2, r1}):
        parts.append(f'<text x="{px(r):.1f}" y="{py(lo) + 14:.1f}" font-size="10" text-anchor="middle">{r}</text>')
    parts.append(f'<text x="{x0 + w / 2:.1f}" y="{y0 + h - 2:.1f}" font-size="10" text-anchor="middle">'
                 "communication rounds</text>")
    for name, level in (("DC-CFL", c["dccfl"]), ("DC-CFL (product defaults)", c.get("dccfl_product"))):
        if level is not None:
            parts.append(f'<line x1="{px(1):.1f}" y1="{py(level):.1f}" x2="{px(r1):.1f}" y2="{py(level):.1f}" '
                         f'stroke="{COLORS[name]}" stroke-dasharray="5 3"><title>{html.escape(name)}: '
                         f"{level:.4f}</title></line>")
    for name, s in c["series"].items():
        pts = " ".join(f"{px(r):.1f},{py(v):.1f}" for r, v in zip(rounds, s["mean"], strict=True))
        parts.append(f'<polyline fill="none" stroke="{COLORS.get(name, "#000")}" stroke-width="1.6" '
                     f'points="{pts}"><title>{html.escape(name)}</title></polyline>')
    return "".join(parts)


def curves_grid_svg(curves: dict[str, dict], *, panel_w: int = 330, panel_h: int = 220, cols: int = 2) -> str:
    """All panels in a grid (``cols`` per row) with one legend on top."""
    keys = list(curves)
    rows = max(1, -(-len(keys) // cols))
    legend_h = 26
    W, H = cols * panel_w, rows * panel_h + legend_h
    parts = []
    x = 8.0
    for name, color in COLORS.items():
        dash = ' stroke-dasharray="5 3"' if name.startswith("DC-CFL") else ""
        parts.append(f'<line x1="{x:.0f}" y1="13" x2="{x + 18:.0f}" y2="13" stroke="{color}" stroke-width="2"{dash}/>'
                     f'<text x="{x + 22:.0f}" y="17" font-size="11">{html.escape(name)}</text>')
        x += 28 + 6.2 * len(name)
    for i, key in enumerate(keys):
        parts.append(_panel(key, curves[key], (i % cols) * panel_w, legend_h + (i // cols) * panel_h,
                            panel_w, panel_h))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
            f'font-family="sans-serif"><rect width="{W}" height="{H}" fill="white"/>{"".join(parts)}</svg>\n')
