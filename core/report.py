"""The analyst's HTML report: settings, seeds, versions, input digests and every plot, in one file.

Plots are inline SVG drawn here (no plotting library, no network, no scripts), so the report opens
anywhere and prints to PDF from the GUI.
"""

from __future__ import annotations

import html
import json
import math
import platform

import numpy as np

from . import __version__
from .formats.kit import Kit
from .methods import Method, MethodResult
from .methods.views import Bars, Curve, Heatmap, Scatter, Table, Text, View
from .model_card import ModelCard, model_cards
from .safe_text import shown_lines


def _esc(x) -> str:
    """Text-node escaping through the one sanitiser (core.safe_text): no control or bidi character, then HTML's
    ``& < >`` (the report puts no escaped value inside an attribute)."""
    return html.escape(shown_lines(x), quote=False)


HEATMAP_CELLS_MAX = 60  # up to this many rows, one SVG cell per entry; beyond it, an image (heatmap_image)
TABLE_DRAWN_ROWS_MAX = 60  # up to this many rows a table's count columns are drawn as bars; beyond, written
CARDS_MAX = 50  # up to this many packages their model cards are in the report; beyond it, a table of their limits
TREE_LEAVES_MAX = 60  # a site tree with more leaves is drawn with its last merges only (scipy's truncate "lastp")


def _colour(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The heatmap's grey-to-blue scale of values v ∈ [0, 1] (one formula for cells and images)."""
    return (240 - 200 * v).astype(int), (244 - 160 * v).astype(int), (250 - 60 * v).astype(int)


def heatmap_svg(M: np.ndarray, labels: list[str], *, size: int = 360, title: str = "", low: float = 0.0,
                high: float = 1.0, col_labels: list[str] | None = None, order: np.ndarray | None = None) -> str:
    """A [low, high] matrix as a grey-to-blue heatmap: rows named by site (numbered), columns by the same
    numbers, and every cell's value written in it (while cells are large enough to hold it). Beyond
    :data:`HEATMAP_CELLS_MAX` rows it is an image whose size does not grow with the matrix
    (:func:`heatmap_image`), rows and columns in ``order`` (e.g. the site tree's leaves) when given."""
    n = len(M)
    if n == 0:
        return ""
    if n > HEATMAP_CELLS_MAX or len(M[0]) > HEATMAP_CELLS_MAX:
        return heatmap_image(M, size=size, title=title, low=low, high=high, order=order)
    cols = list(col_labels) if col_labels is not None else list(labels)
    names = [f"{i + 1} · {lab}" if len(lab) <= 28 else f"{i + 1} · {lab[:27]}…" for i, lab in enumerate(labels)]
    left = int(min(220, 16 + 6.5 * max(len(x) for x in names)))
    top = 22
    size = min(size, 56 * n)  # a few sites: cells just large enough for their values
    cell = size / n
    font = max(7.0, min(12.0, cell / 3.6))
    parts = []
    for i in range(n):
        y = top + i * cell
        parts.append(f'<text x="{left - 6}" y="{y + cell / 2 + 4:.1f}" font-size="11" text-anchor="end">'
                     f"{_esc(names[i])}</text>")
        parts.append(f'<text x="{left + i * cell + cell / 2:.1f}" y="{top - 7}" font-size="11" '
                     f'text-anchor="middle">{i + 1}</text>')
        for j in range(n):
            v = float(np.clip((M[i, j] - low) / (high - low if high > low else 1.0), 0, 1))
            r, g, b = (int(c) for c in _colour(np.array(v)))
            x = left + j * cell
            parts.append(f'<rect x="{x:.2f}" y="{y:.2f}" width="{cell:.2f}" height="{cell:.2f}" '
                         f'fill="rgb({r},{g},{b})" stroke="#ffffff"><title>{_esc(labels[i])} – {_esc(cols[j])}: '
                         f"{M[i, j]:.3f}</title></rect>")
            if cell >= 22:
                ink = "#ffffff" if v > 0.55 else "#111827"
                parts.append(f'<text x="{x + cell / 2:.1f}" y="{y + cell / 2 + font / 3:.1f}" font-size="{font:.1f}" '
                             f'text-anchor="middle" fill="{ink}">{M[i, j]:.2f}</text>')
    width, height = left + size + 4, top + size + 4
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif">{"".join(parts)}</svg>'
            f"<figcaption>{_esc(title)}</figcaption></figure>")




def heatmap_image(M: np.ndarray, *, size: int = 360, title: str = "", low: float = 0.0, high: float = 1.0,
                  order: np.ndarray | None = None) -> str:
    """A large matrix as an embedded PNG of at most ``size`` × ``size`` pixels: each pixel the mean of a block of
    ⌈n / size⌉ × ⌈m / size⌉ entries (rows and columns first put in ``order``), so a report of 10,000 sites holds
    one small image instead of 10⁸ cells. The caption says how many sites a pixel stands for."""
    M = np.asarray(M)
    n, m = M.shape
    binned, fy, fx = block_means(M, size, order)
    h, w = binned.shape
    v = np.clip((binned - low) / (high - low if high > low else 1.0), 0, 1)
    r, g, b = _colour(np.nan_to_num(v))
    png = _png(np.stack([r, g, b], axis=-1).astype(np.uint8))
    scale = max(1, size // max(h, w))
    import base64

    what = (f"{n} rows × {m} columns" + ("" if fy == fx == 1 else f"; each pixel the mean of {fy} × {fx} entries")
            + ("; rows and columns in the order of the site tree" if order is not None else ""))
    return (f'<figure><img alt="{_esc(title)}" width="{w * scale}" height="{h * scale}" '
            f'src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'
            f"<figcaption>{_esc(title)} ({_esc(what)}: light = {low:g}, dark blue = {high:g}).</figcaption></figure>")


def block_means(M: np.ndarray, size: int, order: np.ndarray | None = None) -> tuple[np.ndarray, int, int]:
    """(B, f_y, f_x): the means of blocks of f_y × f_x entries of ``M`` (f = ⌈n / size⌉ each way, the last block
    of a row or column the entries left), so B has at most ``size`` rows and columns; rows and columns first put in
    ``order`` when given (a square matrix). Built a band of rows at a time: no copy of M is made."""
    M = np.asarray(M)
    n, m = M.shape
    rows = cols = None
    if order is not None and len(order) == n == m:
        rows = cols = np.asarray(order)
    fy, fx = -(-n // size), -(-m // size)  # entries per block, each way
    h, w = -(-n // fy), -(-m // fx)
    binned = np.empty((h, w))
    band = np.full((fy, w * fx), np.nan)
    for i in range(h):
        take = np.arange(i * fy, min((i + 1) * fy, n))
        part = M[take if rows is None else rows[take]]
        band[:] = np.nan
        band[:len(take), :m] = part if cols is None else part[:, cols]
        with np.errstate(invalid="ignore"):
            binned[i] = np.nanmean(band.reshape(fy, w, fx), axis=(0, 2))
    return binned, fy, fx


def _png(rgb: np.ndarray) -> bytes:
    """An 8-bit RGB PNG of an (h, w, 3) array (PNG §11: IHDR, one zlib IDAT of filter-0 scanlines, IEND)."""
    import struct
    import zlib

    h, w, _ = rgb.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = np.concatenate([np.zeros((h, 1), np.uint8), rgb.reshape(h, 3 * w)], axis=1)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def line_svg(xs: list[float], ys: list[float], *, width: int = 420, height: int = 220, title: str = "",
             xlabel: str = "", ylabel: str = "", mark: float | None = None) -> str:
    """A small line plot with axes and an optional vertical marker."""
    return lines_svg(xs, {"": ys}, width=width, height=height, title=title, xlabel=xlabel, ylabel=ylabel, mark=mark)


def nice_ticks(lo: float, hi: float, most: int = 6) -> tuple[list[float], int]:
    """Round tick values for an axis from ``lo`` to ``hi``: the smallest step of 1, 2 or 5 × 10ᵏ that cuts the span
    into at most ``most`` intervals (Heckbert's "nice numbers", Graphics Gems 1990), the ticks that step puts inside
    [lo, hi] (both ends included when they fall on it), and the decimals that print the step exactly."""
    span = hi - lo
    if not math.isfinite(span) or span <= 0:
        return [lo], 2
    raw = span / max(1, most)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))
    first = math.ceil(lo / step - 1e-9) * step
    ticks = [first + k * step for k in range(int((hi - first) / step + 1e-9) + 1)]
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return [round(t, decimals) for t in ticks], decimals


def lines_svg(xs: list[float], series: dict[str, list[float]], *, width: int = 420, height: int = 220,
              title: str = "", xlabel: str = "", ylabel: str = "", mark: float | None = None) -> str:
    """One or more lines over the same x values on shared axes, each its own colour, named in a legend above the
    plot when there are several (three a row, two when a name is long); dots on every point while there are few
    (≤ 30 per line)."""
    if not xs or not series:
        return ""
    per_row = 3 if max(len(name) for name in series) <= 14 else 2  # legend entries per row, by name length
    pad, legend_h = 40, (18 * ((len(series) + per_row - 1) // per_row) if len(series) > 1 else 0)
    top = pad / 2 + legend_h
    height += legend_h
    values = [float(v) for ys in series.values() for v in ys if v is not None and np.isfinite(v)]
    x0, x1 = min(xs), max(xs)
    y0, y1 = (min(values), max(values)) if values else (0.0, 1.0)
    if x1 == x0:
        x1 = x0 + 1
    if y1 - y0 < 1e-9:
        y0, y1 = y0 - 0.05, y1 + 0.05

    def px(x):
        return pad + (x - x0) / (x1 - x0) * (width - 2 * pad)

    def py(y):
        return height - pad - (y - y0) / (y1 - y0) * (height - pad - top)

    lines, legend = [], []
    fit = int(((width - 2 * pad) / per_row - 26) / 6.2)  # characters of a name that fit its legend slot
    for k, (name, ys) in enumerate(series.items()):
        colour = _PALETTE[k % len(_PALETTE)]
        pts = [(x, float(y)) for x, y in zip(xs, ys, strict=True) if y is not None and np.isfinite(y)]
        dash = ' stroke-dasharray="5 4"' if name in ("chance", "ideal") else ""
        lines.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="'
                     + " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts) + '"/>')
        if len(pts) <= 30:
            lines.append("".join(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"><title>'
                                 f"{_esc(name)} {x:.3g}: {y:.3f}</title></circle>" for x, y in pts))
        if len(series) > 1:
            lx, ly = pad + (k % per_row) * (width - 2 * pad) / per_row, 14 + 18 * (k // per_row)
            legend.append(f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 18:.1f}" y2="{ly - 4}" stroke="{colour}" '
                          f'stroke-width="3"{dash}/><text x="{lx + 22:.1f}" y="{ly}" font-size="11">'
                          f"{_esc(name if len(name) <= fit else name[:fit - 1] + '…')}</text>")
    marker = "" if mark is None else (f'<line x1="{px(mark):.1f}" y1="{top}" x2="{px(mark):.1f}" '
                                      f'y2="{height - pad}" stroke="#dc2626" stroke-dasharray="4 3"/>')
    # round ticks on both axes (0, 0.2, 0.4 … rather than the data's own first and last values)
    xt, xd = nice_ticks(x0, x1, 6)
    yt, yd = nice_ticks(y0, y1, 5)
    ticks = "".join(f'<line x1="{px(t):.1f}" y1="{height - pad}" x2="{px(t):.1f}" y2="{height - pad + 4}" '
                    f'stroke="#555"/><text x="{px(t):.1f}" y="{height - pad + 15}" font-size="10" '
                    f'text-anchor="middle">{t:.{xd}f}</text>' for t in xt)
    ticks += "".join(f'<line x1="{pad - 4}" y1="{py(t):.1f}" x2="{pad}" y2="{py(t):.1f}" stroke="#555"/>'
                     f'<text x="{pad - 6}" y="{py(t) + 3.5:.1f}" font-size="10" text-anchor="end">{t:.{yd}f}</text>'
                     for t in yt)
    axes = (f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#555"/>'
            f'<line x1="{pad}" y1="{top}" x2="{pad}" y2="{height - pad}" stroke="#555"/>{ticks}'
            f'<text x="{width / 2}" y="{height - 4}" font-size="11" text-anchor="middle">{_esc(xlabel)}</text>'
            f'<text x="4" y="{top - 4}" font-size="11">{_esc(ylabel)}</text>')
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">{"".join(legend)}'
            f'{axes}{marker}{"".join(lines)}</svg><figcaption>{_esc(title)}</figcaption></figure>')


def bars_svg(counts: list[int], classes: list[str], *, width: int = 160, height: int = 28) -> str:
    """A histogram sparkline: one bar per class, numbered from 1 under it, its count above it when the bar is
    wide enough for the digits (``classes`` name the bars in each bar's tooltip and in :func:`bar_legend`)."""
    top, bottom = 11, 11  # a row for the counts above the bars and one for the numbers under them
    total = max(1, max(counts) if counts else 1)
    names = [classes[k] if k < len(classes) else str(k + 1) for k in range(len(counts))]
    w = width / max(1, len(counts))
    parts = [f'<line x1="0" y1="{top + height}" x2="{width}" y2="{top + height}" stroke="#9ca3af"/>']
    for k, c in enumerate(counts):
        h, x = height * c / total, k * w
        parts.append(f'<rect x="{x + 1:.1f}" y="{top + height - h:.1f}" width="{max(w - 2, 1):.1f}" height="{h:.1f}" '
                     f'fill="{_PALETTE[0]}"><title>{_esc(names[k])}: {c}</title></rect>')
        parts.append(f'<text x="{x + w / 2:.1f}" y="{top + height + bottom - 2}" font-size="9" text-anchor="middle" '
                     f'fill="#374151">{k + 1}</text>')
        if 5.5 * len(f"{c:,}") <= w:
            parts.append(f'<text x="{x + w / 2:.1f}" y="{top + height - h - 2:.1f}" font-size="9" '
                         f'text-anchor="middle" fill="#111827">{c:,}</text>')
    full = top + height + bottom
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{full}" viewBox="0 0 {width} {full}" '
            f'font-family="sans-serif">{"".join(parts)}</svg>')


def bar_legend(column: str, classes: list[str]) -> str:
    """The sentence under a table that names the numbered bars of its ``column``."""
    if all(c == str(k + 1) for k, c in enumerate(classes)):
        return f"“{column}”: one bar per cluster, numbered from 1 under it; the count above each bar when it fits."
    names = "; ".join(f"{k + 1} = {c}" for k, c in enumerate(classes))
    return f"“{column}”: one bar per class, numbered under it — {names}; the count above each bar when it fits."


def counts_legend(column: str, classes: list[str]) -> str:
    """The sentence under a long table whose ``column`` writes counts per class (instead of drawing bars)."""
    return f"“{column}”: the rows of each class, in the order " + " · ".join(classes) + "."


def dendrogram_svg(Z: np.ndarray, names: list[str], *, cut: float | None = None, title: str = "",
                   xlabel: str = "distance", width: int = 520) -> str:
    """A site tree (scipy linkage ``Z``) drawn sideways: one row per site (names on the left, in the tree's
    leaf order), merge height along the x axis, and a dashed line at the cut (merges at or below it are kept
    together: the groups trained)."""
    from scipy.cluster.hierarchy import dendrogram  # (scipy: not on a site's export path)

    n = len(names)
    if n > TREE_LEAVES_MAX:  # only the last merges: each leaf a branch of the tree, named by its size
        tree = dendrogram(Z, no_plot=True, truncate_mode="lastp", p=TREE_LEAVES_MAX, labels=list(names),
                          show_contracted=False)
        tree["ivl"] = [f"{x[1:-1]} sites" if x.startswith("(") else x for x in tree["ivl"]]
        names = tree["ivl"]
        n = len(names)
        title += f" Only the last {n - 1} merges are drawn: a leaf in brackets is a branch of that many sites."
    else:
        tree = dendrogram(Z, no_plot=True, labels=list(names))
    row, top, bottom = 22, 14, 34
    left = int(min(220, 16 + 6.5 * max(len(x) for x in names)))
    height = top + row * n + bottom
    peak = max([max(d) for d in tree["dcoord"]] + [cut or 0.0]) or 1.0
    span = width - left - 16

    def px(d: float) -> float:
        return left + d / peak * span

    def py(i: float) -> float:  # scipy puts leaf k at 10 k + 5
        return top + (i - 5) / 10 * row + row / 2

    parts = []
    for k, name in enumerate(tree["ivl"]):
        label = name if len(name) <= 30 else name[:29] + "…"
        parts.append(f'<text x="{left - 6}" y="{py(10 * k + 5) + 4:.1f}" font-size="11" text-anchor="end">'
                     f"{_esc(label)}</text>")
    for xs, ds in zip(tree["icoord"], tree["dcoord"], strict=True):
        parts.append('<polyline fill="none" stroke="#1f2937" stroke-width="1.5" points="'
                     + " ".join(f"{px(d):.1f},{py(i):.1f}" for i, d in zip(xs, ds, strict=True)) + '"/>')
    base = top + row * n
    parts.append(f'<line x1="{left}" y1="{base}" x2="{left + span}" y2="{base}" stroke="#555"/>'
                 f'<text x="{left}" y="{base + 14}" font-size="10" text-anchor="middle">0</text>'
                 f'<text x="{left + span}" y="{base + 14}" font-size="10" text-anchor="middle">{peak:.2f}</text>'
                 f'<text x="{left + span / 2:.1f}" y="{base + 28}" font-size="11" text-anchor="middle">'
                 f"{_esc(xlabel)}</text>")
    if cut is not None and np.isfinite(cut):
        x = px(min(float(cut), peak))
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{base}" stroke="#dc2626" '
                     f'stroke-dasharray="4 3"/><text x="{x - 3:.1f}" y="{top + 8}" font-size="10" '
                     f'text-anchor="end" fill="#dc2626">cut {float(cut):g}</text>')
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif">{"".join(parts)}</svg>'
            f"<figcaption>{_esc(title)}</figcaption></figure>")


def site_tree(result: MethodResult) -> tuple[np.ndarray, list[str], float | None, str] | None:
    """(linkage, site names, cut, what the distance is) when the result holds a tree of the sites, else None
    (the report draws it for methods that cut such a tree at a threshold setting).

    DC-CFL keeps its linkage (``details["linkage"]``, cut at t); FedDAG keeps its site × site matrix
    (``details["matrix"]``), linked here as its fit links it (the ``linkage`` setting, cut at α). The details
    and the summary's sites share one order."""
    s, d = result.summary, result.details
    names = [str(x.get("site", "")) for x in s.get("sites", []) if isinstance(x, dict)]
    n = len(names)
    if n < 2:
        return None
    cut = s.get("t")
    cut = float(cut) if isinstance(cut, int | float) and not isinstance(cut, bool) else None
    Z = d.get("linkage")
    if Z is not None:
        Z = np.asarray(Z, dtype=np.float64)
        what = "total-variation distance between the sites' label distributions"
    elif d.get("matrix") is not None and np.shape(d["matrix"]) == (n, n):
        from scipy.cluster.hierarchy import linkage  # (scipy: not on a site's export path)
        from scipy.spatial.distance import squareform

        M = np.asarray(d["matrix"], dtype=np.float64)
        if not np.all(np.isfinite(M)):
            return None
        sym = 0.5 * (M + M.T)
        np.fill_diagonal(sym, 0.0)
        how = (s.get("settings") or {}).get("linkage", "weighted")
        Z = linkage(squareform(sym, checks=False), method=how if how in ("single", "complete", "average",
                                                                         "weighted") else "weighted")
        what = "the method's distance between the sites"
    else:
        return None
    if Z.shape != (n - 1, 4) or not np.all(np.isfinite(Z)):
        return None
    return Z, names, cut, what


# lengths in px: Qt's QTextDocument (the PDF) reads px and em but not rem
_CSS = """body{font-family:system-ui,sans-serif;max-width:960px;margin:32px auto;color:#111}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:3px 6px;text-align:left;
vertical-align:top}th{background:#f3f4f6}code,pre{background:#f3f4f6;padding:1px 4px}
figure{display:inline-block;margin:12px}figcaption{font-size:small;color:#555}.legend{font-size:small;color:#374151}
.flag{border:2px solid #b91c1c;background:#fef2f2;color:#7f1d1d;padding:.5rem 1rem;margin:1rem 0}
.card{border-top:1px solid #ccc;margin-top:1.5rem}.warn{color:#b91c1c;font-weight:bold}"""


_PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#475569",
            "#ea580c"]


def scatter_svg(P: np.ndarray, labels: np.ndarray, *, size: int = 360, title: str = "", max_points: int = 3000,
                seed: int = 0) -> str:
    """Points (first two columns of P) coloured by cluster; a seeded sample of ``max_points`` when larger."""
    if len(P) == 0 or P.shape[1] < 2:
        return ""
    idx = np.arange(len(P))
    if len(P) > max_points:
        idx = np.sort(np.random.default_rng(seed).choice(len(P), max_points, replace=False))
    pad = 12
    lo, hi = P[idx, :2].min(axis=0), P[idx, :2].max(axis=0)
    span = np.where(hi - lo > 1e-12, hi - lo, 1.0)
    xy = pad + (P[idx, :2] - lo) / span * (size - 2 * pad)
    dots = "".join(f'<circle cx="{x:.1f}" cy="{size - y:.1f}" r="2" fill="{_PALETTE[int(c) % len(_PALETTE)]}" '
                   'fill-opacity="0.7"/>' for (x, y), c in zip(xy, labels[idx], strict=True))
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}">'
            f'<rect width="{size}" height="{size}" fill="none" stroke="#ccc"/>{dots}</svg>'
            f"<figcaption>{_esc(title)}</figcaption></figure>")


def _footer(summary: dict) -> str:
    s = summary
    inputs = "".join(f"<tr><td>{_esc(i['site'])}</td><td><code>{_esc(i['bundle_digest'])}</code></td></tr>"
                     for i in s.get("inputs", []))
    outputs = "".join(f"<tr><td>{_esc(p['site'])}</td><td>{_esc(p['file'])}</td><td><code>{_esc(p['digest'])}"
                      "</code></td></tr>" for p in s.get("packages", []))
    settings = json.dumps(s.get("settings", {}), indent=2, sort_keys=True)
    versions = {"dcstudio": __version__, "python": platform.python_version(), "numpy": np.__version__}
    return f"""{_trust_section(s)}<h2>Settings and seeds</h2><pre>{_esc(settings)}</pre>
<h2>Versions</h2><pre>{_esc(json.dumps(versions, indent=2))}</pre>
<h2>Inputs (bundle SHA-256)</h2>{_TABLE}{inputs}</table>
<h2>Packages written</h2>{_TABLE}<thead><tr><th>site</th><th>file</th><th>SHA-256</th></tr></thead>{outputs}</table>
</body></html>
"""


_NOWRAP = ' style="white-space:nowrap"'
def _trust_section(s: dict) -> str:
    """Sites out of scale relative to the others (core.robustness) and sites the analyst excluded."""
    flags = "".join(f"<tr><td>{_esc(f['site'])}</td><td><code>{_esc(f['fingerprint'])}</code></td>"
                    f"<td>{_esc(f['array'])}</td><td>{_esc(f['reason'])}</td></tr>" for f in s.get("scale_flags", []))
    out = ""
    if flags:
        out += ("<h2>Sites out of scale</h2><p>These sites' shipped arrays are far larger or smaller than the "
                "others' (a broken or hostile export can spoil every site's model); consider excluding them "
                "(<code>--exclude</code>, or the Bundles page) and running again.</p>" + _TABLE
                + "<thead><tr><th>site</th><th>fingerprint</th><th>array</th><th>why</th></tr></thead>"
                + f"{flags}</table>\n")
    excluded = "".join(f"<li>{_esc(e['site'])} <code>{_esc(e['fingerprint'])}</code></li>"
                       for e in s.get("excluded", []))
    if excluded:
        out += f"<h2>Sites excluded by the analyst</h2><ul>{excluded}</ul>\n"
    refused = "".join(f"<tr><td>{_esc(r.get('file', ''))}</td><td>{_esc(r.get('site') or '–')}</td>"
                      f"<td>{_esc(r.get('reason', ''))}</td></tr>" for r in s.get("refused", []))
    if refused:
        out += ("<h2>Files left out of this run</h2><p>These files were not used (one site never blocks a run); "
                "each site named can send its bundle again.</p>" + _TABLE
                + f"<thead><tr><th>file</th><th>site</th><th>why</th></tr></thead>{refused}</table>\n")
    run = s.get("run")
    if run:
        out += (f"<p>Run <code>{_esc(run['id'])}</code> at {_esc(run['created'])}; analyst audit-log head "
                f"<code>{_esc(run['audit_head'])}</code>.</p>\n")
    return out


def _kept(v) -> str:
    return "–" if v is None else f"{v:.1%}"


def _fp(fingerprint: str) -> str:
    """A fingerprint cell that never breaks over lines (browsers and Qt's PDF printer both honour nowrap)."""
    return f'<td{_NOWRAP}><code style="white-space:nowrap;font-size:85%">{_esc(fingerprint)}</code></td>'


NOTE_COLUMNS = ("note",)  # sentences: listed under their table (a table column of sentences is one word wide)
_TABLE = '<table cellspacing="0" cellpadding="4">'


def _notes_html(v: Table, j: int) -> str:
    """Column ``j``'s sentences under the table, each once, after the first cells (the site) of its rows."""
    by_text: dict[str, list[str]] = {}
    for row in v.rows:
        text = str(row[j]).strip() if j < len(row) and row[j] is not None else ""
        if text:
            by_text.setdefault(text, []).append(str(row[0]))
    if not by_text:
        return ""
    items = "".join(f"<li><b>{_esc(', '.join(who))}</b>: {_esc(text)}</li>" for text, who in by_text.items())
    return f"<p class=\"legend\">{_esc(v.columns[j].capitalize())}s:</p><ul>{items}</ul>"


def _table_html(v: Table) -> str:
    """A table (its header row repeated on every printed page it spans); bar columns drawn as numbered bars named
    in a line under the table, note columns as a list under it."""
    notes = [j for j, c in enumerate(v.columns) if c in NOTE_COLUMNS]
    keep = [j for j in range(len(v.columns)) if j not in notes]
    head = "".join(f"<th{_NOWRAP if v.columns[j] == 'fingerprint' else ''}"
                   + (f' title="{_esc(v.tips[v.columns[j]])}"' if v.tips.get(v.columns[j]) else "")
                   + f">{_esc(v.columns[j])}</th>" for j in keep)
    bar_cols = {v.columns.index(c) for c in v.bars if c in v.columns}
    body = []
    for row in v.rows:
        cells = []
        for j, cell in enumerate(row):
            if j in notes:
                continue
            if j in bar_cols and len(v.rows) > TABLE_DRAWN_ROWS_MAX:  # counts written: a bar costs 1.5 kB a row
                cells.append(f"<td>{' · '.join(f'{int(c):,}' for c in cell) if cell else ''}</td>")
            elif j in bar_cols:
                cells.append(f"<td>{bars_svg(list(cell), v.bar_labels, width=110) if cell else ''}</td>")
            elif j < len(v.columns) and v.columns[j] == "fingerprint":
                cells.append(_fp(str(cell)))
            elif isinstance(cell, int) and not isinstance(cell, bool):
                cells.append(f"<td>{cell:,}</td>")
            else:
                cells.append(f"<td>{_esc(cell)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    says = counts_legend if len(v.rows) > TABLE_DRAWN_ROWS_MAX else bar_legend
    legend = "".join(f'<p class="legend">{_esc(says(v.columns[j], v.bar_labels))}</p>'
                     for j in sorted(bar_cols) if any(row[j] for row in v.rows if j < len(row)))
    return (f"<h2>{_esc(v.title)}</h2>{_TABLE}<thead><tr>{head}</tr></thead>{''.join(body)}</table>{legend}"
            + "".join(_notes_html(v, j) for j in notes))


def render_view(v: View, order: np.ndarray | None = None) -> str:
    """One view of a method's result as HTML/SVG (``order``: a heatmap's rows and columns, when drawn as an image)."""
    if isinstance(v, Text):
        style = ' style="color:#92400e"' if v.tone == "warning" else ""
        # a printed page has no tooltips: the terms behind the plain words follow them, muted
        term = f' <span style="color:#6b7280">({_esc(v.tip)})</span>' if v.tip else ""
        return f"<p{style}>{_esc(v.text)}{term}</p>"
    if isinstance(v, Table):
        return _table_html(v)
    if isinstance(v, Heatmap):
        columns = "" if list(v.col_labels) == list(v.row_labels) else (
            " Columns: " + ", ".join(f"{j + 1} = {c}" for j, c in enumerate(v.col_labels)) + ".")
        return heatmap_svg(np.asarray(v.matrix), v.row_labels, title=v.title + columns, low=v.low, high=v.high,
                           col_labels=list(v.col_labels), order=order)
    if isinstance(v, Curve):
        return lines_svg(list(v.x), {name: list(ys) for name, ys in v.series.items()}, title=v.title,
                         xlabel=v.xlabel, ylabel=v.ylabel, mark=v.mark)
    if isinstance(v, Scatter):
        return scatter_svg(np.asarray(v.points), np.asarray(v.labels), title=v.title)
    if isinstance(v, Bars):
        named = "" if all(c == str(k + 1) for k, c in enumerate(v.labels)) else (
            (" " if v.title.endswith(".") else ". ") + "Bars: "
            + "; ".join(f"{k + 1} = {c}" for k, c in enumerate(v.labels)) + ".")
        return ("<figure>" + bars_svg([int(round(x)) for x in v.values], v.labels, width=320, height=80)
                + f"<figcaption>{_esc(v.title + named)}</figcaption></figure>")
    raise TypeError(f"unknown view {type(v).__name__}")


def minority_flags(summary: dict) -> list[str]:
    """One sentence per site whose model never predicts the minority class (binary: sensitivity 0 for it at the
    threshold) or leaves a present class unpredicted, from the summary's per-site ``metrics``."""
    out = []
    for x in summary.get("sites", []):
        m = x.get("metrics") if isinstance(x, dict) else None
        if not isinstance(m, dict):
            continue
        if m.get("never_predicts_minority"):
            acc = m.get("accuracy")
            out.append(f"{x.get('site')}: the model sent never predicts the less common outcome at the threshold "
                       f"{m.get('threshold', 0.5):g} (sensitivity 0 for it, {m.get('rows')} rows, {m.get('events')} "
                       f"events)" + (f"; its accuracy of {acc:.2f} is what always answering the common outcome gives"
                                     if isinstance(acc, float) else "") + ".")
        elif m.get("never_predicted"):
            out.append(f"{x.get('site')}: the model sent never predicts {', '.join(map(str, m['never_predicted']))} "
                       "although this site has such rows (recall 0 for them, whatever the accuracy).")
    return out


def card_html(card: ModelCard) -> str:
    """A model card as an HTML section (the same content as its Markdown file)."""
    parts = [f'<section class="card"><h3>{_esc(card.title)}</h3>']
    parts += [f'<p class="warn">{_esc(w)}</p>' for w in card.warnings]
    for sec in card.sections:
        parts.append(f"<h4>{_esc(sec.heading)}</h4>")
        parts += [f"<p>{_esc(p)}</p>" for p in sec.paragraphs]
        if sec.bullets:
            parts.append("<ul>" + "".join(f"<li>{_esc(b)}</li>" for b in sec.bullets) + "</ul>")
        if sec.table:
            head, rows = sec.table
            parts.append(_TABLE + "<thead><tr>" + "".join(f"<th>{_esc(c)}</th>" for c in head) + "</tr></thead>"
                         + "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>" for row in rows)
                         + "</table>")
        if sec.code:
            parts.append(f"<pre>{_esc(chr(10).join(sec.code))}</pre>")
    return "".join(parts) + "</section>"


def _formal_html(summary: dict) -> str:
    """The formal (ε, δ) option's statement (core.privacy.formal_summary), first, when a site used it."""
    from .privacy.formal_summary import formal_lines

    lines = formal_lines(summary.get("formal_privacy"))
    return ("<div class=\"flag\"><b>Formal privacy</b><ul>" + "".join(f"<li>{_esc(x)}</li>" for x in lines)
            + "</ul></div>") if lines else ""


def cards_html(cards: list[ModelCard]) -> str:
    """Every package's model card; beyond :data:`CARDS_MAX` packages, one table row per package with its warnings
    (each card is also written beside its package as ``<site>.model_card.md``)."""
    if len(cards) <= CARDS_MAX:
        return "".join(card_html(c) for c in cards)
    rows = "".join(f"<tr><td>{_esc(c.site)}</td><td>{_esc('; '.join(c.warnings) or '–')}</td></tr>" for c in cards)
    return (f"<p>{len(cards):,} packages: each one's model card is written beside it (<code>&lt;site&gt;"
            ".model_card.md</code>); here, what each card warns of.</p>" + _TABLE
            + "<thead><tr><th>site</th><th>warnings</th></tr></thead>" + rows + "</table>")


def _tree_order(tree) -> np.ndarray | None:
    """The site tree's leaf order (rows of its names), for a large heatmap drawn as an image."""
    if tree is None or len(tree[1]) <= HEATMAP_CELLS_MAX:
        return None
    from scipy.cluster.hierarchy import leaves_list  # (scipy: not on a site's export path)

    return leaves_list(tree[0])


def render_report(kit: Kit, method: Method, result: MethodResult, summary: dict) -> str:
    """The whole report: what was run on what, any model that never predicts the minority class (first), the
    method's own views, the model card of every package, then settings, versions and digests."""
    s = summary
    views = method.views(result)
    flags = minority_flags(s)
    flag_html = ("<div class=\"flag\"><b>Models that never predict the minority class</b> — not good models, "
                 "whatever their accuracy:<ul>" + "".join(f"<li>{_esc(f)}</li>" for f in flags) + "</ul></div>"
                 if flags else "")
    cards = cards_html(model_cards(kit, method, s))
    tables = "".join(render_view(v) for v in views if isinstance(v, Text | Table))
    tree = site_tree(result) if method.threshold_setting() is not None else None  # (DC's one model: no tree)
    order = _tree_order(tree)
    figures = ("" if tree is None else dendrogram_svg(
        tree[0], tree[1], cut=tree[2], xlabel=tree[3],
        title="Sites grouped by the method: the tree of " + tree[3] + (
            f"; sites joined left of the dashed cut at {tree[2]:g} trained together." if tree[2] is not None
            else ".")))
    figures += "".join(render_view(v, order if isinstance(v, Heatmap) and tree is not None
                                   and list(v.row_labels) == tree[1] == list(v.col_labels) else None)
                       for v in views if not isinstance(v, Text | Table))
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>DC Studio report — {_esc(kit.name)}</title><style>{_CSS}</style></head><body>
<h1>DC Studio report — {_esc(kit.name)}</h1>
<p>Project <code>{_esc(kit.project_id)}</code>, task {_esc(kit.task)}, method <b>{_esc(result.method)}</b>
({_esc(method.title)}), {len(s.get("sites", []))} sites.</p>
{_formal_html(s)}{flag_html}{tables}
<p>Clusters are numbered from 1.</p>
<h2>Plots</h2>{figures or "<p>(none for this run)</p>"}
{"<h2>Model cards (one per package)</h2>" + cards if cards else ""}
{_footer(s)}"""
