"""The site side shared by the DC family (DC, DC-CFL, DC-Clustering): algorithms.md §1.2.

X̃ᵢ = fᵢ(Xᵢ) and X̃ᵢᵃⁿᶜ = fᵢ(X^anc) are computed with the site's private map; rows are shuffled before
export and the permutation stays in the site's workspace; fᵢ never leaves. Optional Gaussian noise on X̃ᵢ
(not on the anchor image) with standard deviation ``noise`` × each reduced column's standard deviation; or
formal noise (``privacy_epsilon``): the public-scale random orthogonal map, clipping, the Gaussian mechanism and
randomised response of :mod:`core.privacy.mechanism`, its accounting in the manifest's ``privacy``.
"""

from __future__ import annotations

import numpy as np

from ..control import JobControl, ensure
from ..errors import ConfigError, FormatError
from ..formats.fields import Array, Field, Rule
from ..learn.reduction import (
    FULL_DIMENSION_MAX,
    AffineMap,
    PrivateReduction,
    default_dimension,
    largest_dimension,
    resolved_dimension,
)
from ..privacy import mechanism as dp
from ..privacy.protective import protective_rng
from ..privacy.release import REDUCED_ROWS, Release
from ..wording import ARRAY_WORDS, REDUCTION_DETAILS, REDUCTION_WORDS, STAYS_WORDS, leaves_sentence
from .base import Disclosure, ReceivedBundle, SiteExport, SiteInput
from .settings import Setting

REDUCTIONS = ("pca", "lpp", "random")
FORMAL_REDUCTION = "random-orthogonal"  # the map of the formal noise option (the manifest's ``reduction``)
SITE_SETTINGS = (
    Setting("reduction", "choice", "pca", "the private map that compresses this site's rows (kept here): "
            + "; ".join(REDUCTION_DETAILS[r] for r in REDUCTIONS), label="Compression", choices=REDUCTIONS,
            side="site", choice_help=tuple(REDUCTION_WORDS[r] for r in REDUCTIONS)),
    Setting("dimension", "int", None, "how many numbers each compressed row keeps", label="Numbers per row", low=1,
            optional=True, none_help=f"all your columns when you have at most {FULL_DIMENSION_MAX} (as many "
            "numbers, mixed), else one fewer; never more than your rows minus one", side="site",
            high_from="columns"),
    Setting("noise", "float", 0.0, "random noise added to the compressed rows, times each column's spread",
            label="Noise", low=0.0, high=2.0, side="site"),
    Setting("privacy_epsilon", "float", None, "formal privacy: each shipped row is (ε, δ)-differentially private "
            "(public-scale standardising, a random orthogonal map, clipping, Gaussian noise; classes by randomised "
            "response); smaller ε = more noise", label="Formal privacy (ε)", low=dp.EPSILON_RANGE[0],
            high=dp.EPSILON_RANGE[1], optional=True,
            none_help="off", side="site", advanced=True),  # the wizard's levers (gui/) decide how to offer it
    Setting("privacy_delta", "float", None, "formal privacy: the δ of (ε, δ)", label="Formal privacy (δ)",
            low=dp.DELTA_RANGE[0], high=dp.DELTA_RANGE[1], optional=True, none_help="min(1e-5, 1/rows²)",
            side="site", advanced=True),
    Setting("seed", "int", None, "random seed of the reduction and the shuffle (none: fresh each export; under "
            "formal privacy the map, shuffle and noise come from the operating system whatever the seed)",
            label="Seed", low=0, optional=True, none_help="fresh randomness", side="site", advanced=True),
)
SITE_DEFAULTS = {s.name: s.default for s in SITE_SETTINGS}
MIN_ROWS = 5
ROWS_RELEASE = Release(REDUCED_ROWS, rows="x_tilde", anchor="anchor_tilde")  # what every DC-family bundle discloses
LABELLED_DC_LEAVES = ("a privately reduced, shuffled copy of every row, the class of every row, and the shared "
                      "anchor rows after the same private reduction")


def dc_site_compute(site: SiteInput, *, ship_labels: bool, control: JobControl | None = None,
                    standardise: bool = True, papers_dimension: bool = False) -> SiteExport:
    """``standardise=False`` only centres before the reduction (the method decides; both sides must agree).
    Without a ``dimension`` setting m̃ follows :func:`~core.learn.reduction.default_dimension` (m for small
    tables), or with ``papers_dimension`` the papers' m − 1 (DC-Clustering, whose records measure that); either at
    most n − 1, so a site of few rows still exports. A ``dimension`` its rows or columns cannot give is refused,
    naming the setting and the largest value that works."""
    control = ensure(control)
    opts = {**SITE_DEFAULTS, **site.settings}
    if site.anchor is None:
        raise ConfigError("this method needs the project's anchor file")
    n, m = site.X.shape
    if n < MIN_ROWS:
        raise ConfigError(f"this site has {n} rows; at least {MIN_ROWS} are needed")
    # the default: the papers' m − 1 or the product's rule, either within what the site's rows allow
    default = resolved_dimension(None, m, n, papers=papers_dimension)
    top = largest_dimension(opts["reduction"], n, m)
    if opts["dimension"] is not None and not 1 <= int(opts["dimension"]) <= top:
        raise ConfigError(dimension_refusal(int(opts["dimension"]), n, m, top, opts["reduction"], default))
    formal = opts["privacy_epsilon"] is not None
    # Under the formal option every protective draw (the map, the shuffle, the noise, the label flips) comes from
    # the operating system, never from the seed (core/privacy/protective.py); without it the seed fixes them all.
    rng = protective_rng() if formal else np.random.default_rng(opts["seed"])
    control.step(0.05, "fitting the private reduction")
    dimension = resolved_dimension(opts["dimension"], m, n, papers=papers_dimension)
    if formal:
        red = _formal_map(site, dimension, rng)
    else:
        red = PrivateReduction(opts["reduction"], dimension, random_state=int(rng.integers(2**31)),
                               standardise=standardise).fit(site.X)
    control.step(0.4, "reducing the rows")
    perm = rng.permutation(n)
    X_tilde = red.transform(site.X, dtype=np.float32, rows=perm)  # f(X) in the shuffled order
    y_shipped = None if site.y is None else site.y[perm]
    accounting = None
    if formal:
        delta = dp.default_delta(n) if opts["privacy_delta"] is None else float(opts["privacy_delta"])
        k_dim = red.map_.n_components
        accounting = dp.accounting(float(opts["privacy_epsilon"]), delta, labels=site.y is not None,
                                   k=len(site.classes), clip=float(np.sqrt(k_dim)))
        dp.clip_rows(X_tilde, accounting["clip"])
        X_tilde += (rng.standard_normal(X_tilde.shape) * accounting["sigma"]).astype(np.float32)
        if y_shipped is not None:
            y_shipped = dp.randomised_response(y_shipped, len(site.classes), accounting["epsilon_labels"], rng)
    if opts["noise"]:
        scale = X_tilde.std(axis=0, dtype=np.float64) * float(opts["noise"])
        X_tilde += (rng.standard_normal(X_tilde.shape, dtype=np.float32) * scale.astype(np.float32))
    control.step(0.8, "reducing the anchor")
    A_tilde = red.transform(site.anchor, dtype=np.float32)
    if formal:
        dp.clip_rows(A_tilde, accounting["clip"])  # the same f as the rows' (no noise: the anchor is shared data)
    k = red.map_.n_components
    arrays = {"x_tilde": X_tilde, "anchor_tilde": A_tilde}
    disclosures = [
        Disclosure("x_tilde", X_tilde.shape, "float32",
                   f"your {n} rows, encoded in the kit's {m} matrix columns (levels as 0/1 columns, missing cells "
                   f"filled as the kit says), after a private {opts['reduction'].upper()} reduction from {m} to {k} "
                   "columns, in shuffled order"),
        Disclosure("anchor_tilde", A_tilde.shape, "float32",
                   "the shared synthetic anchor rows after the same private reduction"),
    ]
    if site.y is not None:  # under formal noise: the randomised classes and their counts (post-processing)
        counts = np.bincount(y_shipped, minlength=len(site.classes)).astype(np.int64)
        arrays["label_counts"] = counts
        disclosures.append(Disclosure("label_counts", counts.shape, "int64", "how many rows of each class"))
        if ship_labels:
            arrays["y"] = y_shipped.astype(np.int32)
            disclosures.append(Disclosure("y", (n,), "int32", "the class of every row (in the same shuffled order)"))
    if site.ids_hashed is not None:
        arrays["id_hash"] = site.ids_hashed[perm]
        disclosures.append(Disclosure("id_hash", site.ids_hashed.shape, "uint8",
                                      "keyed hashes of the row ids (the analyst cannot reverse them)"))
    manifest = {"n_rows": n, "n_features": m, "dimension": k, "reduction": opts["reduction"],
                "noise": float(opts["noise"]), "anchor_rows": int(A_tilde.shape[0]), "standardised": standardise}
    if formal:
        manifest["reduction"] = FORMAL_REDUCTION
        manifest["privacy"] = accounting
    if red.variance_kept_ is not None and not formal:
        manifest["variance_kept"] = round(red.variance_kept_, 4)
        disclosures.append(Disclosure("variance_kept", (1,), "number",
                                      "the share of your columns' variance the reduction keeps (one number, "
                                      "so the analyst can judge how faithful the result can be)"))
    for d in disclosures:
        d.plain = ARRAY_WORDS.get(d.name, "")
    stays = list(STAYS_WORDS)
    control.step(1.0, "reduction done")
    labels = ("rows" if ship_labels else "counts") if site.y is not None else "none"
    plain = leaves_sentence(n, m, k, labels=labels, ids=site.ids_hashed is not None, noise=float(opts["noise"]))
    if formal:
        plain += " " + dp.describe(accounting)
    return SiteExport(arrays, manifest, {**red.map_.to_arrays(), "permutation": perm.astype(np.int64)},
                      {"reduction": opts["reduction"], "dimension": k}, disclosures, stays, plain)


# ---- the DC family's bundle declaration (FORMAT.md §6, §7, §7.1): what dc_site_compute writes, what the analyst checks
NOISE_HIGH = next(s.high for s in SITE_SETTINGS if s.name == "noise")
DC_BUNDLE_FIELDS = (
    Field("n_rows", "int", required=True, low=0), Field("n_features", "int", required=True, low=1),
    Field("dimension", "int", required=True, low=1),
    Field("reduction", "text", required=True, choices=(*REDUCTIONS, FORMAL_REDUCTION)),
    Field("anchor_rows", "int", required=True, low=1), Field("noise", "number", low=0.0, high=NOISE_HIGH),
    Field("privacy", "object", schema="privacy"))


def _formal(m) -> bool:
    return "privacy" in m


DC_REDUCED_RULES = (  # every bundle whose rows (or distilled rows) come from dc_site_compute
    Rule("n_features is the kit's number of encoded columns (of the bundle's feature block)",
         lambda m, a, f: m["n_features"] == f.width),
    Rule("dimension (the numbers per row) is at most n_features", lambda m, a, f: m["dimension"] <= m["n_features"]),
    Rule(f"reduction is '{FORMAL_REDUCTION}' exactly when the bundle carries formal noise (privacy)",
         lambda m, a, f: (m["reduction"] == FORMAL_REDUCTION) == _formal(m)),
    Rule("the formal noise's accounting (privacy) is the one its ε and δ give for the bundle's dimension and the kit's "
         "classes (clip √dimension, sensitivity 2 × clip, σ, the split of ε)",
         lambda m, a, f: not _formal(m) or dp.accounting_agrees(m["privacy"], m["dimension"], f.classes)),
    Rule("under formal noise every anchor row is clipped to privacy.clip", lambda m, a, f: not _formal(m)
         or dp.rows_clipped(a["anchor_tilde"], m["privacy"]["clip"])),
    Rule("under formal noise no figure its ε does not cover leaves (no own_cv, no variance_kept)",
         lambda m, a, f: not _formal(m) or not ({"own_cv", "variance_kept"} & set(m))),
)
DC_ROWS_RULES = (  # bundles that ship every reduced row
    *DC_REDUCED_RULES,
    Rule("under formal noise the rows (x_tilde) carry at least the noise privacy.sigma says",
         lambda m, a, f: not _formal(m) or dp.noise_present(a["x_tilde"], m["privacy"]["sigma"],
                                                            m["privacy"]["clip"])),
)


def _counts_of_y(m, a, f) -> bool:
    y, counts = a["y"].astype(np.int64), a["label_counts"]
    if len(y) and (y.min() < 0 or y.max() >= f.classes):
        return True  # labels outside the class list: check_dc_bundle names that
    return bool(np.array_equal(counts, np.bincount(y, minlength=f.classes)))


LABELLED_DC_RULES = (*DC_ROWS_RULES, Rule("label_counts counts the classes of y, one count per class of the kit",
                                          _counts_of_y))


def dc_bundle_arrays(*, labelled: bool, ids: bool = False) -> tuple[Array, ...]:
    """The arrays of a DC-family bundle: x_tilde (n_rows, dimension) and anchor_tilde (anchor_rows, dimension)
    float32; labelled: y (n_rows,) int32 and label_counts (classes,) int64; ids: id_hash (n_rows, 32) uint8, present
    exactly when the kit links feature blocks by row id."""
    out = [Array("x_tilde", "<f4", ("n_rows", "dimension")), Array("anchor_tilde", "<f4", ("anchor_rows", "dimension"))]
    if labelled:
        out += [Array("y", "<i4", ("n_rows",)), Array("label_counts", "<i8", ("classes",))]
    if ids:
        out.append(Array("id_hash", "|u1", ("n_rows", 32), present=lambda m, f: f.linked))
    return tuple(out)


def dimension_refusal(asked: int, n: int, m: int, top: int, reduction: str, default: int) -> str:
    """One sentence: the numbers per row asked for do not fit this site's rows and columns, naming the setting
    (CLI and app), the largest value that works and the default."""
    why = (f"a {reduction.upper()} of this site's {n} rows can keep at most {top}" if top < m
           else f"this site's table has {m} columns")
    return (f"{asked} numbers per row do not fit: {why}; choose at most {top} (--dimension {top} on the command "
            f"line, 'Numbers per row' in the app), or leave it empty for the default ({default} here)")


class _FormalMap:
    """f(x) = ((x − μ_pub) / σ_pub) Q: the data-independent map of the formal noise option (core.privacy.mechanism)."""

    variance_kept_ = None

    def __init__(self, map_: AffineMap):
        self.map_ = map_

    def transform(self, X, dtype=np.float64, rows=None):
        return self.map_.transform(X, dtype=dtype, rows=rows)


def _formal_map(site: SiteInput, dimension: int | None, rng: np.random.Generator) -> _FormalMap:
    """The formal noise option's map, from the kit's public means and spreads and a random orthogonal Q."""
    m = site.X.shape[1]
    if site.scale is None or site.centre is None or len(site.scale) != m or len(site.centre) != m:
        raise ConfigError("the formal privacy option (privacy_epsilon) needs the kit's public mean and spread of "
                          "every column, which this kit does not publish; ask the analyst for a kit made with "
                          "--statistics, or export without privacy_epsilon")
    k = default_dimension(m) if dimension is None else int(dimension)
    Q = dp.random_orthogonal(m, k, rng)
    return _FormalMap(AffineMap(np.asarray(site.centre, np.float64), Q / np.asarray(site.scale, np.float64)[:, None]))


def site_map(private_arrays: dict[str, np.ndarray]) -> AffineMap:
    return AffineMap.from_arrays(private_arrays)


def check_anchor_width(bundles: list[ReceivedBundle]) -> None:
    """Every bundle was reduced from the same anchor (same row count)."""
    if len({b.arrays["anchor_tilde"].shape[0] for b in bundles}) != 1:
        raise FormatError("bundles were made with different anchors (different anchor row counts)")


def check_dc_bundle(arrays: dict[str, np.ndarray], n_classes: int | None, *, need_labels: bool) -> None:
    """Shapes and ranges of a DC-family bundle; FormatError naming what is wrong."""
    for key in ("x_tilde", "anchor_tilde"):
        a = arrays.get(key)
        if a is None or a.ndim != 2 or a.dtype.kind != "f":
            raise FormatError(f"bundle lacks a 2-D float array '{key}'")
        if not np.all(np.isfinite(a)):
            raise FormatError(f"bundle array '{key}' holds non-finite values")
    X, A = arrays["x_tilde"], arrays["anchor_tilde"]
    if X.shape[1] != A.shape[1] or X.shape[0] < MIN_ROWS:
        raise FormatError("bundle rows and anchor have different widths, or too few rows")
    if need_labels:
        y = arrays.get("y")
        if y is None or y.shape != (X.shape[0],) or y.dtype.kind not in "iu":
            raise FormatError("bundle lacks per-row labels 'y' of the right length")
        if n_classes is not None and (y.min() < 0 or y.max() >= n_classes):
            raise FormatError("bundle labels are outside the kit's class list")
        counts = arrays.get("label_counts")
        if n_classes is not None and counts is not None and counts.shape != (n_classes,):
            raise FormatError(f"bundle's class counts 'label_counts' are not one count per class of the kit "
                              f"({n_classes})")


class LabelledDCSite:
    """The DC family's site side for classification (FORMAT.md §7), mixed into a :class:`Method` before it:
    every privately reduced row ships with its class, and the analyst checks the bundle's shapes and labels."""

    discloses = ROWS_RELEASE

    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport:
        return dc_site_compute(site, ship_labels=True, control=control)

    def check_bundle(self, bundle: ReceivedBundle, kit) -> None:
        super().check_bundle(bundle, kit)  # the Method's family check
        check_dc_bundle(bundle.arrays, len(kit.schema.classes), need_labels=True)
