"""Field schemas of the JSON objects a sealed file carries, and the one check every read goes through.

Anything read from a bundle's or a package's manifest may be forged by an insider who holds a valid key, so no
field reaches ``int()``, ``float()``, indexing or a comparison before :func:`check_fields` has checked its type
and range against the schema of that file kind. A schema is a tuple of :class:`Field` (name → type, range,
required); each file kind has one, registered here by name:

* ``bundle`` / ``package``: the members every bundle or package carries (FORMAT.md §12);
* ``bundle:<method>`` / ``package:<method>``: those plus the members the method declares next to its code
  (``Method.bundle_fields`` / ``Method.package_fields``, registered when the method class is defined);
* ``own_cv``, ``architecture:mlp``, ``architecture:dual_encoder``: nested objects checked where they are read.

A member that no schema declares is not read by the program.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import FormatError

MAX_TEXT = 10_000  # characters of a text member (a site's name, a note, …)
MAX_ITEMS = 100_000  # entries of a list member (per-cluster sizes, …)
MAX_WHOLE = 1 << 53  # whole numbers beyond this lose precision in JSON readers; none is that large


@dataclass(frozen=True)
class Field:
    """One member of a JSON object: its type (``int``, ``number``, ``bool``, ``text``, ``hex``, ``list``,
    ``object`` or ``any``), inclusive range ``low``…``high`` (numbers), allowed ``choices``, whether it must be
    present (``required``) and may be ``null`` (``nullable``); ``items`` types a list's entries and ``schema``
    names the registered schema an object member must meet."""

    name: str
    type: str
    required: bool = False
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    nullable: bool = False
    items: str | None = None
    schema: str | None = None
    size: int = 32  # hex: bytes

    def expected(self) -> str:
        """What the field must be, in words (for the refusal sentence)."""
        if self.choices:
            words = " or ".join(repr(c) for c in self.choices)
        elif self.type == "int":
            words = "a whole number" + _range_words(self.low, self.high)
        elif self.type == "number":
            words = "a finite number" + _range_words(self.low, self.high)
        elif self.type == "hex":
            words = f"{2 * self.size} hexadecimal characters"
        else:
            words = {"bool": "true or false", "text": "text", "list": "a list", "object": "an object",
                     "any": "any value"}[self.type]
            if self.type == "list" and self.items:
                words += " of " + _PLURAL[self.items]
        return words + (" or null" if self.nullable else "")


_PLURAL = {"text": "texts", "int": "whole numbers", "number": "numbers", "object": "objects"}


def _range_words(low, high) -> str:
    if low is not None and high is not None:
        return f" from {low:g} to {high:g}"
    if low is not None:
        return f" of at least {low:g}"
    if high is not None:
        return f" of at most {high:g}"
    return ""


SCHEMAS: dict[str, tuple[Field, ...]] = {}


def register_fields(kind: str, fields: tuple[Field, ...]) -> None:
    """Declare (or replace) the schema of ``kind``; names must be unique within it."""
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        raise ValueError(f"schema {kind!r} declares a field twice")
    SCHEMAS[kind] = tuple(fields)


def _whole(v: Any) -> bool:
    return type(v) is int and -MAX_WHOLE <= v <= MAX_WHOLE


def _number(v: Any) -> bool:
    return (type(v) is float and math.isfinite(v)) or _whole(v)


def _value_ok(f: Field, v: Any) -> bool:
    if v is None:
        return f.nullable
    if f.choices:
        return any(type(v) is type(c) and v == c for c in f.choices)
    t = f.type
    if t == "any":
        return True
    if t == "bool":
        return type(v) is bool
    if t == "text":
        return type(v) is str and len(v) <= MAX_TEXT
    if t == "hex":
        return type(v) is str and len(v) == 2 * f.size and all(c in "0123456789abcdef" for c in v)
    if t in ("int", "number"):
        if not (_whole(v) if t == "int" else _number(v)):
            return False
        return (f.low is None or v >= f.low) and (f.high is None or v <= f.high)
    if t == "list":
        if type(v) is not list or len(v) > MAX_ITEMS:
            return False
        return f.items is None or all(_value_ok(Field("", f.items), x) for x in v)
    if t == "object":
        return type(v) is dict
    raise ValueError(f"unknown field type {t!r}")


def check_fields(kind: str, mapping: Any, where: str) -> Mapping[str, Any]:
    """``mapping`` checked against the registered schema of ``kind``; returns it unchanged.

    ``where`` names the object for a person ("the bundle's manifest"). The first field that is missing (when
    required), of the wrong type, out of range or not one of its choices raises a FormatError naming
    ``where``, the field, the value (shortened) and what was expected. Nested objects with a ``schema`` are
    checked the same way."""
    if kind not in SCHEMAS:
        raise ValueError(f"no field schema is registered for {kind!r}")
    if type(mapping) is not dict:
        raise FormatError(f"{where} is not a JSON object")
    for f in SCHEMAS[kind]:
        if f.name not in mapping:
            if f.required:
                raise FormatError(f"{where} lacks '{f.name}' ({f.expected()}); the sender must write the file "
                                  "again with DC Studio")
            continue
        v = mapping[f.name]
        if not _value_ok(f, v):
            raise FormatError(f"{where} gives '{f.name}' as {_short(v)}, not {f.expected()}; the sender must write "
                              "the file again with DC Studio")
        if f.schema and v is not None:
            check_fields(f.schema, v, f"{where} ('{f.name}')")
    return mapping


def _short(v: Any) -> str:
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return f"a list of {len(v)}"
    try:
        text = json.dumps(v, ensure_ascii=False)  # as the file spells it: null, true, "text"
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 40 else text[:37] + "…"


def check_arrays(declared: Mapping[str, tuple[str, int]], arrays: Mapping[str, Any], where: str) -> None:
    """Every array of a file is one ``declared`` (name → (§4.6 descr, number of dimensions)) with that dtype and
    number of dimensions, read from its ``.npy`` header; FormatError naming ``where``, the array and what was
    expected. Which arrays must be present, and their exact shapes, are the method's own checks."""
    for name, a in arrays.items():
        if name not in declared:
            raise FormatError(f"{where} holds an array '{name}' this method does not ship "
                              f"(it ships {', '.join(sorted(declared)) or 'none'})")
        descr, ndim = declared[name]
        if a.dtype.str != descr or a.ndim != ndim:
            raise FormatError(f"{where} holds '{name}' as {a.dtype.str} with {a.ndim} dimension(s), not {descr} "
                              f"with {ndim}")


# ---- the schemas every method shares --------------------------------------------------------------------------
HEX64 = {"type": "hex", "size": 32}

BUNDLE_FIELDS = (
    Field("method", "text", required=True),
    Field("family", "text", required=True),
    Field("kit_digest", **HEX64, required=True),
    Field("schema_digest", **HEX64, required=True),
    Field("site", "text"),
    Field("software", "text"),
    Field("n_rows", "int", low=0),
    Field("n_features", "int", low=1),
    Field("block", "text"),
    Field("standardised", "bool"),
    Field("noise", "number", low=0),
    Field("variance_kept", "number", low=0, high=1),
    Field("own_cv", "object", schema="own_cv"),
    Field("filled", "object"),
    Field("privacy", "object", schema="formal_privacy"),  # a formal (ε, δ) option's accounting (FORMAT §7)
)
PACKAGE_FIELDS = (
    Field("method", "text", required=True),
    Field("site", "text"),
    Field("kit_digest", **HEX64),
    Field("software", "text"),
    Field("run_id", "text"),
    Field("run_created", "text"),
    Field("run_seq", "int", low=-1),
    Field("classes", "list", items="text"),
)
# The accounting a formal (ε, δ) option ships (core/privacy/mechanism.py, core/methods/metalr/private_fit.py): what
# the analyst's summary, report and model cards state about it.
register_fields("formal_privacy", (
    Field("epsilon", "number", required=True, low=0), Field("delta", "number", required=True, low=0, high=1),
    Field("epsilon_rows", "number", low=0), Field("epsilon_labels", "number", low=0),
    Field("label_keep", "number", low=0, high=1), Field("sigma", "number", low=0), Field("clip", "number", low=0),
    *(Field(k, "text") for k in ("mechanism", "calibration", "composition", "adjacency"))))
register_fields("bundle", BUNDLE_FIELDS)
register_fields("package", PACKAGE_FIELDS)

# The selection outcome (FORMAT §7): informative except ``model``/``own_kind``.
ESTIMATE_FIELDS = (Field("accuracy", "number", low=0, high=1), Field("rows", "int", low=0),
                   Field("low", "number", low=0, high=1), Field("high", "number", low=0, high=1),
                   Field("weak", "bool"), Field("auc", "number", low=0, high=1, nullable=True),
                   Field("balanced_accuracy", "number", low=0, high=1, nullable=True),
                   Field("source", "text"), Field("what", "text"))
register_fields("estimate", ESTIMATE_FIELDS)
register_fields("own_cv", (  # a site's own model cross-validated at the site (FORMAT §7; core/learn/own_cv.py)
    Field("rows", "int", required=True, low=2), Field("folds", "int", required=True, low=2, high=50),
    Field("repeats", "int", required=True, low=1, high=50),
    *(Field(k, "number", required=True, low=0, high=1) for k in ("accuracy", "balanced_accuracy", "auc")),
    Field("log_loss", "number", required=True, low=0, high=1e6), Field("events", "int", low=0),
    Field("model", "text")))
register_fields("kit", (  # the signed body of a .dckit (FORMAT §8); schema, analyst and settings have their own readers
    *(Field(k, "text", required=True) for k in ("name", "method", "project_id", "created")),
    Field("task", "text", required=True, choices=("classification", "clustering")),
    Field("schema", "object", required=True), Field("analyst", "object", required=True),
    Field("settings", "object", nullable=True), Field("anchor", "object", nullable=True),
    Field("roster", "list", nullable=True, items="object")))
register_fields("kit:roster", (Field("name", "text", required=True), Field("fingerprint", "text", required=True)))
register_fields("anchor", (  # a .dcanchor (FORMAT §9); its params are checked by AnchorFile._validate
    Field("format", "text", required=True), Field("project_id", "text", required=True),
    Field("kind", "text", required=True, choices=("uniform", "gaussian", "smote")),
    Field("rows", "int", required=True, low=1, high=10_000_000), Field("secret", "hex", required=True),
    Field("params", "object", required=True), Field("created", "text", required=True)))
register_fields("architecture:mlp", (
    Field("type", "text", required=True, choices=("mlp",)), Field("activation", "text", choices=("relu",)),
    Field("layers", "list", required=True, items="int")))
register_fields("architecture:dual_encoder", (
    Field("type", "text", required=True, choices=("dual_encoder",)), Field("activation", "text", choices=("relu",)),
    Field("encoder_layers", "list", required=True, items="int"), Field("classes", "int", required=True, low=2)))

# A DC-family package (§7, §7.1, §7.2 single): what its apply and the site's screens read.
CLUSTER_PACKAGE_FIELDS = (
    Field("cluster", "int", low=0), Field("cluster_size", "int", low=1), Field("t", "number", nullable=True),
    Field("architecture", "object", required=True), Field("alignment", "text", choices=("affine", "linear")),
    Field("dimension", "int", low=1), Field("model", "text", choices=("cluster", "own", "global")),
    Field("own_kind", "text", nullable=True), Field("expected", "object", nullable=True, schema="estimate"),
    Field("cluster_model", "object", nullable=True, schema="estimate"),
    Field("own_model", "object", nullable=True, schema="estimate"),
    Field("expected_gain", "number", nullable=True), Field("classes", "list", required=True, items="text"))
# A DC-family bundle (§7): the members the analyst reads besides the arrays.
DC_BUNDLE_FIELDS = (
    Field("n_rows", "int", required=True, low=0), Field("n_features", "int", required=True, low=1),
    Field("dimension", "int", low=1),
    Field("reduction", "text", choices=("pca", "lpp", "random", "random-orthogonal")),  # the last: formal noise
    Field("anchor_rows", "int", low=1))


# The arrays of a DC-family bundle (§6, §7): x_tilde and anchor_tilde float32; labels, counts and row-id hashes.
DC_BUNDLE_ARRAYS = {"x_tilde": ("<f4", 2), "anchor_tilde": ("<f4", 2), "label_counts": ("<i8", 1), "y": ("<i4", 1),
                    "id_hash": ("|u1", 2)}


def method_schemas(name: str, bundle: tuple[Field, ...], package: tuple[Field, ...]) -> None:
    """Register ``bundle:<name>`` and ``package:<name>``: the shared members, overridden and extended by the
    method's own (a method may tighten a shared member, e.g. make ``n_rows`` required)."""
    for kind, common, own in (("bundle", BUNDLE_FIELDS, bundle), ("package", PACKAGE_FIELDS, package)):
        mine = {f.name for f in own}
        register_fields(f"{kind}:{name}", tuple(f for f in common if f.name not in mine) + tuple(own))
