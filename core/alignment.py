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

from .errors import ConfigError, FormatError


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
        except KeyError:
            raise FormatError("package lacks the mapping arrays map_matrix/map_offset") from None
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
