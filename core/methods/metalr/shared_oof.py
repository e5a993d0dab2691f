"""meta-lr's shared model at one site, recomputed from the site's rows: its out-of-fold predictions with no extra round.

Site i's package carries, beside the model ``coef``, the prior the other sites imply for its coefficients
(``prior_mean`` β̂₋ᵢ and ``prior_precision`` Λ₋ᵢ, :func:`.random_effects.prior_without`: computed from the other
sites' estimates only) and the settings of the site's fit (``ridge``, ``penalty_scale``, ``max_iter``). The
analyst's model for site i is a function of the site's own estimate and that prior alone,

    θᵢ = g(θ̂ᵢ, V̂ᵢ; β̂₋ᵢ, Λ₋ᵢ):  the posterior slopes β̃ᵢ = (Λ₋ᵢ + AᵢᵀV̂ᵢ⁻¹Aᵢ)⁺ (Λ₋ᵢβ̂₋ᵢ + AᵢᵀV̂ᵢ⁻¹b̂ᵢ) and the
    site's intercepts given them (:func:`.random_effects.posterior`),

so the site can compute it again from any subset of its rows (:func:`site_model`; from the rows it exported it
gives the package's ``coef``). :func:`shared_oof_at_site` does so per fold: for fold k it fits the site's
penalised logistic regression on the other folds exactly as the export did (:func:`.site_logit.fit_site_logit`,
the same λ and penalty units), θ̂ᵢ⁽⁻ᵏ⁾ and V̂ᵢ⁽⁻ᵏ⁾, applies g with the package's prior, and predicts fold k.

Why the predictions are honest (out of fold, unbiased): the prediction of a row in fold k depends on the other
sites' rows (through the prior, which no row of site i entered) and on the site's rows outside fold k; on nothing
of fold k. Each row is thus predicted by a model that never saw it, built by the same procedure as the model the
site is sent, from (k − 1)/k of its rows: the usual K-fold estimate of that procedure's performance on new rows of
this site, paired row by row with the site's own model's out-of-fold predictions on the same folds. (Its only
bias is K-fold's own: a model of (k − 1)/k of the rows is slightly worse than one of all of them, which errs
towards the site's own model, as the own model's cross-validation has the same bias.)

A fold whose other rows hold fewer than two classes, or whose fit does not converge, is predicted with the
prior's slopes and intercepts fitted on those other rows given them (a site without an estimate gets the
combined slopes too); a class the fold's other rows lack gets no probability in that fold, as the analyst gives
none to a class a site has no row of.
"""

from __future__ import annotations

import numpy as np

from ...errors import ConfigError, FormatError
from .random_effects import Prior, posterior
from .site_logit import UNSEEN, fit_site_logit, only_classes, predict_proba


def _prior(manifest: dict, arrays: dict[str, np.ndarray]) -> Prior:
    mean, lam = arrays.get("prior_mean"), arrays.get("prior_precision")
    if mean is None or lam is None:
        raise FormatError("this meta-lr package carries no prior from the other sites (made before issue #37), so "
                          "its shared model's out-of-fold predictions cannot be computed at the site")
    mean = np.asarray(mean, np.float64)
    return Prior(mean, np.asarray(lam, np.float64), np.zeros(len(mean)))


def allowed_classes(coef: np.ndarray) -> list[int]:
    """The classes a package's ``coef`` ((K − 1) × p, against class 0) gives probability to: those whose intercept
    is not UNSEEN below the largest."""
    a = np.concatenate([[0.0], np.asarray(coef, np.float64)[:, 0]])
    return [int(k) for k in np.flatnonzero(a > a.max() - UNSEEN / 2)]


def _penalty_scale(manifest: dict, X: np.ndarray, scale: np.ndarray | None) -> np.ndarray | None:
    """The slopes' penalty units as the site's export chose them: the kit's public standard deviations when given,
    else the column's spread on these rows (``spread``) or raw units."""
    if scale is not None and np.shape(scale) == (X.shape[1],):
        return np.asarray(scale, np.float64)
    if manifest.get("penalty_scale", "spread") == "spread":
        sd = X.std(axis=0)
        return np.where(sd > 0, sd, 1.0)
    return None


def _intercepts_given(X: np.ndarray, y: np.ndarray, slopes: np.ndarray, keep: list[int], K: int,
                      steps: int = 50) -> np.ndarray:
    """The classes' intercepts (K − 1,) against class 0 that maximise the likelihood of rows (X, y) given fixed
    ``slopes`` (K − 1, m), over the classes ``keep`` (the others get −UNSEEN): Newton on the intercepts of the
    multinomial logit with offsets Xβ_k (a concave problem; a small ridge keeps a class absent from y finite)."""
    eta0 = np.column_stack([np.zeros(len(X)), X @ np.asarray(slopes, np.float64).T])
    kept = np.asarray(keep)
    a = np.zeros(len(kept))
    Y = (np.asarray(y)[:, None] == kept[None, :]).astype(np.float64)
    for _ in range(steps):
        e = eta0[:, kept] + a
        e -= e.max(axis=1, keepdims=True)
        P = np.exp(e)
        P /= P.sum(axis=1, keepdims=True)
        grad = (Y - P).sum(axis=0) - 1e-6 * a
        H = -(np.diag(P.sum(axis=0)) - P.T @ P) - 1e-6 * np.eye(len(kept))
        step = np.linalg.lstsq(H, -grad, rcond=None)[0]
        a = a + step
        if np.max(np.abs(step)) < 1e-10:
            break
    full = np.full(K, -UNSEEN)
    full[kept] = a
    return full[1:] - full[0]


def site_model(manifest: dict, arrays: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray,
               scale: np.ndarray | None = None) -> np.ndarray:
    """The package's model θ ((K − 1) × (m + 1)) recomputed from the rows (X, y ∈ [0, K)) with the package's prior
    (module doc): from the rows the site exported it equals the package's ``coef``. ``scale``: the kit's public
    standard deviations, when it gives them."""
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.int64)
    classes = manifest.get("classes") or []
    K = len(classes)
    n, m = X.shape
    p = m + 1
    q = K - 1
    coef = np.asarray(arrays["coef"], np.float64)
    if K < 2 or coef.shape != (q, p):
        raise FormatError("the package's coefficients do not fit these columns and the kit's classes")
    prior = _prior(manifest, arrays)
    site_intercepts = manifest.get("intercepts", "site") == "site"
    d = q * (m if site_intercepts else p)
    if prior.mean.shape != (d,) or prior.precision.shape != (d, d):
        raise FormatError("the package's prior does not fit these columns and the kit's classes")
    allowed = allowed_classes(coef)
    present = [int(k) for k in np.flatnonzero(np.bincount(y, minlength=K) > 0)]
    fit = None
    if len(present) >= 2:
        y_own = np.searchsorted(np.asarray(present), y)
        fit = fit_site_logit(X, y_own, len(present), lam=float(manifest.get("ridge", 1.0)),
                             scale=_penalty_scale(manifest, X, scale), max_iter=int(manifest.get("max_iter", 100)))
        ok = fit.converged and np.all(np.isfinite(fit.coef)) and np.all(np.isfinite(fit.cov))
        if ok:
            try:
                np.linalg.cholesky(fit.cov)
            except np.linalg.LinAlgError:
                ok = False
        fit = fit if ok else None
    keep = [k for k in (present if site_intercepts else allowed) if k in allowed] or allowed
    if fit is None:  # the prior's slopes (or coefficients), the intercepts of these rows given them
        if site_intercepts:
            slopes = prior.mean.reshape(q, m)
            theta = np.column_stack([_intercepts_given(X, y, slopes, keep, K), slopes])
        else:
            theta = prior.mean.reshape(q, p).copy()
        return only_classes(theta, keep)
    D = _contrast_map(present, K)
    r = len(present) - 1
    if site_intercepts:
        common = np.array([k * p + j for k in range(r) for j in range(1, p)])
        A = np.kron(D, np.eye(m))
    else:
        common = np.arange(r * p)
        A = np.kron(D, np.eye(p))
    beta, full = posterior(fit.coef, fit.cov, common, A, prior)
    if site_intercepts:
        theta = np.zeros((q, p))
        theta[:, 1:] = beta.reshape(q, m)
        alpha = np.zeros(K)
        alpha[present] = np.concatenate([[0.0], full.reshape(r, p)[:, 0]])
        theta[:, 0] = alpha[1:] - alpha[0]
    else:
        theta = beta.reshape(q, p).copy()
    return only_classes(theta, keep)


def _contrast_map(fitted: list[int], K: int) -> np.ndarray:
    """Dᵢ as in :func:`.method.contrast_map` (kept here so the site's side needs nothing of the analyst's)."""
    D = np.zeros((len(fitted) - 1, K - 1))
    for r, k in enumerate(fitted[1:]):
        D[r, k - 1] = 1.0
        if fitted[0] > 0:
            D[r, fitted[0] - 1] = -1.0
    return D


def shared_oof_at_site(manifest: dict, arrays: dict[str, np.ndarray], X: np.ndarray, y: np.ndarray,
                       folds: np.ndarray, scale: np.ndarray | None = None) -> np.ndarray:
    """(n, K) out-of-fold class probabilities of the package's shared model on the site's rows (X, y ∈ [0, K)):
    row s is predicted by :func:`site_model` of the rows whose fold differs from ``folds[s]`` (module doc)."""
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.int64)
    folds = np.asarray(folds)
    if folds.shape != (len(y),) or X.shape[0] != len(y):
        raise ConfigError("the rows, their labels and their folds must have one entry per row")
    K = len(manifest.get("classes") or [])
    out = np.zeros((len(y), K))
    for k in np.unique(folds):
        test = folds == k
        if test.all():
            raise ConfigError("out-of-fold predictions need at least two folds")
        theta = site_model(manifest, arrays, X[~test], y[~test], scale)
        out[test] = predict_proba(theta, X[test])
    return out


__all__ = ["allowed_classes", "shared_oof_at_site", "site_model"]
