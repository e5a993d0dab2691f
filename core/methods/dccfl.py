"""DC analysis with one shared model (``dc``) and DC-CFL (``dccfl``): algorithms.md §1.3–1.4 and §2.

DC-CFL (Sugawara, Kawamata et al.):
1. pᵢ = label histogram of site i; Dᵢⱼ = TV(pᵢ, pⱼ); complete linkage cut at t (§2.1 steps 2–4);
2. per cluster C_l: DC alignment on the members' anchor images only (its own m̂_l), X̂^(l) = [X̃ᵢGᵢ]_{i∈C_l},
   standardise, train h_l (MLP d → 64 → 32 → K, SGD lr 0.01, momentum 0.5, batch 32, 50 epochs);
3. a singleton cluster trains on that site alone; inference h_l(standardise(fᵢ(x)Gᵢ + gᵢ)).
``t = "auto"`` picks t from the grid on a held-out part of every site's received rows (nothing more is
asked of sites): every distinct cluster over the grid is trained once on the training parts, and the t
with the best mean per-site hold-out accuracy wins (ties → the larger t, i.e. fewer, bigger clusters).
t ≥ 1 puts every site in one cluster (TV distances never exceed 1). ``dc`` is the same with one cluster
holding every site.

Product defaults versus the paper's recipe (measured in docs/results/dccfl/): the defaults use affine
alignment (§1.4; exact for centred private maps such as PCA) and correct each site's predictions for its
own class prior (``prior_correction``): the cluster model was trained under the cluster's class
frequencies π_l, the site's rows follow its own π_i, so the Bayes-optimal adjustment is
p_i(k|x) ∝ p_l(k|x)·π_i(k)/π_l(k), with Laplace-smoothed frequencies (``prior_smoothing``) from the labels
the site already shipped; the site receives the log-ratio vector in its package. The hold-out choice of t
scores the corrected predictions (``prior_in_selection``), and the grid runs to t = 1.0 (one cluster):
once the prior is corrected per site, a bigger cluster often wins, and the hold-out decides.
The paper's recipe is ``alignment="linear", prior_correction=False, t_grid=[0.1..0.9]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..control import JobControl, ensure
from ..errors import ConfigError, FormatError
from ..learn.alignment import AnchorBasis, DCAlignment, SiteMapping
from ..learn.client_clustering import T_GRID, LabelDistributionClustering
from ..learn.mlp import BatchedMLP, MLPWeights
from .base import ClientDistances, FitContext, Method, MethodResult, ReceivedBundle, SiteExport, SiteInput
from .dc_site import SITE_SETTINGS, check_anchor_width, check_dc_bundle, dc_site_compute, site_map
from .settings import Setting
from .views import Curve, Heatmap, Table, View

DEFAULT_T_GRID = [*T_GRID, 1.0]
ALIGNMENT_SETTINGS = (
    Setting("alignment", "choice", "affine", "how each site's reduced rows are mapped to the common space",
            label="Alignment", choices=("linear", "affine"),
            choice_help=("linear (the paper's recipe)", "affine, with an offset (exact for centred maps)")),
    Setting("threshold", "float", 1e-2, "singular values of the anchor images below this are dropped",
            low=0.0, advanced=True),
    Setting("relative_threshold", "bool", False, "read the threshold relative to the largest singular value",
            advanced=True),
    Setting("scale", "choice", "identity", "C in the alignment: identity or the singular values",
            choices=("identity", "singular"), advanced=True),
)
LEARNER_SETTINGS = (
    Setting("epochs", "int", 50, "passes over the training rows", label="Epochs", low=1, high=5000, at_run=True),
    Setting("hidden", "int_list", [64, 32], "hidden layer widths of the MLP", advanced=True),
    Setting("lr", "float", 0.01, "SGD learning rate", low=1e-6, high=10.0, advanced=True),
    Setting("momentum", "float", 0.5, "SGD momentum", low=0.0, high=0.999, advanced=True),
    Setting("batch_size", "int", 32, "rows per SGD step", low=1, high=100000, advanced=True),
    Setting("weight_decay", "float", 0.0, "L2 penalty", low=0.0, advanced=True),
)
PRIOR_SETTINGS = (
    Setting("prior_correction", "bool", True, "correct each site's predictions for its own class frequencies",
            label="Per-site class-prior correction"),
    Setting("prior_smoothing", "float", 0.5, "Laplace smoothing of the class frequencies", low=0.0,
            advanced=True),
    Setting("prior_in_selection", "bool", True, "choose t on the corrected predictions", advanced=True),
)


@dataclass
class ClusterModel:
    """One cluster's alignment, input scaler and classifier."""

    members: tuple[int, ...]
    mappings: dict[int, SiteMapping]
    mean: np.ndarray
    scale: np.ndarray
    model: MLPWeights
    class_counts: np.ndarray  # (K,) rows of each class the model was trained on

    def predict_proba(self, site: int, X_tilde: np.ndarray, prior_logit: np.ndarray | None = None) -> np.ndarray:
        Z = (self.mappings[site].transform(X_tilde) - self.mean) / self.scale
        return adjust_proba(self.model.predict_proba(Z), prior_logit)


def adjust_proba(proba: np.ndarray, prior_logit: np.ndarray | None) -> np.ndarray:
    """p'(k|x) ∝ p(k|x)·exp(a_k): the Bayes correction for a change of class prior (a = log π_site − log π_train)."""
    if prior_logit is None:
        return proba
    q = proba * np.exp(np.asarray(prior_logit, np.float64) - np.max(prior_logit))
    return q / np.maximum(q.sum(axis=1, keepdims=True), 1e-300)


def prior_logit(site_counts: np.ndarray, cluster_counts: np.ndarray, smoothing: float) -> np.ndarray:
    """a_k = log π_site(k) − log π_cluster(k), both Laplace-smoothed: π(k) = (n_k + s) / (n + K s)."""
    K = len(site_counts)
    ps = (site_counts + smoothing) / (site_counts.sum() + K * smoothing)
    pc = (cluster_counts + smoothing) / (cluster_counts.sum() + K * smoothing)
    return np.log(ps) - np.log(pc)


def _alignment(settings: dict) -> DCAlignment:
    if settings["alignment"] not in ("linear", "affine"):
        raise ConfigError("alignment must be 'linear' or 'affine'")
    return DCAlignment(affine=settings["alignment"] == "affine", threshold=float(settings["threshold"]),
                       relative=bool(settings["relative_threshold"]), scale=settings["scale"])


def train_cluster_models(bundles: list[ReceivedBundle], clusters: list[tuple[int, ...]], n_classes: int,
                         settings: dict, *, rows: list[np.ndarray] | None = None,
                         control: JobControl | None = None, on_epoch=None,
                         basis: AnchorBasis | None = None) -> list[ClusterModel]:
    """Align each cluster on its members' anchors and train all cluster models in one batched fit.

    ``rows[i]`` optionally restricts site i to a subset of its received rows (hold-out validation);
    ``basis`` reuses the per-site factorisations across calls (:class:`AnchorBasis`).
    """
    control = ensure(control)
    _alignment(settings)  # validates the alignment settings
    if basis is None:
        basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=settings["alignment"] == "affine")
    aligned, prepared = [], []
    for members in clusters:
        maps = basis.align(members, settings)
        Xs, ys = [], []
        for i in members:
            sel = slice(None) if rows is None else rows[i]
            Xs.append(maps[i].transform(bundles[i].arrays["x_tilde"][sel].astype(np.float64)))
            ys.append(bundles[i].arrays["y"][sel].astype(np.int64))
        Xh = np.vstack(Xs)
        mean, scale = Xh.mean(axis=0), Xh.std(axis=0)
        scale[~(scale > 1e-12)] = 1.0
        aligned.append((members, maps, mean, scale))
        prepared.append((((Xh - mean) / scale).astype(np.float32), np.concatenate(ys)))
    control.step(0.05, "anchors aligned")
    control.phase(f"{len(clusters)} cluster model{'s' if len(clusters) > 1 else ''} trained together"
                  if len(clusters) > 1 else "")
    learner = BatchedMLP(tuple(settings["hidden"]), lr=float(settings["lr"]), momentum=float(settings["momentum"]),
                         weight_decay=float(settings["weight_decay"]), batch_size=int(settings["batch_size"]),
                         epochs=int(settings["epochs"]), random_state=int(settings["seed"]))
    learner.fit(prepared, n_classes, control=control.sub(0.05, 1.0), on_epoch=on_epoch)
    return [ClusterModel(members, maps, mean, scale, model, np.bincount(y, minlength=n_classes))
            for (members, maps, mean, scale), (_, y), model in zip(aligned, prepared, learner.models_, strict=True)]


def holdout_split(bundles: list[ReceivedBundle], fraction: float, seed: int) -> tuple[list, list]:
    """Per site, a seeded split of its received rows into training and hold-out parts (≥ 1 each)."""
    train, hold = [], []
    for i, b in enumerate(bundles):
        n = b.arrays["x_tilde"].shape[0]
        perm = np.random.default_rng([seed, i]).permutation(n)
        k = min(max(1, int(round(fraction * n))), n - 1)
        hold.append(np.sort(perm[:k]))
        train.append(np.sort(perm[k:]))
    return train, hold


def _accuracy(model: ClusterModel, site: int, bundle: ReceivedBundle, rows: np.ndarray,
              prior: np.ndarray | None = None) -> float:
    p = model.predict_proba(site, bundle.arrays["x_tilde"][rows].astype(np.float64), prior)
    return float(np.mean(p.argmax(axis=1) == bundle.arrays["y"][rows]))


def _partition(labels: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(np.flatnonzero(labels == c).tolist()) for c in range(int(labels.max()) + 1)]


class DCCFL(Method):
    name = "dccfl"
    title = "DC-CFL: one model per group of sites with similar label mixes"
    plain_title = "one model per group of sites with similar patients"
    task = "classification"
    labels_leave = "rows"
    family = "dc"
    what_leaves = ("a privately reduced, shuffled copy of every row, the class of every row, and the shared "
                   "anchor rows after the same private reduction")
    one_cluster = False
    settings_spec = (
        Setting("t", "float", "auto", "threshold on the label-distribution distance that cuts sites into groups",
                label="Threshold t", low=0.0, high=1.0, auto=True, at_run=True, role="threshold",
                auto_help="chosen on held-out rows"),
        Setting("t_grid", "float_list", list(DEFAULT_T_GRID), "the thresholds tried when t is auto", advanced=True),
        Setting("linkage", "choice", "complete", "how groups of sites are merged",
                choices=("complete", "average", "single"), advanced=True),
        Setting("holdout", "float", 0.2, "share of each site's received rows held out to choose t", low=0.05,
                high=0.5, advanced=True),
        Setting("seed", "int", 0, "random seed of the hold-out split and the training", label="Random seed",
                low=0, high=2**31 - 1),
        *PRIOR_SETTINGS, *ALIGNMENT_SETTINGS, *LEARNER_SETTINGS, *SITE_SETTINGS,
    )

    # ---- site ----------------------------------------------------------------------------------
    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport:
        return dc_site_compute(site, ship_labels=True, control=control)

    def check_bundle(self, bundle: ReceivedBundle, kit) -> None:
        super().check_bundle(bundle, kit)
        check_dc_bundle(bundle.arrays, len(kit.schema.classes), need_labels=True)

    # ---- analyst -------------------------------------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        # One BLAS thread: the work is many small factorisations and products, for which extra threads
        # only add synchronisation (and, on a busy machine, spin for an order of magnitude longer).
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            return self._fit(bundles, context.classes, context.control, context.on_epoch)

    def _fit(self, bundles: list[ReceivedBundle], classes: list[str], control: JobControl | None,
             on_epoch) -> MethodResult:
        control = ensure(control)
        s = self.settings
        K = len(classes)
        if not bundles:
            raise ConfigError("no bundles to analyse")
        check_anchor_width(bundles)
        counts = np.stack([np.bincount(b.arrays["y"], minlength=K) for b in bundles])
        clus = LabelDistributionClustering(method=s.get("linkage", "complete")).fit(counts)
        grid = [float(t) for t in s.get("t_grid", [1.0])]
        train, hold = holdout_split(bundles, float(s.get("holdout", 0.2)), int(s["seed"]))
        candidates = [1.0] if self.one_cluster else grid
        if not self.one_cluster and s.get("t", "auto") != "auto":
            candidates = [float(s["t"])]
        everyone = [tuple(range(len(bundles)))]
        partitions = {t: (everyone if self.one_cluster or t >= 1.0 else _partition(clus.cut(t)))
                      for t in candidates}
        basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=s["alignment"] == "affine")
        curve: dict[float, float] = {}
        site_acc: dict[float, np.ndarray] = {}
        # With a single candidate there is nothing to select: skip the hold-out training.
        distinct = sorted({c for p in partitions.values() for c in p}) if len(partitions) > 1 else []
        if distinct:
            control.phase(f"step 1 of 2, choosing the threshold ({len(partitions)} candidates)")
        control.step(0.0, "starting")
        trained = train_cluster_models(bundles, distinct, K, s, rows=train, basis=basis,
                                       control=control.sub(0.0, 0.5)) if distinct else []
        models = dict(zip(distinct, trained, strict=True))
        for t, part in (partitions.items() if distinct else ()):
            accs = np.empty(len(bundles))
            for members in part:
                for i in members:
                    prior = None
                    if s["prior_correction"] and s["prior_in_selection"]:
                        fit_counts = np.bincount(bundles[i].arrays["y"][train[i]], minlength=K)
                        prior = prior_logit(fit_counts, models[members].class_counts, float(s["prior_smoothing"]))
                    accs[i] = _accuracy(models[members], i, bundles[i], hold[i], prior)
            curve[t] = float(accs.mean())
            site_acc[t] = accs
        best = max(curve, key=lambda t: (round(curve[t], 12), t)) if curve else next(iter(partitions))
        final = partitions[best]
        control.phase(("step 2 of 2, " if distinct else "")
                      + f"training the final model{'s' if len(final) > 1 else ''} at t = {best:g}")
        control.step(0.5 if distinct else 0.0, "starting")
        final_models = train_cluster_models(bundles, final, K, s, control=control.sub(0.5, 1.0), on_epoch=on_epoch,
                                            basis=basis)
        cluster_of = {i: l for l, members in enumerate(final) for i in members}
        packages = []
        for i in range(len(bundles)):
            cm = final_models[cluster_of[i]]
            arrays = {**cm.mappings[i].to_arrays(), "scaler_mean": cm.mean, "scaler_scale": cm.scale,
                      **cm.model.to_arrays("mlp")}
            if s["prior_correction"]:
                arrays["prior_logit"] = prior_logit(counts[i], cm.class_counts, float(s["prior_smoothing"]))
            manifest = {"method": self.name, "cluster": cluster_of[i], "cluster_size": len(cm.members),
                        "t": best, "classes": list(classes), "architecture": cm.model.architecture(),
                        "alignment": s["alignment"], "dimension": int(cm.mappings[i].G.shape[1])}
            packages.append((manifest, arrays))
        summary = {
            "method": self.name, "task": self.task, "t": best,
            "t_auto": s.get("t") == "auto" and not self.one_cluster,
            "validation_curve": {f"{t:g}": a for t, a in curve.items()},
            "n_clusters": len(final),
            "sites": [{"site": b.site, "fingerprint": b.fingerprint, "rows": int(b.arrays["x_tilde"].shape[0]),
                       "cluster": cluster_of[i] + 1, "label_counts": counts[i].tolist(),  # numbered from 1
                       # (no hold-out accuracy when a single candidate made validation unnecessary)
                       **({"holdout_accuracy": float(site_acc[best][i])} if curve else {})}
                      for i, b in enumerate(bundles)],
            "settings": s,
        }
        details = {"histograms": clus.histograms_, "distances": clus.distances_, "linkage": clus.linkage_,
                   "clusters": final, "validation_curve": curve}
        return MethodResult(self.name, packages, summary, details)

    # ---- what it shows --------------------------------------------------------------------------
    def summary_lines(self, summary: dict) -> list[str]:
        s = summary
        how = " (chosen on held-out rows)" if s.get("t_auto") else ""
        lines = [f"method {self.name}: t = {s.get('t')}{how}, {s.get('n_clusters')} cluster(s) of sites"]
        for x in s.get("sites", []):
            acc = x.get("holdout_accuracy")
            lines.append(f"  {x['site']}: {x['rows']:,} rows, cluster {x['cluster']}"
                         + ("" if acc is None else f", hold-out accuracy {acc:.3f}"))
        return lines

    def views(self, result: MethodResult) -> list[View]:
        s, d = result.summary, result.details
        sites = s.get("sites", [])
        classes = [str(c) for c in (result.packages[0][0].get("classes", []) if result.packages else [])]
        rows = [[x["site"], x.get("fingerprint", ""), x["rows"], x["cluster"],
                 "" if x.get("holdout_accuracy") is None else f"{x['holdout_accuracy']:.3f}",
                 x.get("label_counts", [])] for x in sites]
        out: list[View] = [Table("Sites", ["site", "fingerprint", "rows", "cluster", "hold-out accuracy",
                                           "labels"], rows, bars=("labels",), bar_labels=classes)]
        if "distances" in d and len(d["distances"]) > 1:
            names = [x["site"] for x in sites]
            out.append(Heatmap("Total-variation distance between the sites' label distributions",
                               np.asarray(d["distances"]), names, names))
        curve = s.get("validation_curve") or {}
        if len(curve) > 1:
            xs = [float(t) for t in curve]
            out.append(Curve("Hold-out accuracy for each threshold t", xs, {"accuracy": list(curve.values())},
                             xlabel="t", ylabel="accuracy", mark=float(s.get("t", xs[0]))))
        return out

    def client_distances(self, bundles: list[ReceivedBundle], classes: list[str]) -> ClientDistances | None:
        K = len(classes)
        if len(bundles) < 2 or K < 2:
            return None
        counts = np.stack([np.bincount(np.asarray(b.arrays["y"]), minlength=K)[:K] for b in bundles])
        clus = LabelDistributionClustering(method=self.settings.get("linkage", "complete")).fit(counts)
        return ClientDistances(clus.distances_, clus.histograms_, clus.linkage_, clus.cut,
                               "total-variation distance between the sites' label distributions")

    # ---- site, after the round -----------------------------------------------------------------
    def apply(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
              X: np.ndarray) -> dict[str, np.ndarray]:
        f = site_map(private_arrays)
        mapping = SiteMapping.from_arrays(arrays)
        model = MLPWeights.from_arrays(arrays, "mlp")
        classes = list(manifest["classes"])
        if mapping.G.shape[0] != f.n_components or model.weights[0].shape[0] != mapping.G.shape[1]:
            raise FormatError("the package does not fit this site's private reduction")
        Z = (mapping.transform(f.transform(X)) - arrays["scaler_mean"]) / arrays["scaler_scale"]
        prior = arrays.get("prior_logit")
        if prior is not None and (np.shape(prior) != (len(classes),) or not np.all(np.isfinite(prior))):
            raise FormatError("the package's class-prior correction does not match its class list")
        proba = adjust_proba(model.predict_proba(Z), prior)
        out = {"prediction": np.asarray(classes, dtype=object)[proba.argmax(axis=1)]}
        for k, c in enumerate(classes):
            out[f"prob_{c}"] = proba[:, k]
        return out


class DC(DCCFL):
    name = "dc"
    title = "DC analysis: one shared model for all sites"
    plain_title = "one model shared by all sites"
    one_cluster = True
    settings_spec = tuple(s for s in DCCFL.settings_spec if s.name not in ("t", "t_grid", "linkage", "holdout"))

    def summary_lines(self, summary: dict) -> list[str]:
        return [f"method {self.name}: one model for all {len(summary.get('sites', []))} sites"]

    def views(self, result: MethodResult) -> list[View]:
        return [v for v in super().views(result) if not isinstance(v, Heatmap | Curve)]
