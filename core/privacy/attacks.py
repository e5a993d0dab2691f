"""The attacks a privacy assessment simulates, each on plain arrays (docs/privacy-and-security.md §"Attacks").

Errors are in units of each column's spread: |x̂ − x| / sd_j with sd_j the site's own standard deviation of
column j (1 where a column is constant); a 0/1 column's cell counts as wrong when x̂ rounded to 0 or 1 differs.
"""

from __future__ import annotations

import numpy as np

from .assignment import min_cost_assignment
from .fastica import fastica_unmixing


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


# ---- the analyst alone with a public sample (issue #35) ------------------------------------------------------------
QUANTILES = np.linspace(0.02, 0.98, 49)  # where two 1-D distributions are compared (the tails left out)
SIGN_MARGIN = 0.95  # an eigenvector is flipped only when that fits the sample's distribution at least 5 % better
SHAPE_ROWS = 10_000  # shipped rows whose distribution the sign and component matching read (a seeded subsample)


def quantile_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Mean squared gap between the quantile functions of two 1-D samples (2 % … 98 %): a Wasserstein-2-like
    distance between their distributions, which sees skew and tails where mean and variance cannot."""
    return float(np.mean((np.quantile(a, QUANTILES) - np.quantile(b, QUANTILES)) ** 2))


def public_moments(sample: np.ndarray, standardised: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """μ and σ of the public sample (σ = 1 for a constant column, or for every column when ``standardised`` is
    False: the map only centred)."""
    P = np.asarray(sample, np.float64)
    return P.mean(axis=0), (column_spread(P) if standardised else np.ones(P.shape[1]))


def row_moments(M: np.ndarray, block: int = 16384) -> tuple[np.ndarray, np.ndarray]:
    """(mean, covariance) of ``M``'s rows (the covariance with n − 1, as ``np.cov``), in float64 from blocks of rows:
    the mean first, then Σ (x − x̄)ᵀ(x − x̄) block by block — no float64 copy of a large float32 matrix, and no
    centred one."""
    n, m = M.shape
    mean = np.zeros(m)
    for start in range(0, n, block):
        mean += M[start:start + block].sum(axis=0, dtype=np.float64)
    mean /= max(n, 1)
    gram = np.zeros((m, m))
    buffer = np.empty((min(block, n), m))  # one block's centred rows, reused: no fresh pages per block
    for start in range(0, n, block):
        B = buffer[:min(block, n - start)]
        np.subtract(M[start:start + block], mean, out=B, dtype=np.float64)
        gram += B.T @ B
    return mean, gram / max(n - 1, 1)


def _principal_axes(M: np.ndarray, k: int | None = None,
                    moments: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors of the covariance of ``M``'s rows, the k leading ones, each
    vector signed so that its largest-magnitude loading is positive (the product's PCA sign rule). ``moments``:
    ``M``'s :func:`row_moments`, when already known."""
    C = np.atleast_2d((moments or row_moments(np.atleast_2d(np.asarray(M))))[1])
    vals, vecs = np.linalg.eigh(C)
    order = np.argsort(vals)[::-1][:k]
    vals, vecs = np.clip(vals[order], 0.0, None), vecs[:, order]
    signs = np.sign(vecs[np.abs(vecs).argmax(axis=0), np.arange(vecs.shape[1])])
    return vals, vecs * np.where(signs == 0, 1.0, signs)


def _shape_rows(Y: np.ndarray, seed: int, cap: int = SHAPE_ROWS) -> np.ndarray:
    """At most ``cap`` of the rows (seeded), as float64: enough to read a distribution's quantiles."""
    take = Y if len(Y) <= cap else Y[np.sort(np.random.default_rng(seed).choice(len(Y), cap, replace=False))]
    return np.asarray(take, np.float64)


def eigen_attack(x_tilde: np.ndarray, sample: np.ndarray, noise_var: np.ndarray | None = None, *,
                 standardised: bool = True, rows: np.ndarray | None = None,
                 moments: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """The analyst alone with a public sample of rows like the site's: the PCA (eigenvector) attack on a
    distance-preserving map (Liu, Giannella & Kargupta 2006, "An attacker's view of distance preserving maps for
    privacy preserving data mining", PKDD, §4.2 "known sample attack").

    The site ships Y = Z W with Z its standardised rows and W of orthonormal columns (its PCA's eigenvectors, or
    a random orthogonal Q). Then Cov(Y) = Wᵀ Cov(Z) W, so Y's own principal axes V_Y (eigenvectors of Cov(Y), the
    identity for a PCA map) are W's image of Z's: with the sample's standardised rows Z_P and its principal axes
    V_P (the same eigen-decomposition, which a sample of the same population estimates),

        Ẑ = (Y − ȳ) V_Y D V_P[:, :k]ᵀ,   X̂ = μ_P + Ẑ ⊙ σ_P,

    D = diag(±1) the signs eigenvectors leave open: component j is flipped when that brings the distribution of
    (Y V_Y)_j clearly closer to that of (Z_P V_P)_j (:func:`quantile_distance` smaller by the factor SIGN_MARGIN:
    skew and tails tell the two signs apart), else the product's own rule (largest loading positive, applied on
    both sides) stands — a near tie is noise, and the rule is what the site's PCA did. With a stated
    noise variance (the manifest's noise), component j is shrunk by the Wiener factor
    β_j = max(0, 1 − n_j / λ_j), n_j the noise variance along it and λ_j its variance (the linear estimate of
    least squared error). ``standardised`` False: the site only centred its rows (σ_P = 1). The shipped rows'
    axes and mean come from every shipped row (the attacker holds them all), their distributions from at most
    SHAPE_ROWS of them (seeded: quantiles need no more); ``rows``: rebuild only these; ``moments``: the shipped
    rows' :func:`row_moments`, when already known."""
    Y = np.asarray(x_tilde)
    mu, sd = public_moments(sample, standardised)
    Zp = (np.asarray(sample, np.float64) - mu) / sd
    k = min(Y.shape[1], Zp.shape[1])
    moments = moments or row_moments(Y)
    lam, Vy = _principal_axes(Y, k, moments)
    _, Vp = _principal_axes(Zp, k)
    centre = moments[0]
    Cp = Zp @ Vp
    Cs = (_shape_rows(Y, 0) - centre) @ Vy
    qs, qp, qm = (np.quantile(M, QUANTILES, axis=0) for M in (Cs, Cp, -Cp))  # every column's at once (3 sorts, not 3k)
    for j in range(k):  # quantile_distance(Cs[:, j], ∓Cp[:, j]), the same numbers
        if float(np.mean((qs[:, j] - qm[:, j]) ** 2)) < SIGN_MARGIN * float(np.mean((qs[:, j] - qp[:, j]) ** 2)):
            Vp[:, j] = -Vp[:, j]
    C = (np.asarray(Y if rows is None else Y[rows], np.float64) - centre) @ Vy
    if noise_var is not None:
        n_along = np.einsum("ij,i,ij->j", Vy, np.asarray(noise_var, np.float64), Vy)
        C = C * np.clip(1.0 - n_along / np.where(lam > 0, lam, np.inf), 0.0, 1.0)
    return mu + (C @ Vp.T) * sd


ICA_ITERATIONS = 60  # FastICA's iterations: on the benchmark tables it settles well before (more: same rebuild)
ICA_FIT_ROWS = 1000  # rows the unmixing is fitted on (it is applied to every row)
ICA_STARTS = 3  # the assessment runs FastICA from this many starting points and keeps the closest rebuild


def ica_attack(x_tilde: np.ndarray, sample: np.ndarray, *, seed: int = 0, standardised: bool = True,
               max_iter: int = ICA_ITERATIONS, fit_rows: int = ICA_FIT_ROWS,
               rows: np.ndarray | None = None) -> np.ndarray:
    """One rebuild by :func:`ica_rebuilds` (FastICA started from ``seed``)."""
    return ica_rebuilds(x_tilde, sample, seed=seed, starts=1, standardised=standardised, max_iter=max_iter,
                        fit_rows=fit_rows, rows=rows)[0]


def ica_rebuilds(x_tilde: np.ndarray, sample: np.ndarray, *, seed: int = 0, starts: int = ICA_STARTS,
                 standardised: bool = True, max_iter: int = ICA_ITERATIONS, fit_rows: int = ICA_FIT_ROWS,
                 rows: np.ndarray | None = None,
                 moments: tuple[np.ndarray, np.ndarray] | None = None) -> list[np.ndarray]:
    """The analyst alone with a public sample, by higher moments: the ICA attack on a linear map (Liu, Kargupta &
    Ryan 2006, "Random projection-based multiplicative data perturbation for privacy preserving distributed data
    mining", IEEE TKDE 18(1), §5; Chen, Sun & Liu 2007, "Towards attack-resilient geometric data perturbation",
    SDM), with FastICA (Hyvärinen & Oja 2000, Neural Networks 13, eq. 20).

    Y = Z A for any invertible A: whitened, Y_w = (Y − ȳ) V_Y Λ_Y^{-1/2} and the sample's Z_P,w = Z_P V_P Λ_P^{-1/2}
    (its k leading principal components) hold the same distribution up to an orthogonal matrix,
    which second moments cannot see but non-Gaussian ones fix: ICA finds in each the independent components
    S = X_w Uᵀ, unique up to order and sign. The shipped components are matched to the sample's by the least
    total :func:`quantile_distance` (sign included; Hungarian assignment, Kuhn 1955), then mapped back through
    the sample's mixing:  Ẑ = S_Y Π (U_Pᵀ)⁻¹ Λ_P^{1/2} V_Pᵀ,  X̂ = μ_P + Ẑ ⊙ σ_P (the assignment:
    :mod:`core.privacy.assignment`). On Gaussian rows ICA has
    nothing to hold on to (the components' order is arbitrary) and this attack is no better than a guess.

    FastICA's answer depends on where it starts: the shipped rows' unmixing is started from ``starts`` points (seeds
    ``seed``, ``seed`` + 1, …; the sample's once, from ``seed``), one rebuild each; the assessment keeps the one
    closest to the truth, as it does for moment matching's guesses (an upper bound for the attack; the matched
    components' total distance, which the attacker could use instead, picks the best start only some of the time
    on the benchmark tables). The unmixing is fitted on at most ``fit_rows`` rows of each (seeded), ``max_iter``
    iterations (on Gaussian rows it never converges; on the benchmark tables it settles within 50); the
    components' distributions are read on at most SHAPE_ROWS shipped rows. Whitening uses every shipped row;
    ``rows``: rebuild only these; ``moments``: the shipped rows' :func:`row_moments`, when already known."""
    Y = np.asarray(x_tilde)
    mu, sd = public_moments(sample, standardised)
    Zp = (np.asarray(sample, np.float64) - mu) / sd
    k = min(Y.shape[1], Zp.shape[1], len(Zp) - 1)
    moments = moments or row_moments(Y)
    lam_y, Vy = _principal_axes(Y, k, moments)
    lam_p, Vp = _principal_axes(Zp, k)
    keep = (lam_y > 1e-12 * max(lam_y.max(), 1e-300)) & (lam_p > 1e-12 * max(lam_p.max(), 1e-300))
    lam_y, Vy, lam_p, Vp = lam_y[keep], Vy[:, keep], lam_p[keep], Vp[:, keep]
    k = int(keep.sum())
    centre = moments[0]

    def white(M: np.ndarray) -> np.ndarray:
        return (np.asarray(M, np.float64) - centre) @ Vy / np.sqrt(lam_y)

    Pw = Zp @ Vp / np.sqrt(lam_p)
    Yfit = white(_shape_rows(Y, seed, fit_rows))
    Pfit = Pw if len(Pw) <= fit_rows else Pw[np.random.default_rng(seed).choice(len(Pw), fit_rows, replace=False)]
    Yshape = white(_shape_rows(Y, seed))

    def unmixing(M: np.ndarray, start: int) -> np.ndarray:  # a slow convergence still gives a usable attack
        return fastica_unmixing(M, seed=start, max_iter=max_iter, tol=1e-4)[0]

    Up = unmixing(Pfit, seed)
    Sp = Pw @ Up.T
    sp = Sp.std(axis=0)
    sp = np.where(sp > 0, sp, 1.0)
    qb = np.quantile(Sp / sp, QUANTILES, axis=0).T  # (k, quantiles): each sample component's quantile function
    back = np.linalg.pinv(Up.T)
    Yrows = white(Y if rows is None else Y[rows])
    out = []
    for start in range(seed, seed + max(1, starts)):
        Uy = unmixing(Yfit, start)
        shape = Yshape @ Uy.T
        sy = shape.std(axis=0)
        sy = np.where(sy > 0, sy, 1.0)
        qa = np.quantile(shape / sy, QUANTILES, axis=0).T
        plus = np.mean((qa[:, None, :] - qb[None, :, :]) ** 2, axis=2)
        minus = np.mean((qa[:, None, :] + qb[None, :, ::-1]) ** 2, axis=2)  # −S's quantiles: reversed, negated
        cost, sign = np.minimum(plus, minus), np.where(plus <= minus, 1.0, -1.0)
        mine, theirs = min_cost_assignment(cost)
        Sy = Yrows @ Uy.T / sy
        S_hat = np.zeros((len(Sy), k))
        S_hat[:, theirs] = Sy[:, mine] * sign[mine, theirs]
        out.append(mu + ((S_hat * sp) @ back * np.sqrt(lam_p)) @ Vp.T * sd)
    return out


# ---- the colluding site with its own rows as a prior (issue #35) ---------------------------------------------------
def anchor_forward_map(anchor: np.ndarray, anchor_tilde: np.ndarray,
                       clip: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The site's map x ↦ x F + b as the colluder learns it: least squares of the anchor's images on the anchor
    rows (with an intercept) over the pairs whose image is shorter than the stated clipping length C (those were
    not clipped, so the relation is exactly affine there); all pairs when nothing is clipped. Solved by SVD on the
    anchor columns centred and scaled by their own spread (raw columns such as an area in pixels would square the
    condition number of normal equations past float64), so a column the anchor holds constant — a direction its
    pairs cannot identify — gets no weight."""
    A_ = np.asarray(anchor, np.float64)
    T = np.asarray(anchor_tilde, np.float64)
    keep = np.ones(len(T), bool) if clip is None else np.linalg.norm(T, axis=1) < float(clip) * (1 - 1e-6)
    if keep.sum() <= A_.shape[1]:
        keep[:] = True  # too few unclipped pairs: every pair (the clipped ones bias the map towards shorter rows)
    mu, sd = A_[keep].mean(axis=0), column_spread(A_[keep])
    Z = (A_[keep] - mu) / sd
    Z[:, np.ptp(A_[keep], axis=0) == 0] = 0.0
    coef, *_ = np.linalg.lstsq(np.column_stack([Z, np.ones(len(Z))]), T[keep], rcond=None)
    F = coef[:-1] / sd[:, None]
    return F, coef[-1] - mu @ F


def _forward(X: np.ndarray, F: np.ndarray, b: np.ndarray, clip: float | None) -> np.ndarray:
    out = np.asarray(X, np.float64) @ F + b
    return out if clip is None else clip_to(out, float(clip))


def clip_to(Z: np.ndarray, bound: float) -> np.ndarray:
    """Rows scaled down to L2 norm ``bound`` when longer (a copy)."""
    norms = np.linalg.norm(Z, axis=1)
    return Z * np.minimum(1.0, bound / np.where(norms > 0, norms, 1.0))[:, None]


def gaussian_prior_collusion(anchor: np.ndarray, anchor_tilde: np.ndarray, x_tilde: np.ndarray,
                             prior_rows: np.ndarray, noise_var: np.ndarray, clip: float | None = None) -> np.ndarray:
    """The colluding site's Bayes estimate under a Gaussian prior fitted to its own rows (Huang, Du & Chen 2005,
    "Deriving private information from randomized data", SIGMOD, §4.2 Bayes-estimate reconstruction): with
    x ~ N(μ₀, Σ₀) from the colluder's rows and x̃ = f(x) + e, f(x) = x F + b (:func:`anchor_forward_map`),
    e ~ N(0, N), N = diag(noise_var), the posterior mean is

        x̂ = μ₀ + Σ₀ F (Fᵀ Σ₀ F + N)⁻¹ (x̃ − f(μ₀)),

    the linear estimate of least squared error, which uses the columns' correlation where least squares and
    per-column shrinkage cannot."""
    F, b = anchor_forward_map(anchor, anchor_tilde, clip)
    P = np.asarray(prior_rows, np.float64)
    mu0 = P.mean(axis=0)
    S0 = np.atleast_2d(np.cov(P, rowvar=False))
    G = F.T @ S0 @ F + np.diag(np.asarray(noise_var, np.float64))
    gain = S0 @ F @ np.linalg.pinv(G, hermitian=True)
    return mu0 + (np.asarray(x_tilde, np.float64) - (mu0 @ F + b)) @ gain.T


def empirical_prior_collusion(anchor: np.ndarray, anchor_tilde: np.ndarray, x_tilde: np.ndarray,
                              prior_rows: np.ndarray, noise_var: np.ndarray, clip: float | None = None,
                              block: int = 64) -> np.ndarray:
    """The colluding site's posterior mean with its own rows as the prior (Robbins 1956, "An empirical Bayes
    approach to statistics": the empirical distribution of rows like the victim's as the prior). The colluder
    holds the anchor, so it knows the site's map f, clipping included (:func:`anchor_forward_map`, the stated C);
    with the prior p(x) = (1/r) Σ_i δ(x − x_i) over its r rows and the stated noise e ~ N(0, diag(v)),

        E[x | x̃] = Σ_i w_i x_i,   w_i ∝ exp(−½ Σ_j (x̃_j − f(x_i)_j)² / v_j),

    exactly, for each shipped row x̃ (log-sum-exp in blocks of ``block`` rows). Unlike a linear inverse it is not
    thrown off by clipping (f(x_i) is clipped like the row was), and it lands on rows that are plausible. A column
    stated without noise (a constant one: the noise scales with each column's spread) carries no information
    but float32 rounding: its variance is floored at 10⁻⁶ × the largest, so rounding cannot pick the weights."""
    F, b = anchor_forward_map(anchor, anchor_tilde, clip)
    P = np.asarray(prior_rows, np.float64)
    v = np.asarray(noise_var, np.float64)
    scale = 1.0 / np.sqrt(np.maximum(v, max(1e-6 * float(v.max(initial=0.0)), 1e-12)))
    FP = _forward(P, F, b, clip) * scale
    Y = np.asarray(x_tilde, np.float64) * scale
    out = np.empty((len(Y), P.shape[1]))
    for start in range(0, len(Y), block):
        Yb = Y[start:start + block]
        # the differences themselves, not ‖y‖² + ‖f‖² − 2 y·f: a nearly noiseless column scales them by up to 10⁶
        diff = Yb[:, None, :] - FP[None, :, :]
        d2 = np.einsum("ijk,ijk->ij", diff, diff)
        logw = -0.5 * d2
        logw -= logw.max(axis=1, keepdims=True)
        w = np.exp(logw)
        out[start:start + block] = (w @ P) / w.sum(axis=1, keepdims=True)
    return out
