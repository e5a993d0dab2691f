"""``python -m benchmarks hfldd``: HFLDD made one-shot (a distillation mode for the DC family).

Protocol (methods-gold-feddag-hfldd.md §3(d), §3(f); every open choice is in ``CHOICES``):

1. Cell = (data set, C, seed). 100 stratified public rows → extended-SMOTE anchor (r = 1000, as DC-CFL);
   the rest over 100 clients, C classes each (``class_based_split``), 80/20 train/test per client.
2. Every client runs today's DC site step (standardise + PCA to m − 1, shuffle). In distillation mode it
   then distils its reduced rows with KIP (:mod:`core.methods.hfldd.kip`) and ships: the distilled rows and their
   labels, soft labels of a local model on the first ``anchor_ship`` rows of the anchor image, those anchor
   image rows, and its class counts. The control ships the same number of random real reduced rows
   (class-balanced, the same count per class).
3. Analyst: DC alignment (affine, product default) from the shipped anchor images, one MLP (64-32, the
   DC-CFL learner) on the union of aligned sets; the KL matrix of the soft labels and its k-means
   clusters (HFLDD Eq. 4) are reported (adjusted Rand index against the clients' true class sets).
4. Accuracy = mean over clients of the accuracy on the client's own test rows, each client applying the
   one global model through its own private map (the same metric as FedAvg's global model). The
   "personal" column adds the per-site class-prior correction from the shipped class counts.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import bench_command, one_thread
from benchmarks.baselines.fl import fedavg, fedprox, local_only, select_hyperparameters
from benchmarks.dccfl import Protocol as DCProtocol
from benchmarks.dccfl import make_cell
from benchmarks.simulation.datasets import load_cached
from core.api import ConfigError, __version__, write_json_atomic, write_text_atomic
from core.api.common import FitContext, ReceivedBundle, SiteInput
from core.api.research import (
    DCCFL,
    AnchorBasis,
    KIPSettings,
    adjust_proba,
    anchor_whitening,
    distill_sites,
    kl_clusters,
    kl_matrix,
    krr_predict,
    local_soft_labels,
    nn_disclosure,
    prior_logit,
    train_cluster_models,
)

DATASETS = ("pendigits", "letter_recognition")
SPLITS = ("C1", "C2", "C10")

CHOICES = [
    "Partition, public seed set and anchor exactly as `python -m benchmarks dccfl` (benchmarks.dccfl.make_cell): "
    "100 public rows removed, extended SMOTE r = 1000 (k = 25, a = 1.5), C classes per client (no forced coverage, "
    "clients without exactly C classes or with < 5 rows dropped), 80/20 train/test per client.",
    "For C = 10 on pendigits every client holds every class (k = K).",
    "Distillation runs in the site's private reduced space (rows as shipped by today's DC site step), centred "
    "and whitened by the site's own anchor image (scale='anchor'). Headline ('Distilled'): per class "
    "max(rows_per_class, ⌈rows_share · n_c⌉) rows, started at the class's kernel-herding choice of real rows and "
    "moved by Adam (lr 0.01, 300 steps, target batch 64) to minimise the class-wise MMD² to the class's rows "
    "with the energy-distance kernel −‖x − x'‖ (herding with the same kernel; distribution matching, no KRR term, "
    "no hold-out), then rescaled about the class's real mean to the real rows' mean squared distance from it "
    "(`match_spread`). Large-site cell only: the 'KIP' row (KIP loss, random real start, early stop on a 20 % "
    "hold-out) and the previous headline (RBF matching, ℓ² = d, no rescaling) with the same budget.",
    "Distilled and control bundles carry the first `anchor_ship` rows of the anchor image (all sites take the "
    "same rows; the affine PCA image needs only m̃ + 1 generic rows for exact alignment) and soft labels on "
    "those rows. DC-CFL bundles carry every reduced row plus the full r = 1000-row anchor image.",
    "Bundle bytes count every shipped array as float32 (labels and counts too), as the brief asks.",
    "Analyst for distilled / control: affine DC alignment of all sites as one cluster, then the MLP 64-32 (SGD lr "
    "0.01 momentum 0.5 batch 32, ≥ `min_steps` steps) on the aligned union: what `hfldd` trains in the product "
    "(the headline, `analyst='mlp'`); reported beside it, NTK kernel ridge regression (λ = 1e-6, scale-invariant) "
    "on the anchor-whitened aligned union, which the product cannot ship (it predicts from the training rows). "
    "DC (all rows): the MLP. The global model (no prior correction) is the headline; 'personal' adds the "
    "per-site prior correction computed from the shipped class counts.",
    "DC-CFL (product defaults) = DCCFL() as shipped (clusters by label histograms, t chosen on a hold-out, "
    "per-site prior correction): its accuracy is personal by construction.",
    "FedAvg / FedProx: 5 rounds × 10 local epochs on raw features (one pooled StandardScaler), momentum 0.9; "
    "lr ∈ {0.1, 0.01, 0.001} and μ ∈ {1, 0.1, 0.01, 0.001} selected on validation rows carved from the "
    "clients' training rows (quick mode: lr 0.01, μ 0.01 fixed). Local: 50 epochs on the client's rows; "
    "its 'global' value is each local model on every client's test rows.",
    "Centralised: the same MLP on the pooled raw training rows (one StandardScaler), 50 epochs.",
    "KL clustering: local model SGD lr 0.01, 10 epochs, batch 64 on the site's standardised reduced rows; "
    "soft labels on the shipped anchor image rows; k-means (K = min(10, c)) on the rows of M (HFLDD Eq. 4).",
]


VARIANTS: dict[str, dict[str, Any]] = {
    "KIP (real start, hold-out stop)": {"init": "real", "holdout": 0.2, "kip_weight": 1.0, "mmd_weight": 0.0,
                                        "mmd_kernel": "rbf", "match_spread": False},
    "RBF matching (previous headline)": {"mmd_kernel": "rbf", "match_spread": False}}


@dataclass
class Protocol:
    n_clients: int = 100
    splits: tuple[str, ...] = SPLITS
    rows_per_class: int = 5
    rows_share: float = 0.25        # per class: max(rows_per_class, ⌈rows_share · n_c⌉) rows (0: rows_per_class)
    anchor_ship: int = 100
    epochs: int = 50
    min_steps: int = 10000          # analyst: at least this many SGD steps (epochs raised for small unions)
    fl_rounds: int = 5
    fl_local_epochs: int = 10
    select_fl: bool = True
    analyst: str = "mlp"          # the headline analyst on the union: "mlp" (what the product trains) | "krr"
    krr_kernel: str = "ntk"
    krr_ridge: float = 1e-6
    krr_max_rows: int = 6000
    kip: dict[str, Any] = field(default_factory=dict)          # KIPSettings overrides of the headline row
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)  # extra rows (ablations, e.g. VARIANTS)
    baselines: bool = True
    control_draws: int = 3


DEFAULT_KIP: dict[str, Any] = {"init": "herding", "kernel": "ntk", "steps": 300, "lr": 0.01, "target_batch": 64,
                               "holdout": 0.0, "scale": "anchor", "patience": 5, "kip_weight": 0.0,
                               "mmd_weight": 1.0, "mmd_kernel": "energy", "match_spread": True}
HEADLINE = "Distilled"
KIP_ROW = "KIP (real start, hold-out stop)"


def _dc_protocol(p: Protocol) -> DCProtocol:
    return DCProtocol(n_clients=p.n_clients, splits=p.splits)


def _nbytes(*arrays: np.ndarray) -> int:
    return int(sum(4 * np.asarray(a).size for a in arrays))


def _balanced_random(y: np.ndarray, counts: dict[int, int], rng: np.random.Generator) -> np.ndarray:
    return np.concatenate([rng.choice(np.flatnonzero(y == c), size=k, replace=False) for c, k in counts.items()])


def _fit_global(bundles: list[ReceivedBundle], K: int, p: Protocol, seed: int):
    n = sum(b.arrays["x_tilde"].shape[0] for b in bundles)
    batches = -(-n // 32)
    epochs = max(p.epochs, -(-p.min_steps // batches))
    settings = {**DCCFL().settings, "epochs": epochs, "seed": seed}
    basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=settings["alignment"] == "affine")
    return train_cluster_models(bundles, [tuple(range(len(bundles)))], K, settings, basis=basis)[0]


def _evaluate(model, cell, private: list[dict], counts: list[np.ndarray]) -> dict[str, float]:
    from core.api.research import site_map

    glob, pers = [], []
    for i, (priv, (_Xtr, _ytr, Xte, yte)) in enumerate(zip(private, cell.clients, strict=True)):
        if len(yte) == 0:
            continue
        Xt = site_map(priv).transform(Xte)
        proba = model.predict_proba(i, Xt)
        glob.append(float(np.mean(proba.argmax(1) == yte)))
        a = prior_logit(counts[i], model.class_counts_weighted, 0.5)
        pers.append(float(np.mean(adjust_proba(proba, a).argmax(1) == yte)))
    return {"accuracy": float(np.mean(glob)), "personal": float(np.mean(pers))}


def _evaluate_krr(bundles, model, cell, private, counts, total_counts, K: int, p: Protocol) -> dict[str, float]:
    """The analyst's kernel model: NTK kernel ridge regression (KIP's own model, Eq. 1) on the union of
    aligned rows, whitened by the aligned anchor (the space KIP distilled in when scale='anchor')."""
    from core.api.research import site_map

    maps = model.mappings
    A_al = np.mean([maps[i].transform(b.arrays["anchor_tilde"].astype(np.float64)) for i, b in enumerate(bundles)],
                   axis=0)
    mu, W, _ = anchor_whitening(A_al)
    Xs = np.vstack([(maps[i].transform(b.arrays["x_tilde"].astype(np.float64)) - mu) @ W
                    for i, b in enumerate(bundles)])
    ys = np.concatenate([b.arrays["y"].astype(np.int64) for b in bundles])
    Y = np.vstack([b.arrays["y_soft"] if "y_soft" in b.arrays else np.eye(K)[b.arrays["y"].astype(np.int64)] - 1.0 / K
                   for b in bundles])
    tests = [(maps[i].transform(site_map(priv).transform(c[2])) - mu) @ W for i, (priv, c) in
             enumerate(zip(private, cell.clients, strict=True))]
    scores = krr_predict(Xs, Y, np.vstack(tests), kernel=p.krr_kernel, ridge=p.krr_ridge)
    glob, pers, start = [], [], 0
    # KRR scores are not probabilities: the prior correction uses a softmax of the scores scaled by K.
    train_counts = np.bincount(ys, minlength=K)
    for i, (T, c) in enumerate(zip(tests, cell.clients, strict=True)):
        sc = scores[start:start + len(T)]
        start += len(T)
        if len(c[3]) == 0:
            continue
        glob.append(float(np.mean(sc.argmax(1) == c[3])))
        pers.append(float(np.mean((sc.argmax(1) if counts[i].astype(bool).sum() == K else
                                   np.where(counts[i] > 0, sc, -np.inf).argmax(1)) == c[3])))
    del train_counts, total_counts
    return {"accuracy": float(np.mean(glob)), "personal": float(np.mean(pers))}


def spread_ratio(Xs: np.ndarray, ys: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """Σ_c Σ_{j∈c} ‖x̃_j − μ_c‖² / (Σ_c n̂_c · mean_{i∈c} ‖x_i − μ_c‖²): how widely the shipped rows of each class
    spread around the class's real mean, relative to the class's real rows (1 for an unbiased random draw,
    < 1 for rows pulled toward the class centre)."""
    num = den = 0.0
    for c in np.unique(ys):
        Xc = X[y == c]
        mu = Xc.mean(axis=0)
        num += float(((Xs[ys == c] - mu) ** 2).sum())
        den += float(np.sum(ys == c)) * float(((Xc - mu) ** 2).sum(1).mean())
    return num / den if den > 0 else float("nan")


def _bundle(name: str, X: np.ndarray, y: np.ndarray, A: np.ndarray) -> ReceivedBundle:
    return ReceivedBundle(site=name, fingerprint="", digest="", envelope_id="", manifest={},
                          arrays={"x_tilde": np.asarray(X, np.float32), "y": np.asarray(y, np.int32),
                                  "anchor_tilde": np.asarray(A, np.float32)})


def run_cell(dataset: str, X: np.ndarray, y: np.ndarray, classes: list[str], split: str, seed: int,
             p: Protocol, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    t_cell = time.perf_counter()
    cell = make_cell(dataset, X, y, classes, split, seed, _dc_protocol(p))
    K = len(classes)
    out: dict[str, Any] = {"dataset": dataset, "split": split, "seed": seed, "clients": len(cell.clients),
                           "dropped": cell.dropped_partition + cell.dropped_pca, "methods": {}}
    methods = out["methods"]
    # ---- site step as today (DC site: standardise + PCA, shuffle)
    dccfl = DCCFL(seed=seed)
    t0 = time.perf_counter()
    site_exports = [dccfl.site_compute(SiteInput(Xtr, ytr.astype(np.int64), cell.classes, cell.anchor,
                                                 settings={"seed": [seed, i]}))
                    for i, (Xtr, ytr, _Xte, _yte) in enumerate(cell.clients)]
    site_s = (time.perf_counter() - t0) / len(site_exports)
    private = [e.private_arrays for e in site_exports]
    Xt = [e.arrays["x_tilde"].astype(np.float64) for e in site_exports]
    yt = [e.arrays["y"].astype(np.int64) for e in site_exports]
    A_full = [e.arrays["anchor_tilde"] for e in site_exports]
    A_ship = [a[: p.anchor_ship] for a in A_full]
    counts = [np.bincount(v, minlength=K) for v in yt]
    total_counts = np.sum(counts, axis=0)
    dc_bytes = [_nbytes(Xt[i], yt[i], A_full[i], counts[i]) for i in range(len(Xt))]

    # ---- soft labels + KL clustering (shared by every distillation row)
    t0 = time.perf_counter()
    soft = local_soft_labels([(Xt[i], yt[i], A_ship[i]) for i in range(len(Xt))], K, random_state=seed)
    M = kl_matrix(soft)
    labels = kl_clusters(M, 10, seed)
    from sklearn.metrics import adjusted_rand_score

    truth = np.unique([",".join(map(str, np.flatnonzero(c > 0))) for c in counts], return_inverse=True)[1]
    out["kl_clustering"] = {"ari_vs_class_sets": float(adjusted_rand_score(truth, labels)),
                            "n_clusters": int(labels.max() + 1), "seconds": time.perf_counter() - t0}

    def evaluate_sets(sets: list[tuple[np.ndarray, np.ndarray]], A: list[np.ndarray],
                      krr: bool = True) -> dict[str, Any]:
        t1 = time.perf_counter()
        bundles = [_bundle(f"client-{i:03d}", st[0], st[1], A[i]) for i, st in enumerate(sets)]
        for b, st in zip(bundles, sets, strict=True):
            if len(st) > 2:
                b.arrays["y_soft"] = st[2]   # learned labels (KRR analyst only; the MLP uses argmax labels)
        model = _fit_global(bundles, K, p, seed)
        model.class_counts_weighted = total_counts   # the prior the union stands for (shipped counts)
        mlp = _evaluate(model, cell, private, counts)
        res = {"accuracy_mlp": mlp["accuracy"], "personal_mlp": mlp["personal"]}
        if krr and sum(len(st[1]) for st in sets) <= p.krr_max_rows:
            kr = _evaluate_krr(bundles, model, cell, private, counts, total_counts, K, p)
            res.update({"accuracy_krr": kr["accuracy"], "personal_krr": kr["personal"]})
        key = "krr" if p.analyst == "krr" and "accuracy_krr" in res else "mlp"
        res["accuracy"], res["personal"], res["analyst"] = res[f"accuracy_{key}"], res[f"personal_{key}"], key
        res["fit_seconds"] = time.perf_counter() - t1
        return res

    # ---- distillation rows
    variants = {HEADLINE: {**DEFAULT_KIP, **p.kip}}
    variants.update({k: {**DEFAULT_KIP, **v} for k, v in p.variants.items()})
    per_class = None
    for name, kw in variants.items():
        s = KIPSettings(**{"rows_per_class": p.rows_per_class, "rows_share": p.rows_share, **kw, "n_classes": K,
                           "random_state": seed})
        t0 = time.perf_counter()
        dist = distill_sites(list(zip(Xt, yt, strict=True)), s, site_ids=list(range(len(Xt))), anchors=A_ship)
        kip_s = time.perf_counter() - t0
        sets = [(d.X, d.y, d.Y) if s.learn_labels else (d.X, d.y) for d in dist]
        res = evaluate_sets(sets, A_ship)
        disc = [nn_disclosure(d.X, Xt[i]) for i, d in enumerate(dist)]
        res.update({"kip_seconds_total": kip_s, "kip_seconds_per_site": kip_s / len(dist),
                    "rows_shipped_mean": float(np.mean([len(d.y) for d in dist])),
                    "bundle_bytes_mean": float(np.mean([_nbytes(d.X, d.y, soft[i], A_ship[i], counts[i],
                                                                *([d.Y] if s.learn_labels else []))
                                                        for i, d in enumerate(dist)])),
                    "nn_ratio_median": float(np.median([d["ratio_median"] for d in disc])),
                    "nn_ratio_min": float(np.min([d["ratio_min"] for d in disc])),
                    "share_below_spacing": float(np.mean([d["share_below_1"] for d in disc])),
                    "spread_ratio": float(np.median([spread_ratio(d.X, d.y, Xt[i], yt[i])
                                                     for i, d in enumerate(dist)])),
                    "best_step_median": float(np.median([d.best_step for d in dist])),
                    "settings": {k: v for k, v in asdict(s).items() if k not in ("n_classes", "random_state")}})
        methods[name] = res
        if per_class is None:
            per_class = [{int(c): int(np.sum(d.y == c)) for c in np.unique(d.y)} for d in dist]
        if say:
            say(f"    {name}: {res['accuracy']:.4f} (personal {res['personal']:.4f}), KIP {kip_s:.1f} s")

    # ---- random real rows, same count per class
    accs = []
    for rep in range(p.control_draws):
        rng = np.random.default_rng([seed, 0xC0, rep])
        sets = []
        for i in range(len(Xt)):
            idx = _balanced_random(yt[i], per_class[i], rng)
            sets.append((Xt[i][idx], yt[i][idx]))
        accs.append(evaluate_sets(sets, A_ship))
        if rep == 0:
            disc0 = [nn_disclosure(s_[0], Xt[i]) for i, s_ in enumerate(sets)]
            spread0 = float(np.median([spread_ratio(s_[0], s_[1], Xt[i], yt[i]) for i, s_ in enumerate(sets)]))
    ctrl: dict[str, Any] = {k: float(np.mean([a[k] for a in accs])) for k in accs[0]
                            if k.startswith(("accuracy", "personal")) and all(k in a for a in accs)}
    ctrl.update({"draws": [a["accuracy"] for a in accs], "analyst": accs[0]["analyst"],
                 "bundle_bytes_mean": methods[HEADLINE]["bundle_bytes_mean"],
                 "nn_ratio_median": float(np.median([d["ratio_median"] for d in disc0])), "spread_ratio": spread0,
                 "fit_seconds": float(np.mean([a["fit_seconds"] for a in accs]))})
    methods["Random real rows (control)"] = ctrl
    if say:
        say(f"    control: {methods['Random real rows (control)']['accuracy']:.4f}")
    # ---- DC with all rows: one global model (same analyst as above) and DC-CFL product defaults
    res = evaluate_sets(list(zip(Xt, yt, strict=True)), A_full, krr=False)
    res["bundle_bytes_mean"] = float(np.mean(dc_bytes))
    methods["DC, all rows (one model)"] = res
    if p.baselines:
        bundles = [ReceivedBundle(site=f"client-{i:03d}", fingerprint="", digest="", envelope_id="",
                                  manifest=e.manifest, arrays=e.arrays) for i, e in enumerate(site_exports)]
        t0 = time.perf_counter()
        result = dccfl.fit(bundles, FitContext(cell.classes))
        names = np.asarray(cell.classes, dtype=object)
        accs = [float(np.mean(dccfl.apply(man, arr, priv, Xte)["prediction"] == names[yte]))
                for (man, arr), priv, (_a, _b, Xte, yte) in zip(result.packages, private, cell.clients, strict=True)
                if len(yte)]
        methods["DC-CFL (product defaults)"] = {"accuracy": float(np.mean(accs)), "personal": float(np.mean(accs)),
                                                "bundle_bytes_mean": float(np.mean(dc_bytes)),
                                                "fit_seconds": time.perf_counter() - t0,
                                                "n_clusters": result.summary.get("n_clusters")}
        methods.update(_fl_rows(cell, p, K))
    out["participant_seconds"] = site_s
    out["seconds"] = time.perf_counter() - t_cell
    return out


def _fl_rows(cell, p: Protocol, K: int) -> dict[str, dict[str, Any]]:
    from sklearn.preprocessing import StandardScaler

    from core.api.research import BatchedMLP

    rows: dict[str, dict[str, Any]] = {}
    common = dict(rounds=p.fl_rounds, local_epochs=p.fl_local_epochs, hidden=(64, 32), n_classes=K)
    t0 = time.perf_counter()
    loc = local_only(cell.clients, rounds=1, local_epochs=50, lr=0.01, momentum=0.5, hidden=(64, 32), n_classes=K,
                     seed=cell.seed)
    rows["Local"] = {"accuracy": float(loc.final), "personal": float(loc.final), "seconds": time.perf_counter() - t0}
    for name, fn, grid, fixed in (("FedAvg", fedavg, {"lr": [0.1, 0.01, 0.001]}, {"momentum": 0.9}),
                                  ("FedProx", fedprox, {"lr": [0.1, 0.01, 0.001], "mu": [1.0, 0.1, 0.01, 0.001]},
                                   {"momentum": 0.9})):
        t0 = time.perf_counter()
        if p.select_fl:
            best, _ = select_hyperparameters(fn, cell.clients, grid, seed=cell.seed, **common, **fixed)
        else:
            best = {"lr": 0.01, **({"mu": 0.01} if name == "FedProx" else {})}
        res = fn(cell.clients, seed=cell.seed, **common, **fixed, **best)
        rows[name] = {"accuracy": float(res.final), "personal": float(res.final), "selected": best,
                      "seconds": time.perf_counter() - t0}
    # Centralised MLP on pooled raw training rows; evaluated per client like everything else.
    t0 = time.perf_counter()
    Xtr = np.vstack([c[0] for c in cell.clients])
    ytr = np.concatenate([c[1] for c in cell.clients])
    sc = StandardScaler().fit(Xtr)
    m = BatchedMLP((64, 32), lr=0.01, momentum=0.5, epochs=50, random_state=int(cell.seed))
    m.fit([(sc.transform(Xtr).astype(np.float32), ytr.astype(np.int64))], K)
    accs = [float(np.mean(m.predict(0, sc.transform(c[2])) == c[3])) for c in cell.clients if len(c[3])]
    rows["Centralised MLP"] = {"accuracy": float(np.mean(accs)), "personal": float(np.mean(accs)),
                               "seconds": time.perf_counter() - t0}
    return rows


ORDER = [HEADLINE, KIP_ROW, "Random real rows (control)", "DC, all rows (one model)", "DC-CFL (product defaults)",
         "FedAvg", "FedProx", "Local", "Centralised MLP"]


def summarise(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    keys = list(dict.fromkeys((c["dataset"], c["split"]) for c in cells))
    for ds, sp in keys:
        group = [c for c in cells if c["dataset"] == ds and c["split"] == sp]
        names = list(dict.fromkeys(n for c in group for n in c["methods"]))
        names = [n for n in ORDER if n in names] + [n for n in names if n not in ORDER]
        for name in names:
            g = [c["methods"][name] for c in group if name in c["methods"]]
            acc = np.array([v["accuracy"] for v in g])
            row = {"dataset": ds, "split": sp, "method": name, "mean": float(acc.mean()),
                   "std": float(acc.std(ddof=1)) if len(acc) > 1 else 0.0, "values": acc.tolist(),
                   "personal": float(np.mean([v["personal"] for v in g]))}
            for key in ("accuracy_mlp", "accuracy_krr", "bundle_bytes_mean", "nn_ratio_median",
                        "share_below_spacing", "kip_seconds_per_site", "rows_shipped_mean", "spread_ratio"):
                if key in g[0]:
                    row[key] = float(np.mean([v[key] for v in g]))
            rows.append(row)
    return rows


def markdown(result: dict[str, Any]) -> str:
    out = [f"# HFLDD one-shot (distillation mode) benchmark — {result.get('status', '')}", "",
           f"Command: `{result.get('command', '')}`", "", f"Machine: {result.get('machine', '')}", "",
           f"DC Studio {result.get('version', '')}; seeds {result.get('seed_list')}; wall time "
           f"{result.get('wall_seconds', 0) / 60:.1f} min"
           + (f" with {result['jobs']} worker(s), CPU time (user + system, all processes) "
              f"{result['cpu_seconds'] / 60:.1f} min" if "cpu_seconds" in result else "")
           + f"; finished {result.get('finished', '')}.", "",
           "Accuracy = mean over clients of test accuracy with the one global model, trained by the analyst the "
           f"protocol names ('{(result.get('protocol') or {}).get('analyst', 'mlp')}'; MLP = what the product "
           "trains; the other analyst beside it) (personal = with the per-site "
           "prior correction from shipped class counts; DC-CFL and Local are personal by construction). "
           "Bytes = mean bundle per site, every array counted as float32. NN ratio = median over sites of the "
           "median distance from a shipped row to the nearest real row, in units of the real rows' median "
           "nearest-neighbour spacing (0 = a copy). Spread ratio = the shipped rows' mean squared distance to their "
           "class's real mean over the real rows' (median over sites; 1 for a random draw).", "",
           "| data set | C | method | accuracy (mean ± sd) | MLP / KRR analyst | personal | bundle bytes | NN ratio | "
           "spread ratio | KIP s/site |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        def f(key, fmt, r=r):
            return format(r[key], fmt) if key in r else ""
        both = f"{f('accuracy_mlp', '.4f')} / {f('accuracy_krr', '.4f')}" if "accuracy_krr" in r else ""
        out.append(f"| {r['dataset']} | {r['split']} | {r['method']} | {r['mean']:.4f} ± {r['std']:.4f} | {both} | "
                   f"{r['personal']:.4f} | {f('bundle_bytes_mean', ',.0f')} | {f('nn_ratio_median', '.2f')} | "
                   f"{f('spread_ratio', '.2f')} | {f('kip_seconds_per_site', '.3f')} |")
    if result.get("targets"):
        out += ["", "## Targets", ""] + [f"- {t}" for t in result["targets"]]
    if result.get("kl"):
        out += ["", "## KL clustering of soft labels (ARI vs the clients' true class sets, mean over seeds)", ""]
        out += [f"- {k}: ARI {v['ari']:.3f}, clusters {v['n_clusters']:.1f}" for k, v in result["kl"].items()]
    if result.get("large_site"):
        out += ["", "## Large sites", "", "```json", json.dumps(result["large_site"], indent=1), "```"]
    out += ["", "## Choices", ""] + [f"- {c}" for c in CHOICES]
    out += ["", "## KIP settings (headline row)", "", "```json", json.dumps(result.get("kip", {}), indent=1), "```"]
    return "\n".join(out) + "\n"


def targets(rows: list[dict[str, Any]]) -> list[str]:
    """One line per (data set, C): each target judged on the seed means of the headline analyst (the product's
    MLP) and, in brackets, of the kernel-ridge analyst when the rows carry it."""
    by = {(r["dataset"], r["split"], r["method"]): r for r in rows}
    lines = []
    for ds, sp in dict.fromkeys((r["dataset"], r["split"]) for r in rows):
        d = by.get((ds, sp, HEADLINE)) or by.get((ds, sp, "Distilled (KIP)"))   # older records: KIP headline
        if d is None:
            continue
        c = by.get((ds, sp, "Centralised MLP"))
        rr = by.get((ds, sp, "Random real rows (control)"))
        fa = by.get((ds, sp, "FedAvg"))
        other = "accuracy_krr" if "accuracy_krr" in d and rr is not None and "accuracy_krr" in rr else None

        def verdict(ok: bool) -> str:
            return "PASS" if ok else "FAIL"

        parts = [f"{ds} {sp}: distilled {d['mean']:.4f}" + (f" (KRR {d[other]:.4f})" if other else "")]
        if c and sp in ("C1", "C2"):
            line = f"≥ 0.95 × centralised ({0.95 * c['mean']:.4f}): {verdict(d['mean'] >= 0.95 * c['mean'])}"
            parts.append(line + (f" (KRR {verdict(d[other] >= 0.95 * c['mean'])})" if other else ""))
        if fa and sp == "C1":
            line = f"≥ FedAvg + 20 pt ({fa['mean'] + 0.2:.4f}): {verdict(d['mean'] >= fa['mean'] + 0.2)}"
            parts.append(line + (f" (KRR {verdict(d[other] >= fa['mean'] + 0.2)})" if other else ""))
        if rr:
            line = (f"vs random-real control {rr['mean']:.4f}: {100 * (d['mean'] - rr['mean']):+.2f} pt "
                    f"({verdict(d['mean'] > rr['mean'])})")
            if other:
                line += (f" (KRR {rr[other]:.4f}: {100 * (d[other] - rr[other]):+.2f} pt, "
                         f"{verdict(d[other] > rr[other])})")
            parts.append(line)
        lines.append("; ".join(parts))
    return lines


def large_site(dataset: str, n_sites: int, seed: int, data_dir: str | None, rows_per_class: int,
               anchor_ship: int, say: Callable[[str], None]) -> dict[str, Any]:
    """Large IID sites: bundle size and accuracy of the distillation mode against DC with all rows."""
    X, y, classes = load_cached(dataset, data_dir)
    K = len(classes)
    p = Protocol(n_clients=n_sites, rows_per_class=rows_per_class, rows_share=0.0, anchor_ship=anchor_ship,
                 baselines=False, splits=(f"C{K}",), variants=dict(VARIANTS))
    with one_thread():
        rec = run_cell(dataset, X, y, classes, f"C{K}", seed, p, say)
    m = rec["methods"]
    d, a = m[HEADLINE], m["DC, all rows (one model)"]
    return {"dataset": dataset, "sites": rec["clients"], "seed": seed, "rows_per_class": rows_per_class,
            "anchor_rows_shipped": anchor_ship,
            "analyst": d.get("analyst"), "distilled_accuracy": d["accuracy"],
            "distilled_accuracy_mlp": d.get("accuracy_mlp"), "distilled_accuracy_krr": d.get("accuracy_krr"),
            "control_accuracy": m["Random real rows (control)"]["accuracy"],
            "control_accuracy_mlp": m["Random real rows (control)"].get("accuracy_mlp"),
            "dc_all_rows_accuracy": a["accuracy"], "distilled_bytes": d["bundle_bytes_mean"],
            "dc_bytes": a["bundle_bytes_mean"], "size_ratio": a["bundle_bytes_mean"] / d["bundle_bytes_mean"],
            "kip_seconds_per_site": d["kip_seconds_per_site"], "nn_ratio_median": d["nn_ratio_median"],
            "spread_ratio": d.get("spread_ratio"), "distilled_minus_dc_pt": 100 * (d["accuracy"] - a["accuracy"]),
            **({"kip_row_accuracy": m[KIP_ROW]["accuracy"], "kip_row_accuracy_mlp": m[KIP_ROW].get("accuracy_mlp"),
                "kip_row_seconds_per_site": m[KIP_ROW]["kip_seconds_per_site"]} if KIP_ROW in m else {}),
            "variants": {k: {kk: v[kk] for kk in ("accuracy_mlp", "accuracy_krr", "nn_ratio_median", "spread_ratio")
                             if kk in v} for k, v in m.items() if k in p.variants},
            "seconds": rec["seconds"]}


def _cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (load-independent)."""
    import resource

    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _cell_task(dataset: str, data_dir: str | None, split: str, seed: int, p: Protocol) -> dict[str, Any]:
    """Process-pool entry point: one thread for torch and BLAS, the data loaded once per worker; the cell's
    CPU seconds (user + system of this worker while it ran) recorded beside its wall seconds."""
    X, y, classes = load_cached(dataset, data_dir)
    c0 = _cpu_seconds()
    with one_thread():
        rec = run_cell(dataset, X, y, classes, split, seed, p)
    rec["cpu_seconds"] = _cpu_seconds() - c0
    return rec


def _large_task(data_dir: str | None, large: dict[str, Any]) -> dict[str, Any]:
    c0 = _cpu_seconds()
    out = large_site(say=lambda _m: None, data_dir=data_dir, **large)
    out["cpu_seconds"] = _cpu_seconds() - c0
    return out


def run(datasets: Sequence[str], seeds: Sequence[int], p: Protocol, *, data_dir: str | None = None,
        json_path: str | Path | None = None, command: str = "", say: Callable[[str], None] = print,
        large: dict[str, Any] | None = None, jobs: int = 1) -> dict[str, Any]:
    """Every (data set, split, seed) cell, in ``jobs`` worker processes (most expensive first: letter, then
    pendigits), and the large-site cell; each finished cell is appended to ``<json stem>_cells.jsonl``."""
    from benchmarks import machine

    started = time.perf_counter()
    cpu0 = _cpu_seconds()
    # Seed by seed (every data set and split of seed 0 first), the widest label set first within a seed.
    tasks = [(ds, sp, seed) for seed in seeds for ds in sorted(datasets, key=lambda d: d != "letter_recognition")
             for sp in p.splits]
    json_path = Path(json_path) if json_path else None
    log = json_path.with_name(json_path.stem + "_cells.jsonl") if json_path else None
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")
    cells: list[dict[str, Any]] = []
    large_out: dict[str, Any] | None = None

    def done(rec: dict[str, Any]) -> None:
        cells.append(rec)
        if log:
            with log.open("a") as fh:
                fh.write(json.dumps(rec, default=_jsonable) + "\n")
        say(f"[{len(cells)}/{len(tasks)}] {rec['dataset']} {rec['split']} seed {rec['seed']}: " + ", ".join(
            f"{k} {v['accuracy']:.4f}" for k, v in rec["methods"].items())
            + f" ({rec['seconds']:.0f} s, CPU {rec.get('cpu_seconds', float('nan')):.0f} s)")

    if jobs <= 1:
        for ds, sp, seed in tasks:
            done(_cell_task(ds, data_dir, sp, seed, p))
        if large:
            large_out = _large_task(data_dir, large)
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            futs = {pool.submit(_large_task, data_dir, large): "large"} if large else {}  # the longest task first
            futs.update({pool.submit(_cell_task, ds, data_dir, sp, seed, p): "cell" for ds, sp, seed in tasks})
            for fut in as_completed(futs):
                if futs[fut] == "large":
                    large_out = fut.result()
                    say(f"large site: {json.dumps(large_out, default=_jsonable)}")
                else:
                    done(fut.result())
    cells.sort(key=lambda c: (c["dataset"], SPLITS.index(c["split"]) if c["split"] in SPLITS else 9, c["seed"]))
    rows = summarise(cells)
    kl = {}
    for ds, sp in dict.fromkeys((c["dataset"], c["split"]) for c in cells):
        g = [c["kl_clustering"] for c in cells if c["dataset"] == ds and c["split"] == sp]
        kl[f"{ds} {sp}"] = {"ari": float(np.mean([v["ari_vs_class_sets"] for v in g])),
                            "n_clusters": float(np.mean([v["n_clusters"] for v in g]))}
    result: dict[str, Any] = {
        "experiment": "hfldd", "version": __version__, "machine": machine("torch", "sklearn"), "command": command,
        "invocation": " ".join(getattr(sys, "orig_argv", sys.argv)), "status": "complete",
        "seed_list": list(seeds), "protocol": asdict(p), "kip": {**DEFAULT_KIP, **p.kip}, "choices": CHOICES,
        "rows": rows, "targets": targets(rows), "kl": kl, "jobs": jobs,
        "cells": cells,
    }
    if large_out is not None:
        result["large_site"] = large_out
    result["wall_seconds"] = time.perf_counter() - started
    result["cpu_seconds"] = _cpu_seconds() - cpu0   # this process and every worker (children are reaped)
    result["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    if json_path:
        json_path = Path(json_path)
        write_json_atomic(json_path, json.loads(json.dumps(result, default=_jsonable)))
        write_text_atomic(json_path.with_suffix(".md"), markdown(result))
    return result


def rerender(json_path: str | Path) -> dict[str, Any]:
    """Recompute the rows, targets and markdown of a record from its cells (after a change to the summary)."""
    json_path = Path(json_path)
    result = json.loads(json_path.read_text())
    result["rows"] = summarise(result["cells"]) if result["cells"] else []
    result["targets"] = targets(result["rows"])
    result["choices"] = CHOICES
    write_json_atomic(json_path, result)
    write_text_atomic(json_path.with_suffix(".md"), markdown(result))
    return result


def _jsonable(o: Any) -> Any:
    if isinstance(o, np.integer | np.floating):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON-able: {type(o)}")


def run_from_args(args, say: Callable[[str], None]) -> dict[str, Any]:
    """``python -m benchmarks hfldd [--dataset D]… [--seeds N] [--data-dir DIR] [--json FILE] [--quick]``.

    ``--quick``: FedAvg/FedProx with fixed lr 0.01 / μ 0.01 (no selection), one random-real draw, and no
    large-site cell. Without it the large-site cell (dry_bean over 2 IID sites) runs with the pendigits set."""
    datasets = args.dataset or list(DATASETS)
    for d in datasets:
        if d not in DATASETS and d not in ("dry_bean", "drybean", "covertype"):
            say(f"note: '{d}' is not one of the recorded data sets {DATASETS}")
    p = Protocol()
    if args.quick:
        p = replace(p, select_fl=False, control_draws=1)
    seeds = list(range(int(args.seeds)))
    if not seeds:
        raise ConfigError("at least one seed is needed")
    parts = [bench_command("hfldd", args)]
    large = None if args.quick or "pendigits" not in datasets else {
        "dataset": "dry_bean", "n_sites": 2, "seed": 0, "rows_per_class": 40, "anchor_ship": 40}
    from benchmarks import worker_count

    result = run(datasets, seeds, p, data_dir=args.data_dir, json_path=args.json, command=" ".join(parts), say=say,
                 large=large, jobs=worker_count())
    say(markdown(result))
    return result


__all__ = ["Protocol", "run", "run_cell", "run_from_args", "markdown", "summarise", "large_site", "rerender"]
