"""Formal noise for the DC family's rows: (ε, δ)-differential privacy per row (docs/privacy-and-security.md
§"Formal noise").

Each row x is shipped as  x̃ = clip_C( ((x − μ) / σ_pub) Q ) + N(0, s² I)  with μ, σ_pub the kit's PUBLIC means
and spreads (the site's own would leak through the anchor image), Q an m × m̃ matrix with orthonormal columns
drawn at random (data-independent: a PCA fitted on the rows would leak them through the anchor image), clip_C
scaling a row down to L2 norm C when longer, and s from the Gaussian mechanism for L2 sensitivity Δ = 2C (two
clipped rows differ by at most 2C). Its class is shipped through k-ary randomised response. Both act on one row
at a time, so each row's output is (ε, δ)-DP with respect to that row (local DP), and the whole bundle is
(ε, δ)-DP under replacing one row. The budget splits by basic sequential composition (Dwork & Roth 2014,
Thm 3.16): ε = ε_rows + ε_labels, δ = δ_rows (randomised response is pure ε-DP).
"""

from __future__ import annotations

import math

import numpy as np

from ..formats.fields import Field, register_fields

MECHANISM = ("per row (local): public-scale standardising, a random orthogonal map, clipping and the Gaussian "
             "mechanism on every shipped row; k-ary randomised response on its class")
LABEL_SHARE = 0.25  # share of ε spent on the label when labels ship (symmetric label noise keeps the best rule)
EPSILON_RANGE = (0.01, 100.0)  # the site setting privacy_epsilon (core/methods/dc_site.py)
DELTA_RANGE = (1e-15, 1e-3)  # privacy_delta; the default min(1e-5, 1/n²) lies in it below 3·10⁷ rows
TEXTS = {"mechanism": MECHANISM, "calibration": "analytic Gaussian (Balle & Wang 2018)",
         "composition": "basic: ε = ε_rows + ε_labels",
         "adjacency": "one row replaced (each row's output is (ε, δ)-DP for that row)"}
# The bundle manifest's ``privacy`` block (FORMAT.md §7): made by :func:`accounting`, written and checked as a member
# of the bundle's declaration (its fields here; its agreement with the bundle: :func:`accounting_agrees` and the DC
# family's rules). A study may compute an accounting outside these ranges (benchmarks/privacy.py, ε = 1000); no
# bundle carries one.
register_fields("privacy", (
    Field("epsilon", "number", required=True, low=EPSILON_RANGE[0], high=EPSILON_RANGE[1]),
    Field("delta", "number", required=True, low=0.0, high=DELTA_RANGE[1]),
    *(Field(k, "number", required=True, low=0.0) for k in ("epsilon_rows", "epsilon_labels", "clip", "sensitivity",
                                                           "sigma")),
    Field("label_keep", "number", low=0.0, high=1.0),
    *(Field(k, "text", required=True, choices=(v,)) for k, v in TEXTS.items())))


def default_delta(n: int) -> float:
    """min(10⁻⁵, 1/n²): δ bounds the chance one row's guarantee fails, so n rows fail together with chance ≤ nδ ≤
    1/n."""
    return float(min(1e-5, 1.0 / max(int(n), 1) ** 2))


def _gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    """δ of the Gaussian mechanism N(0, σ²) at ε for L2 sensitivity Δ (Balle & Wang 2018, Thm 8):
    δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)."""
    from scipy.special import log_ndtr  # only when formal noise is on: a plain export loads no scipy

    a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    return float(math.exp(log_ndtr(a - b)) - math.exp(epsilon + log_ndtr(-a - b)))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The smallest σ whose Gaussian mechanism is (ε, δ)-DP for L2 sensitivity Δ: the analytic calibration of
    Balle & Wang 2018 (Thm 8; δ(ε) decreases in σ, so bisection on σ to relative precision 10⁻¹⁰). Valid for
    every ε > 0, unlike the classic σ = Δ√(2 ln(1.25/δ))/ε (Dwork & Roth Thm A.1, ε < 1), which it never
    exceeds."""
    if epsilon <= 0 or not 0 < delta < 1 or sensitivity <= 0:
        raise ValueError("epsilon > 0, 0 < delta < 1 and sensitivity > 0 are needed")
    lo, hi = 1e-12 * sensitivity, sensitivity
    while _gaussian_delta(hi, epsilon, sensitivity) > delta:
        hi *= 2
    while hi - lo > 1e-10 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if _gaussian_delta(mid, epsilon, sensitivity) <= delta else (mid, hi)
    return hi


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """σ = Δ √(2 ln(1.25/δ)) / ε (Dwork & Roth 2014, Thm A.1; proved for ε < 1)."""
    return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def random_orthogonal(m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """m × k with orthonormal columns, Haar-distributed (QR of a Gaussian matrix with the signs of R's
    diagonal fixed, Mezzadri 2007), drawn without looking at any row."""
    Q, R = np.linalg.qr(rng.standard_normal((m, m)))
    Q = Q * np.sign(np.diag(R))
    return Q[:, :k]


def clip_rows(Z: np.ndarray, bound: float) -> np.ndarray:
    """Every row scaled down to L2 norm ``bound`` when longer (in place for float arrays; returned)."""
    norms = np.linalg.norm(Z, axis=1)
    over = norms > bound
    Z[over] *= (bound / norms[over])[:, None].astype(Z.dtype)
    return Z


def randomised_response(y: np.ndarray, k: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """k-ary randomised response (Warner 1965; Kairouz et al. 2016): keep the class with probability
    e^ε / (e^ε + k − 1), else one of the k − 1 others uniformly: ε-DP for one row's class."""
    keep = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    y = np.asarray(y, np.int64)
    flip = rng.random(len(y)) >= keep
    other = (y + rng.integers(1, max(k, 2), len(y))) % max(k, 1)
    return np.where(flip & (k > 1), other, y)


def accounting(epsilon: float, delta: float, *, labels: bool, k: int, clip: float) -> dict:
    """The budget of one export: ε split between rows and labels (basic composition), σ for Δ = 2C."""
    eps_labels = LABEL_SHARE * epsilon if labels else 0.0
    eps_rows = epsilon - eps_labels
    sigma = analytic_gaussian_sigma(eps_rows, delta, 2 * clip)
    out = {"epsilon": float(epsilon), "delta": float(delta), "epsilon_rows": eps_rows, "epsilon_labels": eps_labels,
           "clip": float(clip), "sensitivity": 2 * float(clip), "sigma": sigma, **TEXTS}
    if labels:
        out["label_keep"] = math.exp(eps_labels) / (math.exp(eps_labels) + k - 1)
    return out  # written in a bundle only through the bundle's declaration (which checks it as ``privacy``)


def accounting_agrees(acc: dict, dimension: int, classes: int) -> bool:
    """Whether a bundle's ``privacy`` block (fields checked) is exactly what :func:`accounting` gives for its ε and δ,
    a clip C = √m̃ of its ``dimension`` m̃ and its kit's ``classes`` (labels ship when there are any): the split of ε,
    Δ = 2C, σ (recomputed, to 10⁻⁶ relative) and the label's keep probability."""
    want = accounting(float(acc["epsilon"]), float(acc["delta"]), labels=classes > 0, k=classes,
                      clip=float(np.sqrt(dimension)))
    if set(acc) != set(want):
        return False
    return all(math.isclose(float(acc[k]), float(v), rel_tol=1e-6, abs_tol=1e-12) if not isinstance(v, str)
               else acc[k] == v for k, v in want.items())


def rows_clipped(Z: np.ndarray, bound: float) -> bool:
    """Whether every row of Z has L2 norm at most ``bound`` (float32 rounding allowed): the anchor image under formal
    noise is clipped and carries no noise."""
    norms = np.linalg.norm(np.asarray(Z, np.float64), axis=1)
    return bool(np.all(norms <= bound * (1 + 1e-4) + 1e-6))


NOISE_TAIL = 30.0  # t of the χ² bound below: a bundle carrying its stated noise fails the check with chance < e^−30


def noise_present(X: np.ndarray, sigma: float, clip: float) -> bool:
    """Whether rows X (n × m̃) can be clipped rows (‖sᵢ‖ ≤ C) plus N(0, σ²) noise on every number: with E the noise,
    ‖X − X̄‖_F ≥ ‖E − Ē‖_F − ‖S − S̄‖_F ≥ σ·√(d − 2√(d·t)) − √n·C, d = (n − 1)·m̃, since ‖E − Ē‖²_F / σ² ~ χ²_d and
    P(χ²_d ≤ d − 2√(d·t)) ≤ e^−t (Laurent & Massart 2000, Lemma 1), t = :data:`NOISE_TAIL`. A bundle that claims more
    noise than its rows carry fails it; more noise than claimed (the ``noise`` option on top) passes."""
    X = np.asarray(X, np.float64)
    n, m = X.shape
    d = (n - 1) * m
    low = d - 2.0 * math.sqrt(d * NOISE_TAIL)
    if n < 2 or low <= 0:
        return True
    spread = math.sqrt(float(((X - X.mean(axis=0)) ** 2).sum()))
    return spread >= sigma * math.sqrt(low) - math.sqrt(n) * clip


NOT_COVERED = (
    "the number of rows and of columns (public under the 'one row replaced' definition)",
    "keyed hashes of row ids, when the kit links rows by id (they show which ids are present)",
    "the anchor rows' image (the anchor is shared data, and the map that reduces it is drawn without your rows)",
)


def describe(acc: dict) -> str:
    """One plain sentence of what the formal noise guarantees (per row, or a summary's central release)."""
    if "clip" not in acc:  # a summary released once per site (meta-lr: core/methods/metalr/private_fit.py)
        return (f"Formal privacy: what leaves is (ε = {acc['epsilon']:.3g}, δ = {acc['delta']:.1e}) differentially "
                f"private for every row — {acc.get('mechanism', 'noise added once for the site')}.")
    labels = (f"; each row's class is kept with probability {acc['label_keep']:.2f} (ε = {acc['epsilon_labels']:.2g})"
              if "label_keep" in acc else "")
    return (f"Formal noise: each shipped row is (ε = {acc['epsilon']:.3g}, δ = {acc['delta']:.1e}) differentially "
            f"private — rows clipped to length {acc['clip']:.3g} in public-spread units, noise σ = "
            f"{acc['sigma']:.3g} per number (ε = {acc['epsilon_rows']:.2g}){labels}.")
