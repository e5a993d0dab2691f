"""The file formats' declarations: each file kind is ONE declaration, used both to write it and to check it.

A declaration (:class:`Declaration`) names a JSON object's members (:class:`Field`: type, range, choices, required),
the arrays a file may hold (:class:`Array`: dtype and shape, each dimension a number, a member of the manifest or a
fact of the kit, :class:`Facts`) and the relations between them (:class:`Rule`). Writers go through
:meth:`Declaration.write`: an undeclared member, a value outside its declaration, or arrays that break it are a
FormatError at the writer (the other end would refuse the file). Readers go through :meth:`Declaration.check`, which
returns only the declared members: a member no declaration names is never read. Anything read may be forged by an
insider who holds a valid key, so no member reaches ``int()``, ``float()``, indexing or a comparison before it was
checked here.

Registered by name (:func:`declaration`):

* ``bundle`` / ``package``: the members every bundle or package carries (FORMAT.md §12);
* ``bundle:<method>`` / ``package:<method>``: those plus what the method declares next to its code
  (``Method.bundle_fields``, ``bundle_arrays``, ``bundle_rules``, ``package_fields``), registered when the method
  class is defined (:func:`method_schemas`);
* ``kit``, ``kit:roster``, ``anchor`` (FORMAT.md §8, §9), ``privacy`` (the formal-noise block,
  :mod:`core.privacy.mechanism`), ``own_cv``, ``estimate``, ``architecture:mlp``, ``architecture:dual_encoder``,
  ``nn_disclosure``: the nested objects.

docs/FORMAT.md describes these declarations; ``tests/formats/test_declarations.py`` keeps the two in step.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import FormatError

MAX_TEXT = 10_000  # characters of a text member (a site's name, a note, …)
MAX_ITEMS = 100_000  # entries of a list member (per-cluster sizes, …)
MAX_WHOLE = 1 << 53  # whole numbers beyond this lose precision in JSON readers; none is that large
SENDER_FIX = "; the sender must write the file again with DC Studio"


@dataclass(frozen=True)
class Field:
    """One member of a JSON object: its type (``int``, ``number``, ``bool``, ``text``, ``hex``, ``list``,
    ``object`` or ``any``), inclusive range ``low``…``high`` (numbers), allowed ``choices``, whether it must be
    present (``required``) and may be ``null`` (``nullable``); ``items`` types a list's entries and ``schema``
    names the registered declaration an object member (or each object of a list) must meet."""

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


@dataclass(frozen=True)
class Facts:
    """What the kit fixes about one file, known at both ends: ``width`` the encoded matrix columns (of the bundle's
    feature block), ``classes`` the kit's class count (0 for clustering), ``features`` the raw column names (of
    the block), ``linked`` whether rows are linked across blocks by hashed ids, ``settings`` the method's
    analyst-side settings (the kit's, over the defaults)."""

    width: int
    classes: int = 0
    features: tuple[str, ...] = ()
    linked: bool = False
    settings: Mapping[str, Any] = field(default_factory=dict)


Dimension = int | str | Callable[[Mapping, Facts], int] | None


@dataclass(frozen=True)
class Array:
    """One array a file may hold: its §4.6 ``dtype`` and its ``shape``, each dimension a whole number, the name of
    a manifest member or of a :class:`Facts` field it equals, a function of (manifest, facts), or None (any size).
    ``present``: ``"always"``, ``"optional"``, or a function of (manifest, facts) saying whether it must be there
    (it must then be absent otherwise)."""

    name: str
    dtype: str
    shape: tuple[Dimension, ...]
    present: str | Callable[[Mapping, Facts], bool] = "always"

    def dims(self, manifest: Mapping, facts: Facts | None) -> tuple[int | None, ...]:
        """The shape this file must have (None: any size)."""
        out = []
        for d in self.shape:
            if d is None or type(d) is int:
                out.append(d)
            elif callable(d):
                out.append(d(manifest, facts) if facts is not None else None)
            elif d in manifest:
                out.append(manifest[d])
            else:
                out.append(getattr(facts, d, None) if facts is not None else None)
        return tuple(out)

    def words(self) -> str:
        """The declared shape in words, e.g. ``(n_rows, dimension)``."""
        names = [d if isinstance(d, str) else str(d) if type(d) is int else "…" for d in self.shape]
        return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


@dataclass(frozen=True)
class Rule:
    """A relation a file must meet between its members, its arrays and the kit: ``holds(manifest, arrays, facts)``
    is true when it does (members were typed before); ``says`` what it requires, naming the members."""

    says: str
    holds: Callable[[Mapping, Mapping, Facts], bool]


@dataclass(frozen=True)
class Declaration:
    """One file kind: its members, its arrays (None: checked by the method's own code) and its rules."""

    kind: str
    fields: tuple[Field, ...]
    arrays: tuple[Array, ...] | None = None
    rules: tuple[Rule, ...] = ()

    def check(self, mapping: Any, where: str, arrays: Mapping[str, Any] | None = None,
              facts: Facts | None = None) -> dict:
        """The declared members of ``mapping`` (an undeclared one is left out: never read), each checked; with
        ``arrays`` and ``facts``, the arrays and the rules too. FormatError naming ``where``, the member or array
        and what was expected."""
        check_fields(self.kind, mapping, where)
        out = declared_only(self.kind, mapping)
        if arrays is not None and facts is not None:
            self._check_arrays(out, arrays, facts, where)
            for rule in self.rules:
                if not _holds(rule, out, arrays, facts):
                    raise FormatError(f"{where} does not agree with itself: {rule.says}{SENDER_FIX}")
        return out

    def write(self, mapping: Any, arrays: Mapping[str, Any] | None = None, facts: Facts | None = None) -> dict:
        """``mapping`` as it will be written, after checking that every member (at any depth) is declared and meets
        its declaration, and (with ``arrays`` and ``facts``) that the arrays and rules hold: FormatError otherwise,
        before anything is written."""
        base = self.kind.split(":")[0]
        what = {"bundle": "the bundle's manifest", "package": "the package's manifest", "kit": "the kit",
                "anchor": "the anchor file"}.get(base, f"the {base} block")
        extra = _undeclared(self.kind, mapping)
        try:
            if extra:
                raise FormatError(f"{what} would carry '{extra}', which the declaration {self.kind!r} does not name")
            self.check(mapping, what, arrays, facts)
        except FormatError as exc:
            raise FormatError(f"DC Studio refused to write a file: {exc.message.removesuffix(SENDER_FIX)}; the "
                              "other end would refuse it (a fault of this program: please report it)") from exc
        return dict(mapping)

    def _check_arrays(self, manifest: Mapping, arrays: Mapping[str, Any], facts: Facts, where: str) -> None:
        if self.arrays is None:
            return
        declared = {a.name: a for a in self.arrays}
        for name in arrays:
            if name not in declared:
                raise FormatError(f"{where} holds an array '{name}' this method does not ship "
                                  f"(it ships {', '.join(sorted(declared)) or 'none'})")
        for spec in self.arrays:
            a = arrays.get(spec.name)
            need = spec.present(manifest, facts) if callable(spec.present) else spec.present
            if a is None:
                if need is True or need == "always":
                    raise FormatError(f"{where} lacks the array '{spec.name}'")
                continue
            if need is False:
                raise FormatError(f"{where} holds an array '{spec.name}' that a file like it does not ship")
            want = spec.dims(manifest, facts)
            if a.dtype.str != spec.dtype or a.ndim != len(want) or any(
                    w is not None and w != s for w, s in zip(want, a.shape, strict=True)):
                shown = "(" + ", ".join("…" if w is None else str(w) for w in want) + ("," * (len(want) == 1)) + ")"
                raise FormatError(f"{where} holds '{spec.name}' as {a.dtype.str} of shape {tuple(a.shape)}, not "
                                  f"{spec.dtype} of shape {spec.words()} = {shown}")


def _holds(rule: Rule, manifest: Mapping, arrays: Mapping, facts: Facts) -> bool:
    try:
        return bool(rule.holds(manifest, arrays, facts))
    except (KeyError, TypeError, ValueError, IndexError, ArithmeticError):
        return False  # a rule that cannot be evaluated on these values does not hold


DECLARATIONS: dict[str, Declaration] = {}
SCHEMAS: dict[str, tuple[Field, ...]] = {}  # kind → its fields (the members part of DECLARATIONS)


def register(decl: Declaration) -> Declaration:
    """Declare (or replace) a file kind; member names must be unique within it."""
    names = [f.name for f in decl.fields]
    if len(set(names)) != len(names):
        raise ValueError(f"declaration {decl.kind!r} names a field twice")
    DECLARATIONS[decl.kind] = decl
    SCHEMAS[decl.kind] = tuple(decl.fields)
    return decl


def register_fields(kind: str, fields: tuple[Field, ...]) -> Declaration:
    """Declare (or replace) a kind that has only members (a nested object)."""
    return register(Declaration(kind, tuple(fields)))


def declaration(kind: str) -> Declaration:
    """The registered declaration of ``kind``."""
    if kind not in DECLARATIONS:
        raise ValueError(f"no declaration is registered for {kind!r}")
    return DECLARATIONS[kind]


def write_fields(kind: str, mapping: Any) -> dict:
    """``mapping`` checked against the declaration of ``kind`` as its writer must (:meth:`Declaration.write`)."""
    return declaration(kind).write(mapping)


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
    """``mapping`` checked against the registered members of ``kind``; returns it unchanged.

    ``where`` names the object for a person ("the bundle's manifest"). The first field that is missing (when
    required), of the wrong type, out of range or not one of its choices raises a FormatError naming
    ``where``, the field, the value (shortened) and what was expected. Nested objects with a ``schema`` (or lists
    of them) are checked the same way."""
    if kind not in SCHEMAS:
        raise ValueError(f"no field schema is registered for {kind!r}")
    if type(mapping) is not dict:
        raise FormatError(f"{where} is not a JSON object")
    for f in SCHEMAS[kind]:
        if f.name not in mapping:
            if f.required:
                raise FormatError(f"{where} lacks '{f.name}' ({f.expected()}){SENDER_FIX}")
            continue
        v = mapping[f.name]
        if not _value_ok(f, v):
            raise FormatError(f"{where} gives '{f.name}' as {_short(v)}, not {f.expected()}{SENDER_FIX}")
        if f.schema and v is not None:
            if f.type == "list":
                for k, item in enumerate(v):
                    check_fields(f.schema, item, f"{where} ('{f.name}' entry {k + 1})")
            else:
                check_fields(f.schema, v, f"{where} ('{f.name}')")
    return mapping


def declared_only(kind: str, mapping: Mapping[str, Any]) -> dict:
    """The members of a checked ``mapping`` that ``kind`` declares (nested declared objects likewise): what a
    reader may use."""
    out = {}
    for f in SCHEMAS[kind]:
        if f.name not in mapping:
            continue
        v = mapping[f.name]
        if f.schema and type(v) is dict:
            v = declared_only(f.schema, v)
        elif f.schema and type(v) is list:
            v = [declared_only(f.schema, x) for x in v]
        out[f.name] = v
    return out


def _undeclared(kind: str, mapping: Any) -> str | None:
    """The first member of ``mapping`` (at any depth, as 'a.b') that ``kind`` does not declare, or None."""
    if type(mapping) is not dict:
        return None
    fields = {f.name: f for f in SCHEMAS[kind]}
    for key, v in mapping.items():
        f = fields.get(key)
        if f is None:
            return str(key)
        if f.schema and type(v) is dict:
            inner = _undeclared(f.schema, v)
        elif f.schema and type(v) is list:
            inner = next((x for x in (_undeclared(f.schema, item) for item in v) if x), None)
        else:
            inner = None
        if inner:
            return f"{key}.{inner}"
    return None


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


# ---- the declarations every method shares ---------------------------------------------------------------------
HEX64 = {"type": "hex", "size": 32}


def site_rows(manifest: Mapping) -> int | None:
    """All the rows behind a bundle: its exported ``n_rows`` plus the rows a site-scored method set aside to check
    the package (``rows_kept_at_site``, declared only for such methods): the one count every reader uses."""
    n = manifest.get("n_rows")
    return None if n is None else n + manifest.get("rows_kept_at_site", 0)


def _own_cv_rows(m: Mapping, arrays: Mapping, facts: Facts) -> bool:
    cv = m.get("own_cv")
    if cv is None or site_rows(m) is None:
        return True
    return cv["rows"] <= site_rows(m) and cv.get("events", 0) <= cv["rows"]


def _filled(m: Mapping, arrays: Mapping, facts: Facts) -> bool:
    filled = m.get("filled")
    if filled is None:
        return True
    top = site_rows(m)
    return all(k in facts.features and _whole(v) and 0 <= v and (top is None or v <= top) for k, v in filled.items())


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
BUNDLE_RULES = (
    Rule("the own model's scores (own_cv) rest on at most the site's rows (n_rows + rows_kept_at_site), and their "
         "events on at most their rows", _own_cv_rows),
    Rule("'filled' counts filled cells of the kit's columns only, each a whole number from 0 to the site's rows",
         _filled),
)
# A method whose own_model_choice is "site" sets rows aside at export (core/methods/promise.py) and says how many.
SITE_SCORED_FIELDS = (Field("rows_kept_at_site", "int", low=0),)
SITE_SCORED_RULES = (
    Rule("the rows set aside at the site (rows_kept_at_site) are at most the rows exported (n_rows): a quarter of "
         "each class", lambda m, a, f: m.get("rows_kept_at_site", 0) <= m.get("n_rows", 0)),)
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
    *(Field(k, "text") for k in ("mechanism", "calibration", "composition", "adjacency")),
    Field("not_covered", "list", items="text")))
register(Declaration("bundle", BUNDLE_FIELDS, None, BUNDLE_RULES))
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
register_fields("update", (  # a package's word on the site's paired comparison (issue #37; core/learn/site_update.py)
    Field("by", "text", required=True, choices=("site",)), Field("rows", "int", low=0),
    Field("estimate", "text", choices=("own", "shared", "intercept", "recalibrated", "blend")),
    Field("weight", "number", low=0.0, high=1.0), Field("sentence", "text")))
register_fields("kit", (  # the signed body of a .dckit (FORMAT §8); schema, analyst and settings have their own readers
    *(Field(k, "text", required=True) for k in ("name", "method", "project_id", "created")),
    Field("task", "text", required=True, choices=("classification", "clustering")),
    Field("schema", "object", required=True), Field("analyst", "object", required=True),
    Field("settings", "object", nullable=True), Field("anchor", "object", nullable=True),
    Field("roster", "list", nullable=True, items="object", schema="kit:roster"),
    Field("privacy", "object", nullable=True),
    Field("threat_model", "object")))  # core.formats.threat (ThreatModel.from_dict checks its members)
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
    Field("expected_gain", "number", nullable=True), Field("classes", "list", required=True, items="text"),
    Field("shared_kind", "text", choices=("mlp", "site-intercepts")), Field("expected_auc", "number", nullable=True),
    Field("update", "object", nullable=True, schema="update"))


def method_schemas(name: str, bundle: tuple[Field, ...], package: tuple[Field, ...], *, family: str | None = None,
                   arrays: tuple[Array, ...] | None = None, rules: tuple[Rule, ...] = (),
                   site_scored: bool = False) -> None:
    """Register ``bundle:<name>`` and ``package:<name>``: the shared members, overridden and extended by the
    method's own (a method may tighten a shared member, e.g. make ``n_rows`` required), the bundle's arrays and
    rules (the shared ones, the method's, and those of a site-scored method's ``rows_kept_at_site``); a bundle's
    ``family`` is the method's, a package's ``method`` the method itself."""
    own_bundle = (*bundle, *(SITE_SCORED_FIELDS if site_scored else ()),
                  *((Field("family", "text", required=True, choices=(family,)),) if family else ()))
    own_package = (*package, Field("method", "text", required=True, choices=(name,)))
    for kind, common, own in (("bundle", BUNDLE_FIELDS, own_bundle), ("package", PACKAGE_FIELDS, own_package)):
        mine = {f.name for f in own}
        fields = tuple(f for f in common if f.name not in mine) + tuple(own)
        if kind == "bundle":
            register(Declaration(f"bundle:{name}", fields, arrays,
                                 (*BUNDLE_RULES, *(SITE_SCORED_RULES if site_scored else ()), *rules)))
        else:
            register(Declaration(f"package:{name}", fields))


def kit_block(d: Any, block: str, known, noun: str = "member") -> dict:
    """A kit's small JSON block ``block`` as a dict whose keys are all in ``known`` (FormatError naming the block
    otherwise: not an object, or members of another name, each called a ``noun``)."""
    if not isinstance(d, dict):
        raise FormatError(f"the kit's '{block}' block is not an object")
    unknown = sorted(set(d) - set(known))
    if unknown:
        raise FormatError(f"the kit's '{block}' block has unknown {noun}(s) {', '.join(unknown)}")
    return d
