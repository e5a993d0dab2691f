"""DC-Clustering (``dcclustering``): federated clustering of the rows in one round (Kawamata, Kamijo et al.).

Algorithm 3 of the paper, on a grid of c row groups × d feature blocks (algorithms.md §5):
1. site (i, j): X̃_{i,j} = f_{i,j}(X_{i,j}) and X̃ᵃⁿᶜ_{i,j} = f_{i,j}(Xᵃⁿᶜ_{:,j}) with its private f (standardise,
   PCA to m_j − 1; eqs. 5–6), rows shuffled, ids only as keyed hashes (:mod:`core.methods.dcclustering.row_linkage`);
2. analyst: link the blocks of the same people into row groups and join them, X̃_i = [X̃_{i,1}, …, X̃_{i,d}]
   and X̃ᵃⁿᶜ_i likewise (eqs. 7–8);
3. affine alignment (default; eqs. 17–20): [X̃ᵃⁿᶜ_1, 1, …, X̃ᵃⁿᶜ_c, 1] ≈ Ū₁Σ̄₁V̄₁ᵀ, [G'_i; g*_i] = [X̃ᵃⁿᶜ_i, 1]† Ū₁C,
   X̂_i = X̃_i G'_i + 1 g*_i; or linear (eqs. 15–16);
4. k-means or spectral clustering of X̂ (eq. 12: Z = X̂ or the spectral embedding E), centroids θ;
5. return to every site of row group i: θ, its rows' Z_i and cluster labels, in its bundle's (shuffled)
   row order; the site puts them back in its own order with the permutation it kept.
``scaling`` decides which distances the clustering uses, and so which centralised clustering it reproduces:
* ``"raw"``: sites only centre (PCA in the data's own units), C = Σ̄₁. X̂ is then, up to a rotation
  and a common factor, the rows in their own units with the least-variance direction of each block dropped —
  the geometry of k-means on the pooled raw features. This reproduces the paper's published numbers (Table 2
  exactly; Tables 4 and 6, e.g. Heart-statlog ARI 0.030 ± 0.000, Rice 0.577 ± 0.000), which no standardising
  site can (docs/results/dcclustering/).
* ``"range"`` (default; docs/results/gold/README.md §4): sites standardise, C = I. The anchor cloud is
  whitened (algorithms.md §5.4b); with the uniform anchor in the public per-feature ranges, X̂ has the
  geometry of the rows with every feature divided by its range, so every column counts alike — at the price
  of a larger loss from the m_j − 1 reduction.
Rows whose id is missing from some block, or held by two sites of one block, are left out and counted.
``k = "auto"`` tries ``k_range`` and keeps the best silhouette on X̂; with a fixed k the curve is still
computed over k ± ``k_curve_width`` for the report.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...control import JobControl
from ...data.schema import ALL_COLUMNS
from ...errors import ConfigError, FormatError
from ...formats.fields import Field
from ...learn.alignment import DCAlignment
from ..base import (
    FitContext,
    Method,
    MethodResult,
    ReceivedBundle,
    SiteExport,
    SiteInput,
    canonical_cluster_numbers,
    check_standardised,
    rows_digest,
)
from ..dc_analysis import declared_width, exact_arrays
from ..dc_site import (
    DC_BUNDLE_FIELDS,
    DC_ROWS_RULES,
    ROWS_RELEASE,
    SITE_SETTINGS,
    check_anchor_width,
    check_dc_bundle,
    dc_bundle_arrays,
    dc_site_compute,
)
from ..settings import Setting
from ..views import Curve, PageTexts, Scatter, Table, Text, View, cluster_sizes, principal_axes_2d
from .data_clustering import ALGORITHMS, EMBEDDINGS, DataClustering, best_k, k_curve
from .row_linkage import VerticalLinkage

# The DC family's site settings, but m̃ defaults to the papers' m − 1 here (the records measure that).
CLUSTERING_SITE_SETTINGS = tuple(replace(x, none_help="one fewer than your columns") if x.name == "dimension" else x
                                 for x in SITE_SETTINGS)
SCALINGS = ("range", "raw")


class DCClustering(Method):
    name = "dcclustering"
    title = "DC-Clustering: federated clustering of the rows"
    plain_title = "groups of similar patients found across all sites"
    task = "clustering"
    labels_leave = "none"
    family = "dcclustering"
    discloses = ROWS_RELEASE
    papers_dimension = True  # its records measure the papers' m − 1
    bundle_fields = (*DC_BUNDLE_FIELDS, Field("block", "text", required=True))
    bundle_arrays = dc_bundle_arrays(labelled=False, ids=True)
    bundle_rules = DC_ROWS_RULES
    package_fields = (Field("k", "int", required=True, low=1), Field("k_auto", "bool"),
                      Field("algorithm", "text", choices=ALGORITHMS),
                      Field("alignment", "text", choices=("linear", "affine")),
                      Field("scaling", "text", choices=SCALINGS), Field("dimension", "int", low=1),
                      Field("block", "text"), *(Field(k, "int", low=0) for k in ("rows", "clustered", "not_clustered")),
                      Field("groups", "list", items="int"), Field("sizes", "list", items="int"), Field("note", "text"))
    what_leaves = ("a privately reduced, shuffled copy of every row (no labels), the shared anchor rows after "
                   "the same private reduction, and keyed hashes of the row ids when blocks are linked")
    settings_spec = (
        Setting("k", "int", "auto", "number of clusters", label="Clusters k", low=2, high=1000, auto=True,
                auto_help="the best silhouette over k_range"),
        Setting("k_range", "int_pair", [2, 10], "the numbers of clusters tried when k is auto", advanced=True),
        Setting("algorithm", "choice", "kmeans", "how the rows are clustered", label="Algorithm",
                choices=ALGORITHMS, choice_help=("k-means", "spectral")),
        Setting("alignment", "choice", "affine", "how each site's reduced rows are mapped to the common space",
                label="Alignment", choices=("linear", "affine"),
                choice_help=("linear", "affine, with an offset")),
        Setting("scaling", "choice", "range", "which distances the clustering uses", label="Distances on",
                choices=SCALINGS, choice_help=("each column ÷ its public range", "columns in their own units")),
        Setting("threshold", "float", 1e-2, "singular values of the anchor images below this are dropped",
                low=0.0, advanced=True),
        Setting("relative_threshold", "bool", False, "read the threshold relative to the largest singular value",
                advanced=True),
        Setting("n_init", "int", 10, "k-means restarts", low=1, high=1000, advanced=True),
        Setting("max_iter", "int", 300, "k-means iterations", low=1, high=100000, advanced=True),
        Setting("n_neighbors", "int", 10, "spectral: neighbours in the similarity graph", low=1, high=1000,
                advanced=True),
        Setting("embedding", "choice", "sklearn", "spectral: which embedding", choices=EMBEDDINGS, advanced=True),
        Setting("k_curve_width", "int", 2, "with a fixed k, also score k ± this many for the report", low=0,
                high=20, advanced=True),
        Setting("silhouette_rows", "int", 5000, "rows sampled to score the silhouette", low=100, advanced=True),
        Setting("seed", "int", 0, "random seed of the clustering", label="Random seed", low=0, high=2**31 - 1),
        *CLUSTERING_SITE_SETTINGS,
    )

    # ---- site ----------------------------------------------------------------------------------
    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport:
        ex = dc_site_compute(site, ship_labels=False, control=control,
                             standardise=self.settings["scaling"] == "range", papers_dimension=self.papers_dimension)
        block = site.block or ALL_COLUMNS
        ex.manifest["block"] = block
        ex.private_arrays["row_digest"] = rows_digest(site.X)
        ex.private_meta["block"] = block
        return ex

    @classmethod
    def bundle_facts(cls, kit, manifest: dict):
        """The facts of the feature block the bundle holds: its encoded width and its columns (FormatError naming
        the kit's blocks when it names none of them)."""
        schema, block = kit.schema, manifest.get("block")
        if block not in schema.block_names:
            raise FormatError(f"bundle holds feature block {block!r}, which the kit does not declare (its blocks "
                              f"are {schema.describe_blocks()})")
        return replace(super().bundle_facts(kit, manifest), width=len(schema.block_indices(block)),
                       features=tuple(schema.block_columns(block)))

    def check_bundle(self, bundle: ReceivedBundle, kit) -> None:
        """A DC bundle without labels, holding one of the kit's feature blocks with that block's columns."""
        super().check_bundle(bundle, kit)
        check_dc_bundle(bundle.arrays, None, need_labels=False)
        m, schema = bundle.manifest, kit.schema
        block = m.get("block")
        if not isinstance(block, str) or block not in schema.block_names:
            raise FormatError(f"bundle holds feature block {block!r}, which the kit does not declare (its blocks "
                              f"are {schema.describe_blocks()})")
        cols = schema.block_columns(block)
        width = len(schema.block_indices(block))  # the block's encoded matrix columns
        if m.get("n_features") != width:
            raise FormatError(f"bundle's block '{block}' has {m.get('n_features')} column(s); the kit's block has "
                              f"{width} ({', '.join(cols)})")
        if len(schema.block_names) > 1 and "id_hash" not in bundle.arrays:
            raise FormatError("bundle lacks the hashed row ids needed to link the feature blocks")
        check_standardised(m, self.settings["scaling"] == "range", self.settings["scaling"], "reduced")
        h = bundle.arrays.get("id_hash")
        if h is not None and (h.dtype != np.uint8 or h.shape != (bundle.arrays["x_tilde"].shape[0], 32)):
            raise FormatError("bundle's id hashes are not one 32-byte hash per row")

    # ---- analyst -------------------------------------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        """Link, align, cluster; ``context.blocks`` = the kit's block names in order (default: as the bundles
        say)."""
        control = context.control
        s = self.settings
        if not bundles:
            raise ConfigError("no bundles to analyse")
        check_anchor_width(bundles)
        bblocks = [str(b.manifest.get("block", ALL_COLUMNS)) for b in bundles]
        names = list(context.blocks) if context.blocks else list(dict.fromkeys(bblocks))
        control.step(0.0, "linking the feature blocks by hashed ids")
        link = VerticalLinkage().fit(bblocks, [b.arrays["x_tilde"].shape[0] for b in bundles],
                                     [b.arrays.get("id_hash") for b in bundles], names)
        if not link.groups_:
            absent = [n for n in names if n not in bblocks]
            why = (f"no site sent block {', '.join(repr(n) for n in absent)}" if absent
                   else "no id appears in every block")
            raise ConfigError(f"no row could be joined across the feature blocks: {why}")
        # joined intermediate representations per row group (eqs. 7–8)
        X_groups, A_groups = [], []
        for g in link.groups_:
            X_groups.append(np.hstack([bundles[b].arrays["x_tilde"][g.rows[:, j]].astype(np.float64)
                                       for j, b in enumerate(g.sites)]))
            A_groups.append(np.hstack([bundles[b].arrays["anchor_tilde"].astype(np.float64) for b in g.sites]))
        control.step(0.1, f"aligning {len(link.groups_)} row group(s)")
        al = DCAlignment(affine=s["alignment"] == "affine", threshold=float(s["threshold"]),
                         relative=bool(s["relative_threshold"]),
                         scale="identity" if s["scaling"] == "range" else "singular").fit(A_groups)
        Xh = np.vstack([m.transform(X) for m, X in zip(al.mappings_, X_groups, strict=True)])
        group_of_row = np.concatenate([np.full(g.n_rows, i, dtype=np.int64) for i, g in enumerate(link.groups_)])
        n = Xh.shape[0]
        opts = {"n_init": int(s["n_init"]), "max_iter": int(s["max_iter"]), "n_neighbors": int(s["n_neighbors"]),
                "embedding": s["embedding"], "random_state": int(s["seed"])}
        # k: auto by silhouette over k_range, or fixed (with a small curve around it)
        if s["k"] == "auto":
            lo, hi = (int(v) for v in s["k_range"])
            ks = [k for k in range(lo, hi + 1) if k < n]
            if not ks:
                raise ConfigError(f"k = auto tries {lo}…{hi} clusters, but only {n} row(s) could be clustered")
        else:
            k = int(s["k"])
            if k >= n:
                raise ConfigError(f"k = {k} clusters need more than {k} rows; only {n} row(s) could be clustered")
            w = int(s["k_curve_width"])
            ks = [j for j in range(max(2, k - w), k + w + 1) if j < n] if w > 0 else []
        curve = k_curve(Xh, ks, s["algorithm"], silhouette_rows=int(s["silhouette_rows"]),
                        control=control.sub(0.15, 0.7), **opts) if ks else {}
        k = best_k(curve) if s["k"] == "auto" else int(s["k"])
        control.step(0.7, f"clustering into k = {k}")
        dc = DataClustering(k, s["algorithm"], **opts).fit(Xh)
        # clusters numbered by content (largest first, then first row in the canonical site order), not as
        # k-means happened to number them
        new = canonical_cluster_numbers(dc.labels_, k)
        labels, Z, theta = new[dc.labels_], dc.representation_, dc.cluster_centers_[np.argsort(new)]
        # packages: labels and Z_i in each bundle's own (shuffled) row order; -1 / NaN for rows left out
        site_labels = [np.full(b.arrays["x_tilde"].shape[0], -1, dtype=np.int32) for b in bundles]
        site_z = [np.full((b.arrays["x_tilde"].shape[0], Z.shape[1]), np.nan) for b in bundles]
        start = 0
        for g in link.groups_:
            sl = slice(start, start + g.n_rows)
            for j, b in enumerate(g.sites):
                site_labels[b][g.rows[:, j]] = labels[sl]
                site_z[b][g.rows[:, j]] = Z[sl]
            start += g.n_rows
        sizes = np.bincount(labels, minlength=k)
        packages, sites = [], []
        for i, b in enumerate(bundles):
            sl_ = link.sites_[i]
            note = sl_.note()
            manifest = {"method": self.name, "k": k, "k_auto": s["k"] == "auto", "algorithm": s["algorithm"],
                        "alignment": s["alignment"], "scaling": s["scaling"], "dimension": int(al.dim_),
                        "block": bblocks[i],
                        "rows": sl_.rows, "clustered": sl_.joined, "not_clustered": sl_.rows - sl_.joined,
                        "groups": sl_.groups, "sizes": sizes.tolist(), "note": note}
            packages.append((manifest, {"labels": site_labels[i], "z": site_z[i], "centroids": theta}))
            kept = b.manifest.get("variance_kept")
            sites.append({"site": b.site, "fingerprint": b.fingerprint, "block": bblocks[i], "rows": sl_.rows,
                          "variance_kept": float(kept) if isinstance(kept, int | float) else None,
                          "clustered": sl_.joined, "not_clustered": sl_.rows - sl_.joined,
                          "partial": sl_.partial, "conflicts": sl_.conflicts, "missing_blocks": sl_.missing_blocks,
                          "groups": sl_.groups, "note": note,
                          "cluster_counts": np.bincount(site_labels[i][site_labels[i] >= 0], minlength=k).tolist()})
        str_curve = {str(kk): v for kk, v in curve.items()}
        summary = {
            "method": self.name, "task": self.task, "k": k, "k_auto": s["k"] == "auto", "k_curve": str_curve,
            "algorithm": s["algorithm"], "alignment": s["alignment"], "scaling": s["scaling"],
            "dimension": int(al.dim_),
            "n_clusters": k, "sizes": sizes.tolist(), "rows_clustered": int(n), "blocks": names,
            "graph_components": dc.graph_components_,
            "linkage": {**link.summary(), "left_out_rows": int(sum(x.rows - x.joined for x in link.sites_)),
                        "what_happened": "Rows whose id is missing from a block, or held by two sites of one "
                                         "block, are left out of the clustering and get no cluster"},
            "groups": [{"sites": [bundles[b].site for b in g.sites], "rows": g.n_rows} for g in link.groups_],
            "sites": sites, "settings": s,
        }
        centroids_x = np.vstack([Xh[labels == c].mean(axis=0) if sizes[c] else np.full(Xh.shape[1], np.nan)
                                 for c in range(k)])
        details = {"representation": Xh, "labels": labels, "group_of_row": group_of_row, "centroids": theta,
                   "centroids_representation": centroids_x, "clustering_representation": Z, "k_curve": curve,
                   "sizes": sizes, "k": k, "singular_values": al.singular_values_,
                   "groups": [g.sites for g in link.groups_]}
        control.step(1.0, "clustering done")
        return MethodResult(self.name, packages, summary, details)

    # ---- what it shows --------------------------------------------------------------------------
    def summary_lines(self, summary: dict) -> list[str]:
        s = summary
        curve = s.get("k_curve") or {}
        how = "chosen by silhouette" if s.get("k_auto") else "fixed in the kit"
        lines = [f"method {s['method']} ({s['algorithm']}, {s['alignment']} alignment, dimension {s['dimension']}):"
                 f" k = {s['k']} ({how}); cluster sizes {s['sizes']}"]
        if curve:
            lines.append("k curve: " + "; ".join(f"k={k}: silhouette {v['silhouette']:.3f}, inertia "
                                                 f"{v['inertia']:.4g}" for k, v in curve.items()))
        link = s["linkage"]
        lines.append(f"rows clustered: {s['rows_clustered']} in {link['groups']} row group(s); left out: "
                     f"{link['partial']} people missing from some block, {link['conflicts']} held twice in a block")
        for site in s["sites"]:
            lines.append(f"  {site['site']} [block {site['block']}]: {site['clustered']} of {site['rows']} rows "
                         "clustered" + (f" — {site['note']}" if site["note"] else ""))
        return lines

    @classmethod
    def page_texts(cls) -> PageTexts:
        """DC-Clustering's words: the rows of all sites grouped in one common space; no threshold, no loss."""
        return PageTexts(
            models="Group the rows of every site together, in one common space the sites' compressed rows are "
                   "aligned into (no label left any site); the groups appear on the Data clustering page.",
            train="&Cluster the data",
            columns={"variance_kept": ("Share of the data kept", "variance kept by the site's reduction"),
                     "clustered": ("Rows grouped", "rows linked over every block and clustered"),
                     "not_clustered": ("Rows left out", "rows missing from a block or held twice"),
                     "partial": ("Rows in some blocks only", "ids present in only some feature blocks"),
                     "conflicts": ("Rows held twice", "ids held by two sites of one block"),
                     "missing_blocks": ("Blocks missing", "feature blocks with no site holding this row")})

    def views(self, result: MethodResult) -> list[View]:
        s, d = result.summary, result.details
        out: list[View] = []
        how = ("the number whose groups are best separated (silhouette) over the tried range" if s.get("k_auto")
               else "a number fixed in the kit")
        why = (" (a text column counts one number per category and the affine alignment adds a constant, so this "
               "can exceed the number of columns)")
        out.append(Text(f"Grouped by {s.get('algorithm')} after {s.get('alignment')} alignment; each row is "
                        f"{s.get('dimension')} numbers after alignment{why}; blocks {', '.join(s.get('blocks', []))}. "
                        f"{s.get('k')} groups ({how}); "
                        f"{s.get('rows_clustered')} rows clustered. No labels left any site."))
        comps = s.get("graph_components")
        if comps and comps > 1:
            extra = (f", more than the {s.get('k')} groups asked for: the smallest pieces are grouped together "
                     "arbitrarily" if comps > s.get("k", 0) else "")
            out.append(Text(f"The {s['settings'].get('n_neighbors')}-nearest-neighbour graph of the spectral "
                            f"clustering falls into {comps} separate pieces{extra}.", tone="warning"))
        sites = s.get("sites", [])
        out.append(Table("Sites", ["site", "fingerprint", "block", "rows", "share of the data kept", "clustered",
                                   "left out", "note"],
                         [[x["site"], x.get("fingerprint", ""), x["block"], x["rows"],
                           "–" if x.get("variance_kept") is None else f"{x['variance_kept']:.1%}", x["clustered"],
                           x["not_clustered"], x.get("note", "")] for x in sites],
                         tips={"share of the data kept": "variance kept by the site's private reduction"}))
        kept = [x["variance_kept"] for x in sites if x.get("variance_kept") is not None]
        if kept:
            units = "in the data's own units" if s.get("scaling") == "raw" else "after standardising"
            out.append(Text(f"Each site's reduction keeps between {min(kept):.1%} and {max(kept):.1%} of its "
                            f"block's variance ({units}). The rest is discarded before anything leaves the site, so "
                            "no alignment can use it: the lower these shares, the further the federated "
                            "clustering may be from clustering the pooled rows."))
        link = s.get("linkage", {})
        out.append(Text(f"Rows matched across sites by their (hashed) ids: {link.get('people', 0)} people; "
                        f"{link.get('joined', 0)} joined over every block into {link.get('groups', 0)} row group(s); "
                        f"{link.get('partial', 0)} present in only some blocks and {link.get('conflicts', 0)} held "
                        f"by two sites of one block. {link.get('what_happened', '')}."))
        out.append(Table("Row groups", ["row group", "sites", "people"],
                         [[g + 1, ", ".join(x["sites"]), x["rows"]] for g, x in enumerate(s.get("groups", []))]))
        X = d.get("representation")
        if X is not None and len(X):
            centres = d.get("centroids_representation", d.get("centroids"))
            P, C, ratio = principal_axes_2d(X, centres if centres is not None and np.shape(centres)[1:] ==
                                            np.shape(X)[1:] else None)
            out.append(Scatter("Rows on the first two principal axes, by cluster", P, np.asarray(d["labels"]), C,
                               xlabel=f"axis 1 ({ratio[0]:.0%} of the spread)",
                               ylabel=f"axis 2 ({ratio[1]:.0%})"))
        curve = s.get("k_curve") or {}
        if len(curve) > 1:
            ks = [int(k) for k in curve]
            out.append(Curve("How well separated the groups are, for each number of groups (higher is better)", ks,
                             {"separation": [curve[str(k)]["silhouette"] for k in ks]}, xlabel="number of groups",
                             ylabel="separation (silhouette)", mark=float(s["k"])))
            out.append(Curve("Spread within the groups, for each number of groups (lower is tighter)", ks,
                             {"spread": [curve[str(k)]["inertia"] for k in ks]}, xlabel="number of groups",
                             ylabel="spread (inertia)", mark=float(s["k"])))
        return out + cluster_sizes(s.get("sizes", []))

    # ---- site, after the round -----------------------------------------------------------------
    def check_package(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
                      kit) -> None:
        """§6: ``labels`` <i4 (n,) for this site's n exported rows, ``z`` <f8 (n, q) (NaN only for rows left out)
        and ``centroids`` <f8 (k, q) finite, with q at most :func:`declared_width` of the kit."""
        n = len(np.asarray(private_arrays.get("permutation", ())))
        z = arrays.get("z")
        widest = declared_width(kit, self.default_settings())
        q = z.shape[1] if z is not None and z.ndim == 2 and 1 <= z.shape[1] <= widest else 0
        exact_arrays({k: v for k, v in arrays.items() if k != "z"},
                     {"labels": ((n,), "<i4"), "centroids": ((manifest["k"], q), "<f8")})
        if z is None or z.dtype.str != "<f8" or z.shape != (n, q) or np.any(np.isinf(z)):
            raise FormatError(f"the package's 'z' is not {n} finite rows of {q} float64 values (NaN for rows left "
                              "out)")

    def apply(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
              X: np.ndarray) -> dict[str, np.ndarray]:
        """The cluster of every row of the exported CSV, in its own order (empty for rows left out)."""
        perm = np.asarray(private_arrays["permutation"], dtype=np.int64)
        n = perm.shape[0]
        if X.shape[0] != n:
            raise FormatError(f"this package holds the clusters of the {n} rows this site exported; the CSV has "
                              f"{X.shape[0]} rows: apply it to the CSV that was exported")
        if "row_digest" in private_arrays and not np.array_equal(rows_digest(X), private_arrays["row_digest"]):
            raise FormatError("this CSV's values differ from the rows this site exported (or are in another "
                              "order): apply the package to the CSV that was exported")
        labels = np.asarray(arrays.get("labels"))
        if labels.shape != (n,) or labels.dtype.kind not in "iu":
            raise FormatError("the package's cluster labels do not fit this site's rows")
        k = int(manifest.get("k", 0))
        if labels.size and (labels.min() < -1 or labels.max() >= k):
            raise FormatError("the package's cluster labels are outside 0 … k − 1")
        own = np.empty(n, dtype=np.int64)
        own[perm] = labels  # bundle row p held original row perm[p]
        # people count clusters from 1 (cluster 1 … k), as the app, the report and summary.json do
        return {"cluster": np.array([str(v + 1) if v >= 0 else "" for v in own], dtype=object)}

    def representation(self, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray]
                       ) -> tuple[np.ndarray, np.ndarray]:
        """(Z_i in the site's own row order (NaN rows: left out), centroids θ): what the paper returns."""
        perm = np.asarray(private_arrays["permutation"], dtype=np.int64)
        z = np.asarray(arrays.get("z"), dtype=np.float64)
        theta = np.asarray(arrays.get("centroids"), dtype=np.float64)
        if z.ndim != 2 or z.shape[0] != perm.shape[0] or theta.ndim != 2 or theta.shape[1] != z.shape[1]:
            raise FormatError("the package's representation does not fit this site's rows")
        own = np.empty_like(z)
        own[perm] = z
        return own, theta
