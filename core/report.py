"""The analyst's HTML report: settings, seeds, versions, input digests and every plot, in one file.

Plots are inline SVG drawn here (no plotting library, no network, no scripts), so the report opens
anywhere and prints to PDF from the GUI.
"""

from __future__ import annotations

import html
import json
import platform

import numpy as np

from . import __version__
from .formats.kit import Kit
from .learn.intervals import describe
from .methods import MethodResult


def _esc(x) -> str:
    return html.escape(str(x))


def heatmap_svg(M: np.ndarray, labels: list[str], *, size: int = 360, title: str = "") -> str:
    """A [0, 1] matrix as a grey-to-blue heatmap."""
    n = len(M)
    if n == 0:
        return ""
    cell = size / n
    rects = []
    for i in range(n):
        for j in range(n):
            v = float(np.clip(M[i, j], 0, 1))
            r, g, b = int(240 - 200 * v), int(244 - 160 * v), int(250 - 60 * v)
            rects.append(f'<rect x="{j * cell:.2f}" y="{i * cell:.2f}" width="{cell:.2f}" height="{cell:.2f}" '
                         f'fill="rgb({r},{g},{b})"><title>{_esc(labels[i])} – {_esc(labels[j])}: {v:.3f}'
                         "</title></rect>")
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
            f'viewBox="0 0 {size} {size}">{"".join(rects)}</svg><figcaption>{_esc(title)}</figcaption></figure>')


def line_svg(xs: list[float], ys: list[float], *, width: int = 420, height: int = 220, title: str = "",
             xlabel: str = "", ylabel: str = "", mark: float | None = None) -> str:
    """A small line plot with axes and an optional vertical marker."""
    if not xs:
        return ""
    pad = 40
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x1 = x0 + 1
    if y1 - y0 < 1e-9:
        y0, y1 = y0 - 0.05, y1 + 0.05

    def px(x):
        return pad + (x - x0) / (x1 - x0) * (width - 2 * pad)

    def py(y):
        return height - pad - (y - y0) / (y1 - y0) * (height - 2 * pad)

    pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, ys, strict=True))
    dots = "".join(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="#2563eb"><title>{x:g}: {y:.4f}</title>'
                   f"</circle>" for x, y in zip(xs, ys, strict=True))
    marker = "" if mark is None else (f'<line x1="{px(mark):.1f}" y1="{pad / 2}" x2="{px(mark):.1f}" '
                                      f'y2="{height - pad}" stroke="#dc2626" stroke-dasharray="4 3"/>')
    axes = (f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#555"/>'
            f'<line x1="{pad}" y1="{pad / 2}" x2="{pad}" y2="{height - pad}" stroke="#555"/>'
            f'<text x="{pad}" y="{height - 8}" font-size="11">{x0:g}</text>'
            f'<text x="{width - pad}" y="{height - 8}" font-size="11" text-anchor="end">{x1:g}</text>'
            f'<text x="{width / 2}" y="{height - 8}" font-size="11" text-anchor="middle">{_esc(xlabel)}</text>'
            f'<text x="4" y="{py(y1) + 4:.1f}" font-size="11">{y1:.3f}</text>'
            f'<text x="4" y="{py(y0) + 4:.1f}" font-size="11">{y0:.3f}</text>'
            f'<text x="4" y="{pad / 2 - 4}" font-size="11">{_esc(ylabel)}</text>')
    return (f'<figure><svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">{axes}{marker}'
            f'<polyline fill="none" stroke="#2563eb" stroke-width="2" points="{pts}"/>{dots}</svg>'
            f"<figcaption>{_esc(title)}</figcaption></figure>")


def bars_svg(counts: list[int], classes: list[str], *, width: int = 160, height: int = 28) -> str:
    """A label-histogram sparkline."""
    total = max(1, max(counts) if counts else 1)
    w = width / max(1, len(counts))
    bars = "".join(f'<rect x="{k * w + 1:.1f}" y="{height - height * c / total:.1f}" width="{w - 2:.1f}" '
                   f'height="{height * c / total:.1f}" fill="#2563eb"><title>{_esc(classes[k])}: {c}</title></rect>'
                   for k, c in enumerate(counts))
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">{bars}</svg>'


_CSS = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;color:#111}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}
th{background:#f3f4f6}code,pre{background:#f3f4f6;padding:.1rem .3rem}figure{display:inline-block;margin:1rem}
figcaption{font-size:.85rem;color:#555}"""


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
    return f"""<h2>Settings and seeds</h2><pre>{_esc(settings)}</pre>
<h2>Versions</h2><pre>{_esc(json.dumps(versions, indent=2))}</pre>
<h2>Inputs (bundle SHA-256)</h2><table>{inputs}</table>
<h2>Packages written</h2><table><tr><th>site</th><th>file</th><th>SHA-256</th></tr>{outputs}</table>
</body></html>
"""


def _kept(v) -> str:
    return "–" if v is None else f"{v:.1%}"


def render_clustering_report(kit: Kit, result: MethodResult, summary: dict) -> str:
    """DC-Clustering: sites and their blocks, the linkage, the k curve, cluster sizes and a 2-D view."""
    s, d = summary, result.details
    rows = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in (
        _esc(x["site"]), f"<code>{_esc(x.get('fingerprint', ''))}</code>", _esc(x["block"]), x["rows"],
        _kept(x.get("variance_kept")), x["clustered"], x["not_clustered"], _esc(x.get("note", ""))))
        + "</tr>" for x in s.get("sites", []))
    kept = [x["variance_kept"] for x in s.get("sites", []) if x.get("variance_kept") is not None]
    units = "in the data's own units" if s.get("scaling") == "raw" else "after standardising"
    fidelity = "" if not kept else (
        f"<p>Each site's reduction keeps between {min(kept):.1%} and {max(kept):.1%} of its block's variance "
        f"({units}). "
        "The rest is discarded before anything leaves the site, so no alignment can use it: the lower these "
        "shares, the further the federated clustering may be from clustering the pooled rows.</p>")
    groups = "".join(f"<tr><td>{g}</td><td>{_esc(', '.join(x['sites']))}</td><td>{x['rows']}</td></tr>"
                     for g, x in enumerate(s.get("groups", [])))
    link = s.get("linkage", {})
    figures = []
    curve = s.get("k_curve") or {}
    if len(curve) > 1:
        ks = [int(k) for k in curve]
        for key, label in (("silhouette", "silhouette (higher is better)"), ("inertia", "within-cluster SS")):
            figures.append(line_svg(ks, [curve[str(k)][key] for k in ks], title=f"{label} for each k",
                                    xlabel="k", ylabel=key, mark=float(s["k"])))
    sizes = s.get("sizes", [])
    if sizes:
        figures.append("<figure>" + bars_svg(sizes, [f"cluster {c}" for c in range(len(sizes))], width=320,
                                             height=80) + "<figcaption>rows per cluster</figcaption></figure>")
    X = d.get("representation")
    if X is not None and len(X) and X.shape[1] >= 2:
        Xc = X - X.mean(axis=0)
        _, _, Vt = np.linalg.svd(Xc[:: max(1, len(Xc) // 20000)], full_matrices=False)
        figures.append(scatter_svg(Xc @ Vt[:2].T, d["labels"],
                                   title="collaborative representation (first two principal axes) by cluster"))
    how = "chosen by the best silhouette over the tried range" if s.get("k_auto") else "fixed in the kit"
    comps = s.get("graph_components")
    graph = "" if not comps or comps <= 1 else (
        f"<p><b>Note:</b> the {s['settings'].get('n_neighbors')}-nearest-neighbour graph of the spectral clustering "
        f"falls into {comps} separate pieces" + (f", more than k = {s.get('k')}: the smallest pieces are grouped "
                                                 "together arbitrarily." if comps > s.get("k", 0) else ".")
        + "</p>")
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>DC Studio report — {_esc(kit.name)}</title><style>{_CSS}</style></head><body>
<h1>DC Studio report — {_esc(kit.name)}</h1>
<p>Project <code>{_esc(kit.project_id)}</code>, task clustering, method <b>{_esc(result.method)}</b>
({_esc(s.get("algorithm"))}, {_esc(s.get("alignment"))} alignment, collaborative dimension {s.get("dimension")}),
{len(s.get("sites", []))} sites, blocks {_esc(", ".join(s.get("blocks", [])))}.
k = <b>{s.get("k")}</b> ({how}); {s.get("rows_clustered")} rows clustered. No labels left any site.</p>{graph}
<h2>Sites</h2><table><tr><th>site</th><th>fingerprint</th><th>block</th><th>rows</th><th>variance kept</th>
<th>clustered</th><th>left out</th><th>note</th></tr>{rows}</table>{fidelity}
<h2>Vertical linkage</h2><p>{link.get("people", 0)} distinct hashed ids; {link.get("joined", 0)} joined over every
block into {link.get("groups", 0)} row group(s); {link.get("partial", 0)} present in only some blocks and
{link.get("conflicts", 0)} held by two sites of one block. {_esc(link.get("what_happened", ""))}.</p>
<table><tr><th>row group</th><th>sites</th><th>people</th></tr>{groups}</table>
<h2>Plots</h2>{"".join(figures) or "<p>(none for this run)</p>"}
{_footer(s)}"""


def render_report(kit: Kit, result: MethodResult, summary: dict) -> str:
    if summary.get("task") == "clustering":
        return render_clustering_report(kit, result, summary)
    classes = list(kit.schema.classes)
    s = summary
    rows = []
    for site in s.get("sites", []):
        gain = site.get("expected_gain")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in (
            _esc(site["site"]), f"<code>{_esc(site.get('fingerprint', ''))}</code>", site.get("rows", ""),
            site.get("cluster", ""), _esc(site.get("model", "")), _esc(describe(site.get("expected"))),
            _esc(describe(site.get("own_model"))), "" if gain is None else f"{100 * gain:+.1f} pt",
            _esc(site.get("note", "")),
            bars_svg(site.get("label_counts", []), classes) if site.get("label_counts") else "")) + "</tr>")
    weak = [x["site"] for x in s.get("sites", []) if (x.get("expected") or {}).get("weak")]
    sel = s.get("selection") or {}
    how = {"cv": f"{sel.get('folds')}-fold cross-validation repeated {sel.get('repeats')}×",
           "holdout": "one hold-out of the received rows"}.get(sel.get("kind"), "")
    estimate_note = "" if not how else (
        f"<p>Expected accuracies are estimated by {how} over every site's received rows (n = the site's rows; "
        "95 % Wilson intervals). <i>Own model</i> is a model trained on the site's reduced rows alone; a site is "
        "sent its own model when that cross-validates better than its cluster's.</p>")
    if weak:
        estimate_note += (f"<p class=warn><b>Too few rows for a firm estimate:</b> {_esc(', '.join(weak))} "
                          "(95 % interval wider than 20 pt or fewer than 30 rows).</p>")
    d = result.details
    figures = []
    if "distances" in d and len(d["distances"]) > 1:
        figures.append(heatmap_svg(d["distances"], [x["site"] for x in s["sites"]],
                                   title="Total-variation distance between the sites' label distributions"))
    curve = s.get("validation_curve") or {}
    if len(curve) > 1:
        xs = [float(t) for t in curve]
        figures.append(line_svg(xs, [curve[k] for k in curve], title="Cross-validated accuracy for each threshold t",
                                xlabel="t", ylabel="accuracy", mark=float(s.get("t", xs[0]))))
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>DC Studio report — {_esc(kit.name)}</title><style>{_CSS}</style></head><body>
<h1>DC Studio report — {_esc(kit.name)}</h1>
<p>Project <code>{_esc(kit.project_id)}</code>, task {_esc(kit.task)}, method <b>{_esc(result.method)}</b>,
{len(s.get("sites", []))} sites, {s.get("n_clusters", "?")} cluster(s), threshold t = {s.get("t", "–")}.</p>
<h2>Sites</h2>{estimate_note}<table><tr><th>site</th><th>fingerprint</th><th>rows</th><th>cluster</th>
<th>model sent</th><th>expected accuracy</th><th>own-rows model</th><th>expected gain</th><th>note</th>
<th>labels ({", ".join(_esc(c) for c in classes)})</th></tr>{"".join(rows)}</table>
<h2>Plots</h2>{"".join(figures) or "<p>(none for this run)</p>"}
{_footer(s)}"""
