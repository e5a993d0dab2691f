"""Model updating at the site (issue #37): which model a site uses, decided on its own labelled rows.

A site holds, for each of its n labelled rows s, two out-of-fold class-probability vectors: its own model's
P_own(s) (cross-validated at export, :mod:`core.learn.own_cv`) and the shared model's P_sh(s) (predicted by
models that never trained on row s: the analyst's cross-validation for the DC family, the site's own refits
for meta-lr). Both are unbiased for the model each stands for, and they are paired by row. With
L = log P (clipped at :data:`EPS`), the candidates are, per class k (a₀ = 0, the first class is the reference):

* ``own``           z_k = L_own,k                                   the site's own model;
* ``shared``        z_k = L_sh,k                                    the shared model as sent;
* ``intercept``     z_k = a_k + L_sh,k                              recalibration-in-the-large (the site's base
                                                                    rate; Steyerberg, *Clinical Prediction Models*,
                                                                    ch. 20; Vergouwe et al. 2017, model 2);
* ``recalibrated``  z_k = a_k + b·L_sh,k                            logistic recalibration (model 3), offered when
                                                                    every class has ≥ :data:`RECALIBRATION_ROWS` rows;
* ``blend``         z_k = a_k + (1 − w)·L_own,k + w·L_sh,k         a blend of the two models' logits.

The intercepts (and b) maximise the multinomial log-likelihood of the paired rows (Newton's method). The blend's
weight is the posterior mean of w on a grid over [0, 1] under a uniform prior, the intercepts profiled at each w:
w̄ = Σ_g w_g e^{ℓ(w_g)} / Σ_g e^{ℓ(w_g)}, ℓ the log-likelihood. With many rows w̄ is the best weight; with few,
the likelihood is flat and w̄ stays near ½ rather than jumping to either end on noise.

**The choice** is a second, nested cross-validation over the same rows (stratified k-fold, k = min(5, rows of the
rarest class), r = min(10, ⌈200/n⌉) repeats, seeded from the rows): each candidate's parameters are fitted on the
other folds and it predicts the held-out fold, so every candidate is scored on rows its parameters never saw. Its
score is the log-loss (a proper score; the kit's ``metric`` may ask for accuracy, balanced accuracy or AUC
instead). Then:

0. With fewer than :data:`MIN_ROWS` paired rows (30, the product's weak-estimate line) the site keeps its own
   model: no comparison on so few rows can tell two models apart.
1. Guards, each on the same nested-CV predictions against the own model: a candidate is left out when it is
   significantly worse (two classes: its AUC below the own model's by DeLong's paired test, one-sided at
   :data:`GUARD_LEVEL` = 5 %; more classes: its accuracy, by McNemar's exact one-sided test) or never predicts a
   class the own model predicts (a model that never predicts the minority class where the site's own model does is
   never chosen, whatever its accuracy).
2. A site with fewer than :data:`SMALL_CLASS_ROWS` rows of some class it holds cannot tell one model from another
   (a switch would rest on noise): it chooses between its own model and the blend, the hedge, by the score.
3. A site of fewer than :data:`LARGE_SITE_ROWS` rows uses the shared model (as sent, or with the site's baseline
   risk or slope re-estimated, whichever scores best) unless the own model or the blend scores better by more
   than :data:`SWITCH_Z` (1.645) paired standard errors of the per-row difference: the one-sided 5 % level, the
   guard's mirror. The analyst's out-of-fold predictions come from models trained on fewer rows than the one it
   ships, so they understate it; a difference the site's rows cannot resolve goes to the shared model. A larger
   site resolves the differences that matter, and uses the candidate that scores best.

So a site moves away from its own model only to something its own rows do not show to be worse (5 %), and away
from the shared model only to something its own rows show to be better (5 %). Measured on the clinical tables
(docs/results/clinical/): docs/methods.md, "The site's choice".
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from .offset_fit import fit_offsets_batch

EPS = 1e-6  # probabilities are clipped to [EPS, 1] before the log
RECALIBRATION_ROWS = 100  # every class needs this many rows before a slope is re-estimated (Vergouwe et al. 2017)
GUARD_LEVEL = 0.05  # one-sided level of the "not significantly worse than own" guard
MIN_ROWS = 30  # fewer paired rows than this (the product's WEAK_ROWS) cannot tell two models apart: own model
SMALL_CLASS_ROWS = 25  # below this many rows of some class a site only blends (rule 2)
SWITCH_Z = 1.645  # a departure from the shared model needs this many paired standard errors (rule 3)
LARGE_SITE_ROWS = 500  # from this many paired rows the site simply uses the best-scoring candidate (rule 3)
SHARED_FAMILY = ("shared", "intercept", "recalibrated")
W_GRID = np.linspace(0.0, 1.0, 21)  # the blend weights the posterior is taken over
KINDS = ("own", "shared", "intercept", "recalibrated", "blend")
METRICS = ("log_loss", "auc", "accuracy", "balanced_accuracy")
MAX_FOLDS, MAX_REPEATS, TARGET_PREDICTIONS = 5, 10, 200


def log_proba(P: np.ndarray) -> np.ndarray:
    """log of probabilities clipped to [EPS, 1] and renormalised (rows of n × K)."""
    P = np.clip(np.asarray(P, np.float64), EPS, 1.0)
    return np.log(P / P.sum(axis=1, keepdims=True))


def softmax(Z: np.ndarray) -> np.ndarray:
    Z = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------------------------------- fitting the offsets
def fit_offsets(base: np.ndarray, y: np.ndarray, slope_of: np.ndarray | None = None, *, iters: int = 50,
                ridge: float = 1e-4) -> tuple[np.ndarray, float, float]:
    """Maximise Σ_s log softmax(z_s)_{y_s} over z_k = base_k + a_k + (b − 1)·slope_of_k, a₀ = 0 (b = 1 without
    ``slope_of``): a multinomial GLM with offset ``base``, K − 1 intercepts and optionally one slope, by Newton's
    method with step halving and a small ridge, ``ridge``·(‖a‖² + (b − 1)²), which keeps a class absent from the
    rows finite (:func:`core.learn.offset_fit.fit_offsets_batch`, one problem). Returns (a (K,), b, the
    log-likelihood at the optimum)."""
    a, b, ll = fit_offsets_batch(np.asarray(base, np.float64)[None], y,
                                 None if slope_of is None else np.asarray(slope_of, np.float64)[None],
                                 iters=iters, ridge=ridge)
    return a[0], float(b[0]) if slope_of is not None else 1.0, float(ll[0])


def blend_weight(L_own: np.ndarray, L_sh: np.ndarray, y: np.ndarray) -> float:
    """w̄, the posterior mean of the blend weight under a uniform prior on :data:`W_GRID`, the intercepts profiled
    (module docstring)."""
    return float(blend_weights(L_own, L_sh, y, np.ones((1, len(y))))[0])


def blend_weights(L_own: np.ndarray, L_sh: np.ndarray, y: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """:func:`blend_weight` of each row set ``weight[f]`` (0/1 per row: a fold's training rows), the grid's fits of
    every set in one batch."""
    F, G = len(weight), len(W_GRID)
    bases = (1 - W_GRID)[:, None, None] * L_own[None] + W_GRID[:, None, None] * L_sh[None]      # (G, n, K)
    ll = fit_offsets_batch(np.broadcast_to(bases[None], (F, *bases.shape)).reshape(F * G, *L_own.shape), y,
                           weight=np.repeat(weight, G, axis=0))[2].reshape(F, G)
    p = np.exp(ll - ll.max(axis=1, keepdims=True))
    return (p * W_GRID).sum(axis=1) / p.sum(axis=1)


def fit_kind_sets(kind: str, L_own: np.ndarray, L_sh: np.ndarray, y: np.ndarray, weight: np.ndarray) -> list[dict]:
    """:func:`fit_kind` on each row set ``weight[f]`` (0/1 per row), batched: the parameters of one candidate per
    set (the same as fitting it on that set's rows alone, to rounding)."""
    F = len(weight)
    if kind in ("own", "shared"):
        return [{} for _ in range(F)]
    rep = np.broadcast_to(L_sh[None], (F, *L_sh.shape))
    if kind == "intercept":
        a, _, _ = fit_offsets_batch(rep, y, weight=weight)
        return [{"intercepts": a[f].tolist()} for f in range(F)]
    if kind == "recalibrated":
        a, b, _ = fit_offsets_batch(rep, y, slope_of=rep, weight=weight)
        flip = np.flatnonzero(b < 0)  # a model that ranks the rows backwards is not recalibrated by flipping it
        if len(flip):
            a0, _, _ = fit_offsets_batch(np.zeros((len(flip), *L_sh.shape)), y, weight=weight[flip])
            a[flip], b[flip] = a0, 0.0
        return [{"intercepts": a[f].tolist(), "slope": float(b[f])} for f in range(F)]
    if kind == "blend":
        wb = blend_weights(L_own, L_sh, y, weight)
        bases = (1 - wb)[:, None, None] * L_own[None] + wb[:, None, None] * L_sh[None]
        a, _, _ = fit_offsets_batch(bases, y, weight=weight)
        return [{"weight": float(wb[f]), "intercepts": a[f].tolist()} for f in range(F)]
    raise ValueError(f"unknown update {kind!r}")


def fit_kind(kind: str, L_own: np.ndarray, L_sh: np.ndarray, y: np.ndarray) -> dict:
    """The parameters of one candidate fitted on paired rows (module docstring)."""
    return fit_kind_sets(kind, L_own, L_sh, y, np.ones((1, len(y))))[0]


def logits(kind: str, params: dict, L_own: np.ndarray, L_sh: np.ndarray) -> np.ndarray:
    """z of a candidate with its parameters (module docstring), n × K."""
    a = np.asarray(params.get("intercepts", 0.0), np.float64)
    if kind == "own":
        return L_own
    if kind == "shared":
        return L_sh
    if kind == "intercept":
        return L_sh + a
    if kind == "recalibrated":
        return a + float(params["slope"]) * L_sh
    if kind == "blend":
        w = float(params["weight"])
        return a + (1 - w) * L_own + w * L_sh
    raise ValueError(f"unknown update {kind!r}")


def apply_update(choice: dict, P_own: np.ndarray | None, P_sh: np.ndarray) -> np.ndarray:
    """The probabilities of the chosen update on new rows, from the own and the shared model's probabilities there."""
    kind = choice["kind"]
    if kind == "shared":
        return np.asarray(P_sh, np.float64)
    if kind == "own":
        return np.asarray(P_own, np.float64)
    L_sh = log_proba(P_sh)
    L_own = log_proba(P_own) if P_own is not None else L_sh
    return softmax(logits(kind, choice["params"], L_own, L_sh))


# ---------------------------------------------------------------------------------------------- the choice
def candidates(y: np.ndarray, n_classes: int) -> list[str]:
    """The kinds offered for these rows: every kind but ``recalibrated`` unless each class has ≥
    :data:`RECALIBRATION_ROWS` rows."""
    counts = np.bincount(y, minlength=n_classes)
    return [k for k in KINDS if k != "recalibrated" or counts.min() >= RECALIBRATION_ROWS]


def folds_of(y: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Stratified fold numbers: each class's rows, permuted by ``default_rng([seed, class])``, dealt round-robin."""
    out = np.empty(len(y), np.int64)
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        out[np.random.default_rng([seed, int(c)]).permutation(rows)] = np.arange(len(rows)) % k
    return out


def plan(y: np.ndarray) -> tuple[int, int]:
    """(folds, repeats): k = min(5, rows of the rarest class present) ≥ 2, r = min(10, ⌈200/n⌉)."""
    counts = np.bincount(y)
    k = max(2, min(MAX_FOLDS, int(counts[counts > 0].min())))
    return k, max(1, min(MAX_REPEATS, math.ceil(TARGET_PREDICTIONS / max(len(y), 1))))


def rows_seed(y: np.ndarray, P_own: np.ndarray, P_sh: np.ndarray) -> int:
    """A 32-bit seed from SHA-256 of the paired rows: the same rows, the same folds and the same choice."""
    h = hashlib.sha256(np.ascontiguousarray(y, np.int64).tobytes())
    h.update(np.ascontiguousarray(P_own, np.float32).tobytes())
    h.update(np.ascontiguousarray(P_sh, np.float32).tobytes())
    return int.from_bytes(h.digest()[:4], "big")


def nested_cv(kinds: list[str], L_own: np.ndarray, L_sh: np.ndarray, y: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """Per kind, each row's probabilities from the kind fitted on the other folds, averaged over the repeats (every
    fold's fit of a kind in one batch, :func:`fit_kind_sets`)."""
    k, repeats = plan(y)
    n, K = L_own.shape
    out = {kind: np.zeros((n, K)) for kind in kinds}
    tests = []
    for r in range(repeats):
        fold = folds_of(y, k, seed + r)
        tests += [te for f in range(k) if (te := fold == f).any() and (~te).any()]
    if not tests:
        return out
    train = ~np.array(tests)
    for kind in kinds:
        for te, params in zip(tests, fit_kind_sets(kind, L_own, L_sh, y, train.astype(np.float64)), strict=True):
            out[kind][te] += softmax(logits(kind, params, L_own[te], L_sh[te])) / repeats
    return out


def score(metric: str, y: np.ndarray, P: np.ndarray) -> float:
    """``metric`` of probabilities P on labels y (log-loss: lower is better; the others higher)."""
    from .clinical_metrics import selection_score

    if metric == "log_loss":
        return float(-np.mean(np.log(np.clip(P[np.arange(len(y)), y], EPS, 1.0))))
    return selection_score(metric, y, P)


def worse_than_own(y: np.ndarray, P: np.ndarray, P_own: np.ndarray, n_classes: int) -> tuple[bool, str]:
    """Guard 1 (module docstring): (significantly worse, the test's words)."""
    from .clinical_metrics import delong
    from .intervals import mcnemar_p

    if n_classes == 2:
        d = delong(y, P[:, 1], P_own[:, 1])
        if not math.isfinite(d["p_value"]):
            return False, "too few rows of a class for DeLong's test"
        p_one = d["p_value"] / 2 if d["difference"] < 0 else 1 - d["p_value"] / 2
        return p_one < GUARD_LEVEL, f"AUC {d['auc_a']:.3f} vs {d['auc_b']:.3f} (one-sided p = {p_one:.2f})"
    a, b = P.argmax(axis=1) == y, P_own.argmax(axis=1) == y
    only_own, only_it = int(np.sum(~a & b)), int(np.sum(a & ~b))
    p_one = mcnemar_p(only_own, only_it, one_sided=True) if only_own > only_it else 1.0
    return p_one < GUARD_LEVEL, f"right on {only_it} rows your own model gets wrong, wrong on {only_own} it gets right"


def lost_classes(y: np.ndarray, P: np.ndarray, P_own: np.ndarray) -> list[int]:
    """Guard 2: the classes present in y that the own model predicts (argmax) somewhere and P never does."""
    own_pred, pred = set(P_own.argmax(axis=1).tolist()), set(P.argmax(axis=1).tolist())
    return sorted(c for c in np.unique(y).tolist() if c in own_pred and c not in pred)


def row_losses(metric: str, y: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per row, the loss of probabilities P under ``metric``: −log p(y) for log-loss; for the others (which are
    not sums over rows) 1 − [argmax = y], the row's error, and for an AUC −log p(y) as well (its ties broken by the
    proper score)."""
    if metric in ("log_loss", "auc"):
        return -np.log(np.clip(P[np.arange(len(y)), y], EPS, 1.0))
    return (P.argmax(axis=1) != y).astype(np.float64)


def clearly_better(loss_a: np.ndarray, loss_b: np.ndarray) -> bool:
    """Whether per-row losses ``loss_a`` are lower than ``loss_b`` by more than :data:`SWITCH_Z` paired standard
    errors: mean(d) > z·sd(d)/√n, d = loss_b − loss_a."""
    d = np.asarray(loss_b, np.float64) - np.asarray(loss_a, np.float64)
    if len(d) < 2:
        return False
    se = float(np.std(d, ddof=1)) / math.sqrt(len(d))
    return float(np.mean(d)) > SWITCH_Z * se + 1e-12


def resolve_metric(metric: str | None) -> str:
    """The kit's ``metric`` as the update's decision score: ``auto`` (the default) and None → log-loss."""
    if metric in (None, "auto"):
        return "log_loss"
    if metric not in METRICS:
        raise ValueError(f"metric must be one of auto, {', '.join(METRICS)}, not {metric!r}")
    return metric


def choose_update(y: np.ndarray, P_own: np.ndarray, P_sh: np.ndarray, n_classes: int, *,
                  metric: str | None = "auto", classes: list[str] | None = None) -> dict:
    """The site's update (module docstring) from paired out-of-fold probabilities of its n labelled rows.

    Returns ``kind``, ``params`` (fitted on all n rows), ``metric``, ``rows``, ``scores`` (per kind offered: the
    decision metric, log-loss, AUC or accuracy on the nested-CV predictions), ``excluded`` (kind → why a guard took
    it out), ``reason`` (one plain sentence) and ``weight`` (the shared model's share of the logits: 0 own … 1)."""
    y = np.asarray(y, np.int64)
    K = int(n_classes)
    P_own, P_sh = np.asarray(P_own, np.float64), np.asarray(P_sh, np.float64)
    if P_own.shape != (len(y), K) or P_sh.shape != (len(y), K):
        raise ValueError("the paired predictions do not match the rows")
    metric = resolve_metric(metric)
    present = np.unique(y)
    if len(y) < MIN_ROWS or len(present) < 2:
        return {"kind": "own", "params": {}, "metric": metric, "rows": int(len(y)), "scores": {}, "excluded": {},
                "weight": 0.0, "small": True,
                "reason": f"with {len(y)} labelled row(s) of {len(present)} class(es) the two models cannot be told "
                          f"apart (at least {MIN_ROWS} rows of two classes are needed), so you keep your own model"}
    L_own, L_sh = log_proba(P_own), log_proba(P_sh)
    kinds = candidates(y, K)
    cv = nested_cv(kinds, L_own, L_sh, y, rows_seed(y, P_own, P_sh))
    scores: dict[str, dict] = {}
    for kind in kinds:
        P = cv[kind]
        scores[kind] = {"log_loss": score("log_loss", y, P), "auc": score("auc", y, P),
                        "accuracy": score("accuracy", y, P)}
        scores[kind][metric] = score(metric, y, P)
    excluded: dict[str, str] = {}
    for kind in kinds:
        if kind == "own":
            continue
        worse, words = worse_than_own(y, cv[kind], cv["own"], K)
        if worse:
            excluded[kind] = "significantly worse than your own model: " + words
            continue
        lost = lost_classes(y, cv[kind], cv["own"])
        if lost:
            names = [classes[c] if classes else str(c) for c in lost]
            excluded[kind] = "never predicts " + ", ".join(f"'{c}'" for c in names) + " where your own model does"
    allowed = [k for k in kinds if k not in excluded]
    counts = np.bincount(y, minlength=K)
    small = int(counts[counts > 0].min()) < SMALL_CLASS_ROWS
    if small:
        allowed = [k for k in allowed if k in ("own", "blend")]
    sign = 1.0 if metric == "log_loss" else -1.0  # lower is better after the sign

    def best(ks: list[str]) -> str:
        return min(ks, key=lambda k: (sign * scores[k][metric], KINDS.index(k)))
    kind = best(allowed)
    family = [k for k in allowed if k in SHARED_FAMILY]
    if not small and len(y) < LARGE_SITE_ROWS and family and kind not in SHARED_FAMILY:
        shared = best(family)
        if not clearly_better(row_losses(metric, y, cv[kind]), row_losses(metric, y, cv[shared])):
            kind = shared
    params = fit_kind(kind, L_own, L_sh, y)
    weight = {"own": 0.0, "shared": 1.0, "intercept": 1.0, "recalibrated": 1.0}.get(kind, params.get("weight", 0.0))
    out = {"kind": kind, "params": params, "metric": metric, "rows": int(len(y)), "scores": scores,
           "excluded": excluded, "weight": float(weight), "small": small}
    out["reason"] = update_sentence(out)
    return out


UPDATE_WORDS = {
    "own": "your own model",
    "shared": "the shared model as sent",
    "intercept": "the shared model with your site's baseline risk re-estimated",
    "recalibrated": "the shared model recalibrated to your rows (baseline risk and strength)",
    "blend": "a blend of the shared model and your own model",
}


def update_sentence(choice: dict) -> str:
    """One plain sentence: which model the site uses and the numbers it was chosen on."""
    kind, s, n, metric = choice["kind"], choice["scores"], choice["rows"], choice["metric"]
    what = UPDATE_WORDS[kind]
    if kind == "blend":
        what += f" ({choice['params']['weight']:.0%} shared)"
    if not s:
        return choice.get("reason", "")
    def fig(k: str) -> str:
        v = s[k]
        return f"log-loss {v['log_loss']:.3f}, AUC {v['auc']:.3f}" if metric in ("log_loss", "auc") \
            else f"{metric.replace('_', ' ')} {v[metric]:.3f}"
    head = f"cross-validated on your {n} labelled rows, "
    if kind == "own":
        best_other = min((k for k in s if k != "own"), key=lambda k: s[k]["log_loss"], default=None)
        tail = "" if best_other is None else (f"; the best update, {UPDATE_WORDS[best_other]}, had {fig(best_other)}"
                                              + (f" and was left out: {choice['excluded'][best_other]}"
                                                 if best_other in choice["excluded"] else ""))
        return head + f"your own model had {fig('own')}{tail}, so you keep your own model"
    return head + f"{what} had {fig(kind)} against your own model's {fig('own')}, so you use it"
