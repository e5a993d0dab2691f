"""Data Collaboration alignment: from each site's reduced anchor X̃ᵢᵃⁿᶜ to a common space.

Linear (algorithms.md §1.3, Imakura & Sakurai 2020):
    A = [X̃₁ᵃⁿᶜ, …, X̃_cᵃⁿᶜ] ≈ U₁Σ₁V₁ᵀ,   Gᵢ = (X̃ᵢᵃⁿᶜ)† U₁ C,   X̂ᵢ = X̃ᵢ Gᵢ.
Affine (§1.4, DC-Clustering appendix): Āᵢ = [X̃ᵢᵃⁿᶜ, 1],  [Gᵢ'; gᵢ] = Āᵢ† Ū₁ C,  X̂ᵢ = X̃ᵢGᵢ' + 1gᵢ.
m̂ keeps the singular values s_k ≥ threshold (absolute, the DC-CFL rule 1e-2) or ≥ threshold·s₁.
C = I (``scale="identity"``) or C = Σ₁ (``scale="singular"``, the DC-CFL code's choice).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, FormatError


@dataclass
class SiteMapping:
    """Gᵢ and the affine offset gᵢ (zeros for linear alignment): x̂ = x̃ G + g."""

    G: np.ndarray  # (m̃ᵢ, m̂)
    g: np.ndarray  # (m̂,)

    def transform(self, X_tilde: np.ndarray) -> np.ndarray:
        if X_tilde.shape[1] != self.G.shape[0]:
            raise FormatError(f"representation has {X_tilde.shape[1]} columns, the mapping expects {self.G.shape[0]}")
        return X_tilde @ self.G + self.g

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {"map_matrix": self.G.astype(np.float64), "map_offset": self.g.astype(np.float64)}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> SiteMapping:
        try:
            G, g = np.asarray(arrays["map_matrix"], np.float64), np.asarray(arrays["map_offset"], np.float64)
        except KeyError as exc:
            raise FormatError("package lacks the mapping arrays map_matrix/map_offset") from exc
        if G.ndim != 2 or g.shape != (G.shape[1],):
            raise FormatError("mapping G/g has inconsistent shapes")
        return cls(G, g)


class DCAlignment:
    """Fit the per-site maps that take every site's anchor image onto one common target.

    Parameters
    ----------
    affine : use the affine form (§1.4) instead of the linear one (§1.3).
    threshold : keep singular values ≥ threshold (absolute) or ≥ threshold·s₁ if ``relative``.
    relative : interpret ``threshold`` relative to the largest singular value.
    scale : "identity" (C = I) or "singular" (C = Σ₁).
    max_dim : optional cap on m̂.

    Attributes
    ----------
    mappings_ : list[SiteMapping], one per site in the order given to ``fit``.
    singular_values_ : all singular values of the stacked anchor matrix.
    dim_ : m̂.
    """

    def __init__(self, *, affine: bool = False, threshold: float = 1e-2, relative: bool = False,
                 scale: str = "identity", max_dim: int | None = None):
        self.affine = affine
        self.threshold = threshold
        self.relative = relative
        self.scale = scale
        self.max_dim = max_dim

    def fit(self, anchor_reps: list[np.ndarray]) -> DCAlignment:
        if not anchor_reps:
            raise ConfigError("alignment needs at least one site")
        if self.scale not in ("identity", "singular"):
            raise ConfigError(f"unknown alignment scale '{self.scale}'")
        r = anchor_reps[0].shape[0]
        if any(a.shape[0] != r for a in anchor_reps):
            raise FormatError("sites sent anchor representations with different numbers of rows")
        blocks = [self._augment(np.asarray(a, np.float64)) for a in anchor_reps]
        U, s, _ = np.linalg.svd(np.hstack(blocks), full_matrices=False)
        cut = self.threshold * s[0] if self.relative else self.threshold
        dim = int(np.sum(s >= cut))
        if self.max_dim is not None:
            dim = min(dim, int(self.max_dim))
        if dim < 1:
            raise ConfigError("no singular value of the anchor representations passes the threshold")
        target = U[:, :dim] * (s[:dim] if self.scale == "singular" else 1.0)
        self.singular_values_ = s
        self.dim_ = dim
        self.mappings_ = [self._solve(b, target) for b in blocks]
        return self

    def _augment(self, a: np.ndarray) -> np.ndarray:
        return np.hstack([a, np.ones((a.shape[0], 1))]) if self.affine else a

    def _solve(self, block: np.ndarray, target: np.ndarray) -> SiteMapping:
        M = np.linalg.pinv(block) @ target
        if self.affine:
            return SiteMapping(M[:-1], M[-1])
        return SiteMapping(M, np.zeros(M.shape[1]))

    def transform(self, site: int, X_tilde: np.ndarray) -> np.ndarray:
        return self.mappings_[site].transform(X_tilde)


class AnchorBasis:
    """One orthonormal basis Q of the span of every site's (augmented) anchor image, so that the DC
    alignment of any cluster of sites reuses per-site factorisations instead of redoing SVDs.

    With Āᵢ = Q Bᵢ (Bᵢ = QᵀĀᵢ, r × m̃ᵢ) for every site, the stacked anchor matrix of a cluster is
    [Āᵢ]_{i∈C} = Q [Bᵢ]_{i∈C}: its singular values equal those of the small r × Σm̃ᵢ matrix [Bᵢ], its left
    singular vectors are Q Ū, and Gᵢ = Āᵢ† U₁C = Bᵢ† Ū₁C (algorithms.md §1.3–1.4). Every site's image of
    X^anc is an affine function of X^anc, so r ≤ m + 1 however many sites there are, and a cluster costs an
    SVD of an (m + 1) × Σm̃ᵢ matrix. Q is grown block by block from the residuals Āᵢ − QQᵀĀᵢ; residual
    directions with singular value below ``tol``·‖Āᵢ‖₂ (float32 rounding of the shipped arrays) are left
    out, which moves any singular value of a cluster's stack by far less than the 1e-2 cut.

    The pseudoinverse uses the same relative cut: the anchor images arrive in float32 (relative precision
    ~6e-8), so a site whose private map flattens a direction the anchor varies in (e.g. a column constant
    at that site) shows a singular value of ~1e-9·‖Bᵢ‖ instead of 0. NumPy's default cut (~1e-14)
    would invert it and scale that direction of the site's rows by ~1e8, which wrecks the cluster's
    standardisation; the exact-arithmetic Moore–Penrose inverse, which this computes, maps it to 0.
    """

    def __init__(self, anchor_reps: list[np.ndarray], *, affine: bool, tol: float = 1e-6):
        self.affine = affine
        blocks = [np.asarray(a, np.float64) for a in anchor_reps]
        if affine:
            blocks = [np.hstack([a, np.ones((a.shape[0], 1))]) for a in blocks]
        r = blocks[0].shape[0]
        Q = np.zeros((r, 0))
        for b in blocks:
            R = b - Q @ (Q.T @ b)
            R -= Q @ (Q.T @ R)                           # second pass keeps Q orthonormal
            U, sv, _ = np.linalg.svd(R, full_matrices=False)
            top = np.linalg.norm(b, 2)
            Q = np.hstack([Q, U[:, sv > tol * top]])
        self.Q = Q
        self.B = [Q.T @ b for b in blocks]
        self.pinv = [np.linalg.pinv(b, rcond=tol) for b in self.B]

    def align(self, members: tuple[int, ...], settings: dict) -> dict[int, SiteMapping]:
        """The cluster's maps ``{site: SiteMapping}``, as :class:`~core.learn.alignment.DCAlignment` would fit."""
        U, sv, _ = np.linalg.svd(np.hstack([self.B[i] for i in members]), full_matrices=False)
        cut = float(settings["threshold"]) * (sv[0] if settings["relative_threshold"] else 1.0)
        dim = int(np.sum(sv >= cut))
        if dim < 1:
            raise ConfigError("no singular value of the anchor representations passes the threshold")
        if settings["scale"] not in ("identity", "singular"):
            raise ConfigError(f"unknown alignment scale '{settings['scale']}'")
        target = U[:, :dim] * (sv[:dim] if settings["scale"] == "singular" else 1.0)
        maps = {}
        for i in members:
            M = self.pinv[i] @ target
            maps[i] = SiteMapping(M[:-1], M[-1]) if self.affine else SiteMapping(M, np.zeros(dim))
        return maps
