"""``python -m benchmarks wide-sites``: a 64-column table at sites of 25–60 rows (issue #25, "a dimension every site
can use").

Question: with each site keeping m̃ = min(m − 1, n − 1) (the rule of :func:`core.learn.reduction.default_dimension`),
does every round work, and how does it compare with the rule it replaces where that worked — m̃ = min(m − 1, n)
for classification (the PCA's last direction then carries none of the site's variance), and m − 1 for
DC-Clustering (refused at every site of fewer than 64 rows)?

Protocol, per seed (scikit-learn's hand-written digits: 1,797 rows, 64 pixel columns, 10 classes; no download):
1. A public seed set of 100 stratified rows is removed; the anchor is extended SMOTE of it (r = 1000, k = 25,
   a = 1.5), as in ``python -m benchmarks small-sites``.
2. Six sites. Site i draws its training size nᵢ log-uniformly from [25, 60] and a label skew: 6 of the 10
   classes mixed by p ~ Dir(1) (with 3, every site's own model already scores ~0.99 and keeps itself); then nᵢ
   training rows and 100 test rows from the same class mix (without replacement; a class that runs dry shrinks
   the draw).
3. Classification: each site runs the product's site step at the rule's m̃ (and at the old rule's) and keeps its
   own-rows logistic regression (:mod:`core.learn.local_model`); the analyst runs ``DCCFL()`` and ``DC()`` (product
   defaults, seed = the cell's seed), and again with ``own_model=False`` (the shared model alone, no own-model
   candidate: where the two m̃ rules can differ, since a site that keeps its own model gets the same package
   under both); each site applies its package to its test rows. Per site: package accuracy − own-model accuracy
   (pt).
4. Clustering: the same six sites' training rows, without labels; ``DCClustering(k=10)`` (product defaults
   otherwise) at the rule's m̃; adjusted Rand index of the clusters against the digits and against k-means
   (n_init 10) on the pooled standardised rows. The old rule refuses every site (m − 1 = 63 > nᵢ); a fixed
   m̃ = 10 is run beside the rule for comparison.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

ROWS = (25, 60)
N_SITES = 6
TEST_ROWS = 100
CLASSES_PER_SITE = 6
CONDITIONS = ("rule", "old")  # m̃ = min(m − 1, n − 1) (the product's default) | min(m − 1, n) (before #25)


def make_sites(X: np.ndarray, y: np.ndarray, seed: int):
    """(anchor, [(X_train, y_train, X_test, y_test)]) for one seed (module docstring 1–2)."""
    from sklearn.model_selection import train_test_split

    from core.api.research import extended_smote

    rng = np.random.default_rng([seed, 25])
    K = int(y.max()) + 1
    rest, public = train_test_split(np.arange(len(y)), test_size=100, stratify=y, random_state=int(seed))
    anchor = extended_smote(X[public], 1000, k=25, a=1.5, rng=np.random.default_rng([seed, 26]))
    pools = {k: list(rng.permutation(rest[y[rest] == k])) for k in range(K)}
    sites = []
    for _ in range(N_SITES):
        n = int(round(np.exp(rng.uniform(np.log(ROWS[0]), np.log(ROWS[1])))))
        cls = rng.choice(K, CLASSES_PER_SITE, replace=False)
        p = rng.dirichlet(np.ones(CLASSES_PER_SITE))
        draws = []
        for size in (n, TEST_ROWS):
            idx = []
            for k, c in zip(cls, rng.multinomial(size, p), strict=True):
                idx += [pools[k].pop() for _ in range(min(int(c), len(pools[k])))]
            draws.append(rng.permutation(np.asarray(idx, dtype=np.int64)))
        tr, te = draws
        sites.append((X[tr], y[tr], X[te], y[te]))
    return anchor, sites


def _dimension(condition: str, n: int, m: int) -> int | None:
    return None if condition == "rule" else min(m - 1, n)


def classification_cell(X, y, classes, seed: int) -> dict[str, Any]:
    from core.api.common import FitContext, ReceivedBundle, SiteInput
    from core.api.research import DC, DCCFL, fit_local_model, local_predict_proba

    anchor, sites = make_sites(X, y, seed)
    names = np.asarray(classes, dtype=object)
    own = [float(np.mean(local_predict_proba(fit_local_model(a, b, len(classes)), c).argmax(1) == d))
           for a, b, c, d in sites]
    out: dict[str, Any] = {"seed": seed, "train_rows": [int(len(s[1])) for s in sites], "own_model": own}
    for method_cls in (DCCFL, DC):
        for condition, own_model in ((c, o) for c in CONDITIONS for o in (True, False)):
            method = method_cls(seed=seed, own_model=own_model)
            bundles, private, dims = [], [], []
            for i, (Xtr, ytr, _, _) in enumerate(sites):
                site = SiteInput(Xtr, ytr.astype(np.int64), classes, anchor,
                                 settings={"seed": [seed, i], "dimension": _dimension(condition, *Xtr.shape)})
                ex = method.site_compute(site)
                dims.append(int(ex.manifest["dimension"]))
                bundles.append(ReceivedBundle(f"site-{i}", "", f"{seed}-{i}", "", ex.manifest, ex.arrays))
                private.append({**ex.private_arrays, **fit_local_model(Xtr, ytr, len(classes))})
            result = method.fit(bundles, FitContext(classes))
            acc = [float(np.mean(method.apply(man, arr, priv, Xte)["prediction"] == names[yte]))
                   for (man, arr), priv, (_, _, Xte, yte) in zip(result.packages, private, sites, strict=True)]
            out[f"{method.name}{'' if own_model else ' shared alone'}/{condition}"] = {"package": acc,
                                                                                   "dimension": dims}
    return out


def clustering_cell(X, y, seed: int) -> dict[str, Any]:
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score
    from sklearn.preprocessing import StandardScaler

    from core.api import ConfigError
    from core.api.common import FitContext, ReceivedBundle, SiteInput
    from core.api.research import DCClustering

    anchor, sites = make_sites(X, y, seed)
    out: dict[str, Any] = {"seed": seed}
    for condition in (*CONDITIONS, "m10"):
        method = DCClustering(k=10, seed=seed)
        bundles, private = [], []
        try:
            for i, (Xtr, _, _, _) in enumerate(sites):
                dim = {"rule": None, "old": Xtr.shape[1] - 1, "m10": 10}[condition]  # old: the papers' m − 1
                ex = method.site_compute(SiteInput(Xtr, None, [], anchor, settings={"seed": [seed, i],
                                                                                    "dimension": dim}))
                bundles.append(ReceivedBundle(f"site-{i}", "", f"{seed}-{i}", "", ex.manifest, ex.arrays))
                private.append(ex.private_arrays)
        except ConfigError as exc:
            out[condition] = {"refused": str(exc)}
            continue
        result = method.fit(bundles, FitContext([]))
        labels = np.concatenate([method.apply(man, arr, priv, s[0])["cluster"].astype(int)
                                 for (man, arr), priv, s in zip(result.packages, private, sites, strict=True)])
        truth = np.concatenate([s[1] for s in sites])
        pooled = np.vstack([s[0] for s in sites])
        km = KMeans(10, n_init=10, random_state=seed).fit_predict(StandardScaler().fit_transform(pooled))
        out[condition] = {"ari_truth": float(adjusted_rand_score(truth, labels)),
                          "ari_pooled_kmeans": float(adjusted_rand_score(km, labels)),
                          "pooled_kmeans_ari_truth": float(adjusted_rand_score(truth, km))}
    return out


def summarise(cls_cells: list[dict], clu_cells: list[dict]) -> dict:
    s: dict[str, Any] = {}
    own = np.concatenate([c["own_model"] for c in cls_cells])
    for key in (k for k in cls_cells[0] if "/" in k):
        pkg = np.concatenate([c[key]["package"] for c in cls_cells])
        d = 100 * (pkg - own)
        s[key] = {"sites": int(pkg.size), "mean_package": float(pkg.mean()), "mean_diff_pt": float(d.mean()),
                  "worst_diff_pt": float(d.min()), "below_minus_2pt": int(np.sum(d < -2))}
    s["mean_own_model"] = float(own.mean())
    for cond in (*CONDITIONS, "m10"):
        got = [c[cond] for c in clu_cells if "ari_truth" in c[cond]]
        s[f"dcclustering/{cond}"] = ({"refused": len(clu_cells) - len(got)} if not got else
                                     {"cells": len(got), "ari_truth": float(np.mean([g["ari_truth"] for g in got])),
                                      "ari_pooled_kmeans": float(np.mean([g["ari_pooled_kmeans"] for g in got])),
                                      "pooled_kmeans_ari_truth": float(np.mean([g["pooled_kmeans_ari_truth"]
                                                                                for g in got]))})
    return s


def run_from_args(args, say: Callable[[str], None]) -> dict:
    from sklearn.datasets import load_digits

    from benchmarks import one_thread
    from core.api import write_json_atomic

    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float64)
    classes = [str(k) for k in range(10)]
    seeds = list(range(int(args.seeds if getattr(args, "seeds_given", False) else 5)))
    t0 = time.perf_counter()
    cls_cells, clu_cells = [], []
    with one_thread():
        for seed in seeds:
            cls_cells.append(classification_cell(X, y, classes, seed))
            clu_cells.append(clustering_cell(X, y, seed))
            say(json.dumps({"seed": seed, "rows": cls_cells[-1]["train_rows"],
                            **{k: [round(v, 3) for v in c["package"]] for k, c in cls_cells[-1].items() if "/" in k},
                            "own": [round(v, 3) for v in cls_cells[-1]["own_model"]],
                            "clustering": clu_cells[-1]}))
    out = {"summary": summarise(cls_cells, clu_cells), "classification": cls_cells, "clustering": clu_cells,
           "seeds": seeds, "wall_seconds": time.perf_counter() - t0}
    say(json.dumps(out["summary"], indent=1))
    if args.json:
        from pathlib import Path

        from core.api import write_text_atomic

        write_json_atomic(args.json, out)
        command = f"python -m benchmarks wide-sites --seeds {len(seeds)} --json {args.json}"
        write_text_atomic(Path(args.json).with_suffix(".md"), markdown(out, command))
    return out


def markdown(out: dict, command: str) -> str:
    import os

    from benchmarks import machine

    s = out["summary"]
    lines = ["# Wide tables at small sites: the dimension rule (issue #25)", "", f"Command: `{command}`", "",
             f"Machine: {machine('torch')}; load average at the end {os.getloadavg()[0]:.1f} (shared machine).", "",
             f"Wall time {out['wall_seconds'] / 60:.1f} min; seeds {out['seeds']}.", "",
             (__doc__ or "").split("\n\n", 1)[1].strip(), "", "## Classification: package − own logistic regression",
             "", f"Mean own-model accuracy {s['mean_own_model']:.4f}.", "",
             "| method / m̃ rule | sites | mean package | mean Δ (pt) | worst Δ (pt) | sites < −2 pt |",
             "|---|---:|---:|---:|---:|---:|"]
    for key, v in s.items():
        if "/" in key and "sites" in v:
            rule = "min(m − 1, n − 1)" if key.endswith("rule") else "min(m − 1, n) (before)"
            lines.append(f"| {key.split('/')[0]}; m̃ = {rule} | {v['sites']} | {v['mean_package']:.4f} | "
                         f"{v['mean_diff_pt']:+.2f} | {v['worst_diff_pt']:+.1f} | {v['below_minus_2pt']} |")
    lines += ["", "## Clustering (DC-Clustering, k = 10)", "", "| m̃ rule | result |", "|---|---|"]
    for cond, rule in (("rule", "min(m − 1, n − 1)"), ("old", "m − 1 (before)"), ("m10", "10 at every site")):
        v = s[f"dcclustering/{cond}"]
        lines.append(f"| {rule} | " + (f"refused in {v['refused']} of {len(out['seeds'])} cells" if "refused" in v
                                        else f"ARI vs digits {v['ari_truth']:.3f}, vs pooled k-means "
                                             f"{v['ari_pooled_kmeans']:.3f} (pooled k-means vs digits "
                                             f"{v['pooled_kmeans_ari_truth']:.3f})") + " |")
    return "\n".join(lines) + "\n"
