"""The shared anchor data X^anc (algorithms.md §1.5) and the secret that seeds it.

A lead participant makes one anchor file per project and passes it to the other participants only: if the
analyst knew X^anc it could solve for each site's private map from X̃ᵢᵃⁿᶜ. So the analyst-side code
(``core.analyst`` and everything it imports) never imports this module; a test enforces that.

Generators (all deterministic from the file's 256-bit secret):
* ``uniform``  — each feature j ~ U(lo_j, hi_j) (DC-Clustering, r = n);
* ``gaussian`` — each feature j ~ N(μ_j, σ_j²), i.e. N(0, I) in standardised units;
* ``smote``    — extended SMOTE (Imakura et al. 2023; DC-CFL code): standardise a small seed set P,
  for every seed x draw r/p points x + u(q − x), q one of its k nearest neighbours, u ~ U(0, a), then
  undo the standardisation (defaults r = 1000, k = 25, a = 1.5). By default the seed set is itself
  synthetic, drawn from the lead site's per-column mean, standard deviation and range (``seed_source`` =
  ``"statistics"``); real rows enter only from a seed set the lead site declares shareable
  (``"declared-shareable"``).

File: ``dcstudio-anchor/v2\n`` followed by a standard age v1 file (one X25519 stanza per participant card)
whose plaintext is the canonical JSON of :meth:`AnchorFile.to_dict`; a lost USB stick reveals nothing. The
plain-JSON v1 form is still read (and written only when no recipient is given, for tests and old projects).
"""

from __future__ import annotations

import hashlib
import hmac
import io
import math
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyrage

from ..data.encoding import encode, encoded_ranges, level_shares
from ..errors import ConfigError, FormatError, VerificationError, project_label
from ..fileio import canonical_json, loads_checked, read_bytes_capped, utc_now, write_bytes_atomic, write_json_atomic
from .fields import check_fields, declaration
from .kit import ANCHOR_KINDS

FORMAT = "dcstudio/anchor/v1"
SEALED_MAGIC = b"dcstudio-anchor/v2\n"
KINDS = ANCHOR_KINDS
MAX_ANCHOR_BYTES = 64 << 20
MAX_ANCHOR_CELLS = 50_000_000  # rows × features that generate() may allocate


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

    @property
    def generated_rows(self) -> int:
        """How many rows :meth:`generate` returns: ``rows``, except that extended SMOTE draws the same number
        of rows from every seed row, so it rounds ``rows`` up to a multiple of the seed count."""
        if self.kind == "smote":
            p = len(self.params["seed_rows"])
            return p * -(-self.rows // p)
        return self.rows

    def id_hash_key(self) -> bytes:
        """Key for hashing row ids (vertical linkage): known to participants, never to the analyst."""
        return hmac.new(self.secret, b"dcstudio/id-hash/v1", hashlib.sha256).digest()

    # ---- file -------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The file's content, written only as its declaration (``anchor``, FORMAT §9) allows."""
        return declaration("anchor").write({"format": FORMAT, "project_id": self.project_id, "kind": self.kind,
                                            "rows": self.rows, "secret": self.secret.hex(), "params": self.params,
                                            "created": self.created})

    def save(self, path: str | Path, recipients: list | None = None) -> None:
        """Write the anchor encrypted to ``recipients`` (the participants' public cards, the lead's
        own included); without recipients, the legacy plain form (tests, old projects)."""
        if recipients is None:
            write_json_atomic(path, self.to_dict(), private=True)
            return
        if not recipients:
            raise ConfigError("the anchor must be encrypted to at least one participant's card")
        out = io.BytesIO()
        pyrage.encrypt_io(io.BytesIO(canonical_json(self.to_dict())), out, [c.recipient() for c in recipients])
        write_bytes_atomic(path, SEALED_MAGIC + out.getvalue(), private=True)

    @staticmethod
    def is_sealed(path: str | Path) -> bool:
        try:
            with open(path, "rb") as fh:
                return fh.read(len(SEALED_MAGIC)) == SEALED_MAGIC
        except OSError:
            return False

    @classmethod
    def load(cls, path: str | Path, *, expect_project: str | None = None, identity=None,
             project_name: str | None = None) -> AnchorFile:
        """Read an anchor file; a sealed one needs the site's unlocked ``identity`` (one of its recipients)."""
        raw = read_bytes_capped(path, MAX_ANCHOR_BYTES)
        if raw.startswith(SEALED_MAGIC):
            if identity is None:
                raise ConfigError("this anchor file is encrypted to the participants' cards; open it with this "
                                  "site's identity", path=path)
            try:
                plain = io.BytesIO()
                pyrage.decrypt_io(io.BytesIO(raw[len(SEALED_MAGIC):]), plain, [identity.age_identity()])
                raw = plain.getvalue()
            except Exception as exc:  # pyrage's errors carry no stable type
                if "no matching keys" in str(exc).lower():
                    raise VerificationError("this anchor file is not encrypted to this site's card (ask the lead "
                                            "site to add it)", path=path) from exc
                raise VerificationError("the anchor file does not decrypt: it was altered or damaged",
                                        path=path) from exc
        d = loads_checked(raw, "anchor file", path)
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise FormatError(f"not an anchor file of format {FORMAT}", path=path)
        try:
            check_fields("anchor", d, "the anchor file")
        except FormatError as exc:
            raise FormatError(exc.message, path=path) from exc
        anchor = cls(project_id=d["project_id"], kind=d["kind"], rows=d["rows"], secret=bytes.fromhex(d["secret"]),
                     params=dict(d["params"]), created=d["created"])
        anchor._validate(path)
        if expect_project is not None and anchor.project_id != expect_project:
            names = {expect_project: project_name} if project_name else {}
            raise FormatError(f"this anchor file belongs to {project_label(anchor.project_id)}, not to "
                              f"{project_label(expect_project, names)}", path=path)
        return anchor

    def _validate(self, path=None) -> None:
        """Every parameter generate() uses: finite numbers of consistent shapes, within caps."""
        if len(self.secret) != 32 or self.kind not in KINDS or not 1 <= self.rows <= 10_000_000:
            raise FormatError("anchor file has an invalid secret, kind or row count", path=path)
        need = {"uniform": ("low", "high"), "gaussian": ("mean", "std"), "smote": ("seed_rows",)}[self.kind]
        if any(k not in self.params for k in need):
            raise FormatError(f"anchor file lacks the {self.kind} parameters {need}", path=path)
        arrays = []
        for key in need:
            try:
                arr = np.asarray(self.params[key], dtype=np.float64)
            except (ValueError, TypeError, OverflowError) as exc:
                raise FormatError(f"anchor parameter '{key}' is not a (rectangular) table of numbers",
                                  path=path) from exc
            if arr.ndim != (2 if key == "seed_rows" else 1) or arr.size == 0 or not np.all(np.isfinite(arr)):
                raise FormatError(f"anchor parameter '{key}' has the wrong shape or non-finite values", path=path)
            arrays.append(arr)
        width = arrays[0].shape[-1]
        if any(a.shape[-1] != width for a in arrays) or self.rows * width > MAX_ANCHOR_CELLS:
            raise FormatError("anchor parameters disagree in their number of features, or the anchor is too large",
                              path=path)
        if "features" in self.params and (not isinstance(self.params["features"], list)
                                          or len(self.params["features"]) != width):
            raise FormatError("anchor parameter 'features' does not match the other parameters", path=path)
        if self.kind == "uniform" and np.any(arrays[0] > arrays[1]):
            raise FormatError("anchor range has a lower bound above its upper bound", path=path)
        if self.kind == "gaussian" and np.any(arrays[1] <= 0):
            raise FormatError("anchor standard deviations must be positive", path=path)
        if self.kind == "smote":
            k, a = self.params.get("k", 25), self.params.get("a", 1.5)
            if len(arrays[0]) < 2 or type(k) is not int or k < 1 or isinstance(a, bool) \
                    or not isinstance(a, int | float) or not (math.isfinite(a) and a > 0):
                raise FormatError("anchor SMOTE settings are invalid (at least two seed rows, k ≥ 1, a > 0)",
                                  path=path)


def _nearest(Z: np.ndarray, k: int, chunk: int = 1024) -> np.ndarray:
    """Indices (p, k) of each row's k nearest other rows (Euclidean; ties by index), brute force in numpy:
    the seed set is small, and this spares every site scikit-learn's import (~1 s)."""
    sq = np.einsum("ij,ij->i", Z, Z)
    out = np.empty((Z.shape[0], k), dtype=np.int64)
    for lo in range(0, Z.shape[0], chunk):
        D = sq[lo: lo + chunk, None] + sq[None, :] - 2.0 * (Z[lo: lo + chunk] @ Z.T)
        rows = np.arange(D.shape[0])
        D[rows, lo + rows] = np.inf  # never a row's own neighbour
        out[lo: lo + chunk] = _k_smallest(D, k)
    return out


def _k_smallest(D: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(D, axis=1, kind="stable")[:, :k]`` (each row's k smallest by value, then by index; every site
    must draw the same anchor) from a partial sort, 5× faster: the k smallest found by partition and ordered by value
    and index; a row whose k-th value ties with a value left out (which one is in depends on the index) is sorted
    whole."""
    if k >= D.shape[1]:
        return np.argsort(D, axis=1, kind="stable")[:, :k]
    part = np.sort(np.argpartition(D, k - 1, axis=1)[:, :k], axis=1)  # the k smallest, by index
    values = np.take_along_axis(D, part, axis=1)
    best = np.take_along_axis(part, np.argsort(values, axis=1, kind="stable"), axis=1)
    ties = (D <= values.max(axis=1, keepdims=True)).sum(axis=1) > k
    if ties.any():
        best[ties] = np.argsort(D[ties], axis=1, kind="stable")[:, :k]
    return best


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
                seed_rows: np.ndarray | None = None, k: int = 25, a: float = 1.5,
                seed_source: str = "declared-shareable") -> AnchorFile:
    """Make a new anchor file with a fresh secret (``params["seed_source"]`` says where SMOTE seeds came from).

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
        params = {"seed_rows": np.asarray(seed_rows, float).tolist(), "k": k, "a": a,
                  "seed_source": seed_source}
    for key in ("low", "high", "mean", "std"):
        if key in params and len(params[key]) != m:
            raise ConfigError(f"anchor parameter '{key}' has {len(params[key])} values for {m} features")
    if kind == "smote" and np.asarray(seed_rows).shape[1] != m:
        raise ConfigError(f"the seed set has {np.asarray(seed_rows).shape[1]} columns, the kit {m}")
    params["features"] = list(feature_names)
    anchor = AnchorFile(project_id, kind, int(rows), secrets.token_bytes(32), params,
                        utc_now())
    try:
        anchor._validate()
    except FormatError as exc:
        raise ConfigError(f"cannot make the anchor: {exc.message}") from exc
    return anchor


def statistics_seed(local_X: np.ndarray, rows: int, rng: np.random.Generator, schema=None) -> np.ndarray:
    """A synthetic SMOTE seed set from aggregate statistics only: each numeric column drawn from N(μ_j, σ_j²) of
    the lead site's rows, clipped to that column's observed range. With a typed ``schema`` (``local_X`` is then
    its encoded matrix) each typed column's level is drawn from the lead site's own level shares, each
    "was missing" column is Bernoulli(the site's missing share), and the rows are encoded as every site encodes
    its own. No real row is copied."""
    X = np.asarray(local_X, dtype=np.float64)
    if X.ndim != 2 or len(X) < 2 or not np.all(np.isfinite(X)):
        raise ConfigError("the lead site's rows must be at least two rows of finite numbers")
    n = max(2, rows)
    mu, sd = X.mean(axis=0), X.std(axis=0)
    out = np.clip(mu + sd * rng.standard_normal((n, X.shape[1])), X.min(axis=0), X.max(axis=0))
    if schema is None or schema.all_numeric:
        return out
    if X.shape[1] != schema.width:
        raise ConfigError(f"the lead site's rows have {X.shape[1]} columns, the kit's encoding {schema.width}")
    positions = schema.encoded_positions()
    shares = level_shares(schema, X)
    columns, missing = [], []
    for f in schema.features:
        at = positions[f.name]
        if f.typed:
            columns.append(rng.choice(len(f.known_levels), size=n, p=shares[f.name]))
        else:
            columns.append(out[:, at[0]])
        missing.append(rng.random(n) < X[:, at[-1]].mean() if f.indicator else None)
    return encode(schema, columns, missing)


def anchor_for_kit(kit, *, kind: str | None = None, rows: int | None = None, local_X: np.ndarray | None = None,
                   seed_X: np.ndarray | None = None, seed_rows: int = 100,
                   rng: np.random.Generator | None = None) -> AnchorFile:
    """The lead site's anchor for a kit (what ``dcstudio anchor new`` and the wizard's anchor page make).

    The anchor lives in the kit's ENCODED matrix space (``schema.encoded_names``); ``local_X`` and ``seed_X``
    are encoded matrices as :func:`core.data.tabular.read_table` returns them.
    ``kind``/``rows`` default to the kit's recommendation; the kit's public ranges are used when every
    numeric feature has them (0/1 columns span [0, 1], an ordinal rank [0, L-1]); an extended-SMOTE seed set is
    ``seed_X`` (rows the lead site declares shareable: they travel in the file) or else ``seed_rows`` synthetic
    rows drawn from the aggregate statistics and level shares of the lead site's own rows ``local_X``
    (:func:`statistics_seed`; no real row leaves).
    """
    schema = kit.schema
    kind = kind or kit.anchor.get("kind", "smote")
    rows = int(rows or kit.anchor.get("rows", 1000))
    ranges = encoded_ranges(schema)
    seed, source = seed_X, "declared-shareable"
    if kind == "smote" and seed is None:
        if local_X is None:
            raise ConfigError("an extended-SMOTE anchor needs a seed set (a small shareable CSV) or the lead "
                              "site's own rows to compute statistics from")
        seed = statistics_seed(local_X, seed_rows, rng or np.random.default_rng(), schema)
        source = "statistics"
    return make_anchor(kit.project_id, schema.encoded_names, kind=kind, rows=rows, ranges=ranges, local_X=local_X,
                       seed_rows=seed, seed_source=source)


SHAREABLE_WARNING = ("the {n} seed rows you declared shareable travel inside the anchor file to every participant "
                     "(never to the analyst); use only rows every site may see")


__all__ = ["AnchorFile", "make_anchor", "anchor_for_kit", "extended_smote", "statistics_seed", "KINDS",
           "SHAREABLE_WARNING"]

