"""The attacks a privacy assessment simulates, each on plain arrays (docs/privacy-and-security.md §"Attacks").

Errors are in units of each column's spread: |x̂ − x| / sd_j with sd_j the site's own standard deviation of
column j (1 where a column is constant); a 0/1 column's cell counts as wrong when x̂ rounded to 0 or 1 differs.
"""

from __future__ import annotations

import numpy as np


def column_summary(X: np.ndarray, block: int = 16384) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, spread, binary) of every column of the site's rows in one pass over blocks of rows (a column-wise
    reduction of a large row-major matrix would read all of it once per column): the mean, sd_j = √(Σ(x − x̄)²/n)
    (1 for a constant column, so errors stay finite) from the blocks' means and sums of squared deviations
    (Chan, Golub & LeVeque's pooled update), and whether the column holds only 0 and 1 (an encoded level)."""
    X = np.asarray(X, np.float64)
    n, m = X.shape
    mean, m2, binary = np.zeros(m), np.zeros(m), np.ones(m, bool)
    seen = 0
    for start in range(0, n, block):
        B = X[start:start + block]
        k = len(B)
        b_mean = B.mean(axis=0)
        b_m2 = ((B - b_mean) ** 2).sum(axis=0)
        delta = b_mean - mean
        total = seen + k
        mean = mean + delta * (k / total)
        m2 = m2 + b_m2 + delta ** 2 * (seen * k / total)
        seen = total
        if binary.any():
            binary &= np.all((B == 0) | (B == 1), axis=0)
    sd = np.sqrt(m2 / max(n, 1))
    return mean, np.where(sd > 1e-12, sd, 1.0), binary


def column_spread(X: np.ndarray) -> np.ndarray:
    """sd_j of every column of the site's rows (1 for a constant column, so errors stay finite)."""
    return column_summary(X)[1]


def binary_columns(X: np.ndarray) -> np.ndarray:
    """Which columns hold only 0 and 1 (encoded levels): their error is "wrong after rounding"."""
    return column_summary(X)[2]


def collusion_map(anchor: np.ndarray, anchor_tilde: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The colluding site's inverse map g(z) = z W + b, by least squares on the anchor pairs.

    The attacker holds X^anc (every participant does) and f(X^anc) (the bundle's ``anchor_tilde``). For an
    affine f(x) = (x − c) F, every anchor row satisfies x = g(f(x)) exactly on the row space of F, so
    [W; b] = [Ã, 1]⁺ X^anc (Moore–Penrose pseudo-inverse with an intercept column) recovers f's inverse on
    that subspace: the known-plaintext attack on linear DC intermediates (e.g. the reconstruction risk named
    for linear DC by Imakura et al., and the known-input attacks on linear maps surveyed there).
    """
    A = np.asarray(anchor_tilde, np.float64)
    design = np.column_stack([A, np.ones(len(A))])
    # D⁺ = (DᵀD)⁺ Dᵀ for any D: the pseudo-inverse of the small (m̃ + 1)² Gram matrix, not an SVD of D's rows
    coef = np.linalg.pinv(design.T @ design, hermitian=True) @ (design.T @ np.asarray(anchor, np.float64))
    return coef[:-1], coef[-1]


def collusion_reconstruct(anchor: np.ndarray, anchor_tilde: np.ndarray, x_tilde: np.ndarray,
                          noise_var: np.ndarray | None = None, centre: np.ndarray | None = None) -> np.ndarray:
    """X̂ = g(X̃) with g from :func:`collusion_map`: the rows as the analyst holding the anchor rebuilds them.

    ``noise_var``: the variance of the noise on each shipped column, which the bundle's manifest states (the
    noise setting, or the formal noise's σ²). g carries it into column j with variance v_j = Σ_i W_ij² noise_i,
    so the attacker shrinks each rebuilt column towards its mean by the Wiener factor
    β_j = max(0, 1 − v_j / Var(g_j(X̃))), the linear estimate with the least squared error, rather than
    amplify the noise. It shrinks towards ``centre`` (the kit's public column means), else towards the rebuilt
    rows' own mean."""
    W, b = collusion_map(anchor, anchor_tilde)
    X_hat = np.asarray(x_tilde, np.float64) @ W + b
    if noise_var is not None:
        v = (W ** 2).T @ np.asarray(noise_var, np.float64)
        total = X_hat.var(axis=0)
        beta = np.clip(1.0 - v / np.where(total > 0, total, np.inf), 0.0, 1.0)
        centre = X_hat.mean(axis=0) if centre is None else np.asarray(centre, np.float64)
        X_hat = centre + (X_hat - centre) * beta
    return X_hat


def public_mean_guess(n: int, mean: np.ndarray) -> np.ndarray:
    """Every row guessed as the column means: the best guess in squared error of someone who knows only
    per-column moments (the kit's public statistics)."""
    return np.tile(np.asarray(mean, np.float64), (int(n), 1))


def moment_matching_guesses(x_tilde: np.ndarray, mean: np.ndarray, spread: np.ndarray,
                            rng: np.random.Generator, tries: int = 3) -> list[np.ndarray]:
    """The analyst alone, matching moments: whiten the shipped rows (zero mean, identity covariance, by their own
    covariance), then give them the public means and spreads through an orthogonal matrix R it must guess:
    X̂ = μ + (Z R) ⊙ σ. The shipped rows fix f only up to that rotation (f(X) and f(X)Q have the same
    second moments for any orthogonal Q), so without row pairs R is a guess; ``tries`` random guesses are
    returned, and the assessment keeps the one closest to the truth, an upper bound on what the analyst can do."""
    Z = np.asarray(x_tilde, np.float64)
    Z = Z - Z.mean(axis=0)
    cov = np.atleast_2d(np.cov(Z, rowvar=False))
    vals, vecs = np.linalg.eigh(cov)
    keep = vals > 1e-12 * max(vals.max(), 1e-300)
    Z = Z @ vecs[:, keep] / np.sqrt(vals[keep])
    m, k = len(mean), Z.shape[1]
    out = []
    for _ in range(tries):
        Q, _ = np.linalg.qr(rng.standard_normal((max(m, k), max(m, k))))
        out.append(np.asarray(mean, np.float64) + (Z @ Q[:k, :m]) * np.asarray(spread, np.float64))
    return out


def reconstruction_errors(X: np.ndarray, X_hat: np.ndarray, spread: np.ndarray,
                          binary: np.ndarray | None = None) -> dict[str, float]:
    """Per rebuilt row and cell: ``median_cell_error`` (median of |x̂ − x| / sd_j over the numeric cells; the
    share of 0/1 cells wrong when every column is 0/1), ``within_10pct`` / ``within_5pct`` (share of rows whose
    every numeric cell is within 0.10 / 0.05 spread and every 0/1 cell right), ``binary_cells_wrong``."""
    X = np.asarray(X, np.float64)
    X_hat = np.asarray(X_hat, np.float64)
    binary = np.zeros(X.shape[1], bool) if binary is None else np.asarray(binary, bool)
    rel = np.abs(X_hat - X) / np.asarray(spread, np.float64)
    wrong = np.clip(np.rint(X_hat[:, binary]), 0, 1) != X[:, binary]
    numeric = rel[:, ~binary]
    bin_ok = ~wrong.any(axis=1) if wrong.shape[1] else np.ones(len(X), bool)
    out = {"binary_cells_wrong": float(wrong.mean()) if wrong.size else 0.0}
    out["median_cell_error"] = float(np.median(numeric)) if numeric.size else out["binary_cells_wrong"]
    for name, tol in (("within_10pct", 0.10), ("within_5pct", 0.05)):
        num_ok = (numeric <= tol).all(axis=1) if numeric.shape[1] else np.ones(len(X), bool)
        out[name] = float(np.mean(num_ok & bin_ok)) if len(X) else 0.0
    return out


def closest_distance(candidates: np.ndarray, released: np.ndarray, spread: np.ndarray) -> np.ndarray:
    """Euclidean distance, in column spreads, from every candidate row to its closest released row (exact, by
    blocks of ‖a‖² + ‖b‖² − 2 a·b; numpy only, so an export loads no scipy)."""
    s = np.asarray(spread, np.float64)
    R = np.asarray(released, np.float64) / s
    C = np.asarray(candidates, np.float64) / s
    r2 = np.einsum("ij,ij->i", R, R)
    out = np.empty(len(C))
    for start in range(0, len(C), 1024):
        block = C[start:start + 1024]
        d2 = np.einsum("ij,ij->i", block, block)[:, None] + r2[None, :] - 2.0 * block @ R.T
        out[start:start + 1024] = d2.min(axis=1)
    return np.sqrt(np.maximum(out, 0.0))


def membership_test(members: np.ndarray, holdout: np.ndarray, released: np.ndarray,
                    spread: np.ndarray) -> dict[str, float]:
    """Distance-to-closest-record membership inference (e.g. Yeom et al. 2018's threshold attack, in the
    distance form used for synthetic data by Chen et al. 2020, GAN-leaks): a candidate's score is minus its
    distance to the closest released row; ``auc`` is the ROC AUC of members against hold-out rows (0.5: no
    better than a coin; the Mann–Whitney form, ties counting one half) and ``tpr_at_1pct_fpr`` the share of
    members scored above the threshold that only 1 % of hold-out rows pass."""
    return membership_from_scores(-closest_distance(members, released, spread),
                                  -closest_distance(holdout, released, spread))


def model_loss_scores(proba: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Yeom et al. (2018)'s loss attack on a released model: a candidate's score is minus its cross-entropy
    −log p(yᵢ | xᵢ) under the model (rows the model was fitted on tend to have the smaller loss)."""
    p = np.asarray(proba, np.float64)[np.arange(len(y)), np.asarray(y, np.int64)]
    return np.log(np.clip(p, 1e-300, 1.0))


def membership_from_scores(s_in: np.ndarray, s_out: np.ndarray) -> dict[str, float]:
    """ROC AUC (Mann–Whitney, ties one half) of member scores against hold-out scores, and the share of members
    scored above the threshold that only 1 % of hold-out rows pass."""
    s_in, s_out = np.asarray(s_in, np.float64), np.asarray(s_out, np.float64)
    ranks = _midranks(np.r_[s_in, s_out])
    n1, n0 = len(s_in), len(s_out)
    auc = float((ranks[:n1].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))
    allowed = int(np.floor(0.01 * n0))  # hold-out rows that may pass the threshold
    threshold = np.sort(s_out)[::-1][allowed] if allowed < n0 else -np.inf
    return {"auc": auc, "tpr_at_1pct_fpr": float(np.mean(s_in > threshold))}


def _midranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1…n, tied values sharing the mean of their ranks."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts - 1) / 2.0)[inverse]


def nearest_record_ratio(shipped: np.ndarray, members: np.ndarray, holdout: np.ndarray,
                         spread: np.ndarray) -> dict[str, float]:
    """Distance to closest record (DCR) of shipped rows: median distance to the closest member row (rows that
    were distilled) over the median distance to the closest hold-out row (as many rows that were not). A ratio
    near 1 says the shipped rows are no closer to the patients behind them than to anyone else's; near 0, they
    copy them (the hold-out DCR test of e.g. Platzer & Reutterer 2021)."""
    d_in = float(np.median(closest_distance(shipped, members, spread)))
    d_out = float(np.median(closest_distance(shipped, holdout, spread)))
    return {"dcr_members": d_in, "dcr_holdout": d_out, "ratio": d_in / d_out if d_out > 0 else 0.0}


def smallest_group(counts: np.ndarray) -> int:
    """The fewest rows behind any shipped average (GOLD's micro-cluster sizes)."""
    c = np.asarray(counts).ravel()
    return int(c.min()) if c.size else 0
