"""DC-Clustering (``dcclustering``): federated clustering of the rows in one round (Kawamata, Kamijo et al.).

Algorithm 3 of the paper, on a grid of c row groups × d feature blocks (algorithms.md §5):
1. site (i, j): X̃_{i,j} = f_{i,j}(X_{i,j}) and X̃ᵃⁿᶜ_{i,j} = f_{i,j}(Xᵃⁿᶜ_{:,j}) with its private f (standardise,
   PCA to m_j − 1; eqs. 5–6), rows shuffled, ids only as keyed hashes (:mod:`core.learn.row_linkage`);
2. analyst: link the blocks of the same people into row groups and join them, X̃_i = [X̃_{i,1}, …, X̃_{i,d}]
   and X̃ᵃⁿᶜ_i likewise (eqs. 7–8);
3. affine alignment (default; eqs. 17–20): [X̃ᵃⁿᶜ_1, 1, …, X̃ᵃⁿᶜ_c, 1] ≈ Ū₁Σ̄₁V̄₁ᵀ, [G'_i; g*_i] = [X̃ᵃⁿᶜ_i, 1]† Ū₁C,
   X̂_i = X̃_i G'_i + 1 g*_i; or linear (eqs. 15–16);
4. k-means or spectral clustering of X̂ (eq. 12: Z = X̂ or the spectral embedding E), centroids θ;
5. return to every site of row group i: θ, its rows' Z_i and cluster labels, in its bundle's (shuffled)
   row order; the site puts them back in its own order with the permutation it kept.
``scaling`` decides which distances the clustering uses, and so which centralised clustering it reproduces:
* ``"raw"`` (default): sites only centre (PCA in the data's own units), C = Σ̄₁. X̂ is then, up to a rotation
  and a common factor, the rows in their own units with the least-variance direction of each block dropped —
  the geometry of k-means on the pooled raw features. This reproduces the paper's published numbers (Table 2
  exactly; Tables 4 and 6, e.g. Heart-statlog ARI 0.030 ± 0.000, Rice 0.577 ± 0.000), which no standardising
  site can (docs/results/dcclustering/).
* ``"range"``: sites standardise, C = I. The anchor cloud is whitened (algorithms.md §5.4b); with the uniform
  anchor in the public per-feature ranges, X̂ has the geometry of the rows with every feature divided by its
  range, so every column counts alike — at the price of a larger loss from the m_j − 1 reduction.
Rows whose id is missing from some block, or held by two sites of one block, are left out and counted.
``k = "auto"`` tries ``k_range`` and keeps the best silhouette on X̂; with a fixed k the curve is still
computed over k ± ``k_curve_width`` for the report.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..control import JobControl, ensure
from ..data.schema import ALL_COLUMNS
from ..errors import ConfigError, FormatError
from ..learn.alignment import DCAlignment
from ..learn.data_clustering import ALGORITHMS, EMBEDDINGS, DataClustering, best_k, k_curve
from ..learn.row_linkage import VerticalLinkage
from .base import Method, MethodResult, ReceivedBundle, SiteExport, SiteInput
from .dc_site import check_dc_bundle, dc_site_compute

SCALINGS = ("range", "raw")


def rows_digest(X: np.ndarray) -> np.ndarray:
    """SHA-256 of a site's float64 matrix, (32,) uint8: ties a package's labels to the exported rows."""
    return np.frombuffer(hashlib.sha256(np.ascontiguousarray(X, dtype=np.float64).tobytes()).digest(),
                         dtype=np.uint8).copy()


class DCClustering(Method):
    name = "dcclustering"
    title = "DC-Clustering: federated clustering of the rows"
    task = "clustering"
    labels_leave = "none"
    family = "dcclustering"

    def __init__(self, **settings):
        super().__init__(**settings)
        s = self.settings
        k = s["k"]
        if k != "auto" and (isinstance(k, bool) or not isinstance(k, int) or k < 2):
            raise ConfigError(f"k must be 'auto' or a whole number ≥ 2, got {k!r}")
        kr = s["k_range"]
        if (not isinstance(kr, list | tuple) or len(kr) != 2 or not all(isinstance(v, int) for v in kr)
                or not 2 <= kr[0] <= kr[1]):
            raise ConfigError(f"k_range must be two whole numbers 2 ≤ low ≤ high, got {kr!r}")
        if s["algorithm"] not in ALGORITHMS:
            raise ConfigError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {s['algorithm']!r}")
        if s["alignment"] not in ("affine", "linear"):
            raise ConfigError(f"alignment must be 'affine' or 'linear', got {s['alignment']!r}")
        if s["scaling"] not in SCALINGS:
            raise ConfigError(f"scaling must be one of {', '.join(SCALINGS)}, got {s['scaling']!r}")
        if s["embedding"] not in EMBEDDINGS:
            raise ConfigError(f"embedding must be one of {', '.join(EMBEDDINGS)}, got {s['embedding']!r}")

    @classmethod
    def default_settings(cls) -> dict:
        return {"k": "auto", "k_range": [2, 10], "algorithm": "kmeans", "alignment": "affine", "scaling": "raw",
                "threshold": 1e-2, "relative_threshold": False, "n_init": 10, "max_iter": 300,
                "n_neighbors": 10, "embedding": "sklearn", "k_curve_width": 2, "silhouette_rows": 5000,
                "seed": 0}

    # ---- site ----------------------------------------------------------------------------------
    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport:
        ex = dc_site_compute(site, ship_labels=False, control=control,
                             standardise=self.settings["scaling"] == "range")
        block = site.block or ALL_COLUMNS
        ex.manifest["block"] = block
        ex.private_arrays["row_digest"] = rows_digest(site.X)
        ex.private_meta["block"] = block
        return ex

    def validate_bundle(self, bundle: ReceivedBundle, n_classes: int) -> None:
        check_dc_bundle(bundle.arrays, None, need_labels=False)
        if not isinstance(bundle.manifest.get("block"), str):
            raise FormatError("bundle does not say which feature block it holds")
        standardised = bundle.manifest.get("standardised", True)
        if standardised != (self.settings["scaling"] == "range"):
            raise FormatError(f"bundle was reduced {'with' if standardised else 'without'} standardisation, but "
                              f"the kit's scaling is {self.settings['scaling']!r}: the site must export again "
                              "with this kit")
        h = bundle.arrays.get("id_hash")
        if h is not None and (h.dtype != np.uint8 or h.shape != (bundle.arrays["x_tilde"].shape[0], 32)):
            raise FormatError("bundle's id hashes are not one 32-byte hash per row")

    # ---- analyst -------------------------------------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], classes: list[str], control: JobControl | None = None,
            blocks: list[str] | None = None) -> MethodResult:
        """Link, align, cluster; ``blocks`` = the kit's block names in order (default: as the bundles say)."""
        control = ensure(control)
        s = self.settings
        if not bundles:
            raise ConfigError("no bundles to analyse")
        if len({b.arrays["anchor_tilde"].shape[0] for b in bundles}) != 1:
            raise FormatError("bundles were made with different anchors (different anchor row counts)")
        bblocks = [str(b.manifest.get("block", ALL_COLUMNS)) for b in bundles]
        names = list(blocks) if blocks else list(dict.fromkeys(bblocks))
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
        labels, Z, theta = dc.labels_, dc.representation_, dc.cluster_centers_
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

    # ---- site, after the round -----------------------------------------------------------------
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
