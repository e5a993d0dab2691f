"""The shared anchor data X^anc (algorithms.md §1.5) and the secret that seeds it.

A lead participant makes one anchor file per project and passes it to the other participants only: if the
analyst knew X^anc it could solve for each site's private map from X̃ᵢᵃⁿᶜ. So the analyst-side code
(``core.analyst`` and everything it imports) never imports this module; a test enforces that.

Generators (all deterministic from the file's 256-bit secret):
* ``uniform``  — each feature j ~ U(lo_j, hi_j) (DC-Clustering, r = n);
* ``gaussian`` — each feature j ~ N(μ_j, σ_j²), i.e. N(0, I) in standardised units;
* ``smote``    — extended SMOTE (Imakura et al. 2023; DC-CFL code): standardise a small seed set P,
  for every seed x draw r/p points x + u(q − x), q one of its k nearest neighbours, u ~ U(0, a), then
  undo the standardisation (defaults r = 1000, k = 25, a = 1.5).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ..errors import ConfigError, FormatError
from .fileio import read_json_capped, write_json_atomic

FORMAT = "dcstudio/anchor/v1"
KINDS = ("uniform", "gaussian", "smote")


@dataclass
class AnchorFile:
    """Everything needed to regenerate X^anc: a secret, the generator and its public parameters."""

    project_id: str
    kind: str
    rows: int
    secret: bytes
    params: dict = field(default_factory=dict)
    created: str = ""

    # ---- generation -------------------------------------------------------------------------------
    def _rng(self) -> np.random.Generator:
        seed = hashlib.sha256(b"dcstudio/anchor-rng/v1\0" + self.secret).digest()
        return np.random.default_rng(int.from_bytes(seed, "big"))

    def generate(self) -> np.ndarray:
        """X^anc, (rows, m) float64; identical at every site holding this file."""
        rng = self._rng()
        if self.kind == "uniform":
            lo, hi = np.asarray(self.params["low"]), np.asarray(self.params["high"])
            return lo + (hi - lo) * rng.random((self.rows, lo.size))
        if self.kind == "gaussian":
            mu, sd = np.asarray(self.params["mean"]), np.asarray(self.params["std"])
            return mu + sd * rng.standard_normal((self.rows, mu.size))
        return extended_smote(np.asarray(self.params["seed_rows"], np.float64), self.rows,
                              k=int(self.params.get("k", 25)), a=float(self.params.get("a", 1.5)), rng=rng)

    def id_hash_key(self) -> bytes:
        """Key for hashing row ids (vertical linkage): known to participants, never to the analyst."""
        return hmac.new(self.secret, b"dcstudio/id-hash/v1", hashlib.sha256).digest()

    # ---- file -------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"format": FORMAT, "project_id": self.project_id, "kind": self.kind, "rows": self.rows,
                "secret": self.secret.hex(), "params": self.params, "created": self.created}

    def save(self, path: str | Path) -> None:
        write_json_atomic(path, self.to_dict())
        Path(path).chmod(0o600)

    @classmethod
    def load(cls, path: str | Path, *, expect_project: str | None = None) -> AnchorFile:
        d = read_json_capped(path, 64 << 20)
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise FormatError(f"not an anchor file of format {FORMAT}", path=path)
        try:
            anchor = cls(project_id=str(d["project_id"]), kind=str(d["kind"]), rows=int(d["rows"]),
                         secret=bytes.fromhex(d["secret"]), params=dict(d["params"]), created=str(d["created"]))
        except (KeyError, ValueError, TypeError) as exc:
            raise FormatError(f"anchor file is incomplete or malformed ({exc})", path=path) from None
        anchor._validate(path)
        if expect_project is not None and anchor.project_id != expect_project:
            raise FormatError("this anchor file belongs to another project", path=path)
        return anchor

    def _validate(self, path=None) -> None:
        if len(self.secret) != 32 or self.kind not in KINDS or not 1 <= self.rows <= 10_000_000:
            raise FormatError("anchor file has an invalid secret, kind or row count", path=path)
        need = {"uniform": ("low", "high"), "gaussian": ("mean", "std"), "smote": ("seed_rows",)}[self.kind]
        if any(k not in self.params for k in need):
            raise FormatError(f"anchor file lacks the {self.kind} parameters {need}", path=path)


def _nearest(Z: np.ndarray, k: int, chunk: int = 1024) -> np.ndarray:
    """Indices (p, k) of each row's k nearest other rows (Euclidean; ties by index), brute force in numpy:
    the seed set is small, and this spares every site scikit-learn's import (~1 s)."""
    sq = np.einsum("ij,ij->i", Z, Z)
    out = np.empty((Z.shape[0], k), dtype=np.int64)
    for lo in range(0, Z.shape[0], chunk):
        D = sq[lo: lo + chunk, None] + sq[None, :] - 2.0 * (Z[lo: lo + chunk] @ Z.T)
        rows = np.arange(D.shape[0])
        D[rows, lo + rows] = np.inf  # never a row's own neighbour
        out[lo: lo + chunk] = np.argsort(D, axis=1, kind="stable")[:, :k]
    return out


def extended_smote(P: np.ndarray, r: int, *, k: int = 25, a: float = 1.5,
                   rng: np.random.Generator) -> np.ndarray:
    """Extended SMOTE of algorithms.md §1.5 (r/p draws per seed, u ~ U(0, a))."""
    p = P.shape[0]
    if p < 2:
        raise ConfigError("the SMOTE seed set needs at least two rows")
    per_seed = -(-r // p)  # r rounded up to a multiple of p
    mu, sd = P.mean(axis=0), P.std(axis=0)
    sd[~(sd > 1e-12)] = 1.0
    Z = (P - mu) / sd
    kk = min(k, p - 1)
    neigh = _nearest(Z, kk)
    base = np.repeat(np.arange(p), per_seed)
    q = neigh[base, rng.integers(0, kk, size=base.size)]
    u = rng.uniform(0.0, a, size=(base.size, 1))
    out = Z[base] + u * (Z[q] - Z[base])
    return out * sd + mu


def make_anchor(project_id: str, feature_names: list[str], *, kind: str, rows: int,
                ranges: tuple[np.ndarray, np.ndarray] | None = None, local_X: np.ndarray | None = None,
                seed_rows: np.ndarray | None = None, k: int = 25, a: float = 1.5) -> AnchorFile:
    """Make a new anchor file with a fresh secret.

    ``uniform`` uses the kit's public ranges if given, else the lead site's local min/max;
    ``gaussian`` uses the lead site's local mean/std (or the ranges' mid-point and width/4);
    ``smote`` needs ``seed_rows`` (a small shareable seed set, e.g. 100 rows).
    """
    if kind not in KINDS:
        raise ConfigError(f"unknown anchor kind '{kind}'; choose one of {', '.join(KINDS)}")
    m = len(feature_names)
    if kind == "uniform":
        if ranges is None:
            if local_X is None:
                raise ConfigError("a uniform anchor needs public ranges in the kit or the lead site's CSV")
            ranges = (local_X.min(axis=0), local_X.max(axis=0))
        params = {"low": np.asarray(ranges[0], float).tolist(), "high": np.asarray(ranges[1], float).tolist()}
    elif kind == "gaussian":
        if local_X is not None:
            mean, std = local_X.mean(axis=0), local_X.std(axis=0)
        elif ranges is not None:
            mean, std = (ranges[0] + ranges[1]) / 2, (ranges[1] - ranges[0]) / 4
        else:
            raise ConfigError("a Gaussian anchor needs public ranges in the kit or the lead site's CSV")
        std = np.where(std > 1e-12, std, 1.0)
        params = {"mean": np.asarray(mean, float).tolist(), "std": np.asarray(std, float).tolist()}
    else:
        if seed_rows is None or len(seed_rows) < 2:
            raise ConfigError("an extended-SMOTE anchor needs a seed set of at least two rows")
        params = {"seed_rows": np.asarray(seed_rows, float).tolist(), "k": k, "a": a}
    for key in ("low", "high", "mean", "std"):
        if key in params and len(params[key]) != m:
            raise ConfigError(f"anchor parameter '{key}' has {len(params[key])} values for {m} features")
    if kind == "smote" and np.asarray(seed_rows).shape[1] != m:
        raise ConfigError(f"the seed set has {np.asarray(seed_rows).shape[1]} columns, the kit {m}")
    params["features"] = list(feature_names)
    anchor = AnchorFile(project_id, kind, int(rows), secrets.token_bytes(32), params,
                        datetime.now(UTC).isoformat(timespec="seconds"))
    anchor._validate()
    return anchor


def anchor_for_kit(kit, *, kind: str | None = None, rows: int | None = None, local_X: np.ndarray | None = None,
                   seed_X: np.ndarray | None = None, seed_rows: int = 100,
                   rng: np.random.Generator | None = None) -> AnchorFile:
    """The lead site's anchor for a kit (what ``dcstudio anchor new`` and the wizard's anchor page make).

    ``kind``/``rows`` default to the kit's recommendation; the kit's public ranges are used when every
    feature has them; an extended-SMOTE seed set is ``seed_X`` (a shareable seed CSV) or else a random
    sample of ``seed_rows`` of the lead site's own rows ``local_X``.
    """
    schema = kit.schema
    kind = kind or kit.anchor.get("kind", "smote")
    rows = int(rows or kit.anchor.get("rows", 1000))
    ranges = None
    if all(c.min is not None and c.max is not None for c in schema.features):
        ranges = (np.array([c.min for c in schema.features]), np.array([c.max for c in schema.features]))
    seed = seed_X
    if kind == "smote" and seed is None:
        if local_X is None:
            raise ConfigError("an extended-SMOTE anchor needs a seed set (a small shareable CSV) or the lead "
                              "site's own rows to sample one from")
        rng = rng or np.random.default_rng()
        seed = local_X[rng.choice(len(local_X), min(seed_rows, len(local_X)), replace=False)]
    return make_anchor(kit.project_id, schema.feature_names, kind=kind, rows=rows, ranges=ranges, local_X=local_X,
                       seed_rows=seed)


__all__ = ["AnchorFile", "make_anchor", "anchor_for_kit", "extended_smote", "KINDS"]
