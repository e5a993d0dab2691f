"""DC analysis with one shared model (``dc``) and DC-CFL (``dccfl``): algorithms.md §1.3–1.4 and §2.

DC-CFL (Sugawara, Kawamata et al.):
1. pᵢ = label histogram of site i; Dᵢⱼ = TV(pᵢ, pⱼ); complete linkage cut at t (§2.1 steps 2–4);
2. per cluster C_l: DC alignment on the members' anchor images only (its own m̂_l), X̂^(l) = [X̃ᵢGᵢ]_{i∈C_l},
   standardise, train h_l (MLP d → 64 → 32 → K, SGD lr 0.01, momentum 0.5, batch 32, 50 epochs);
3. a singleton cluster trains on that site alone; inference h_l(standardise(fᵢ(x)Gᵢ + gᵢ)).
``t = "auto"`` picks t from the grid on a held-out part of every site's received rows (nothing more is
asked of sites): every distinct cluster over the grid is trained once on the training parts, and the t
with the best mean per-site hold-out accuracy wins (ties → the larger t, i.e. fewer, bigger clusters).
``dc`` is the same with one cluster holding every site.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..alignment import DCAlignment, SiteMapping
from ..client_clustering import T_GRID, LabelDistributionClustering
from ..control import JobControl, ensure
from ..errors import ConfigError, FormatError
from ..mlp import BatchedMLP, MLPWeights
from .base import Method, MethodResult, ReceivedBundle, SiteExport, SiteInput
from .dc_site import SITE_DEFAULTS, check_dc_bundle, dc_site_compute, site_map

LEARNER_DEFAULTS = {"hidden": [64, 32], "lr": 0.01, "momentum": 0.5, "batch_size": 32, "epochs": 50,
                    "weight_decay": 0.0}
ALIGNMENT_DEFAULTS = {"alignment": "linear", "threshold": 1e-2, "relative_threshold": False,
                      "scale": "identity"}


@dataclass
class ClusterModel:
    """One cluster's alignment, input scaler and classifier."""

    members: tuple[int, ...]
    mappings: dict[int, SiteMapping]
    mean: np.ndarray
    scale: np.ndarray
    model: MLPWeights

    def predict_proba(self, site: int, X_tilde: np.ndarray) -> np.ndarray:
        Z = (self.mappings[site].transform(X_tilde) - self.mean) / self.scale
        return self.model.predict_proba(Z)


def _alignment(settings: dict) -> DCAlignment:
    if settings["alignment"] not in ("linear", "affine"):
        raise ConfigError("alignment must be 'linear' or 'affine'")
    return DCAlignment(affine=settings["alignment"] == "affine", threshold=float(settings["threshold"]),
                       relative=bool(settings["relative_threshold"]), scale=settings["scale"])


def train_cluster_models(bundles: list[ReceivedBundle], clusters: list[tuple[int, ...]], n_classes: int,
                         settings: dict, *, rows: list[np.ndarray] | None = None,
                         control: JobControl | None = None, on_epoch=None) -> list[ClusterModel]:
    """Align each cluster on its members' anchors and train all cluster models in one batched fit.

    ``rows[i]`` optionally restricts site i to a subset of its received rows (hold-out validation).
    """
    control = ensure(control)
    aligned, prepared = [], []
    for members in clusters:
        al = _alignment(settings).fit([bundles[i].arrays["anchor_tilde"] for i in members])
        maps = dict(zip(members, al.mappings_, strict=True))
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
    control.step(0.05, f"training {len(clusters)} cluster model(s)")
    learner = BatchedMLP(tuple(settings["hidden"]), lr=float(settings["lr"]), momentum=float(settings["momentum"]),
                         weight_decay=float(settings["weight_decay"]), batch_size=int(settings["batch_size"]),
                         epochs=int(settings["epochs"]), random_state=int(settings["seed"]))
    learner.fit(prepared, n_classes, control=control.sub(0.05, 1.0), on_epoch=on_epoch)
    return [ClusterModel(members, maps, mean, scale, model)
            for (members, maps, mean, scale), model in zip(aligned, learner.models_, strict=True)]


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


def _accuracy(model: ClusterModel, site: int, bundle: ReceivedBundle, rows: np.ndarray) -> float:
    p = model.predict_proba(site, bundle.arrays["x_tilde"][rows].astype(np.float64))
    return float(np.mean(p.argmax(axis=1) == bundle.arrays["y"][rows]))


def _partition(labels: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(np.flatnonzero(labels == c).tolist()) for c in range(int(labels.max()) + 1)]


class DCCFL(Method):
    name = "dccfl"
    title = "DC-CFL: clustered models by label distribution"
    task = "classification"
    labels_leave = "rows"
    family = "dc"
    one_cluster = False

    @classmethod
    def default_settings(cls) -> dict:
        return {"t": "auto", "t_grid": list(T_GRID), "linkage": "complete", "holdout": 0.2, "seed": 0,
                **ALIGNMENT_DEFAULTS, **LEARNER_DEFAULTS}

    # ---- site ----------------------------------------------------------------------------------
    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport:
        return dc_site_compute(site, ship_labels=True, control=control)

    def validate_bundle(self, bundle: ReceivedBundle, n_classes: int) -> None:
        check_dc_bundle(bundle.arrays, n_classes, need_labels=True)

    # ---- analyst -------------------------------------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], classes: list[str],
            control: JobControl | None = None, on_epoch=None) -> MethodResult:
        control = ensure(control)
        s = self.settings
        K = len(classes)
        if not bundles:
            raise ConfigError("no bundles to analyse")
        widths = {b.arrays["anchor_tilde"].shape[0] for b in bundles}
        if len(widths) != 1:
            raise FormatError("bundles were made with different anchors (different anchor row counts)")
        counts = np.stack([np.bincount(b.arrays["y"], minlength=K) for b in bundles])
        clus = LabelDistributionClustering(method=s["linkage"]).fit(counts)
        grid = [float(t) for t in s["t_grid"]]
        train, hold = holdout_split(bundles, float(s["holdout"]), int(s["seed"]))
        candidates = [1.0] if self.one_cluster else grid
        if not self.one_cluster and s["t"] != "auto":
            candidates = [float(s["t"])]
        partitions = {t: ([tuple(range(len(bundles)))] if self.one_cluster else _partition(clus.cut(t)))
                      for t in candidates}
        distinct = sorted({c for p in partitions.values() for c in p})
        control.step(0.0, f"validating {len(partitions)} threshold(s) on held-out rows")
        models = dict(zip(distinct, train_cluster_models(bundles, distinct, K, s, rows=train,
                                                        control=control.sub(0.0, 0.5)), strict=True))
        curve = {}
        site_acc = {}
        for t, part in partitions.items():
            accs = np.empty(len(bundles))
            for members in part:
                for i in members:
                    accs[i] = _accuracy(models[members], i, bundles[i], hold[i])
            curve[t] = float(accs.mean())
            site_acc[t] = accs
        best = max(curve, key=lambda t: (round(curve[t], 12), t))
        final = partitions[best]
        control.step(0.5, f"training the final model(s) at t = {best:g}")
        final_models = train_cluster_models(bundles, final, K, s, control=control.sub(0.5, 1.0), on_epoch=on_epoch)
        cluster_of = {i: l for l, members in enumerate(final) for i in members}
        packages = []
        for i in range(len(bundles)):
            cm = final_models[cluster_of[i]]
            arrays = {**cm.mappings[i].to_arrays(), "scaler_mean": cm.mean, "scaler_scale": cm.scale,
                      **cm.model.to_arrays("mlp")}
            manifest = {"method": self.name, "cluster": cluster_of[i], "cluster_size": len(cm.members),
                        "t": best, "classes": list(classes), "architecture": cm.model.architecture(),
                        "alignment": s["alignment"], "dimension": int(cm.mappings[i].G.shape[1])}
            packages.append((manifest, arrays))
        summary = {
            "method": self.name, "t": best, "t_auto": s["t"] == "auto" and not self.one_cluster,
            "validation_curve": {f"{t:g}": a for t, a in curve.items()},
            "n_clusters": len(final),
            "sites": [{"site": b.site, "fingerprint": b.fingerprint, "rows": int(b.arrays["x_tilde"].shape[0]),
                       "cluster": cluster_of[i], "holdout_accuracy": float(site_acc[best][i]),
                       "label_counts": counts[i].tolist()} for i, b in enumerate(bundles)],
            "settings": s,
        }
        details = {"histograms": clus.histograms_, "distances": clus.distances_, "linkage": clus.linkage_,
                   "clusters": final, "validation_curve": curve}
        return MethodResult(self.name, packages, summary, details)

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
        proba = model.predict_proba(Z)
        out = {"prediction": np.asarray(classes, dtype=object)[proba.argmax(axis=1)]}
        for k, c in enumerate(classes):
            out[f"prob_{c}"] = proba[:, k]
        return out


class DC(DCCFL):
    name = "dc"
    title = "DC analysis: one shared model"
    one_cluster = True


SITE_SETTINGS = SITE_DEFAULTS
