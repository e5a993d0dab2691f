"""Cluster models and the per-site choice among them, shared by the DC-family methods (DC-CFL, FedDAG, …).

A cluster model (algorithms.md §1.3–1.4, §2) aligns its members on their own anchor images, standardises the
aligned rows and trains an MLP; a site's predictions are corrected for its own class prior,
p_i(k|x) ∝ p_l(k|x)·π_i(k)/π_l(k). The selection (issue #15) cross-validates every candidate model on every
site's received rows — each site's rows dealt into folds (:func:`cv_splits`), a candidate trained on its
members' training folds and scored on each member's test fold — together with models of the site's own rows
(the singleton MLP and a logistic regression); each site is then sent the candidate that cross-validates best
(:func:`pick_own`), with its row count and 95 % Wilson interval (:func:`site_estimates`). Nothing here names a
method: the methods decide which clusters are candidates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..control import JobControl, ensure
from ..errors import ConfigError
from ..formats.fields import site_rows
from .alignment import AnchorBasis, DCAlignment, SiteMapping
from .clinical_metrics import SELECTION_METRICS, hanley_mcneil_se, selection_score
from .intervals import WEAK_ROWS, estimate, mcnemar_p
from .mlp import BatchedMLP, MLPWeights
from .own_cv import MARGIN_SE, accuracy_se, alone_estimate, beats_own, read_own_cv

# Defaults of the learner, the alignment, the prior correction and the selection (the settings' one source).
LEARNER_DEFAULTS: dict = {"epochs": 50, "hidden": [64, 32], "lr": 0.01, "momentum": 0.5, "batch_size": 32,
                          "weight_decay": 0.0}
ALIGNMENT_DEFAULTS: dict = {"alignment": "affine", "threshold": 1e-2, "relative_threshold": False,
                            "scale": "identity"}
PRIOR_DEFAULTS: dict = {"prior_correction": True, "prior_smoothing": 0.5, "prior_in_selection": True}
SELECTION_DEFAULTS: dict = {"cv_folds": "auto", "cv_repeats": "auto", "own_model": True, "metric": "auto",
                            "site_intercepts": True,
                            "selection_max_rows": 10000, "selection_site_rows": 500, "selection_total_rows": 1_000_000,
                            "max_epoch_rows": 20000}


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
    """p'(k|x) ∝ p(k|x)·exp(a_k): the Bayes correction for a change of class prior
    (a = log π_site − log π_train)."""
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


def alignment_of(settings: dict) -> DCAlignment:
    if settings["alignment"] not in ("linear", "affine"):
        raise ConfigError("alignment must be 'linear' or 'affine'")
    return DCAlignment(affine=settings["alignment"] == "affine", threshold=float(settings["threshold"]),
                       relative=bool(settings["relative_threshold"]), scale=settings["scale"])


def opt_int(v) -> int | None:
    return None if v in (None, 0, "none") else int(v)


def hits(model: ClusterModel, site: int, bundle, rows: np.ndarray, prior: np.ndarray | None = None) -> np.ndarray:
    """Which of the site's ``rows`` the model classifies correctly (bool, in ``rows`` order)."""
    p = model.predict_proba(site, bundle.arrays["x_tilde"][rows].astype(np.float64), prior)
    return p.argmax(axis=1) == bundle.arrays["y"][rows]


def correct_count(model: ClusterModel, site: int, bundle, rows: np.ndarray,
                  prior: np.ndarray | None = None) -> int:
    return int(hits(model, site, bundle, rows, prior).sum())


def clearly_better(first: np.ndarray, second: np.ndarray, repeats: int, level: float = 0.05) -> bool:
    """Whether paired CV hits show ``first`` better than ``second``: McNemar's exact one-sided test on the rows
    only one of them gets right, counted per repetition (a row tested r times counts once), p < ``level``."""
    r = max(int(repeats), 1)
    b = round(int(np.sum(first & ~second)) / r)
    c = round(int(np.sum(~first & second)) / r)
    return b > c and mcnemar_p(b, c, one_sided=True) < level


def fit_linear(bundles: list, i: int, rows: np.ndarray, maps: dict, basis: AnchorBasis,
                settings: dict, n_classes: int) -> ClusterModel:
    """Site i's own rows only, linear: a multinomial logistic regression (L2, λ = 1) on its received rows
    X̃ᵢ as they are — the identity map, centred, no per-column scaling. X̃ᵢ = standardise(X)·Vᵢ with Vᵢ
    orthonormal (PCA), and an L2-penalised linear model is invariant to that rotation, so this is the
    site's own baseline (:mod:`core.learn.local_model`) up to the one dropped component. (Aligning to the
    anchor, or standardising each reduced column, would whiten the small-variance directions and let the
    penalty fit their noise — bad for a 40-row site.) Returned as a one-layer MLP: the package format is
    unchanged."""
    from .local_model import fit_local_model

    X = bundles[i].arrays["x_tilde"][rows].astype(np.float64)
    y = bundles[i].arrays["y"][rows].astype(np.int64)
    return _linear_model(i, fit_local_model(X, y, n_classes, max_iter=LINEAR_ITERATIONS, standardise=False), y,
                         n_classes)


LINEAR_ITERATIONS = 100  # L-BFGS steps of a site's linear own-rows model (fit_linear)


def _linear_model(i: int, a: dict[str, np.ndarray], y: np.ndarray, n_classes: int) -> ClusterModel:
    """Site i's fitted own-rows arrays (:func:`~core.learn.local_model.fit_local_model`) as a one-layer
    :class:`ClusterModel` on the identity map."""
    d = a["local_w"].shape[0]
    return ClusterModel((i,), {i: SiteMapping(np.eye(d), np.zeros(d))}, a["local_mean"], a["local_scale"],
                        MLPWeights([a["local_w"]], [a["local_b"]]), np.bincount(y, minlength=n_classes))


def site_note(info: dict) -> str:
    notes = []
    e = info.get("expected")
    if e and e["weak"]:
        notes.append(f"only {e['rows']} rows: the estimate is uncertain (95 % CI {e['low']:.2f}–{e['high']:.2f})")
    if info.get("model") == "own" and info.get("own_kind") and not info.get("update"):
        small = bool(e) and e["rows"] < WEAK_ROWS
        at_site = (info.get("own_model") or {}).get("source") == "site"
        notes.append(("its cluster's model did not beat the site's own model (cross-validated at the site) by more "
                      f"than {MARGIN_SE} standard errors (one-sided 5 %)" if at_site else
                      f"with fewer than {WEAK_ROWS} rows, the cluster's model was not clearly better than the "
                      "site's own" if small else "the site's own-rows model cross-validated better than its cluster's")
                     + "; the site keeps its own model")
    return "; ".join(notes)


def group_rows(bundles: list, members: tuple[int, ...], rows: list | None, mp: dict, *, seed: int, g: int,
               site_rows: int | None = None, max_rows: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X̂, y, position): a group's members' rows aligned by the group's maps ``mp`` (float64), their labels, and
    each row's member position (0 … len(members) − 1). ``rows[i]`` restricts site i (``None`` = all); ``site_rows``
    and ``max_rows`` cap the rows per member and in total by seeded subsamples (``g`` numbers the group), drawn
    before the rows are aligned: the rows and bits of aligning every row and then subsampling (a member left with
    one row is aligned by another BLAS routine: equal to the last bit or two)."""
    picks = []
    for i in members:
        sel = np.arange(bundles[i].arrays["y"].shape[0]) if rows is None else np.asarray(rows[i])
        if site_rows and len(sel) > site_rows:
            sel = np.sort(np.random.default_rng([seed, g, i, 5]).choice(sel, site_rows, replace=False))
        picks.append(sel)
    sizes = np.array([len(sel) for sel in picks], np.int64)
    if max_rows and sizes.sum() > max_rows:  # the seeded subsample of the concatenation, taken before aligning
        keep = np.sort(np.random.default_rng([seed, g, 7]).choice(int(sizes.sum()), max_rows, replace=False))
        ends = np.cumsum(sizes)
        member = np.searchsorted(ends, keep, side="right")
        at = keep - (ends - sizes)[member]
        picks = [sel[at[member == p]] for p, sel in enumerate(picks)]
    Xs = [mp[i].transform(bundles[i].arrays["x_tilde"][sel].astype(np.float64)) for i, sel in zip(members, picks,
                                                                                                  strict=True)]
    ys = [bundles[i].arrays["y"][sel].astype(np.int64) for i, sel in zip(members, picks, strict=True)]
    position = np.repeat(np.arange(len(members), dtype=np.int64), [len(sel) for sel in picks])
    return np.vstack(Xs), np.concatenate(ys), position


def standardiser(Xh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) of aligned rows; a constant column gets scale 1."""
    mean, scale = Xh.mean(axis=0), Xh.std(axis=0)
    scale[~(scale > 1e-12)] = 1.0
    return mean, scale


def fit_groups(bundles: list, groups: list[tuple[tuple[int, ...], list | None]], n_classes: int,
               settings: dict, basis: AnchorBasis, *, seed: int, maps: dict | None = None,
               max_rows: int | None = None, site_rows: int | None = None, epoch_rows: int | None = None,
               control: JobControl | None = None, on_epoch=None) -> list[ClusterModel]:
    """Align and train one model per ``(members, rows)`` in one batched fit.

    ``rows[i]`` restricts site i to some of its received rows (``None`` = all). ``site_rows`` and ``max_rows``
    cap a group's rows per member and in total by a seeded subsample (selection at scale); ``epoch_rows`` lets
    a bigger group see a fresh random ``epoch_rows`` of its rows per epoch (:class:`BatchedMLP`).
    ``maps`` caches each cluster's alignment across calls (it does not depend on the rows).
    """
    control = ensure(control)
    maps = {} if maps is None else maps
    aligned, prepared = [], []
    for g, (members, rows) in enumerate(groups):
        if members not in maps:
            maps[members] = basis.align(members, settings)
        mp = maps[members]
        Xh, y, _ = group_rows(bundles, members, rows, mp, seed=seed, g=g, site_rows=site_rows, max_rows=max_rows)
        mean, scale = standardiser(Xh)
        aligned.append((members, mp, mean, scale))
        prepared.append((((Xh - mean) / scale).astype(np.float32), y))
    control.step(0.05, f"training {len(groups)} model(s)")
    learner = BatchedMLP(tuple(settings["hidden"]), lr=float(settings["lr"]), momentum=float(settings["momentum"]),
                         weight_decay=float(settings["weight_decay"]), batch_size=int(settings["batch_size"]),
                         epochs=int(settings["epochs"]), random_state=int(seed), max_epoch_rows=epoch_rows)
    learner.fit(prepared, n_classes, control=control.sub(0.05, 1.0), on_epoch=on_epoch)
    return [ClusterModel(members, mp, mean, scale, model, np.bincount(y, minlength=n_classes))
            for (members, mp, mean, scale), (_, y), model in zip(aligned, prepared, learner.models_, strict=True)]


SITE_INTERCEPTS = "site-intercepts"  # the first element of a group's linear candidate's key: (SITE_INTERCEPTS, members)


def si_key(members: tuple[int, ...]) -> tuple:
    """The key of a group's linear model with site intercepts (:mod:`core.learn.site_intercepts`) beside the
    group's MLP (keyed by its members)."""
    return (SITE_INTERCEPTS, tuple(members))


def is_si_key(key) -> bool:
    return isinstance(key, tuple) and len(key) == 2 and key[0] == SITE_INTERCEPTS


def fit_site_intercept_groups(bundles: list, groups: list[tuple[tuple[int, ...], list | None]], n_classes: int,
                              settings: dict, basis: AnchorBasis, *, seed: int, maps: dict | None = None,
                              max_rows: int | None = None, site_rows: int | None = None
                              ) -> list[dict[int, ClusterModel]]:
    """Per ``(members, rows)``: the group's linear model with site intercepts (:mod:`core.learn.site_intercepts`)
    on the same aligned, standardised rows as its MLP, as one one-layer :class:`ClusterModel` per member (the common
    weights, the member's intercepts)."""
    from .site_intercepts import fit_site_intercepts

    maps = {} if maps is None else maps
    out = []
    for g, (members, rows) in enumerate(groups):
        if members not in maps:
            maps[members] = basis.align(members, settings)
        mp = maps[members]
        Xh, y, position = group_rows(bundles, members, rows, mp, seed=seed, g=g, site_rows=site_rows,
                                     max_rows=max_rows)
        mean, scale = standardiser(Xh)
        W, C = fit_site_intercepts((Xh - mean) / scale, y, position, len(members), n_classes)
        counts = np.bincount(y, minlength=n_classes)
        out.append({i: ClusterModel(members, mp, mean, scale,
                                    MLPWeights([W.astype(np.float32)], [C[p].astype(np.float32)]), counts)
                    for p, i in enumerate(members)})
    return out


def train_cluster_models(bundles: list, clusters: list[tuple[int, ...]], n_classes: int,
                         settings: dict, *, rows: list[np.ndarray] | None = None,
                         control: JobControl | None = None, on_epoch=None,
                         basis: AnchorBasis | None = None) -> list[ClusterModel]:
    """Align each cluster on its members' anchors and train all cluster models in one batched fit
    (``rows[i]`` optionally restricts site i to a subset of its received rows)."""
    alignment_of(settings)  # validates the alignment settings
    if basis is None:
        basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=settings["alignment"] == "affine")
    return fit_groups(bundles, [(c, rows) for c in clusters], n_classes, settings, basis,
                      seed=int(settings["seed"]), control=control, on_epoch=on_epoch)


def holdout_split(bundles: list, fraction: float, seed: int) -> tuple[list, list]:
    """Per site, a seeded split of its received rows into training and hold-out parts (≥ 1 each)."""
    (train, hold), = cv_splits([b.arrays["x_tilde"].shape[0] for b in bundles], 1, 1, fraction, seed)
    return train, hold


def resolve_cv(settings: dict, n_rows: list[int]) -> tuple[int, int]:
    """(folds, repeats). ``auto``: 5-fold when the median site has < 1,000 rows (else one hold-out of
    ``holdout``), repeated ⌈100 / median rows⌉ times (1–3) so a small site's estimate rests on more draws."""
    med = float(np.median(n_rows))
    folds = settings.get("cv_folds", "auto")
    folds = (1 if med >= 1000 else 5) if folds == "auto" else int(folds)
    repeats = settings.get("cv_repeats", "auto")
    repeats = (1 if folds == 1 else int(min(3, max(1, math.ceil(100 / max(med, 1)))))) if repeats == "auto" \
        else int(repeats)
    if folds < 1 or repeats < 1:
        raise ConfigError("cv_folds and cv_repeats must be at least 1")
    return folds, repeats


def cv_splits(n_rows: list[int], folds: int, repeats: int, holdout: float, seed: int) -> list[tuple[list, list]]:
    """Per repeat r and fold f: (training rows, test rows) of every site. Site i's rows are permuted by
    ``default_rng([seed, i, r])`` and dealt round-robin into the folds, so every row is tested once per
    repeat; ``folds = 1`` is one hold-out of ``round(holdout · n)`` rows (≥ 1, ≤ n − 1)."""
    out = []
    for r in range(repeats):
        assign = []
        for i, n in enumerate(n_rows):
            perm = np.random.default_rng([seed, i, r]).permutation(n)
            a = np.empty(n, np.int64)
            if folds == 1:
                k = min(max(1, int(round(holdout * n))), n - 1)
                a[perm] = -1
                a[perm[:k]] = 0
            else:
                a[perm] = np.arange(n) % folds
            assign.append(a)
        for f in range(folds):
            out.append(([np.flatnonzero(a != f) for a in assign], [np.flatnonzero(a == f) for a in assign]))
    return out


# ---------------------------------------------------------------------------------------------- selection
OWN = "own"  # the key of a site's own-rows (linear) candidate beside cluster keys (tuples of sites)


@dataclass
class Selection:
    """Cross-validated correct predictions of candidate models, per site, over one set of splits.

    ``correct[members][i]``: rows of site i's test folds the candidate trained on ``members`` got right (summed
    over the splits); accuracy = correct / ``tested``. ``lin_correct``: the same for the site's linear own-rows
    model. ``paired[(key, i)]``: the same rows one by one (split after split, so candidates pair up), kept for
    sites below WEAK_ROWS rows (key: the members, or OWN). ``n_eval[i]``: the rows behind site i's estimate
    (tested rows / repeats). ``site_cv[i]``: site i's own raw-row model cross-validated at the site (the bundle's
    checked ``own_cv``, :mod:`core.learn.own_cv`), or None for a bundle without it: then its "alone" number is
    the twin on its reduced rows (``lin_correct``).

    ``metric`` (accuracy | balanced_accuracy | auc) is what the choice maximises (:meth:`score_of`,
    :meth:`own_score`); ``oof[(key, i)]``: the (rows, probabilities, float32) of each split's test fold of site i
    under candidate ``key`` (:func:`oof_proba` averages them over the repeats), kept until the methods have
    taken the chosen model's; ``metric_scores[key]``: per site, ``metric`` on those out-of-fold predictions."""

    splits: list
    folds: int
    repeats: int
    n_rows: list[int]
    tested: np.ndarray
    n_eval: np.ndarray
    correct: dict = field(default_factory=dict)
    lin_correct: np.ndarray | None = None
    paired: dict = field(default_factory=dict)
    site_cv: list = field(default_factory=list)
    metric: str = "accuracy"
    n_classes: int = 2
    oof: dict = field(default_factory=dict)
    metric_scores: dict = field(default_factory=dict)

    def score_of(self, members) -> np.ndarray:
        """Per site, ``metric`` of the candidate ``members`` (or OWN: the linear own-rows model) cross-validated
        here; accuracy = correct / tested."""
        if self.metric == "accuracy":
            return self.acc_lin if members == OWN else self.acc(members)
        return self.metric_scores[members]

    def own_score(self) -> np.ndarray:
        """Each site's own-model ``metric``: from its bundle's ``own_cv`` when there, else its linear twin's."""
        if self.metric == "accuracy":
            return self.own_acc()
        lin = self.metric_scores.get(OWN, np.zeros(len(self.n_rows)))
        return np.array([cv[self.metric] if (cv := self.cv_of(i)) else lin[i] for i in range(len(self.n_rows))])

    def cv_of(self, i: int) -> dict | None:
        return self.site_cv[i] if i < len(self.site_cv) else None

    def acc(self, members: tuple[int, ...]) -> np.ndarray:
        return self.correct[members] / np.maximum(self.tested, 1)

    @property
    def acc_lin(self) -> np.ndarray:
        return self.lin_correct / np.maximum(self.tested, 1)

    def own_acc(self) -> np.ndarray:
        """Each site's own-model accuracy: cross-validated at the site on its raw rows when its bundle says
        (``site_cv``), else its linear model's on the reduced rows. (An own-rows MLP is no separate candidate:
        the better of two noisy own-rows scores picked "alone" by chance — measured on the DC-CFL benchmark's
        gesture cells; a singleton cluster at a small t still trains one.)"""
        lin = self.acc_lin if self.lin_correct is not None else np.zeros(len(self.n_rows))
        return np.array([cv["accuracy"] if (cv := self.cv_of(i)) else lin[i] for i in range(len(self.n_rows))])

    def clears_margin(self, i: int, cluster_acc: float) -> bool:
        """Whether a candidate of CV score p_c (on n_eval[i] rows) beats site i's own model, cross-validated at
        the site with score p_o on n_o rows, by more than MARGIN_SE standard errors of the difference:
        p_c − p_o > MARGIN_SE · √(se_c² + se_o²). The two estimates come from different folds (here on the
        reduced rows, there on the raw rows), so they are treated as independent; as they share the site's rows
        the true error is smaller, and the margin errs towards keeping the own model. se (:meth:`score_se`):
        √(p(1 − p)/n) for (balanced) accuracy, Hanley–McNeil's for an AUC."""
        cv = self.cv_of(i)
        p_o, p_c = float(cv[self.metric]), float(cluster_acc)
        events = cv.get("events")
        se = math.hypot(self.score_se(p_c, int(self.n_eval[i]), events and round(events * self.n_eval[i] /
                                                                                  max(cv["rows"], 1))),
                        self.score_se(p_o, int(cv["rows"]), events))
        return beats_own(p_c, p_o, se)

    def score_se(self, p: float, n: int, events: int | None) -> float:
        """Standard error of a ``metric`` score p on n rows: √(p(1 − p)/n) for (balanced) accuracy; for an AUC,
        Hanley–McNeil's with the site's events (binary) or, with more classes, n/K rows of each class against
        the rest (an approximation for the macro average)."""
        if self.metric != "auc":
            return accuracy_se(p, n)
        n1 = int(events) if events is not None else max(1, n // max(self.n_classes, 2))
        return hanley_mcneil_se(p, max(n1, 1), max(n - n1, 1))

    def keeps_own(self, i: int, cluster_acc: float, key: tuple[int, ...] | None = None) -> bool:
        """Site i keeps its own (linear) model rather than its candidate ``key`` of accuracy ``cluster_acc``: when
        that cross-validates strictly better; a site below WEAK_ROWS rows, whose estimates cannot tell small
        differences from noise, keeps it unless the candidate is clearly better on the same CV rows
        (:func:`clearly_better`; without paired rows for ``key``: unless it is strictly better) — alone is the
        safe side. A site whose bundle carries its own model's scores (``site_cv``) keeps that model unless the
        candidate clears :meth:`clears_margin`."""
        if self.cv_of(i):
            return not self.clears_margin(i, cluster_acc)
        own = float(self.score_of(OWN)[i])
        if self.n_rows[i] < WEAK_ROWS and self.metric == "accuracy":
            theirs, alone = self.paired.get((key, i)), self.paired.get((OWN, i))
            if theirs and alone:
                a, b = np.concatenate(theirs), np.concatenate(alone)
                if len(a) == len(b):
                    return not clearly_better(a, b, self.repeats)
            return own >= cluster_acc - 1e-12
        return own > cluster_acc + 1e-12

    def score(self, partition: list[tuple[int, ...]], own: bool, floor: np.ndarray | None = None) -> float:
        """Mean over sites of :meth:`site_scores`: what the threshold maximises."""
        return float(self.site_scores(partition, own, floor).mean())

    def site_scores(self, partition: list[tuple[int, ...]], own: bool, floor: np.ndarray | None = None
                    ) -> np.ndarray:
        """Per site, the CV score (``metric``) of what it would be sent under the partition: its cluster's model
        (or ``floor[i]``, a further per-site candidate, if better), or with ``own`` its own-rows model when
        :meth:`keeps_own`."""
        site_acc = np.empty(len(self.n_rows))
        key: list = [None] * len(self.n_rows)
        for c in partition:
            for i in c:
                key[i] = shared_key(self, c, i)
                site_acc[i] = float(self.score_of(key[i])[i])
        if floor is not None:
            better = floor > site_acc
            key = [None if better[i] else key[i] for i in range(len(key))]
            site_acc = np.maximum(site_acc, floor)
        if own:
            lin = self.own_score()
            site_acc = np.array([lin[i] if self.keeps_own(i, site_acc[i], key[i]) else site_acc[i]
                                 for i in range(len(site_acc))])
        return site_acc


def new_selection(n_rows: list[int], settings: dict, seed: int, site_cv: list | None = None,
                  n_classes: int = 2) -> Selection:
    """The splits of :func:`cv_splits` with :func:`resolve_cv`'s folds and repeats; nothing trained yet.
    ``site_cv``: per site, its checked own-model scores (:func:`bundle_own_cv`) or None."""
    metric = selection_metric(settings.get("metric", "auto"), n_classes)
    folds, repeats = resolve_cv(settings, n_rows)
    splits = cv_splits(n_rows, folds, repeats, float(settings["holdout"]), seed)
    tested = np.zeros(len(n_rows))
    for _, te in splits:
        tested += [len(r) for r in te]
    return Selection(splits, folds, repeats, list(n_rows), tested, (tested / max(repeats, 1)).round().astype(int),
                     site_cv=list(site_cv) if site_cv is not None else [None] * len(n_rows), metric=metric,
                     n_classes=int(n_classes))


def selection_metric(metric: str | None, n_classes: int) -> str:
    """The analyst's selection score for the kit's ``metric``: ``auto`` (and ``log_loss``, which the site's update
    decides on, :mod:`core.learn.site_update`) → AUC with two classes, accuracy with more."""
    if metric in (None, "auto", "log_loss"):
        return "auc" if int(n_classes) == 2 else "accuracy"
    if metric not in SELECTION_METRICS:
        raise ConfigError(f"metric must be one of auto, log_loss, {', '.join(SELECTION_METRICS)}, not {metric!r}")
    return metric


def bundle_own_cv(bundle, n_classes: int | None = None) -> dict | None:
    """A bundle's own-model scores (``own_cv``, checked by :func:`~core.learn.own_cv.read_own_cv`) against the rows
    behind it (:func:`~core.formats.fields.site_rows`, the rule import uses too), or None."""
    return read_own_cv(bundle.manifest, site_rows(bundle.manifest), n_classes)


def selection_cap(sel: Selection, clusters, settings: dict) -> int | None:
    """The row cap of every selection model of ``clusters``: ``selection_max_rows``, lowered when the groups' rows of
    one split (each member's training fold, at most ``selection_site_rows`` of it) would exceed
    ``selection_total_rows`` in all — then the largest c with Σ_g min(n_g, c) ≤ the total (water-filling: a small
    group keeps every row, the big ones share the rest). The selection's cost then stops growing with the number of
    sites; a consortium whose groups hold fewer rows in all is untouched."""
    cap, site_cap, total = (opt_int(settings.get(k)) for k in ("selection_max_rows", "selection_site_rows",
                                                                 "selection_total_rows"))
    if not total or not sel.splits:
        return cap
    per_split = []
    for tr, _ in sel.splits:
        n = np.array([sum(min(len(tr[i]), site_cap or len(tr[i])) for i in c) for c in clusters], np.int64)
        per_split.append(np.minimum(n, cap) if cap else n)
    n = np.sort(max(per_split, key=lambda v: int(v.sum())))
    if int(n.sum()) <= total:
        return cap
    before = np.concatenate([[0], np.cumsum(n)[:-1]])      # rows of the groups smaller than group j
    level = (total - before) // (len(n) - np.arange(len(n)))  # the cap if groups j… all take it
    j = int(np.flatnonzero(level < n)[0])     # the first group that cannot keep all its rows
    return max(1, int(level[j]))


def cross_validate(sel: Selection, bundles: list, clusters, n_classes: int, settings: dict, basis: AnchorBasis, *,
                   seed: int, maps: dict | None = None, control: JobControl | None = None) -> None:
    """Add to ``sel`` every cluster of ``clusters`` it does not hold yet: trained on its members' training folds
    of every split (one batched fit, selection row caps), scored on each member's test fold, prior-corrected
    to the training folds' class counts when ``prior_correction`` and ``prior_in_selection``."""
    distinct = [c for c in clusters if c not in sel.correct]
    if not distinct:
        return
    splits = sel.splits
    jobs = [(si, c) for si, (tr, _) in enumerate(splits) for c in distinct if sum(len(tr[i]) for i in c) > 0]
    models = fit_groups(bundles, [(c, splits[si][0]) for si, c in jobs], n_classes, settings, basis, seed=seed,
                        maps=maps, max_rows=selection_cap(sel, distinct, settings),
                        site_rows=opt_int(settings["selection_site_rows"]), control=control)
    S = len(bundles)
    for c in distinct:
        sel.correct[c] = np.zeros(S)
    use_prior = settings["prior_correction"] and settings["prior_in_selection"]
    smoothing = float(settings["prior_smoothing"])
    for (si, c), model in zip(jobs, models, strict=True):
        tr, te = splits[si]
        for i in c:
            if len(te[i]) == 0:
                continue
            prior = None
            if use_prior:
                fit_counts = np.bincount(bundles[i].arrays["y"][tr[i]], minlength=n_classes)
                prior = prior_logit(fit_counts, model.class_counts, smoothing)
            _record(sel, c, i, te[i], model.predict_proba(i, bundles[i].arrays["x_tilde"][te[i]].astype(np.float64),
                                                          prior), bundles)
    if sel.metric != "accuracy":
        for c in distinct:
            sel.metric_scores[c] = _metric_per_site(sel, bundles, c)


def _record(sel: Selection, key, i: int, rows: np.ndarray, p: np.ndarray, bundles: list) -> None:
    """Score candidate ``key``'s probabilities ``p`` on site i's test rows ``rows`` into ``sel`` (correct count,
    out-of-fold probabilities, and the paired hits of a small site)."""
    h = p.argmax(axis=1) == bundles[i].arrays["y"][rows]
    sel.correct[key][i] += int(h.sum())
    sel.oof.setdefault((key, i), []).append((rows, p.astype(np.float32)))
    if sel.n_rows[i] < WEAK_ROWS:
        sel.paired.setdefault((key, i), []).append(h)


def cross_validate_si(sel: Selection, bundles: list, clusters, n_classes: int, settings: dict, basis: AnchorBasis,
                      *, seed: int, maps: dict | None = None) -> None:
    """Add to ``sel`` each group's linear model with site intercepts (key :func:`si_key`), trained on its members'
    training folds of every split and scored on each member's test fold (selection row caps, as the MLPs)."""
    distinct = [c for c in clusters if si_key(c) not in sel.correct]
    if not distinct:
        return
    splits = sel.splits
    jobs = [(si, c) for si, (tr, _) in enumerate(splits) for c in distinct if sum(len(tr[i]) for i in c) > 0]
    models = fit_site_intercept_groups(bundles, [(c, splits[si][0]) for si, c in jobs], n_classes, settings, basis,
                                       seed=seed, maps=maps, max_rows=selection_cap(sel, distinct, settings),
                                       site_rows=opt_int(settings["selection_site_rows"]))
    for c in distinct:
        sel.correct[si_key(c)] = np.zeros(len(bundles))
    for (si, c), per_site in zip(jobs, models, strict=True):
        te = splits[si][1]
        for i in c:
            if len(te[i]):
                _record(sel, si_key(c), i, te[i],
                        per_site[i].predict_proba(i, bundles[i].arrays["x_tilde"][te[i]].astype(np.float64)), bundles)
    if sel.metric != "accuracy":
        for c in distinct:
            sel.metric_scores[si_key(c)] = _metric_per_site(sel, bundles, si_key(c))


def shared_key(sel: Selection, members: tuple[int, ...], i: int):
    """Site i's shared candidate of the group ``members``: its MLP (key ``members``) or, when that was
    cross-validated too and scores better for site i, its linear model with site intercepts (:func:`si_key`)."""
    alt = si_key(members)
    if alt in sel.correct and (sel.metric == "accuracy" or alt in sel.metric_scores) \
            and float(sel.score_of(alt)[i]) > float(sel.score_of(members)[i]) + 1e-12:
        return alt
    return members


def cross_validate_linear(sel: Selection, bundles: list, n_classes: int, settings: dict, basis: AnchorBasis,
                          maps: dict | None = None) -> None:
    """Each site's linear own-rows model (:func:`fit_linear`) over the same splits (once per selection); not for
    sites whose own raw-row model was cross-validated at the site (``sel.site_cv``)."""
    if sel.lin_correct is not None:
        return
    S = len(bundles)
    lin = np.zeros(S)
    linear_oofs(sel, bundles, [i for i in range(S) if not sel.cv_of(i)], n_classes)
    for i in range(S):
        if not sel.cv_of(i):
            for h in linear_oof(sel, bundles, i, n_classes, settings, basis, maps):
                lin[i] += int(h.sum())
                if sel.n_rows[i] < WEAK_ROWS:
                    sel.paired.setdefault((OWN, i), []).append(h)
    sel.lin_correct = lin
    if sel.metric != "accuracy":
        sel.metric_scores[OWN] = _metric_per_site(sel, bundles, OWN)


def linear_oof(sel: Selection, bundles: list, i: int, n_classes: int, settings: dict, basis: AnchorBasis,
               maps: dict | None = None) -> list[np.ndarray]:
    """Site i's linear own-rows model (:func:`fit_linear`) over the selection's splits: records its out-of-fold
    probabilities in ``sel.oof[(OWN, i)]`` (once: :func:`linear_oofs` fits many sites at once) and returns its hits
    per split."""
    if (OWN, i) not in sel.oof:
        linear_oofs(sel, bundles, [i], n_classes)
    y = bundles[i].arrays["y"]
    return [p.argmax(axis=1) == y[rows] for rows, p in sel.oof[(OWN, i)]]


LINEAR_SITES = 400  # sites whose own-rows models are fitted in one batch (their rows copied at once)


def linear_oofs(sel: Selection, bundles: list, sites, n_classes: int) -> None:
    """Record ``sel.oof[(OWN, i)]`` for every site i of ``sites`` (None: every site) that has none yet: its linear
    own-rows model (:func:`fit_linear`) trained on each split's training rows and predicting its test rows, the
    models of :data:`LINEAR_SITES` sites fitted together (:func:`core.learn.batched_logistic.fit_local_models`: the
    same models as one by one, to rounding)."""
    from .batched_logistic import fit_local_models
    from .local_model import MAX_LOCAL_ROWS, local_rows

    todo = [i for i in (range(len(bundles)) if sites is None else sites) if (OWN, i) not in sel.oof]
    for start in range(0, len(todo), LINEAR_SITES):
        chunk = todo[start:start + LINEAR_SITES]
        jobs = [(i, tr[i], te[i], _linear_key(bundles, i, tr[i], te[i], n_classes))
                for tr, te in sel.splits for i in chunk if len(te[i]) and len(tr[i])]
        fresh = {}
        for i, tr, te, key in jobs:
            if key not in _LINEAR_MEMO and key not in fresh:
                fresh[key] = (i, local_rows(tr, MAX_LOCAL_ROWS), te)
        if fresh:
            got = fit_local_models([bundles[i].arrays["x_tilde"][tr].astype(np.float64) for i, tr, _ in fresh.values()],
                                   [bundles[i].arrays["y"][tr].astype(np.int64) for i, tr, _ in fresh.values()],
                                   n_classes, max_iter=LINEAR_ITERATIONS)
            if len(_LINEAR_MEMO) + len(fresh) > 100_000:
                _LINEAR_MEMO.clear()
            for (key, (i, tr, te)), a in zip(fresh.items(), got, strict=True):
                model = _linear_model(i, a, bundles[i].arrays["y"][tr].astype(np.int64), n_classes)
                _LINEAR_MEMO[key] = model.predict_proba(i, bundles[i].arrays["x_tilde"][te].astype(np.float64))
        for i in chunk:
            sel.oof[(OWN, i)] = []
        for i, _, te, key in jobs:
            sel.oof[(OWN, i)].append((te, _LINEAR_MEMO[key].astype(np.float32)))


def oof_proba(sel: Selection, key, i: int, n_classes: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, probabilities): site i's out-of-fold predicted probabilities under candidate ``key``, each tested
    row's averaged over the repeats it was tested in (float32), or None when none were recorded."""
    parts = sel.oof.get((key, i))
    if not parts:
        return None
    total = np.zeros((sel.n_rows[i], n_classes), np.float64)
    times = np.zeros(sel.n_rows[i], np.int64)
    for rows, p in parts:
        np.add.at(total, rows, p)
        np.add.at(times, rows, 1)
    rows = np.flatnonzero(times)
    return rows, (total[rows] / times[rows, None]).astype(np.float32)


def _metric_per_site(sel: Selection, bundles: list, key) -> np.ndarray:
    """Per site, ``sel.metric`` of the candidate's out-of-fold predictions (:func:`oof_proba`); 0 untested."""
    out = np.zeros(len(bundles))
    for i, b in enumerate(bundles):
        got = oof_proba(sel, key, i, sel.n_classes)
        if got is not None:
            out[i] = selection_score(sel.metric, b.arrays["y"][got[0]], got[1])
    return out


_LINEAR_MEMO: dict[bytes, np.ndarray] = {}


def _linear_key(bundles: list, i: int, tr: np.ndarray, te: np.ndarray, n_classes: int) -> bytes:
    """The memo key of site i's linear own-rows model trained on its rows ``tr`` and predicting its rows ``te``: the
    fit is a deterministic function of those rows (L-BFGS from zero), so it is memoised by their content: fits on
    the same bundles and splits (``dc`` and ``dccfl`` beside each other, the benchmark's rows) pay for it once."""
    import hashlib

    a = bundles[i].arrays
    h = hashlib.sha256(f"{n_classes}:{len(tr)}:{len(te)}".encode())
    for arr in (a["x_tilde"][tr], a["y"][tr], a["x_tilde"][te], a["y"][te]):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.digest()


def pick_own(sel: Selection, cluster_acc: np.ndarray, own: bool, keys: list | None = None
             ) -> tuple[list[bool], list[bool]]:
    """Per site: (keeps its own-rows model, and that model is the linear one — always, now) by
    :meth:`Selection.keeps_own` against its candidate ``keys[i]`` of CV accuracy ``cluster_acc[i]``."""
    S = len(sel.n_rows)
    if not own:
        return [False] * S, [False] * S
    keys = keys if keys is not None else [None] * S
    own_pick = [sel.keeps_own(i, float(cluster_acc[i]), keys[i]) for i in range(S)]
    return own_pick, list(own_pick)


def own_estimate(sel: Selection, i: int) -> dict:
    """Site i's "alone" number as an :func:`~core.learn.intervals.estimate`, saying what it is (``what``,
    ``source``): its own raw-row model cross-validated at the site (with the AUC it shipped) when its bundle
    carries it, else the linear twin on its reduced rows, cross-validated here."""
    alone = alone_estimate(sel.cv_of(i))
    if alone:
        return alone
    n = int(sel.n_eval[i])
    return {**estimate(float(sel.own_acc()[i]), n), "source": "reduced",
            "what": f"estimated from the {n} reduced rows the site sent"}


def site_estimates(sel: Selection, i: int, expected: float, cluster: float, own: bool, kept_own: bool = False
                   ) -> dict:
    """The honest numbers of site i: ``expected`` (what it is sent), ``cluster_model`` and, with ``own``,
    ``own_model`` (:func:`own_estimate`) and ``expected_gain``; each an :func:`~core.learn.intervals.estimate`
    on n_eval[i] rows, except that a site that keeps (``kept_own``) its own model cross-validated at the site
    expects that model's score on the site's rows."""
    n = int(sel.n_eval[i])
    info = {"expected": estimate(float(expected), n), "cluster_model": estimate(float(cluster), n)}
    if own:
        info["own_model"] = own_estimate(sel, i)
        if kept_own and info["own_model"]["source"] == "site":
            info["expected"] = {k: info["own_model"][k] for k in info["expected"]}
        info["expected_gain"] = info["expected"]["accuracy"] - info["own_model"]["accuracy"]
    return info
