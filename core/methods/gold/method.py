"""GOLD (``gold``): one-shot federated clustering that ships only micro-cluster centroids (Zhang et al.).

Algorithm (``core/methods/gold/cpl.py`` holds the engine; the paper's equation numbers are there):

1. site i, on its own n_i rows X_i (no anchor, nothing shuffled, no row leaves):
   * working units: with ``scaling = "standardised"`` (default) the site's **own** z-scores
     Z_i = (X_i − μ_i) / σ_i (μ_i, σ_i its column means and population std); with ``"raw"`` Z_i = X_i;
   * FCPL (competitive penalised learning, Eqs. 8–22) on Z_i with round(``k0`` · n_i) starting candidates,
     at most ``max_candidates`` (site setting); singleton clusters are eliminated implicitly;
   * the guard: no micro-cluster of fewer than ``min_cluster_rows`` rows is shipped (``small_clusters``:
     ``"ward"`` (default) smallest first joins the group of least Ward cost n_a n_b/(n_a+n_b)·‖c_a − c_b‖²
     in Z_i, ``"pool"`` the nearest group, ``"merge"`` the nearest large group, ``"drop"`` leaves the rows
     out; :func:`core.methods.gold.cpl._guard`);
   * ships the p_i micro-cluster centroids **in raw units** (centroids are means, so μ_i + σ_i·c is the exact
     mean of the member rows), their row counts, and the column statistics n_i, Σx, Σx²; optional Gaussian
     noise of std ``noise`` × σ_i on the centroids. It keeps each row's micro-cluster (private).
2. analyst (one round, so the pooled scale is computed only here): pooled mean μ and population std σ of
   the union from every site's (n, Σx, Σx²); every shipped centroid is standardised with them,
   T = (C − μ) / σ (``"raw"``: T = C). Sites are taken in a canonical order (by the digest of each bundle's
   content, :func:`core.methods.dc_analysis.site_order`), never the files' order or names. The server step
   (``server_step``):
   * ``"kmeans"`` (default): count-weighted k-means of T (each centroid weighted by its rows) from 10
     k-means++ and one farthest-first seeding, the run with the best estimated silhouette of the rows kept
     (:func:`core.methods.gold.cpl.separated_kmeans`); ``k = "auto"``: the k in
     2…10 with the best silhouette of the rows, estimated from T, the counts and the rows' spread inside
     their micro-clusters (known from the column sums, :func:`core.methods.gold.cpl.within_spread`);
   * ``"mcpl"`` (the paper's): MCPL on T gives the granularity levels L⁽¹⁾ … L⁽ᴴ⁾, REMC (weighted k-modes
     on the stacked level labels, Eqs. 23–29) forms k clusters. REMC "cannot form k clusters": MCPL + REMC
     restart with the next seed (≤ ``max_retries``), counted and reported. ``k = "auto"``: REMC for every
     k in 2…10 and every level size (≤ the largest level), the best count-weighted silhouette of T.
   Why k-means is the default (docs/results/gold/server-step.md): REMC sees only the level labels, not where
   the centroids lie; when k is below the last level's size it must merge level clusters, and a micro-cluster
   whose labels match no mode has similarity 0 to every cluster and falls into cluster 1 by the tie — so
   on small non-IID sites k given did worse than k = auto (which can keep a level as it is).
   Global centroid = the mean of its clusters' rows (count-weighted micro-centroids, ``centroids = "rows"``)
   or the unweighted mean of its micro-centroids (``"micro"``, the authors' code); clusters REMC leaves
   empty are dropped; clusters are numbered by size (largest first; ties by their centroid), so the same
   bundles give the same numbers.
3. package to site i: the global cluster of each of its micro-clusters, their level labels, the k global
   centroids in raw units and μ, σ; ``apply`` labels the exported rows by their micro-cluster's cluster
   (the CSV is checked against the export's SHA-256) and any other rows by the nearest global centroid in
   the analyst's units ((x − μ)/σ, or raw). People count clusters from 1.

The bench (docs/results/gold/) measured this one-shot scaling (sites' own z-scores, analyst re-scales with
the pooled statistics) together with the guard; it is why ``"standardised"`` is the default.
"""

from __future__ import annotations

import numpy as np

from ...control import JobControl, ensure
from ...data.schema import ALL_COLUMNS
from ...errors import ConfigError, FormatError
from ...formats.fields import Array, Field, Rule
from ...privacy.release import PROTOTYPES, Release
from ..base import (
    Disclosure,
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
from ..dc_analysis import exact_arrays, site_order
from ..settings import Setting
from ..views import Bars, Curve, PageTexts, Scatter, Table, Text, View, cluster_sizes, principal_axes_2d
from . import cpl as G

SCALINGS = ("standardised", "raw")
STEP_WORDS = {"kmeans": "count-weighted k-means", "mcpl": "MCPL + REMC"}


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"

MAX_LEVELS = 64  # MCPL granularity levels a package may list per micro-cluster (a few in practice)


class Gold(Method):
    name = "gold"
    title = "GOLD: federated clustering from each site's micro-cluster centroids (k may be unknown)"
    plain_title = "groups of similar patients found across all sites, from averages of small groups of rows"
    task = "clustering"
    family = "gold"
    discloses = Release(PROTOTYPES, rows="centroids", counts="counts")
    bundle_fields = (Field("n_rows", "int", required=True, low=0), Field("n_features", "int", required=True, low=1),
                     Field("micro_clusters", "int", required=True, low=1),
                     *(Field(k, "int", low=0) for k in ("candidates", "found", "min_cluster_rows", "guard_rows",
                                                        "guard_clusters", "dropped_rows", "epochs")),
                     Field("small_clusters", "text", choices=G.GUARDS), Field("noise", "number", low=0.0, high=2.0))
    bundle_arrays = (Array("centroids", "<f8", ("micro_clusters", "width")),
                     Array("counts", "<i8", ("micro_clusters",)),
                     Array("col_sum", "<f8", ("width",)), Array("col_sumsq", "<f8", ("width",)))
    bundle_rules = (
        Rule("n_features is the kit's number of encoded columns", lambda m, a, f: m["n_features"] == f.width),
        Rule("min_cluster_rows and small_clusters are the kit's settings", lambda m, a, f: m.get(
            "min_cluster_rows", f.settings["min_cluster_rows"]) == f.settings["min_cluster_rows"] and m.get(
            "small_clusters", f.settings["small_clusters"]) == f.settings["small_clusters"]),
        Rule("the rows in the shipped groups (counts) plus the rows left out (dropped_rows) are n_rows, and the guard "
             "touched at most n_rows rows", lambda m, a, f: int(a["counts"].sum()) + m.get("dropped_rows", 0)
             == m["n_rows"] and m.get("guard_rows", 0) <= m["n_rows"]),
    )
    package_fields = (Field("k", "int", required=True, low=1), Field("k_auto", "bool"),
                      Field("scaling", "text", choices=SCALINGS), Field("server_step", "text", choices=G.SERVER_STEPS),
                      Field("level_sizes", "list", items="int"), Field("sizes", "list", items="int"),
                      Field("micro_clusters", "int", low=0), Field("rows", "int", low=0),
                      Field("block", "text", nullable=True))
    labels_leave = "none"
    needs_anchor = False
    what_leaves = ("the average of each small group of similar rows (every group holds at least the kit's "
                   "minimum number of rows), how many rows each group holds, and the row count, sum and sum of "
                   "squares of each column; no single row, no labels")
    settings_spec = (
        Setting("k", "int", "auto", "number of clusters", label="Clusters k", low=2, high=1000, auto=True,
                auto_help="every k from 2 to 10 is tried; the k with the best silhouette wins, ties to the "
                          "smaller k (k-means: the silhouette of the rows, estimated from the averages, their row "
                          "counts and the spread inside the groups; MCPL + REMC: also every level size MCPL "
                          "passed through, and the silhouette of the averages, each weighted by its rows)"),
        Setting("server_step", "choice", G.SERVER_STEPS[0], "how the analyst groups the sites' averages",
                label="Grouping of the averages", choices=G.SERVER_STEPS,
                choice_help=("k-means on the averages, each counting as many times as it has rows (of 11 starts, "
                             "the best-separated result); k = auto: the best silhouette",
                             "the paper's MCPL + REMC (multi-granular competitive learning, then k-modes on the "
                             "granularity labels)"),
                advanced=True),
        Setting("scaling", "choice", "standardised", "which distances the clustering uses", label="Distances on",
                choices=SCALINGS, choice_help=("columns standardised with the pooled mean and spread of all "
                                               "sites (computed from their column sums)",
                                               "columns in their own units")),
        Setting("min_cluster_rows", "int", G.MIN_SIZE, "no shipped average is the mean of fewer rows (smaller "
                "groups are merged with their neighbours; 1 switches the guard off)",
                label="Minimum rows per group", low=1, high=100000),
        Setting("small_clusters", "choice", G.GUARD_DEFAULT, "what the guard does with a group below the minimum",
                choices=G.GUARDS, choice_help=("smallest first, join the nearest group of any size",
                                               "join the nearest group that is large enough",
                                               "smallest first, join the group that adds the least spread (Ward)",
                                               "leave its rows out"),
                advanced=True),
        Setting("eta", "float", G.ETA, "learning rate of competitive learning (site and analyst)",
                low=1e-4, high=1.0, advanced=True),
        Setting("epochs", "int", G.MAX_EPOCHS, "at most this many passes of competitive learning", low=1,
                high=1000, advanced=True),
        Setting("k0", "float", G.K0, "starting micro-clusters at a site, as a share of its rows", low=0.01,
                high=1.0, advanced=True),
        Setting("k1", "float", G.K1, "starting clusters of MCPL, as a share of all shipped micro-clusters",
                low=0.01, high=1.0, advanced=True),
        Setting("max_retries", "int", 20, "REMC restarts (new seed) when it cannot form k clusters (MCPL + REMC "
                "only)", low=0,
                high=1000, advanced=True),
        Setting("centroids", "choice", "rows", "what a global centroid is", choices=("rows", "micro"),
                choice_help=("the mean of its rows", "the plain mean of its micro-cluster centroids"),
                advanced=True),
        Setting("seed", "int", 0, "random seed of the analyst's clustering", label="Random seed", low=0,
                high=2**31 - 1),
        Setting("noise", "float", 0.0, "random noise added to the shipped averages, times each column's spread",
                label="Noise", low=0.0, high=2.0, side="site"),
        Setting("max_candidates", "int", 500, "at most this many starting groups (half the rows otherwise); "
                "bounds the time on large files", label="Largest number of starting groups", low=2, high=100000,
                side="site", advanced=True),
        Setting("seed", "int", None, "random seed of the grouping (none: fresh each export)", label="Seed", low=0,
                optional=True, none_help="fresh randomness", side="site", advanced=True),
    )

    # ---- site ----------------------------------------------------------------------------------
    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport:
        control = ensure(control)
        s, opts = self.settings, {**{x.name: x.default for x in self.site_settings_spec()}, **site.settings}
        X = np.asarray(site.X, dtype=np.float64)
        n, m = X.shape
        guard = int(s["min_cluster_rows"])
        if n < max(guard, 2):
            raise ConfigError(f"this site has {n} rows; GOLD needs at least {max(guard, 2)} (the kit's minimum "
                              "rows per group)")
        seed = opts["seed"] if opts["seed"] is not None else int(np.random.default_rng().integers(2**31))
        standardise = s["scaling"] == "standardised"
        control.step(0.05, "grouping the rows (FCPL)")
        res = G.fcpl_site(X, standardise=standardise, eta=float(s["eta"]), k0=float(s["k0"]),
                          max_candidates=int(opts["max_candidates"]), max_epochs=int(s["epochs"]),
                          min_size=guard if guard > 1 else 0, guard=s["small_clusters"], seed=seed)
        p = len(res.counts)
        if p == 0:
            raise ConfigError(f"no group of at least {guard} rows remains at this site; nothing can be shipped")
        cents = res.centroids
        noise = float(opts["noise"])
        if noise > 0:
            _, own_sd = G.pooled_scaler([res.stats])
            cents = cents + np.random.default_rng([seed, 1]).normal(0.0, noise, cents.shape) * own_sd
        dropped = int((res.labels < 0).sum())
        arrays = {"centroids": np.ascontiguousarray(cents, dtype=np.float64),
                  "counts": res.counts.astype(np.int64),
                  "col_sum": res.stats["sum"].astype(np.float64), "col_sumsq": res.stats["sumsq"].astype(np.float64)}
        guard_words = ("no group was below the minimum" if res.guard_clusters == 0 else
                       f"the guard merged {_plural(res.guard_clusters, 'smaller group')} holding "
                       f"{_plural(res.guard_rows, 'row')} with neighbouring groups"
                       if s["small_clusters"] != "drop" else
                       f"the guard left out {_plural(res.guard_clusters, 'smaller group')} holding "
                       f"{_plural(res.guard_rows, 'row')}")
        disclosures = [
            Disclosure("centroids", cents.shape, "float64",
                       f"the column averages of {_plural(p, 'micro-cluster')} of your rows (each of at least "
                       f"{guard} rows; {guard_words})" + (f", with noise {noise:g} × each column's spread"
                                                          if noise else ""),
                       "the average of each group of similar rows, never a single row"),
            Disclosure("counts", (p,), "int64", "how many of your rows each micro-cluster holds",
                       "how many rows each group holds"),
            Disclosure("col_sum", (m,), "float64", "the sum of each column over your rows",
                       "one total per column, so the analyst can put all sites' columns on one scale"),
            Disclosure("col_sumsq", (m,), "float64", "the sum of squares of each column over your rows",
                       "one more total per column (with the row count it gives the column's spread)"),
        ]
        block = site.block or ALL_COLUMNS
        manifest = {"n_rows": n, "n_features": m, "micro_clusters": p, "candidates": int(res.k_init),
                    "found": int(res.k_found), "min_cluster_rows": guard, "small_clusters": s["small_clusters"],
                    "guard_rows": int(res.guard_rows), "guard_clusters": int(res.guard_clusters),
                    "dropped_rows": dropped, "noise": noise, "standardised": standardise, "epochs": int(res.epochs),
                    "block": block}
        plain = (f"The averages of {_plural(p, 'group')} of similar rows out of your {n:,} rows (every group holds "
                 f"at least {guard} rows; {guard_words}), how many rows each group holds, and the count, sum and "
                 "sum of squares of each column. No single row, no names, no labels"
                 + (f"; noise of {noise:g} × each column's spread is added to the averages." if noise else "."))
        stays = ["your data file and every original value in it",
                 "which group each of your rows belongs to (so the results can be matched back to your rows)"]
        private = {"micro_labels": res.labels.astype(np.int64), "micro_counts": res.counts.astype(np.int64),
                   "row_digest": rows_digest(X)}
        control.step(1.0, "grouping done")
        return SiteExport(arrays, manifest, private, {"block": block, "micro_clusters": p}, disclosures, stays, plain)

    def check_bundle(self, bundle: ReceivedBundle, kit) -> None:
        """Centroids (p, m) for the kit's m columns, counts (p,) each ≥ the guard, column statistics (m,)."""
        super().check_bundle(bundle, kit)
        schema, a, man = kit.schema, bundle.arrays, bundle.manifest
        if len(schema.block_names) > 1:
            raise FormatError("GOLD clusters sites that hold the same columns; this kit splits the columns into "
                              "blocks (use a kit without blocks)")
        m = schema.width  # the encoded matrix columns
        C, counts = a.get("centroids"), a.get("counts")
        if C is None or C.ndim != 2 or C.dtype.kind != "f" or C.shape[0] < 1 or C.shape[1] != m:
            raise FormatError(f"bundle lacks a float array 'centroids' of shape (micro-clusters, {m})")
        if counts is None or counts.dtype.kind not in "iu" or counts.shape != (C.shape[0],):
            raise FormatError("bundle's 'counts' is not one whole number per centroid")
        guard = int(self.settings["min_cluster_rows"])
        if counts.min() < guard:
            raise FormatError(f"bundle ships a centroid of {int(counts.min())} row(s); the kit's minimum is {guard}")
        for key in ("col_sum", "col_sumsq"):
            v = a.get(key)
            if v is None or v.dtype.kind != "f" or v.shape != (m,):
                raise FormatError(f"bundle lacks a float array '{key}' of shape ({m},)")
        for key in ("centroids", "col_sum", "col_sumsq"):
            if not np.all(np.isfinite(a[key])):
                raise FormatError(f"bundle array '{key}' holds non-finite values")
        n = man.get("n_rows")
        if type(n) is not int or n < max(guard, 1) or int(counts.sum()) > n:
            raise FormatError("bundle's row count (n_rows) is missing, below the minimum or below its centroids' "
                              "rows")
        if man.get("n_features") != m:
            raise FormatError(f"bundle has {man.get('n_features')} column(s); the kit has {m}")
        mean = a["col_sum"] / n
        if np.any(a["col_sumsq"] / n - mean**2 < -1e-6 * np.maximum(1.0, mean**2)):
            raise FormatError("bundle's column sums of squares are smaller than its sums allow")
        check_standardised(man, self.settings["scaling"] == "standardised", self.settings["scaling"], "grouped")

    # ---- analyst -------------------------------------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        control, s = context.control, self.settings
        if not bundles:
            raise ConfigError("no bundles to analyse")
        order = site_order(bundles)  # canonical: by content digest, before anything random
        bundles = [bundles[i] for i in order]
        sites = []
        for b in bundles:
            a = b.arrays
            stats = {"n": np.array([float(b.manifest["n_rows"])]), "sum": a["col_sum"].astype(np.float64),
                     "sumsq": a["col_sumsq"].astype(np.float64)}
            sites.append(G.SiteResult(a["centroids"].astype(np.float64), a["counts"].astype(np.int64),
                                      np.zeros(0, np.int64), stats, 0, 0, 0, 0, 0, 0))
        total = sum(len(x.counts) for x in sites)
        k_set = s["k"]
        if k_set != "auto" and int(k_set) > total:
            raise ConfigError(f"k = {k_set} clusters, but the sites shipped only {total} micro-clusters")
        m = sites[0].centroids.shape[1]
        mean, std = (None, None) if s["scaling"] == "standardised" else (np.zeros(m), np.ones(m))
        server = s["server_step"]
        control.step(0.05, f"{STEP_WORDS[server]} over {total} micro-clusters")
        model = G.gold_fit(sites, k_set, mean=mean, std=std, eta=float(s["eta"]), k1=float(s["k1"]),
                           max_epochs=int(s["epochs"]), seed=int(s["seed"]), max_retries=int(s["max_retries"]),
                           server=server, weighted_centroids=s["centroids"] == "rows")
        control.step(0.9, "packaging")
        # clusters REMC left without members are dropped and the rest renumbered 0 … k − 1 by content (most rows
        # first, then first micro-cluster in the canonical site order), not as REMC happened to number them
        numbers = canonical_cluster_numbers(np.concatenate(model.micro_global), model.k,
                                            np.concatenate([x.counts for x in sites]))
        keep = np.argsort(numbers)
        keep = keep[np.all(np.isfinite(model.centroids[keep]), axis=1)]
        renum = np.full(model.k, -1, dtype=np.int64)
        renum[keep] = np.arange(len(keep))
        k, empty = len(keep), model.k - len(keep)
        micro = [renum[g] for g in model.micro_global]
        cent_w, cent_raw = model.centroids[keep], model.centroids_raw[keep]
        sizes = np.zeros(k, dtype=np.int64)
        for site, g in zip(sites, micro, strict=True):
            sizes += np.bincount(g, weights=site.counts, minlength=k).astype(np.int64)
        packages, summ_sites = [None] * len(bundles), []
        for pos, b, site, g, lev in zip(order, bundles, sites, micro, model.micro_levels, strict=True):
            man = b.manifest
            counts_k = np.bincount(g, weights=site.counts, minlength=k).astype(np.int64)
            manifest = {"method": self.name, "k": k, "k_auto": k_set == "auto", "scaling": s["scaling"],
                        "server_step": server, "level_sizes": [int(v) for v in model.level_sizes],
                        "sizes": sizes.tolist(), "micro_clusters": int(len(g)), "rows": int(man["n_rows"]),
                        "block": man.get("block")}
            packages[pos] = (manifest, {"micro_cluster": g.astype(np.int32), "levels": lev.astype(np.int32),
                                        "centroids": np.ascontiguousarray(cent_raw, dtype=np.float64),
                                        "scale_mean": np.asarray(model.mean, np.float64),
                                        "scale_std": np.asarray(model.std, np.float64)})
            summ_sites.append({"site": b.site, "fingerprint": b.fingerprint, "rows": int(man["n_rows"]),
                               "micro_clusters": int(len(g)), "rows_in_clusters": int(site.counts.sum()),
                               "guard_rows": int(man.get("guard_rows", 0)),
                               "guard_clusters": int(man.get("guard_clusters", 0)),
                               "dropped_rows": int(man.get("dropped_rows", 0)),
                               "noise": float(man.get("noise", 0.0)), "cluster_counts": counts_k.tolist()})
        auto = {}
        if model.auto:
            auto = {"candidates": [int(c) for c in model.auto["candidates"]],
                    "silhouette": {str(c): float(v) for c, v in model.auto["silhouette"].items()},
                    "chosen": int(model.auto["chosen"])}
        summary = {"method": self.name, "task": self.task, "k": k, "k_auto": k_set == "auto", "auto": auto,
                   "server_step": server,
                   "n_clusters": k, "level_sizes": [int(v) for v in model.level_sizes], "sizes": sizes.tolist(),
                   "remc_failures": int(model.remc_failures), "empty_clusters_dropped": int(empty),
                   "micro_clusters": int(total), "rows_clustered": int(sizes.sum()), "scaling": s["scaling"],
                   "centroids": cent_raw.tolist(), "sites": summ_sites, "settings": s}
        T = np.vstack([(x.centroids - model.mean) / model.std for x in sites])
        details = {"micro_centroids": T, "micro_labels": np.concatenate(micro), "micro_counts":
                   np.concatenate([x.counts for x in sites]), "centroids_working": cent_w, "k": k}
        control.step(1.0, "clustering done")
        return MethodResult(self.name, packages, summary, details)

    # ---- what it shows --------------------------------------------------------------------------
    def summary_lines(self, summary: dict) -> list[str]:
        s = summary
        how = (f"chosen by silhouette among {s['auto'].get('candidates')}" if s.get("k_auto") else "fixed in the kit")
        server = s.get("server_step", "mcpl")
        lines = [f"method gold ({s['scaling']} distances, {STEP_WORDS[server]}): k = {s['k']} ({how}); rows per "
                 f"cluster {s['sizes']}",
                 (f"MCPL levels (k stage by stage): {' → '.join(str(v) for v in s['level_sizes'])}; "
                  f"{s['micro_clusters']} micro-clusters; REMC failures retried: {s['remc_failures']}"
                  if server == "mcpl" else f"{s['micro_clusters']} micro-clusters")
                 + (f"; empty clusters dropped: {s['empty_clusters_dropped']}" if s["empty_clusters_dropped"] else "")]
        for x in s["sites"]:
            lines.append(f"  {x['site']}: {x['rows']} rows in {x['micro_clusters']} micro-clusters; guard touched "
                         f"{x['guard_rows']} rows ({x['guard_clusters']} small micro-clusters)"
                         + (f", {x['dropped_rows']} rows left out" if x["dropped_rows"] else ""))
        return lines

    @classmethod
    def page_texts(cls) -> PageTexts:
        """GOLD's words: groups of rows found from each site's small-group averages; no threshold, no loss."""
        return PageTexts(
            models="Group the rows of every site together, from the averages of small groups of rows each site "
                   "sent (no row and no label left any site); the groups appear on the Data clustering page.",
            train="&Cluster the data",
            columns={"micro_clusters": ("Small groups sent", "micro-clusters found at the site (FCPL)"),
                     "rows_in_clusters": ("Rows in small groups", "rows summarised by the shipped micro-clusters"),
                     "guard_rows": ("Rows in too-small groups", "rows whose micro-cluster was below the minimum "
                                    "size and was merged or left out (the guard)"),
                     "guard_clusters": ("Too-small groups", "micro-clusters below the minimum size, merged or left "
                                        "out (the guard)"),
                     "dropped_rows": ("Rows left out", "rows of left-out micro-clusters"),
                     "noise": ("Added noise", "standard deviation of the noise added to the averages")})

    def views(self, result: MethodResult) -> list[View]:
        s, d = result.summary, result.details
        out: list[View] = []
        how = ("the number whose groups are best separated (silhouette)" if s.get("k_auto")
               else "a number fixed in the kit")
        units = ("columns standardised with the pooled mean and spread of all sites" if s.get("scaling") ==
                 "standardised" else "columns in their own units")
        out.append(Text(f"{s.get('micro_clusters')} small groups of rows from {len(s.get('sites', []))} site(s), "
                        f"grouped by {STEP_WORDS[s.get('server_step', 'mcpl')]} on {units}, into {s.get('k')} groups "
                        f"({how}); {s.get('rows_clustered')} rows clustered. Only the small groups' averages, "
                        "their sizes and column totals left the sites; no row and no label did."))
        if s.get("remc_failures"):
            out.append(Text(f"The grouping could not form k groups {s['remc_failures']} time(s) and was restarted "
                            "with a new seed.", tone="warning"))
        if s.get("empty_clusters_dropped"):
            out.append(Text(f"{s['empty_clusters_dropped']} cluster(s) ended without members and were dropped.",
                            tone="warning"))
        out.append(Table("Sites", ["site", "fingerprint", "rows", "small groups sent", "rows in too-small groups",
                                   "rows left out", "added noise", "rows per cluster"],
                         [[x["site"], x.get("fingerprint", ""), x["rows"], x["micro_clusters"], x["guard_rows"],
                           x["dropped_rows"], x["noise"], x["cluster_counts"]] for x in s.get("sites", [])],
                         bars=("rows per cluster",), bar_labels=[str(c + 1) for c in range(int(s.get("k", 0)))]))
        levels = s.get("level_sizes", [])
        if levels:
            out.append(Bars("Groups left at each step of the coarse-to-fine grouping", [f"step {h + 1}"
                                                                              for h in range(len(levels))],
                            [float(v) for v in levels], ylabel="groups"))
        sil = (s.get("auto") or {}).get("silhouette") or {}
        if len(sil) > 1:
            ks = sorted(int(c) for c in sil)
            out.append(Curve("How well separated the groups are, for each number of groups tried (higher is better)",
                             ks, {"separation": [sil[str(c)] for c in ks]}, xlabel="number of groups",
                             ylabel="separation (silhouette)", mark=float(s["k"])))
        T = d.get("micro_centroids")
        if T is not None and len(T) >= 2:
            P, C, ratio = principal_axes_2d(T, d.get("centroids_working"))
            out.append(Scatter("Small groups' averages on the first two principal axes, by cluster", P,
                               np.asarray(d["micro_labels"]), C, xlabel=f"axis 1 ({ratio[0]:.0%} of the spread)",
                               ylabel=f"axis 2 ({ratio[1]:.0%})"))
        return out + cluster_sizes(s.get("sizes", []))

    # ---- site, after the round -----------------------------------------------------------------
    def check_package(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
                      kit) -> None:
        """§6.1: ``micro_cluster`` <i4 (p,) and ``levels`` <i4 (p, H) for this site's p micro-clusters (H at most
        :data:`MAX_LEVELS`), ``centroids`` <f8 (k, m), ``scale_mean``/``scale_std`` <f8 (m,), all finite."""
        p, m = len(np.asarray(private_arrays.get("micro_counts", ()))), kit.schema.width
        levels = arrays.get("levels")
        H = levels.shape[1] if levels is not None and levels.ndim == 2 and 1 <= levels.shape[1] <= MAX_LEVELS else 0
        exact_arrays(arrays, {"micro_cluster": ((p,), "<i4"), "levels": ((p, H), "<i4"),
                              "centroids": ((manifest["k"], m), "<f8"), "scale_mean": ((m,), "<f8"),
                              "scale_std": ((m,), "<f8")})

    def apply(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
              X: np.ndarray) -> dict[str, np.ndarray]:
        """The exported CSV's rows: their micro-cluster's cluster; other rows: the nearest global centroid."""
        X = np.asarray(X, dtype=np.float64)
        C = np.asarray(arrays.get("centroids"), dtype=np.float64)
        mu, sd = (np.asarray(arrays.get(k), dtype=np.float64) for k in ("scale_mean", "scale_std"))
        k = int(manifest.get("k", 0))
        if C.ndim != 2 or C.shape != (k, X.shape[1]) or k < 1:
            raise FormatError("the package's centroids do not fit this site's columns")
        if mu.shape != (X.shape[1],) or sd.shape != (X.shape[1],) or not np.all(sd > 0):
            raise FormatError("the package's scale is malformed")
        micro = np.asarray(arrays.get("micro_cluster"))
        own_counts = np.asarray(private_arrays["micro_counts"])
        if micro.shape != own_counts.shape or micro.dtype.kind not in "iu" or (
                micro.size and (micro.min() < 0 or micro.max() >= k)):
            raise FormatError("the package's micro-cluster labels do not fit this site's export")
        Z, W = (X - mu) / sd, (C - mu) / sd
        nearest = ((Z**2).sum(1)[:, None] - 2 * Z @ W.T + (W**2).sum(1)[None]).argmin(axis=1)
        labels = nearest
        own = np.asarray(private_arrays["micro_labels"], dtype=np.int64)
        if X.shape[0] == own.shape[0] and np.array_equal(rows_digest(X), private_arrays["row_digest"]):
            labels = np.where(own >= 0, micro[np.maximum(own, 0)], nearest)  # the exported rows
        # people count clusters from 1 (cluster 1 … k), as the app, the report and summary.json do
        return {"cluster": np.array([str(int(v) + 1) for v in labels], dtype=object)}
