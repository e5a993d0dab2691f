"""What the analyst's outputs say about a formal (ε, δ) option: summary.json, the report, the model cards, the CLI
and the app's Models page all read :func:`formal_block` (analyst side: it reads only the bundles' manifests).

Each bundle exported under the option carries its accounting (``privacy``: ε, δ, the mechanism, the adjacency).
The block names every site's (ε, δ), the mechanism, what the guarantee covers and does not, and — since the DC
family's analyst scores its models on the rows and classes the sites shipped — that those figures were computed
on noised rows and randomised labels, so they understate how the model does on real rows.
"""

from __future__ import annotations

from .mechanism import NOT_COVERED as ROWS_NOT_COVERED
from .release import DISTILLED_ROWS, REDUCED_ROWS

SUMMARY_NOT_COVERED = ("the number of rows (public under the 'one row replaced' definition)",
                       "the exactness of the fit (the proof assumes the exact minimiser)")
ROWS_FIGURES = ("accuracy and AUC figures of this run were computed on the sites' noised rows and randomised labels "
                "(the formal option): they understate how the models do on real rows; each site checks its package "
                "on its own labelled rows (participant apply --validate)")
SUMMARY_FIGURES = ("the combined coefficients rest on noised site estimates (the formal option); their intervals "
                   "include the noise")


def formal_block(bundles, release) -> dict | None:
    """The formal option's statement for a run over ``bundles`` (ReceivedBundle) of a method that releases
    ``release`` (:class:`core.privacy.release.Release`: rows, or a summary), or None when no site used it."""
    sites = []
    for b in bundles:
        acc = b.manifest.get("privacy")
        if isinstance(acc, dict) and "epsilon" in acc:
            sites.append({"site": b.site, "fingerprint": b.fingerprint, "epsilon": float(acc["epsilon"]),
                          "delta": float(acc["delta"]), "mechanism": str(acc.get("mechanism", "")),
                          "adjacency": str(acc.get("adjacency", ""))})
    if not sites:
        return None
    rows = release.kind in (REDUCED_ROWS, DISTILLED_ROWS)  # rows of the sites, or rows made from them
    plain = [b.site for b in bundles if not isinstance(b.manifest.get("privacy"), dict)]
    return {"sites": sites, "without": plain,
            "covers": ("every shipped row, its class and the class counts" if rows else
                       "every number that leaves: coefficients and their covariances"),
            "not_covered": list(ROWS_NOT_COVERED if rows else SUMMARY_NOT_COVERED),
            "figures": ROWS_FIGURES if rows else SUMMARY_FIGURES}


def _budget(s: dict) -> str:
    return f"ε = {s['epsilon']:g}, δ = {s['delta']:.1e}"


def formal_lines(block: dict | None) -> list[str]:
    """Plain sentences of the block (CLI, report, app, model cards)."""
    if not block:
        return []
    sites = block["sites"]
    same = len({(s["epsilon"], s["delta"]) for s in sites}) == 1
    who = (f"every site ({_budget(sites[0])} each)" if same and not block["without"] else
           "; ".join(f"{s['site']}: {_budget(s)}" for s in sites))
    lines = [f"Formal privacy: {who} — {sites[0]['mechanism'] or 'see the bundles'}; "
             f"{sites[0]['adjacency'] or 'one row replaced'}. Covered: {block['covers']}."]
    if block["without"]:
        lines.append("Without the formal option: " + ", ".join(block["without"]) + ".")
    lines.append("Not covered: " + "; ".join(block["not_covered"]) + ".")
    lines.append(block["figures"][0].upper() + block["figures"][1:] + ".")
    return lines


def site_lines(block: dict | None, fingerprint: str) -> list[str]:
    """The lines a site's model card carries: its own (ε, δ) and what the figures rest on."""
    if not block:
        return []
    mine = next((s for s in block["sites"] if s["fingerprint"] == fingerprint), None)
    own = (f"This site's export was formally private ({_budget(mine)}; {mine['mechanism']})." if mine else
           "This site exported without the formal option; other sites used it.")
    return [own, "Not covered: " + "; ".join(block["not_covered"]) + ".",
            block["figures"][0].upper() + block["figures"][1:] + "."]
