"""``python -m benchmarks fuzz --cases N --seed S [--method M …]``: mutated bundles, packages, kits, cards and anchors.

Every case feeds one mutated file to the reader the product uses for it and accepts exactly two outcomes:
the file is accepted, or a :class:`core.errors.DCError` (one sentence) is raised. Anything else — a
traceback from numpy, zipfile, json, the methods — is a finding, reported with the target, the mutation
and the seed. One genuine two-site round is built per method (all seven by default); bundles are read as
``analyst run`` reads them (verified, checked, then fitted with the round's other bundle), packages as
``participant apply`` does (kit-derived caps, ``check_package`` with the site's kept export, ``apply_checked``).

Mutation classes (drawn from ``numpy.random.default_rng(seed)``; counted separately in ``per_class``):

* **bytes** — flip, overwrite, insert or delete bytes, truncate, append: the outer checks (header, trailer,
  signature) must stop these before anything is decrypted;
* **signed** — the attacker is a confirmed sender (or the analyst): the archive is rebuilt with a mutated
  ``.npy`` header, array data (NaN, ±inf, 3e38, wrong length), manifest content value (wrong type, huge,
  negative, deeply nested, non-ASCII, formula text) or raw archive bytes, then correctly signed and
  encrypted, so every inner parser and the application checks see it;
* **fields** — re-signed, one top-level manifest member given typed garbage;
* **arrays** — re-signed, one array of the wrong shape, dtype or size (up to 1 × 2,000,000);
* **zip** — re-signed, one ZIP field FORMAT §4.6 fixes changed with sizes and offsets kept consistent (local
  header version/extra field, directory version made/needed, disk number, attributes, extra-field id, end
  record's disk numbers and count): an accepted case is a file whose fixed bytes changed;
* **lies** — re-signed by the insider site, a bundle whose members are well typed but do not agree with its arrays,
  the kit or each other (a row, column, dimension or anchor count off by a little or a lot; class counts that are
  negative or do not count the labels; own-model scores on more rows than it has, rows "kept at the site" beyond
  its rows; filled cells of columns the kit lacks or beyond its rows; a GOLD guard or rows left out that do not add
  up; a ridge or class count other than the kit's; a formal-noise accounting changed, claimed on un-noised rows, or
  rows whose noise was taken out): every one must be refused (an accepted one is counted in ``accepted_lies``);
* **text** — re-signed, a text member (declared or not) of a bundle or package given control characters (ESC/CSI
  sequences that clear the screen or write links, 8-bit CSI, carriage returns), bidi overrides, zero-width and tag
  characters, HTML, Markdown or 5,000 characters; the file is read, and what the CLI prints for it — the import
  line, ``participant apply``'s lines after a real apply, or the refusal — is captured;
* **json** / **signed-json** — kits (re-signed by the analyst), cards and anchors with one value replaced or
  bytes flipped.

Every case's output is captured as the CLI prints it (its lines, or its error line through ``core.cli.error_line``):
a raw control, bidi or invisible character in it is counted in ``unsafe_prints``.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.api import DCError

TARGETS = ("bundle", "package", "kit", "card", "anchor")
_NASTY = [None, True, -1, 0, 2 ** 62, -(2 ** 62), 1e308, -1e308, 3e38, "", "x" * 300, "=HYPERLINK(\"http://x\")",
          "@SUM(1)", "\u202e\u0000", "é", [], {}, [[[[[]]]]], [1, "a", None], {"a": {"b": {"c": []}}}, 1.5, "a" * 70]


@dataclass
class FuzzResult:
    cases: int = 0
    accepted: int = 0
    refused: int = 0
    seconds: float = 0.0
    per_target: dict = field(default_factory=dict)
    findings: list = field(default_factory=list)
    per_class: dict = field(default_factory=dict)
    accepted_lies: list = field(default_factory=list)  # inconsistent bundles the analyst accepted (must be none)
    unsafe_prints: list = field(default_factory=list)  # cases whose printed output held a raw control character

    def to_dict(self) -> dict:
        return {"cases": self.cases, "accepted": self.accepted, "refused": self.refused,
                "seconds": round(self.seconds, 2), "per_target": self.per_target, "per_class": self.per_class,
                "findings": self.findings[:50], "accepted_lies": self.accepted_lies[:50],
                "unsafe_prints": self.unsafe_prints[:50]}


METHODS = ("dc", "dccfl", "feddag", "hfldd", "meta-lr", "dcclustering", "gold")
# Extra rounds a campaign builds beside the methods': name → (method, Corpus options).
VARIANTS = {"dc-formal": ("dc", {"site_settings": {"privacy_epsilon": 2.0}, "statistics": True})}
_FAST = {"epochs": 2, "warmup_epochs": 1, "warmup_rounds": 1, "fusion_steps": 5, "min_steps": 20, "local_epochs": 2,
         "kip_steps": 5, "n_init": 2, "k": 2, "hidden": [8], "max_iter": 20}  # small fits: the files, not the models


class Corpus:
    """A genuine small round (``sites`` sites, 2 by default) of one method whose files the mutations start from.

    ``kit_settings`` and ``site_settings`` overlay the small defaults (any option: formal noise, noise, dimension,
    distillation modes, clustering choices …); ``statistics`` publishes the sample's column statistics in the kit
    (formal noise needs them); ``blocks`` splits the columns into two feature blocks linked by a row id (a
    clustering kit), site i holding block i % 2 of the same people."""

    def __init__(self, folder: Path, seed: int = 0, method: str = "dc", *, kit_settings: dict | None = None,
                 site_settings: dict | None = None, statistics: bool = False, blocks: bool = False, sites: int = 2):
        import pandas as pd

        from core.api import Identity
        from core.api.analyst import AnalystRound
        from core.api.common import (
            AnalystWorkspace,
            Kit,
            SiteWorkspace,
            infer_schema,
            method_class,
            read_table,
            with_blocks,
        )
        from core.api.participant import ParticipantRound, make_anchor

        rng = np.random.default_rng(seed)
        self.folder, self.method = folder, method
        cls = method_class(method)
        clustering = cls.task == "clustering"
        classes = ["a", "b"]
        n = 20 + 50 * (1 if blocks else sites)
        frame = {f"x{j}": rng.normal(size=n) * (j + 1) for j in range(4)}
        if not clustering:
            frame["label"] = np.asarray(classes)[(frame["x0"] + 0.5 * rng.normal(size=n) > 0).astype(int)]
        df = pd.DataFrame(frame)
        if blocks:
            df.insert(0, "pid", [f"p{i:04d}" for i in range(n)])
        df.iloc[:20].to_csv(folder / "sample.csv", index=False)
        self.analyst = Identity.generate("analyst")
        self.sites = [Identity.generate(f"site{i}") for i in range(sites)]
        schema, _ = infer_schema(folder / "sample.csv", label=None if clustering else "label",
                                 id_column="pid" if blocks else None, with_statistics=statistics)
        if blocks:
            schema, _ = with_blocks(schema, [("a", ["x0", "x1"]), ("b", ["x2", "x3"])])
        own = {s.name for s in cls.settings_spec if s.side == "analyst"}
        settings = {k: v for k, v in {**_FAST, "seed": seed, **(kit_settings or {})}.items() if k in own}
        self.kit = Kit(name="fuzz", task=cls.task, schema=schema, method=method, analyst=self.analyst.card,
                       settings=settings,
                       roster=[{"name": s.card.name, "fingerprint": s.card.fingerprint} for s in self.sites])
        self.kit_path = folder / "p.dckit"
        self.kit.save(self.kit_path, self.analyst)
        seed_rows = read_table(folder / "sample.csv", schema, labels=False).X
        self.anchor = make_anchor(self.kit.project_id, schema.encoded_names, kind="smote", rows=60,
                                  seed_rows=seed_rows)
        self.anchor_plain = folder / "plain.dcanchor"
        self.anchor.save(self.anchor_plain)
        self.anchor_sealed = folder / "sealed.dcanchor"
        self.anchor.save(self.anchor_sealed, [s.card for s in self.sites])
        self.site_ws = []
        self.csv = []
        bundles = []
        site_own = {s.name for s in cls.settings_spec if s.side == "site"}
        self.site_settings = {k: v for k, v in {"kip_steps": 5, "local_epochs": 2, "max_candidates": 20,
                                                **(site_settings or {})}.items() if k in site_own}
        for i, site in enumerate(self.sites):
            csv = folder / f"site{i}.csv"
            if blocks:  # the same people at every site, each holding one block, in its own row order
                part = df.iloc[20:].sample(frac=1.0, random_state=i)
                part[["pid", *(["x0", "x1"] if i % 2 == 0 else ["x2", "x3"])]].to_csv(csv, index=False)
            else:
                df.iloc[20 + 50 * i: 70 + 50 * i].to_csv(csv, index=False)
            ws = SiteWorkspace(folder / f"site{i}.ws")
            job = ParticipantRound(self.kit, self.kit_path, site, ws,
                                   anchor=self.anchor if cls.needs_anchor else None,
                                   site_settings={**self.site_settings, **({"seed": i} if "seed" in site_own else {})})
            job.confirm_analyst(self.kit.analyst, how="benchmark: the kit's own signer")
            job.accept_privacy_risk("benchmark: a simulated site accepts its poor verdicts")
            job.load(csv)
            bundles.append(job.seal(folder / f"site{i}.dcbundle"))
            self.site_ws.append(ws)
            self.csv.append(csv)
        self.sealed_bundles = bundles
        self.bundle_path = bundles[0].path
        self.session = AnalystRound(self.kit, self.analyst, AnalystWorkspace(folder / "analyst.ws"))
        received = [self.session.open_bundle(b.path) for b in bundles]
        self.received = received
        self.bundle_digest = bundles[0].digest
        out = self.session.export(self.session.run(received), folder / "out")
        self.packages = out.packages
        self.package_path = out.packages[0].path
        self.card_path = folder / "site0.dcpub"
        self.sites[0].card.save(self.card_path)
        meta, private = self.site_ws[0].load_export(self.kit.project_id, self.bundle_digest, self.sites[0].card)
        self.meta, self.private = meta, private
        block = meta.get("block")
        self.site_X = read_table(folder / "site0.csv", schema.block_schema(block) if block else schema,
                                 labels=False).X
        self.bytes = {name: Path(p).read_bytes() for name, p in (
            ("bundle", self.bundle_path), ("package", self.package_path), ("kit", self.kit_path),
            ("card", self.card_path), ("anchor", self.anchor_plain), ("anchor_sealed", self.anchor_sealed))}
        from core.api.research import envelope as env

        self.inner = {}
        for kind, path, reader in (("bundle", self.bundle_path, self.analyst), ("package", self.package_path,
                                                                                 self.sites[0])):
            opened = env.open_sealed(path, reader, expect_kind=kind)
            self.inner[kind] = opened


# ------------------------------------------------------------------------------------------------ mutations

def _mutate_bytes(data: bytes, rng: np.random.Generator) -> bytes:
    b = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        op = int(rng.integers(0, 6))
        pos = int(rng.integers(0, max(1, len(b))))
        if op == 0 and b:
            b[pos] ^= 1 << int(rng.integers(0, 8))
        elif op == 1 and b:
            b[pos] = int(rng.integers(0, 256))
        elif op == 2:
            b[pos:pos] = bytes(rng.integers(0, 256, int(rng.integers(1, 16)), dtype=np.uint8))
        elif op == 3 and b:
            del b[pos:pos + int(rng.integers(1, 16))]
        elif op == 4:
            b = b[:pos]
        else:
            b += bytes(rng.integers(0, 256, int(rng.integers(1, 64)), dtype=np.uint8))
    return bytes(b)


def _nasty(rng: np.random.Generator):
    pick = int(rng.integers(0, len(_NASTY) + 2))
    if pick == len(_NASTY):
        depth = int(rng.integers(30, 3000))
        return json.loads("[" * depth + "]" * depth) if depth < 900 else {"deep": "[" * depth}
    if pick == len(_NASTY) + 1:
        return float(rng.normal() * 10 ** float(rng.integers(-5, 300)))
    return _NASTY[pick]


def _mutate_json_value(obj, rng: np.random.Generator):
    """Replace one randomly chosen value (at any depth) of a JSON object with a nasty one; or drop/add a key."""
    obj = json.loads(json.dumps(obj))
    paths = []

    def walk(node, path):
        paths.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node[:20]):
                walk(v, (*path, i))

    walk(obj, ())
    path = paths[int(rng.integers(0, len(paths)))]
    if not path:
        return _nasty(rng) if rng.random() < 0.2 else {**obj, "extra": _nasty(rng)}
    parent = obj
    for k in path[:-1]:
        parent = parent[k]
    op = rng.random()
    if op < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = _nasty(rng)
    return obj


def _dumps(obj) -> bytes:
    try:
        return json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):
        return b"{}"


def _npy_variants(rng: np.random.Generator, arr: np.ndarray) -> bytes:
    """A ``.npy`` member with a mutated header or data."""
    shapes = ["(3, ", "(-3,)", "(True,)", f"({2 ** 62}, {2 ** 62})", "()", "(1e3,)", "('a',)", "(" + "1," * 40 + ")",
              f"({arr.size + 1},)", "[2]", "(2, 2" + ")" * 3]
    descrs = ["'<f8'", "'|O'", "'>f8'", "'<c16'", "'<U3'", "[('a', '<f8')]", "'<f2'", "'|b1'", "1", "'<f8' + 1"]
    op = int(rng.integers(0, 5))
    data = arr.tobytes()
    descr, shape, fortran = f"'{arr.dtype.str}'", str(tuple(arr.shape)), "False"
    if op == 0:
        shape = shapes[int(rng.integers(0, len(shapes)))]
    elif op == 1:
        descr = descrs[int(rng.integers(0, len(descrs)))]
    elif op == 2:
        fortran = ["True", "1", "'no'", "None"][int(rng.integers(0, 4))]
    elif op == 3 and arr.dtype.kind == "f" and arr.size:
        a = arr.copy().reshape(-1)
        a[int(rng.integers(0, a.size))] = [np.nan, np.inf, -np.inf, 3e38, -3e38, 1e-300][int(rng.integers(0, 6))]
        data = a.tobytes()
    else:
        data = data[:int(rng.integers(0, len(data) + 1))]
    text = "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }"
    head = text.encode("latin1", "replace")
    head += b" " * (-(len(head) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head + data


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def reseal(corpus: Corpus, kind: str, path: Path, content: dict | None = None,
           members: list[tuple[str, bytes]] | None = None, plaintext_edit: Callable[[bytes], bytes] | None = None
           ) -> None:
    """Write the genuine ``kind`` file of ``corpus`` again with ``content`` (the manifest's application part)
    and ``members`` (``NAME.npy`` bytes) replaced, correctly signed and encrypted by its real sender (an
    insider holds a valid key); ``plaintext_edit`` changes the archive bytes before encryption."""
    from core.api.research import envelope as env

    opened = corpus.inner[kind]
    sender = corpus.sites[0] if kind == "bundle" else corpus.analyst
    recipient = corpus.analyst.card if kind == "bundle" else corpus.sites[0].card
    header = opened.binding.to_header()
    if content is None:
        content = opened.payload.manifest
    if members is None:
        members = [(f"{name}.npy", npy_bytes(opened.payload.arrays[name])) for name in sorted(opened.payload.arrays)]
    hashes = {name: hashlib.sha256(data).hexdigest() for name, data in members}
    try:
        manifest = env.manifest_bytes(header, hashes, content)
    except (TypeError, ValueError, RecursionError):
        manifest = b"{}"
    sig = sender.sign(env.MANIFEST_SIGNATURE_DOMAIN + manifest)
    plaintext = env.zip_members([*members, (env.MANIFEST_NAME, manifest), (env.MANIFEST_SIG_NAME, sig)]).getvalue()
    if plaintext_edit is not None:
        plaintext = plaintext_edit(plaintext)
    env.write_envelope(path, header, plaintext, sender, recipient)


def _resealed(corpus: Corpus, kind: str, rng: np.random.Generator, path: Path) -> None:
    """Rebuild the genuine file's archive with one inner mutation (an .npy header or data, a manifest value, the
    archive bytes), correctly signed and encrypted (:func:`reseal`)."""
    opened = corpus.inner[kind]
    members = [(f"{name}.npy", npy_bytes(opened.payload.arrays[name])) for name in sorted(opened.payload.arrays)]
    content, edit = None, None
    op = int(rng.integers(0, 4))
    if op == 0 and members:
        k = int(rng.integers(0, len(members)))
        arr = opened.payload.arrays[members[k][0][:-4]]
        members[k] = (members[k][0], _npy_variants(rng, np.ascontiguousarray(arr)))
    elif op == 1:
        content = _mutate_json_value(opened.payload.manifest, rng)
    elif op == 2 and members:
        k = int(rng.integers(0, len(members)))
        members[k] = (members[k][0], _mutate_bytes(members[k][1], rng))
    elif op == 3:
        edit = lambda plaintext: _mutate_bytes(plaintext, rng)  # noqa: E731
    reseal(corpus, kind, path, content, members, edit)


# ------------------------------------------------------------------------------------------------ readers

def _read_bundle(corpus: Corpus, path: Path) -> None:
    corpus.session.open_bundle(path)


def run_bundle(corpus: Corpus, path: Path) -> None:
    """What ``analyst run`` does with a bundle the checks accepted: fit it with the round's other site."""
    bundle = corpus.session.open_bundle(path)
    corpus.session.run([bundle, corpus.received[1]])


def read_package(corpus: Corpus, path: Path) -> None:
    from core.api.common import get_method
    from core.api.research import apply_checked, check_package, open_sealed, package_limits

    rows = int(corpus.meta["rows"])
    opened = open_sealed(path, corpus.sites[0], expect_kind="package", expect_project=corpus.kit.project_id,
                         expect_sender=corpus.kit.analyst, limits=package_limits(corpus.kit, rows))
    manifest, arrays = opened.payload.manifest, opened.payload.arrays
    manifest = check_package(corpus.kit, manifest, arrays, rows, corpus.private)
    apply_checked(get_method(manifest["method"]), manifest, arrays, corpus.private, corpus.site_X, path)


def _read_kit(corpus: Corpus, path: Path) -> None:
    from core.api.common import Kit

    Kit.load(path).describe()


def _read_card(corpus: Corpus, path: Path) -> None:
    from core.api import PublicCard

    PublicCard.load(path)


def _read_anchor(corpus: Corpus, path: Path) -> None:
    from core.api.participant import AnchorFile

    anchor = AnchorFile.load(path, identity=corpus.sites[0])
    first = next(anchor.params[k] for k in ("low", "mean", "seed_rows") if k in anchor.params)
    small = anchor.rows * np.asarray(first, dtype=np.float64).shape[-1] <= 100_000
    if small and (anchor.kind != "smote" or anchor.rows % 4 == 0):  # SMOTE's neighbour search costs ~0.1 s
        anchor.generate()


def _structured(corpus: Corpus, kind: str, rng: np.random.Generator, path: Path) -> str:
    """One re-signed structured mutation of ``kind``: a manifest field given typed garbage, or one array of the wrong
    shape, dtype or size (the insider's file)."""
    content, arrays = corpus.inner[kind].payload.manifest, corpus.inner[kind].payload.arrays
    if rng.random() < 0.5 or not arrays:
        key = sorted(content)[int(rng.integers(0, len(content)))]
        reseal(corpus, kind, path, {**content, key: _nasty(rng)})
        return "fields"
    name = sorted(arrays)[int(rng.integers(0, len(arrays)))]
    a = np.ascontiguousarray(arrays[name])
    op = int(rng.integers(0, 5))
    if op == 0:
        b = a.reshape(-1) if a.ndim > 1 else a.reshape(1, -1)
    elif op == 1:
        b = a.astype(np.float64 if a.dtype.kind != "f" or a.dtype.itemsize == 4 else np.float32)
    elif op == 2:
        b = np.zeros(tuple(int(d) + int(rng.integers(1, 3)) for d in a.shape) or (1,), a.dtype)
    elif op == 3:
        b = np.zeros((1, int(rng.integers(100_000, 2_000_000))), a.dtype)
    else:
        b = a.astype(np.int64) if a.dtype.kind == "f" else a.astype(np.int8)
    members = [(f"{n}.npy", npy_bytes(b if n == name else arrays[n])) for n in sorted(arrays)]
    reseal(corpus, kind, path, None, members)
    return "arrays"


# ---- the insider's well-typed lies (bundles) ------------------------------------------------------------------
# Members whose value the analyst checks against the arrays, the kit or other members: any change is a lie it must
# refuse. (meta-lr's n_rows is not among them: coefficients do not say how many rows they came from.)
CHECKED = ("n_rows", "n_features", "dimension", "anchor_rows", "anchor_rows_total", "n_distilled", "micro_clusters",
           "dropped_rows", "min_cluster_rows", "n_classes", "bundle_bytes")
UNCHECKABLE = {"meta-lr": {"n_rows"}}
PRIVACY_NUMBERS = ("epsilon", "delta", "sigma", "clip", "sensitivity", "epsilon_rows", "epsilon_labels", "label_keep")


def _changed_int(value: int, low: float | None, rng: np.random.Generator) -> int:
    """A whole number other than ``value``, at least ``low``: off by a little (±1…5) or by a lot (up to 2⁵⁰)."""
    step = int(rng.integers(1, 6)) if rng.random() < 0.7 else int(10 ** rng.uniform(2, 15))
    new = value - step if rng.random() < 0.5 else value + step
    return value + step if low is not None and new < low else new


def _factor(rng: np.random.Generator) -> float:
    return float(rng.uniform(0.1, 0.9) if rng.random() < 0.5 else rng.uniform(1.1, 3.0))


def _lie(corpus: Corpus, rng: np.random.Generator, formal: dict | None) -> tuple[dict, list, str]:
    """One well-typed lie in the corpus's genuine bundle (module docstring, **lies**): (content, members, what)."""
    from core.api.research import SCHEMAS, site_rows

    opened = corpus.inner["bundle"]
    m = json.loads(json.dumps(opened.payload.manifest))
    arrays = {k: np.array(v) for k, v in opened.payload.arrays.items()}
    fields = {f.name: f for f in SCHEMAS[f"bundle:{corpus.method}"]}
    ops = [("int", k) for k in CHECKED if k in m and k not in UNCHECKABLE.get(corpus.method, ())]
    ops += [("label_counts", "")] if "label_counts" in arrays else []
    ops += [("own_cv", "")] if "own_cv" in m else []
    ops += [("kept", "")] if "rows_kept_at_site" in fields else []
    ops += [("filled", "")] + ([("ridge", "")] if "ridge" in m else [])
    ops += [("small_clusters", "")] if "small_clusters" in m else []
    if "privacy" in m:
        ops += [("privacy", k) for k in PRIVACY_NUMBERS if k in m["privacy"]] + [("quiet", "")]
    elif "reduction" in m and formal is not None:
        ops.append(("claim", ""))
    op, key = ops[int(rng.integers(0, len(ops)))]
    rows = site_rows(m)
    if op == "int":
        m[key] = _changed_int(m[key], fields[key].low, rng)
    elif op == "label_counts":
        c = arrays["label_counts"]
        k = int(rng.integers(0, len(c)))
        how = int(rng.integers(0, 3 if "y" in arrays else 2))
        if how == 0:  # a negative count
            c[k] = -int(rng.integers(1, 1000))
        elif how == 1:  # counts of more rows than it has
            c[k] += int(rng.integers(1, 1000))
        else:  # the same total, not the labels' counts
            j = (k + 1) % len(c)
            step = int(rng.integers(1, max(2, int(c[j]) + 1)))
            c[k], c[j] = c[k] + step, c[j] - step
    elif op == "own_cv":
        extra = int(rng.integers(1, 1000))
        m["own_cv"]["rows"] = int(rows) + extra
        if "rows_kept_at_site" not in fields:  # a DC bundle "explains" them by rows it never declares
            m["rows_kept_at_site"] = extra if rng.random() < 0.5 else 10 ** 15
    elif op == "kept":
        m["rows_kept_at_site"] = int(m["n_rows"]) + 1 + int(10 ** rng.uniform(0, 15))
    elif op == "filled":
        columns = list(corpus.kit.schema.feature_names)
        if rng.random() < 0.5:
            m["filled"] = {_hostile(rng) if rng.random() < 0.5 else "not_a_column": 1}
        else:
            m["filled"] = {columns[int(rng.integers(0, len(columns)))]: int(rows) + int(rng.integers(1, 10 ** 6))}
    elif op == "ridge":
        m["ridge"] = float(m["ridge"]) * _factor(rng)
    elif op == "small_clusters":
        from core.api.research import GOLD_GUARDS as GUARDS

        m["small_clusters"] = next(g for g in GUARDS[int(rng.integers(0, len(GUARDS))):] + GUARDS
                                   if g != m["small_clusters"])
    elif op == "privacy":
        f = _factor(rng)
        high = {"epsilon": 100.0, "delta": 1e-3, "label_keep": 1.0}.get(key)
        value = m["privacy"][key] * f
        m["privacy"][key] = value if high is None or value <= high else m["privacy"][key] / f
    elif op == "quiet":  # the rows without their noise: centred, scaled far inside the clip
        x = arrays["x_tilde"].astype(np.float64)
        x -= x.mean(axis=0)
        arrays["x_tilde"] = (x / max(float(np.linalg.norm(x, axis=1).max()), 1e-12) * 0.01
                             * m["privacy"]["clip"]).astype(np.float32)
    else:  # claim: formal noise on rows that were never noised
        m["privacy"] = dict(formal["privacy"])
        if rng.random() < 0.5:
            m["reduction"] = "random-orthogonal"
    members = [(f"{k}.npy", npy_bytes(arrays[k])) for k in sorted(arrays)]
    return m, members, f"{op}:{key}" if key else op


# ---- hostile text -----------------------------------------------------------------------------------------------
HOSTILE = ("\x1b[2J\x1b[1;1HAll clear", "\x1b]8;;http://evil.example\x07click\x1b]8;;\x07", "\x9b31mred\x9b0m",
           "fake\rline\nerror: none", "abc\u202etxt.exe", "\u2066iso\u2069\u200b\ufeff\U000e0041tag",
           "<img src=x onerror=alert(1)>", "[click](javascript:alert(1)) **bold** `code`", "\x00\x7f\x85\u2028")


def _hostile(rng: np.random.Generator) -> str:
    if rng.random() < 0.1:
        return "".join(HOSTILE) * 60  # long
    return "".join(HOSTILE[int(i)] for i in rng.integers(0, len(HOSTILE), int(rng.integers(1, 4))))


def _texted(corpus: Corpus, kind: str, rng: np.random.Generator) -> dict:
    """The genuine manifest with one text member (declared or not, at the top or in a declared object) hostile."""
    from core.api.research import SCHEMAS

    m = json.loads(json.dumps(corpus.inner[kind].payload.manifest))
    texts = [f.name for f in SCHEMAS[f"{kind}:{corpus.method}"] if f.type == "text"]
    places = [(k,) for k in [*texts, "note", "comment"]]
    places += [(k, "model") for k in ("own_cv",) if k in m]
    places += [(k, w) for k in ("expected", "own_model", "cluster_model") if isinstance(m.get(k), dict)
               for w in ("what", "source")]
    place = places[int(rng.integers(0, len(places)))]
    if len(place) == 1:
        m[place[0]] = _hostile(rng)
    else:
        m[place[0]][place[1]] = _hostile(rng)
    if kind == "bundle" and rng.random() < 0.2:
        m["filled"] = {_hostile(rng): 1}
    return m


def _zip_edit(rng: np.random.Generator) -> Callable[[bytes], bytes]:
    """An edit of one ZIP field FORMAT §4.6 fixes, leaving every size and offset consistent: local header version
    needed or its extra field's id/data, a directory entry's version made/needed, disk number, attributes or
    extra field id, the end record's disk numbers or counts."""
    import struct

    def edit(plain: bytes) -> bytes:
        b = bytearray(plain)
        eocd = len(b) - 22
        entries, cd_size, cd_off = struct.unpack("<HLL", b[eocd + 10:eocd + 20])
        cds, pos = [], cd_off
        while pos < eocd and b[pos:pos + 4] == b"PK\x01\x02":
            nlen, xlen, clen = struct.unpack("<HHH", b[pos + 28:pos + 34])
            cds.append((pos, nlen, xlen))
            pos += 46 + nlen + xlen + clen
        op = int(rng.integers(0, 8))
        value = int(rng.integers(1, 0xFFFF))
        pick = cds[int(rng.integers(0, len(cds)))] if cds else None
        if op == 0 and pick:  # local header: version needed
            (lh,) = struct.unpack("<L", b[pick[0] + 42:pick[0] + 46])
            b[lh + 4:lh + 6] = struct.pack("<H", value)
        elif op == 1 and pick:  # local header: extra field id / data (when it has one)
            (lh,) = struct.unpack("<L", b[pick[0] + 42:pick[0] + 46])
            nlen, xlen = struct.unpack("<HH", b[lh + 26:lh + 30])
            if xlen >= 4:
                at = lh + 30 + nlen + int(rng.integers(0, xlen))
                b[at] ^= 0x5A
            else:
                b[lh + 4:lh + 6] = struct.pack("<H", value)
        elif op in (2, 3) and pick:  # directory: version made / needed
            at = pick[0] + (4 if op == 2 else 6)
            b[at:at + 2] = struct.pack("<H", value)
        elif op == 4 and pick:  # directory: disk number start
            b[pick[0] + 34:pick[0] + 36] = struct.pack("<H", value)
        elif op == 5 and pick:  # directory: internal / external attributes
            at = pick[0] + (36 if rng.random() < 0.5 else 38)
            b[at:at + 2] = struct.pack("<H", value)
        elif op == 6 and pick and pick[2] >= 4:  # directory: extra field id
            at = pick[0] + 46 + pick[1]
            b[at] ^= 0x5A
        else:  # end record: this disk, directory disk, entries on this disk
            at = eocd + (4, 6, 8)[int(rng.integers(0, 3))]
            b[at:at + 2] = struct.pack("<H", value)
        return bytes(b)

    return edit


def _case(corpus: Corpus, target: str, rng: np.random.Generator, path: Path, formal: dict | None = None) -> str:
    """Write one mutated file for ``target`` at ``path``; return the mutation's name. ``formal``: a genuine
    formal-noise bundle manifest (the lies family claims its accounting on rows never noised)."""
    from core.api import canonical_json
    from core.api.research import KIT_SIGNATURE_DOMAIN

    if target in ("bundle", "package"):
        r = rng.random()
        if r < 0.2:
            path.write_bytes(_mutate_bytes(corpus.bytes[target], rng))
            return "bytes"
        if r < 0.4:
            _resealed(corpus, target, rng, path)
            return "signed"
        if r < 0.6:
            return _structured(corpus, target, rng, path)
        if r < 0.7:
            reseal(corpus, target, path, plaintext_edit=_zip_edit(rng))
            return "zip"
        if r < 0.85 and target == "bundle":
            content, members, what = _lie(corpus, rng, formal)
            reseal(corpus, target, path, content, members)
            return "lies"
        reseal(corpus, target, path, _texted(corpus, target, rng))
        return "text"
    if target == "kit":
        if rng.random() < 0.3:
            path.write_bytes(_mutate_bytes(corpus.bytes["kit"], rng))
            return "bytes"
        doc = json.loads(corpus.bytes["kit"])
        body = _mutate_json_value(doc["kit"], rng)
        import base64

        try:
            sig = base64.b64encode(corpus.analyst.sign(KIT_SIGNATURE_DOMAIN + canonical_json(body))).decode()
        except (TypeError, ValueError, RecursionError):
            sig = doc["signature"]
        doc = {**doc, "kit": body, "signature": sig} if rng.random() < 0.9 else _mutate_json_value(doc, rng)
        path.write_bytes(_dumps(doc))
        return "signed-json"
    if target == "card":
        if rng.random() < 0.5:
            path.write_bytes(_mutate_bytes(corpus.bytes["card"], rng))
            return "bytes"
        path.write_bytes(_dumps(_mutate_json_value(json.loads(corpus.bytes["card"]), rng)))
        return "json"
    if rng.random() < 0.3:
        path.write_bytes(_mutate_bytes(corpus.bytes["anchor_sealed" if rng.random() < 0.5 else "anchor"], rng))
        return "bytes"
    path.write_bytes(_dumps(_mutate_json_value(json.loads(corpus.bytes["anchor"]), rng)))
    return "json"


def _print_bundle(corpus: Corpus, path: Path) -> None:
    """What ``analyst run`` prints for a bundle it uses: its import line, then the run's summary lines."""
    from core.api.analyst import ImportReport
    from core.cli import import_line, say

    bundle = corpus.session.open_bundle(path)
    say(import_line(ImportReport(path, "imported", "", bundle.site, bundle.fingerprint,
                                 int(bundle.manifest.get("n_rows") or 0))))
    say(*corpus.session.run([bundle, corpus.received[1]]).summary_lines())


def _print_package(corpus: Corpus, path: Path) -> None:
    """What ``participant apply`` prints after a real apply of the package."""
    from core.api.participant import apply_package
    from core.cli import apply_lines, say

    res = apply_package(path, corpus.sites[0], corpus.csv[0], corpus.folder / "fuzz-result.csv",
                        workspace=corpus.site_ws[0])
    say(*apply_lines(res, corpus.csv[0].name))


READERS: dict[str, Callable[[Corpus, Path], None]] = {
    "bundle": _read_bundle, "package": read_package, "kit": _read_kit, "card": _read_card, "anchor": _read_anchor}
TEXT_READERS: dict[str, Callable[[Corpus, Path], None]] = {"bundle": _print_bundle, "package": _print_package}


def run_fuzz(cases: int = 5000, seed: int = 0, targets: tuple[str, ...] = TARGETS,
             say: Callable[[str], None] | None = None, methods: tuple[str, ...] = ("dc",)) -> FuzzResult:
    """Run ``cases`` mutated files round-robin over ``targets``; bundles and packages of every method in
    ``methods`` (one genuine round each; a name of :data:`VARIANTS` is a round with those options, e.g. formal
    noise), kits, cards and anchors of the first. See the module doc for what counts; ``per_class`` counts by
    mutation class (bytes, signed, fields, arrays, zip, lies, text): ``zip`` accepted = files whose fixed ZIP
    metadata was changed and still accepted; ``lies`` accepted = inconsistent bundles accepted (also listed in
    ``accepted_lies``); every case's printed output is checked for raw control characters (``unsafe_prints``)."""
    import contextlib
    import warnings

    from core.api import is_safe
    from core.cli import error_line

    plan = [(t, m) for t in targets for m in (methods if t in ("bundle", "package") else methods[:1])]
    result = FuzzResult(per_target={f"{t}:{m}" if t in ("bundle", "package") else t:
                                    {"cases": 0, "accepted": 0, "refused": 0} for t, m in plan})
    result.per_class = {}
    shm = Path("/dev/shm")  # in memory where available: the campaign measures parsers, not the disk's fsync
    with tempfile.TemporaryDirectory(prefix="dcstudio-fuzz-", dir=shm if shm.is_dir() else None) as tmp:
        folder = Path(tmp)
        corpora = {}
        for m in methods:
            (folder / m).mkdir()
            base, options = VARIANTS.get(m, (m, {}))
            corpora[m] = Corpus(folder / m, seed, base, **options)
        formal = next((c.inner["bundle"].payload.manifest for c in corpora.values()
                       if "privacy" in c.inner["bundle"].payload.manifest), None)
        rng = np.random.default_rng(seed)
        start = time.perf_counter()
        path = folder / "case.bin"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(cases):
                target, method = plan[i % len(plan)]
                corpus = corpora[method]
                how = _case(corpus, target, rng, path, formal)
                stats = result.per_target[f"{target}:{method}" if target in ("bundle", "package") else target]
                cls = result.per_class.setdefault(how, {"cases": 0, "accepted": 0, "refused": 0})
                stats["cases"] += 1
                cls["cases"] += 1
                printed = io.StringIO()
                reader = TEXT_READERS[target] if how == "text" else READERS[target]
                try:
                    with contextlib.redirect_stdout(printed):
                        reader(corpus, path)
                except DCError as exc:
                    printed.write(error_line("dcstudio", exc))  # what the CLI prints on stderr
                    stats["refused"] += 1
                    cls["refused"] += 1
                    result.refused += 1
                except Exception as exc:  # a finding: only DCError may escape a reader
                    result.findings.append({"case": i, "target": f"{target}:{method}", "mutation": how,
                                            "error": f"{exc.__class__.__name__}: {str(exc)[:200]}"})
                else:
                    stats["accepted"] += 1
                    cls["accepted"] += 1
                    result.accepted += 1
                    if how == "lies":
                        result.accepted_lies.append({"case": i, "target": f"{target}:{method}"})
                if not is_safe(printed.getvalue()):
                    result.unsafe_prints.append({"case": i, "target": f"{target}:{method}", "mutation": how,
                                                 "printed": ascii(printed.getvalue()[:200])})
                result.cases += 1
                if say is not None and (i + 1) % 10_000 == 0:
                    say(f"{i + 1} cases, {len(result.findings)} finding(s), {time.perf_counter() - start:.0f} s")
        result.seconds = time.perf_counter() - start
    return result


def run_from_args(args, say: Callable[[str], None]) -> dict:
    cases = args.cases or 5000
    methods = tuple(getattr(args, "method", None) or (*METHODS, *VARIANTS))
    result = run_fuzz(cases, args.seed, say=say, methods=methods)
    say(f"fuzz: {result.cases} cases (seed {args.seed}) in {result.seconds:.1f} s: {result.refused} refused with "
        f"the product's error, {result.accepted} accepted, {len(result.findings)} finding(s) (traceback), "
        f"{len(result.accepted_lies)} inconsistent bundle(s) accepted, {len(result.unsafe_prints)} case(s) printing "
        "a raw control character")
    for t, s in result.per_target.items():
        say(f"  {t:<8} {s['cases']:>7} cases, {s['refused']:>7} refused, {s['accepted']:>6} accepted")
    for c, s in sorted(result.per_class.items()):
        say(f"  class {c:<7} {s['cases']:>7} cases, {s['refused']:>7} refused, {s['accepted']:>6} accepted")
    for f in result.findings[:20]:
        say(f"  FINDING case {f['case']} ({f['target']}, {f['mutation']}): {f['error']}")
    for f in result.accepted_lies[:20]:
        say(f"  ACCEPTED LIE case {f['case']} ({f['target']})")
    for f in result.unsafe_prints[:20]:
        say(f"  RAW CONTROL PRINTED case {f['case']} ({f['target']}, {f['mutation']}): {f['printed']}")
    out = result.to_dict()
    if args.json:
        from core.api import write_json_atomic

        write_json_atomic(args.json, out)
    return out
