"""Independent re-implementations of the issue #35 attacks, written for the tests (and the privacy benchmark's
cross-check) from the papers, not from ``core/privacy/attacks.py``: other libraries where they exist (scikit-learn's
PCA and linear regression, SciPy's log-sum-exp and earth mover's distance) and other choices
where the papers leave one open, so that agreement says the product computes what the papers describe.

* :func:`eigen_attack` — Liu, Giannella & Kargupta (2006), the known-sample PCA attack on a distance-preserving
  map: the perturbed rows' principal axes are mapped onto a public sample's, each axis's sign chosen so that the
  two one-dimensional distributions agree best (here by SciPy's earth mover's distance, Wasserstein-1).
* :func:`posterior_mean_attack` — the colluding site with its own rows as the prior: E[x | x̃] under the empirical
  prior and the stated Gaussian noise (Robbins 1956), the site's map learnt from the anchor pairs that were not
  clipped.
* :func:`stand_in_rows` — which of the site's rows stand in for the public sample and the colluder's rows, as
  docs/privacy-and-security.md states the rule (not the product's function).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from scipy.stats import wasserstein_distance
from sklearn.decomposition import PCA
from sklearn.linear_model import LinearRegression


def stand_in_rows(n: int, public_rows: int, seed: int = 0) -> np.ndarray:
    """The documented rule: min(public_rows, n // 2) rows, the first of a permutation drawn by
    ``np.random.default_rng([seed, 35])``."""
    take = min(public_rows, n // 2)
    return np.sort(np.random.default_rng([seed, 35]).permutation(n)[:take])


def _population_sd(M: np.ndarray) -> np.ndarray:
    sd = np.sqrt(((M - M.mean(axis=0)) ** 2).mean(axis=0))
    sd[sd <= 1e-12] = 1.0
    return sd


def eigen_attack(shipped: np.ndarray, sample: np.ndarray) -> np.ndarray:
    """Ẑ = Y_c V_Y D V_Pᵀ, X̂ = μ_P + Ẑ σ_P: principal axes from scikit-learn's PCA (full SVD) on both sides, in
    order of variance; D's sign per axis chosen by the smaller Wasserstein-1 distance between the shipped
    component and the sample's (the paper's "closest distribution"); an axis whose two fits are within 5 % of each
    other (no clear evidence either way) keeps the direction whose largest-magnitude loading is positive on both
    sides."""
    Y = np.asarray(shipped, float)
    P = np.asarray(sample, float)
    mu, sd = P.mean(axis=0), _population_sd(P)
    Zp = (P - mu) / sd
    k = min(Y.shape[1], P.shape[1])
    Vy = PCA(n_components=k, svd_solver="full").fit(Y).components_.T
    Vp = PCA(n_components=k, svd_solver="full").fit(Zp).components_.T
    for V in (Vy, Vp):
        V *= np.sign(V[np.abs(V).argmax(axis=0), np.arange(k)])
    Cy = (Y - Y.mean(axis=0)) @ Vy
    Cp = Zp @ Vp
    for j in range(k):
        same, flipped = wasserstein_distance(Cy[:, j], Cp[:, j]), wasserstein_distance(Cy[:, j], -Cp[:, j])
        if flipped < 0.95 * same:
            Vp[:, j] *= -1
    return mu + (Cy @ Vp.T) * sd


def stated_noise_variance(manifest: dict, shipped: np.ndarray) -> np.ndarray:
    """The noise variance per shipped column a bundle's manifest states: σ² of the formal option, plus, for the
    ``noise`` setting s (noise of s × a column's spread added to it), the share s²/(1 + s²) of the column's
    variance."""
    out = np.zeros(shipped.shape[1])
    s = float(manifest.get("noise") or 0.0)
    if s:
        out += shipped.var(axis=0) * s * s / (1 + s * s)
    if isinstance(manifest.get("privacy"), dict):
        out += manifest["privacy"]["sigma"] ** 2
    return out


def posterior_mean_attack(anchor: np.ndarray, anchor_image: np.ndarray, shipped: np.ndarray, prior: np.ndarray,
                          noise_var: np.ndarray, clip: float | None = None) -> np.ndarray:
    """For each shipped row x̃: Σ_i w_i x_i over the colluder's rows, log w_i = −½ Σ_j (x̃_j − f(x_i)_j)² / v_j − a
    normaliser (SciPy's log-sum-exp). f is learnt by an ordinary least-squares regression (scikit-learn) of the
    anchor's images on the anchor rows, on the pairs whose image is strictly shorter than the clipping length C;
    f(x_i) is then clipped to C like the site's rows were."""
    A_img = np.asarray(anchor_image, float)
    unclipped = np.ones(len(A_img), bool) if clip is None else np.linalg.norm(A_img, axis=1) < clip * 0.999999
    f = LinearRegression().fit(np.asarray(anchor, float)[unclipped], A_img[unclipped])
    images = f.predict(np.asarray(prior, float))
    if clip is not None:
        length = np.linalg.norm(images, axis=1, keepdims=True)
        images = np.where(length > clip, images * clip / np.maximum(length, 1e-300), images)
    out = np.empty((len(shipped), prior.shape[1]))
    for r, row in enumerate(np.asarray(shipped, float)):
        logw = -0.5 * (((row - images) ** 2) / noise_var).sum(axis=1)
        out[r] = np.exp(logw - logsumexp(logw)) @ prior
    return out


def rebuild_errors(truth: np.ndarray, rebuilt: np.ndarray, spread: np.ndarray) -> tuple[float, float]:
    """(median of |x̂ − x| / sd over the cells, share of rows with every cell within 0.10 of its column's sd), for
    tables without 0/1 columns."""
    rel = np.abs(rebuilt - truth) / spread
    return float(np.median(rel)), float(np.mean((rel <= 0.10).all(axis=1)))
