"""Independent re-implementations of the issue #35 attacks, written for the tests (and the privacy benchmark's
cross-check) from the papers, not from ``core/privacy/attacks.py``: other libraries where they exist (scikit-learn's
PCA and linear regression, SciPy's log-sum-exp and quantiles), so that agreement says the product computes what
the papers, and its docstrings where a paper leaves a choice open, describe.

* :func:`eigen_attack` — Liu, Giannella & Kargupta (2006), the known-sample PCA attack on a distance-preserving
  map: the perturbed rows' principal axes are mapped onto a public sample's, each axis's sign chosen so that the
  two one-dimensional distributions agree best (by the gap between their quantile functions from 2 % to 98 %, the
  choice ``core.privacy.attacks.eigen_attack`` documents, computed here with SciPy's ``mquantiles``).
* :func:`posterior_mean_attack` — the colluding site with its own rows as the prior: E[x | x̃] under the empirical
  prior and the stated Gaussian noise (Robbins 1956), the site's map learnt from the anchor pairs that were not
  clipped.
* :func:`stand_in_rows` — which of the site's rows stand in for the public sample and the colluder's rows, as
  docs/privacy-and-security.md states the rule (not the product's function).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp
from scipy.stats.mstats import mquantiles
from sklearn.decomposition import PCA
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def stand_in_rows(n: int, public_rows: int, seed: int = 0) -> np.ndarray:
    """The documented rule: min(public_rows, n // 2) rows, the first of a permutation drawn by
    ``np.random.default_rng([seed, 35])``."""
    take = min(public_rows, n // 2)
    return np.sort(np.random.default_rng([seed, 35]).permutation(n)[:take])


def _population_sd(M: np.ndarray) -> np.ndarray:
    sd = np.sqrt(((M - M.mean(axis=0)) ** 2).mean(axis=0))
    sd[sd <= 1e-12] = 1.0
    return sd


def eigen_attack(shipped: np.ndarray, sample: np.ndarray, noise_var: np.ndarray | None = None,
                 rows: np.ndarray | None = None) -> np.ndarray:
    """Ẑ = Y_c V_Y D V_Pᵀ, X̂ = μ_P + Ẑ σ_P: principal axes from scikit-learn's PCA (full SVD) on both sides, in
    order of variance; D's sign per axis chosen by the smaller mean squared gap between the two quantile
    functions at 2 %, 4 %, …, 98 % (the paper's "closest distribution"); an axis whose flipped fit is not at least
    5 % better keeps the direction whose largest-magnitude loading is positive on both sides. With the stated
    noise variance of each shipped column, each component keeps the share of its variance that is not noise,
    max(0, 1 − noise along it / its variance) (the Wiener filter; e.g. Huang, Du & Chen 2005).
    The axes come from every shipped row; ``rows``: rebuild only those."""
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
    probabilities = np.arange(1, 50) / 50

    def gap(a, b):
        return np.mean((mquantiles(a, probabilities, alphap=1, betap=1)
                        - mquantiles(b, probabilities, alphap=1, betap=1)) ** 2)

    for j in range(k):
        same, flipped = gap(Cy[:, j], Cp[:, j]), gap(Cy[:, j], -Cp[:, j])
        if flipped < 0.95 * same:
            Vp[:, j] *= -1
    if noise_var is not None and np.any(noise_var):
        along = (Vy ** 2 * np.asarray(noise_var, float)[:, None]).sum(axis=0)  # diag(V_Yᵀ N V_Y)
        Cy = Cy * np.clip(1 - along / np.maximum(Cy.var(axis=0, ddof=1), 1e-300), 0, 1)
    if rows is not None:
        Cy = Cy[rows]
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
    normaliser (SciPy's log-sum-exp). f is learnt by an ordinary least-squares regression with an intercept
    (scikit-learn's, on the anchor columns standardised first: on raw columns such as an area in pixels the
    solution drifts in the directions the anchor barely spans, and a column the anchor holds constant gets no
    weight, as the product documents) of the anchor's images on the anchor rows, on the pairs whose image is
    strictly shorter than the clipping length C; f(x_i) is then clipped to C like the site's rows were."""
    A_img = np.asarray(anchor_image, float)
    unclipped = np.ones(len(A_img), bool) if clip is None else np.linalg.norm(A_img, axis=1) < clip * 0.999999
    f = make_pipeline(StandardScaler(), LinearRegression()).fit(np.asarray(anchor, float)[unclipped], A_img[unclipped])
    images = f.predict(np.asarray(prior, float))
    if clip is not None:
        length = np.linalg.norm(images, axis=1, keepdims=True)
        images = np.where(length > clip, images * clip / np.maximum(length, 1e-300), images)
    out = np.empty((len(shipped), prior.shape[1]))
    # a column stated without noise is a constant one: floored at 10⁻⁶ of the largest variance, as documented
    variance = np.clip(np.asarray(noise_var, float), max(1e-6 * np.max(noise_var), 1e-12), None)
    for r, row in enumerate(np.asarray(shipped, float)):
        logw = -0.5 * (((row - images) ** 2) / variance).sum(axis=1)
        out[r] = np.exp(logw - logsumexp(logw)) @ prior
    return out


def rebuild_errors(truth: np.ndarray, rebuilt: np.ndarray, spread: np.ndarray) -> tuple[float, float]:
    """(median of |x̂ − x| / sd over the cells, share of rows with every cell within 0.10 of its column's sd), for
    tables without 0/1 columns."""
    rel = np.abs(rebuilt - truth) / spread
    return float(np.median(rel)), float(np.mean((rel <= 0.10).all(axis=1)))


def mixed_rebuild_errors(truth: np.ndarray, rebuilt: np.ndarray, site_rows: np.ndarray) -> tuple[float, float]:
    """The product's documented units on a table with 0/1 columns (encoded levels): the median of |x̂ − x| / sd
    over the other cells (sd over all the site's rows ``site_rows``), a 0/1 column one whose site values are all 0
    or 1, its cell right when x̂ rounds to it (clipped to 0 or 1), a row within 10 % when every other cell is within
    0.10 sd and every 0/1 cell is right. Returns (median error — the share of 0/1 cells wrong when every column is
    0/1 —, share of rows within 10 %)."""
    truth, rebuilt, site_rows = (np.asarray(a, float) for a in (truth, rebuilt, site_rows))
    zero_one = np.array([set(np.unique(c)) <= {0.0, 1.0} for c in site_rows.T])
    sd = _population_sd(site_rows)
    rel = np.abs(rebuilt - truth)[:, ~zero_one] / sd[~zero_one]
    wrong = np.minimum(np.maximum(np.round(rebuilt[:, zero_one]), 0), 1) != truth[:, zero_one]
    median = float(np.median(rel)) if rel.size else float(wrong.mean())
    rows_ok = (rel <= 0.10).all(axis=1) & ~wrong.any(axis=1)
    return median, float(rows_ok.mean())
