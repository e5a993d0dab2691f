"""DC analysis with one shared model (``dc``) and DC-CFL (``dccfl``): algorithms.md §1.3–1.4 and §2.

DC-CFL (Sugawara, Kawamata et al.):
1. pᵢ = label histogram of site i; Dᵢⱼ = TV(pᵢ, pⱼ); complete linkage cut at t (§2.1 steps 2–4);
2. per cluster C_l: DC alignment on the members' anchor images only (its own m̂_l), X̂^(l) = [X̃ᵢGᵢ]_{i∈C_l},
   standardise, train h_l (MLP d → 64 → 32 → K, SGD lr 0.01, momentum 0.5, batch 32, 50 epochs);
3. a singleton cluster trains on that site alone; inference h_l(standardise(fᵢ(x)Gᵢ + gᵢ)).
Selection (issue #15, "results a small consortium can trust"):
- Determinism: the sites are put in a canonical order (by bundle digest, :func:`site_order`) before anything
  else, and every random choice (folds, initialisations, shuffles, subsamples) draws from
  :func:`derived_seed` = SHA-256(seed, kit digest, sorted bundle digests): the same bundles give bit-identical
  packages and summary whatever the order, names or import times of the files.
- Cross-validation over all of every site's received rows (nothing more is asked of sites): each site's rows
  are dealt into k folds (``cv_folds = "auto"``: 5, or one 20 % hold-out when the median site has ≥ 1,000
  rows), repeated ``cv_repeats`` times (auto: ⌈100 / median rows⌉, 1–3). For every split, every distinct
  cluster over the t grid is trained on the training folds of its members (one batched fit) and scored on
  each member's test fold; a site's CV accuracy of a candidate is correct predictions / tested rows.
- Never worse than alone, by construction: each site's candidates also include a model of its own received
  rows only — a logistic regression (:func:`_fit_linear`, the twin of the baseline the site keeps,
  :mod:`core.learn.local_model`). A site keeps its own model when that cross-validates strictly better than
  its cluster's; a site with < 30 rows, whose estimates cannot tell small differences from noise, keeps its
  own unless its cluster's is clearly better on the same CV rows (McNemar's exact one-sided test at 5 %,
  :func:`clearly_better`). t maximises the mean over sites of the CV accuracy of what each site would be sent;
  ties in t → the larger t. A package that says "keep your own" (``model`` = ``own``) is applied with the
  logistic regression the site trained on its raw rows at export, when its workspace holds it: exactly the
  model it would have had alone. (An own-rows MLP is no separate candidate: taking the better of two noisy
  own-rows scores favoured "alone" by chance — measured on the DC-CFL benchmark's gesture cells; a singleton
  cluster at a small t still trains one.)
- Honest numbers: the summary gives, per site, the CV accuracy of what it is sent and of its own-rows model,
  each with n = the site's rows and a 95 % Wilson interval (:mod:`core.learn.intervals`), and flags a site
  whose interval is wider than 20 pt.
- Scale: selection models train on at most ``selection_site_rows`` rows per member and
  ``selection_max_rows`` in total (seeded subsamples), and a final model bigger than ``max_epoch_rows`` sees
  that many fresh random rows per epoch; none of these binds at the benchmark's sizes (≤ 12,000 rows per
  cluster).
t ≥ 1 puts every site in one cluster (TV distances never exceed 1). ``dc`` is the same with one cluster
holding every site.

Product defaults versus the paper's recipe (measured in docs/results/dccfl/): the defaults use affine
alignment (§1.4; exact for centred private maps such as PCA) and correct each site's predictions for its
own class prior (``prior_correction``): the cluster model was trained under the cluster's class
frequencies π_l, the site's rows follow its own π_i, so the Bayes-optimal adjustment is
p_i(k|x) ∝ p_l(k|x)·π_i(k)/π_l(k), with Laplace-smoothed frequencies (``prior_smoothing``) from the labels
the site already shipped; the site receives the log-ratio vector in its package. The hold-out choice of t
scores the corrected predictions (``prior_in_selection``), and the grid runs to t = 1.0 (one cluster):
once the prior is corrected per site, a bigger cluster often wins, and the cross-validation decides.
The paper's recipe is ``alignment="linear", prior_correction=False, t_grid=[0.1..0.9]`` with one 20 % hold-out
and no own-rows candidates (``cv_folds=1, cv_repeats=1, own_model=False``).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from ..control import JobControl, ensure
from ..errors import ConfigError, FormatError
from ..learn.alignment import AnchorBasis, DCAlignment, SiteMapping
from ..learn.client_clustering import T_GRID, LabelDistributionClustering
from ..learn.intervals import WEAK_ROWS, describe, estimate, mcnemar_p
from ..learn.local_model import has_local_model, local_predict_proba
from ..learn.mlp import BatchedMLP, MLPWeights
from .base import ClientDistances, FitContext, Method, MethodResult, ReceivedBundle, one_blas_thread
from .dc_site import SITE_SETTINGS, LabelledDCSite, check_anchor_width, site_map
from .settings import Setting
from .views import Curve, Heatmap, Table, Text, View

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
LEARNER_DEFAULTS = {s.name: s.default for s in LEARNER_SETTINGS}
ALIGNMENT_DEFAULTS = {s.name: s.default for s in ALIGNMENT_SETTINGS}
PRIOR_DEFAULTS = {s.name: s.default for s in PRIOR_SETTINGS}
# Selection (issue #15): cross-validation over every site's received rows ("auto": 5-fold, repeated for small
# sites; one 20 % hold-out when the median site has ≥ 1,000 rows), the site's own-rows model as a candidate,
# and row caps that bound the selection's cost at scale (they never bind at the benchmark's sizes).
SELECTION_SETTINGS = (
    Setting("cv_folds", "int", "auto", "folds of the cross-validation that chooses each site's model (1: one "
            "hold-out)", low=1, high=50, auto=True, auto_help="5, or one hold-out for large sites", advanced=True),
    Setting("cv_repeats", "int", "auto", "repetitions of the cross-validation", low=1, high=50, auto=True,
            auto_help="more for small sites", advanced=True),
    Setting("own_model", "bool", True, "offer every site a model of its own rows as a candidate (never worse than "
            "alone)", label="Own-rows candidate"),
    Setting("selection_max_rows", "int", 10000, "rows a selection model trains on at most", low=1, optional=True,
            none_help="no cap", advanced=True),
    Setting("selection_site_rows", "int", 500, "rows per site a selection model trains on at most", low=1,
            optional=True, none_help="no cap", advanced=True),
    Setting("max_epoch_rows", "int", 20000, "rows a final model sees per epoch at most", low=1, optional=True,
            none_help="no cap", advanced=True),
)
DEFAULT_T_GRID = [*T_GRID, 1.0]


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


def _opt_int(v) -> int | None:
    return None if v in (None, 0, "none") else int(v)


def _hits(model: ClusterModel, site: int, bundle: ReceivedBundle, rows: np.ndarray,
          prior: np.ndarray | None = None) -> np.ndarray:
    """Which of the site's ``rows`` the model classifies correctly (bool, in ``rows`` order)."""
    p = model.predict_proba(site, bundle.arrays["x_tilde"][rows].astype(np.float64), prior)
    return p.argmax(axis=1) == bundle.arrays["y"][rows]


OWN = "own"  # the key of a site's own-rows (linear) candidate, beside cluster keys (tuples of sites)


def clearly_better(first: np.ndarray, second: np.ndarray, repeats: int, level: float = 0.05) -> bool:
    """Whether paired CV hits show ``first`` better than ``second``: McNemar's exact one-sided test on the rows
    only one of them gets right, counted per repetition (a row tested r times counts once), p < ``level``."""
    r = max(int(repeats), 1)
    b = round(int(np.sum(first & ~second)) / r)
    c = round(int(np.sum(~first & second)) / r)
    return b > c and mcnemar_p(b, c, one_sided=True) < level


def _fit_linear(bundles: list[ReceivedBundle], i: int, rows: np.ndarray, maps: dict, basis: AnchorBasis,
                settings: dict, n_classes: int) -> ClusterModel:
    """Site i's own rows only, linear: a multinomial logistic regression (L2, λ = 1) on its received rows
    X̃ᵢ as they are — the identity map, centred, no per-column scaling. X̃ᵢ = standardise(X)·Vᵢ with Vᵢ
    orthonormal (PCA), and an L2-penalised linear model is invariant to that rotation, so this is the
    site's own baseline (:mod:`core.learn.local_model`) up to the one dropped component. (Aligning to the
    anchor, or standardising each reduced column, would whiten the small-variance directions and let the
    penalty fit their noise — bad for a 40-row site.) Returned as a one-layer MLP: the package format is
    unchanged."""
    from ..learn.local_model import fit_local_model

    X = bundles[i].arrays["x_tilde"][rows].astype(np.float64)
    y = bundles[i].arrays["y"][rows].astype(np.int64)
    d = X.shape[1]
    a = fit_local_model(X, y, n_classes, max_iter=100, standardise=False)
    identity = SiteMapping(np.eye(d), np.zeros(d))
    return ClusterModel((i,), {i: identity}, a["local_mean"], a["local_scale"],
                        MLPWeights([a["local_w"]], [a["local_b"]]), np.bincount(y, minlength=n_classes))


def _note(info: dict) -> str:
    notes = []
    e = info.get("expected")
    if e and e["weak"]:
        notes.append(f"only {e['rows']} rows: the estimate is uncertain (95 % CI {e['low']:.2f}–{e['high']:.2f})")
    if info.get("model") == "own":
        notes.append("the site's own-rows model cross-validated better than its cluster's (by more than the "
                     f"estimate's noise, or not clearly worse at a site with fewer than {WEAK_ROWS} rows); the site "
                     "keeps its own model")
    return "; ".join(notes)


def site_order(bundles: list[ReceivedBundle]) -> list[int]:
    """The canonical order of the sites: by bundle digest (then fingerprint, site name), never by the order,
    names or import times of the files, so the same bundles always give the same analysis."""
    return sorted(range(len(bundles)), key=lambda i: (bundles[i].digest, bundles[i].fingerprint, bundles[i].site))


def derived_seed(seed: int, bundles: list[ReceivedBundle]) -> int:
    """Every random choice of the analysis draws from SHA-256(seed, kit digest(s), sorted bundle digests)."""
    h = hashlib.sha256(f"dccfl:{int(seed)}".encode())
    for k in sorted({str(b.manifest.get("kit_digest", "")) for b in bundles}):
        h.update(b"kit:" + k.encode())
    for d in sorted(b.digest for b in bundles):
        h.update(b"bundle:" + d.encode())
    return int.from_bytes(h.digest()[:8], "big") >> 2


def fit_groups(bundles: list[ReceivedBundle], groups: list[tuple[tuple[int, ...], list | None]], n_classes: int,
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
        Xs, ys = [], []
        for i in members:
            sel = np.arange(bundles[i].arrays["y"].shape[0]) if rows is None else np.asarray(rows[i])
            if site_rows and len(sel) > site_rows:
                sel = np.sort(np.random.default_rng([seed, g, i, 5]).choice(sel, site_rows, replace=False))
            Xs.append(mp[i].transform(bundles[i].arrays["x_tilde"][sel].astype(np.float64)))
            ys.append(bundles[i].arrays["y"][sel].astype(np.int64))
        Xh, y = np.vstack(Xs), np.concatenate(ys)
        if max_rows and len(y) > max_rows:
            keep = np.sort(np.random.default_rng([seed, g, 7]).choice(len(y), max_rows, replace=False))
            Xh, y = Xh[keep], y[keep]
        mean, scale = Xh.mean(axis=0), Xh.std(axis=0)
        scale[~(scale > 1e-12)] = 1.0
        aligned.append((members, mp, mean, scale))
        prepared.append((((Xh - mean) / scale).astype(np.float32), y))
    control.step(0.05, f"training {len(groups)} model(s)")
    learner = BatchedMLP(tuple(settings["hidden"]), lr=float(settings["lr"]), momentum=float(settings["momentum"]),
                         weight_decay=float(settings["weight_decay"]), batch_size=int(settings["batch_size"]),
                         epochs=int(settings["epochs"]), random_state=int(seed), max_epoch_rows=epoch_rows)
    learner.fit(prepared, n_classes, control=control.sub(0.05, 1.0), on_epoch=on_epoch)
    return [ClusterModel(members, mp, mean, scale, model, np.bincount(y, minlength=n_classes))
            for (members, mp, mean, scale), (_, y), model in zip(aligned, prepared, learner.models_, strict=True)]


def train_cluster_models(bundles: list[ReceivedBundle], clusters: list[tuple[int, ...]], n_classes: int,
                         settings: dict, *, rows: list[np.ndarray] | None = None,
                         control: JobControl | None = None, on_epoch=None,
                         basis: AnchorBasis | None = None) -> list[ClusterModel]:
    """Align each cluster on its members' anchors and train all cluster models in one batched fit
    (``rows[i]`` optionally restricts site i to a subset of its received rows)."""
    _alignment(settings)  # validates the alignment settings
    if basis is None:
        basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=settings["alignment"] == "affine")
    return fit_groups(bundles, [(c, rows) for c in clusters], n_classes, settings, basis,
                      seed=int(settings["seed"]), control=control, on_epoch=on_epoch)


def holdout_split(bundles: list[ReceivedBundle], fraction: float, seed: int) -> tuple[list, list]:
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


def _partition(labels: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(np.flatnonzero(labels == c).tolist()) for c in range(int(labels.max()) + 1)]


class DCCFL(LabelledDCSite, Method):
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
        Setting("holdout", "float", 0.2, "share of a site's received rows held out when one hold-out is used",
                low=0.05,
                high=0.5, advanced=True),
        Setting("seed", "int", 0, "random seed of the hold-out split and the training", label="Random seed",
                low=0, high=2**31 - 1),
        *SELECTION_SETTINGS, *PRIOR_SETTINGS, *ALIGNMENT_SETTINGS, *LEARNER_SETTINGS, *SITE_SETTINGS,
    )

    # ---- analyst (the site side is LabelledDCSite's) ------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        with one_blas_thread():
            return self._fit(bundles, context.classes, context.control, context.on_epoch)

    def _fit(self, received: list[ReceivedBundle], classes: list[str], control: JobControl | None,
             on_epoch) -> MethodResult:
        control = ensure(control)
        s = self.settings
        K = len(classes)
        if not received:
            raise ConfigError("no bundles to analyse")
        check_anchor_width(received)
        order = site_order(received)
        bundles = [received[i] for i in order]   # everything below works in the canonical site order
        seed = derived_seed(int(s["seed"]), bundles)
        S = len(bundles)
        n_rows = [int(b.arrays["y"].shape[0]) for b in bundles]
        counts = np.stack([np.bincount(b.arrays["y"], minlength=K) for b in bundles])
        clus = LabelDistributionClustering(method=s.get("linkage", "complete")).fit(counts)
        grid = [float(t) for t in s.get("t_grid", [1.0])]
        candidates = [1.0] if self.one_cluster else grid
        if not self.one_cluster and s.get("t", "auto") != "auto":
            candidates = [float(s["t"])]
        everyone = [tuple(range(S))]
        partitions = {t: (everyone if self.one_cluster or t >= 1.0 else _partition(clus.cut(t)))
                      for t in candidates}
        basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=s["alignment"] == "affine")
        own_on = bool(s["own_model"])
        smoothing = float(s["prior_smoothing"])
        maps: dict = {}

        # ---- selection: cross-validated accuracy of every candidate model for every site ------------------
        acc: dict[tuple[int, ...], np.ndarray] = {}
        folds = repeats = 0
        if len(partitions) > 1 or own_on:
            folds, repeats = resolve_cv(s, n_rows)
            splits = cv_splits(n_rows, folds, repeats, float(s["holdout"]), seed)
            distinct = sorted({c for p in partitions.values() for c in p})
            jobs = [(si, c) for si, (tr, _) in enumerate(splits) for c in distinct
                    if sum(len(tr[i]) for i in c) > 0]
            control.phase(f"step 1 of 2, choosing the threshold ({len(partitions)} candidates)" if len(partitions) > 1
                          else "step 1 of 2, checking each site's own-rows model")
            control.step(0.0, f"cross-validating {len(distinct)} candidate model(s) over {len(splits)} split(s)")
            models = fit_groups(bundles, [(c, splits[si][0]) for si, c in jobs], K, s, basis, seed=seed, maps=maps,
                                max_rows=_opt_int(s["selection_max_rows"]),
                                site_rows=_opt_int(s["selection_site_rows"]), control=control.sub(0.0, 0.6))
            correct = {c: np.zeros(S) for c in distinct}
            paired: dict = {}   # (candidate, site) → the site's CV hits, one array per split (paired across candidates)
            tested = np.zeros(S)
            for _, te in splits:
                tested += [len(r) for r in te]
            use_prior = s["prior_correction"] and s["prior_in_selection"]
            for (si, c), model in zip(jobs, models, strict=True):
                tr, te = splits[si]
                for i in c:
                    if len(te[i]) == 0:
                        continue
                    prior = None
                    if use_prior:
                        fit_counts = np.bincount(bundles[i].arrays["y"][tr[i]], minlength=K)
                        prior = prior_logit(fit_counts, model.class_counts, smoothing)
                    h = _hits(model, i, bundles[i], te[i], prior)
                    correct[c][i] += int(h.sum())
                    paired.setdefault((c, i), []).append(h)
            acc = {c: v / np.maximum(tested, 1) for c, v in correct.items()}
            n_eval = (tested / max(repeats, 1)).round().astype(int)   # rows behind each site's estimate
            if own_on:  # the site's own rows, linear: a logistic regression (what the site checks against)
                lin_correct = np.zeros(S)
                for tr, te in splits:
                    for i in range(S):
                        if len(te[i]) and len(tr[i]):
                            h = _hits(_fit_linear(bundles, i, tr[i], maps, basis, s, K), i, bundles[i], te[i])
                            lin_correct[i] += int(h.sum())
                            paired.setdefault((OWN, i), []).append(h)
                acc_lin = lin_correct / np.maximum(tested, 1)
        curve: dict[float, float] = {}
        def keeps_own(i: int, mine: tuple[int, ...]) -> bool:
            """Site i keeps its own model (the linear one) rather than its cluster ``mine``'s: when that
            cross-validates strictly better; at a site with < WEAK_ROWS rows, whose estimates cannot tell small
            differences from noise, unless the cluster's is clearly better on the same CV rows
            (:func:`clearly_better`) — alone is the safe side."""
            if not (acc and own_on):
                return False
            if n_rows[i] < WEAK_ROWS:
                theirs, alone = (np.concatenate(paired.get(k, [np.zeros(0, bool)])) for k in ((mine, i), (OWN, i)))
                if len(theirs) == len(alone) and len(theirs):
                    return not clearly_better(theirs, alone, repeats)
            return bool(acc_lin[i] > acc[mine][i] + 1e-12 or (n_rows[i] < WEAK_ROWS and acc_lin[i] >= acc[mine][i]))

        if acc:
            for t, part in partitions.items():
                site_acc = np.empty(S)
                for c in part:
                    for i in c:
                        site_acc[i] = acc_lin[i] if keeps_own(i, c) else acc[c][i]
                curve[t] = float(site_acc.mean())
        best = max(curve, key=lambda t: (round(curve[t], 12), t)) if len(curve) > 1 else next(iter(partitions))
        final = partitions[best]
        cluster_of = {i: k for k, members in enumerate(final) for i in members}
        own_pick = [keeps_own(i, final[cluster_of[i]]) for i in range(S)]
        need = [c for c in final if any(not own_pick[i] for i in c)]
        control.phase(("step 2 of 2, " if acc else "") + f"training the final model{'s' if len(need) > 1 else ''}"
                      + f" at t = {best:g}")
        control.step(0.6, "starting")
        trained = fit_groups(bundles, [(c, None) for c in need], K, s, basis, seed=seed, maps=maps,
                             epoch_rows=_opt_int(s["max_epoch_rows"]), control=control.sub(0.6, 1.0),
                             on_epoch=on_epoch) if need else []
        model_of: dict = dict(zip(need, trained, strict=True))
        for i in range(S):
            if own_pick[i]:
                model_of[(OWN, i)] = _fit_linear(bundles, i, np.arange(n_rows[i]), maps, basis, s, K)
        packages, sites = [], []
        for i, b in enumerate(bundles):
            cm = model_of[(OWN, i)] if own_pick[i] else model_of[final[cluster_of[i]]]
            arrays = {**cm.mappings[i].to_arrays(), "scaler_mean": cm.mean, "scaler_scale": cm.scale,
                      **cm.model.to_arrays("mlp")}
            if s["prior_correction"]:
                arrays["prior_logit"] = prior_logit(counts[i], cm.class_counts, smoothing)
            info = {"model": "own" if own_pick[i] or len(final[cluster_of[i]]) == 1 else "cluster"}
            if own_pick[i]:
                info["own_kind"] = "linear"
            if acc:
                info["expected"] = estimate(float(acc_lin[i] if own_pick[i] else acc[final[cluster_of[i]]][i]),
                                            int(n_eval[i]))
                info["cluster_model"] = estimate(float(acc[final[cluster_of[i]]][i]), int(n_eval[i]))
                if own_on:
                    info["own_model"] = estimate(float(acc_lin[i]), int(n_eval[i]))
                    info["expected_gain"] = info["expected"]["accuracy"] - info["own_model"]["accuracy"]
            manifest = {"method": self.name, "cluster": cluster_of[i], "cluster_size": len(cm.members),
                        "t": best, "classes": list(classes), "architecture": cm.model.architecture(),
                        "alignment": s["alignment"], "dimension": int(cm.mappings[i].G.shape[1]), **info}
            packages.append((manifest, arrays))
            sites.append({"site": b.site, "fingerprint": b.fingerprint, "bundle_digest": b.digest,
                          "rows": n_rows[i], "cluster": cluster_of[i] + 1,  # numbered from 1 for people
                          "label_counts": counts[i].tolist(),
                          **info, **({"holdout_accuracy": info["expected"]["accuracy"]} if acc else {}),
                          **({"note": _note(info)} if acc and _note(info) else {})})
        control.step(1.0, "done")
        unorder = np.argsort(order)   # packages go back in the caller's bundle order
        summary = {
            "method": self.name, "task": self.task, "t": best,
            "t_auto": s.get("t") == "auto" and not self.one_cluster,
            "validation_curve": {f"{t:g}": a for t, a in curve.items()},
            "selection": {"kind": ("cv" if folds > 1 else "holdout") if acc else "none", "folds": folds,
                          "repeats": repeats, "own_model": own_on,
                          "what": "mean over sites of the better of the cluster's and the site's own model"
                          if own_on else "mean over sites of the cluster model's accuracy"},
            "n_clusters": len(final),
            "own_model_sites": int(sum(own_pick)),
            "final_models": len(need),
            "sites": sites,
            "settings": s,
        }
        if acc:
            summary["expected_mean"] = float(np.mean([x["expected"]["accuracy"] for x in sites]))
            if own_on:
                summary["own_model_mean"] = float(np.mean([x["own_model"]["accuracy"] for x in sites]))
        details = {"histograms": clus.histograms_, "distances": clus.distances_, "linkage": clus.linkage_,
                   "clusters": final, "validation_curve": curve, "site_order": order}
        return MethodResult(self.name, [packages[j] for j in unorder], summary, details)

    def estimate(self, bundles: list[ReceivedBundle], classes: list[str],
                 control: JobControl | None = None) -> dict:
        """"Simulate before you collaborate": the fit's per-site expected accuracy against its own-rows model
        (cross-validated on the received rows), without sealing anything; the summary of :meth:`fit`."""
        return self.fit(bundles, FitContext(classes, control=control)).summary

    # ---- what it shows --------------------------------------------------------------------------
    def summary_lines(self, summary: dict) -> list[str]:
        s = summary
        how = " (chosen by cross-validation on the received rows)" if s.get("t_auto") else ""
        lines = [f"method {self.name}: t = {s.get('t')}{how}, {s.get('n_clusters')} cluster(s) of sites"
                 + (f"; {s['own_model_sites']} site(s) keep a model of their own rows" if s.get("own_model_sites")
                    else "")]
        for x in s.get("sites", []):
            own = x.get("model") == "own" and x.get("own_kind")
            line = f"  {x['site']}: {x['rows']:,} rows, cluster {x['cluster']}" + (
                ", sent a model of its own rows" if own else "")
            if x.get("expected"):
                line += f", expected accuracy {describe(x['expected'])}"
            if x.get("own_model"):
                line += f" vs {describe(x['own_model'])} alone"
            lines.append(line + (f" — {x['note']}" if x.get("note") else ""))
        return lines

    def views(self, result: MethodResult) -> list[View]:
        s, d = result.summary, result.details
        sites = s.get("sites", [])
        classes = [str(c) for c in (result.packages[0][0].get("classes", []) if result.packages else [])]
        rows = [[x["site"], x.get("fingerprint", ""), x["rows"], x["cluster"],
                 "own rows" if x.get("model") == "own" and x.get("own_kind") else "cluster",
                 describe(x.get("expected")), describe(x.get("own_model")), x.get("note", ""),
                 x.get("label_counts", [])] for x in sites]
        out: list[View] = [Table("Sites", ["site", "fingerprint", "rows", "cluster", "model sent",
                                           "expected accuracy", "its own rows alone", "note", "labels"],
                                 rows, bars=("labels",), bar_labels=classes)]
        if s.get("expected_mean") is not None:
            out.append(Text(f"Mean expected accuracy of what each site is sent: {s['expected_mean']:.3f}"
                            + (f"; of each site's own-rows model: {s['own_model_mean']:.3f}"
                               if s.get("own_model_mean") is not None else "")
                            + " (cross-validated on the rows the sites sent; each site's interval above)."))
        if "distances" in d and len(d["distances"]) > 1:
            names = [x["site"] for x in sites]  # the distances and the summary share the canonical site order
            out.append(Heatmap("Total-variation distance between the sites' label distributions",
                               np.asarray(d["distances"]), names, names))
        curve = s.get("validation_curve") or {}
        if len(curve) > 1:
            xs = [float(t) for t in curve]
            out.append(Curve("Cross-validated accuracy for each threshold t", xs, {"accuracy": list(curve.values())},
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
        """The package's model on f(X); when the analyst chose the site's own linear model (``model`` = own,
        ``own_kind`` = linear) and the workspace keeps the site's own-rows model (the logistic regression on its
        raw rows trained at export, :mod:`core.learn.local_model`), that model itself: the package's linear
        model is its twin on the reduced rows, the kept one is what the site would have alone, exactly."""
        if manifest.get("model") == "own" and manifest.get("own_kind") == "linear" and has_local_model(private_arrays):
            return _columns(list(manifest["classes"]), local_predict_proba(private_arrays, X))
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
        return _columns(classes, adjust_proba(model.predict_proba(Z), prior))


def _columns(classes: list[str], proba: np.ndarray) -> dict[str, np.ndarray]:
    out = {"prediction": np.asarray(classes, dtype=object)[proba.argmax(axis=1)]}
    for k, c in enumerate(classes):
        out[f"prob_{c}"] = proba[:, k]
    return out


class DC(DCCFL):
    name = "dc"
    title = "DC analysis: one shared model for all sites"
    plain_title = "one model shared by all sites"
    one_cluster = True
    settings_spec = tuple(s for s in DCCFL.settings_spec if s.name not in ("t", "t_grid", "linkage"))

    def summary_lines(self, summary: dict) -> list[str]:
        return [f"method {self.name}: one model for all {len(summary.get('sites', []))} sites"]

    def views(self, result: MethodResult) -> list[View]:
        return [v for v in super().views(result) if not isinstance(v, Heatmap | Curve)]
