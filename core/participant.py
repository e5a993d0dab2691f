"""The participant's half of a round: CSV → private reduction → sealed bundle; later package → results.

:class:`ParticipantExport` is the object the export wizard holds and the CLI drives: load the CSV, compute
(and show) what leaves, then seal. :func:`apply_package` is the site's last step.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .control import JobControl, ensure
from .data.tabular import CsvOptions, LocalTable, preview, read_table
from .errors import ConfigError, DataError, FormatError
from .formats.anchor import AnchorFile
from .formats.envelope import Payload, SealedFile, inspect, open_sealed, seal
from .formats.fileio import atomic_writer
from .formats.identity import Identity
from .formats.kit import Kit
from .formats.workspace import SiteWorkspace
from .learn.intervals import estimate
from .learn.local_model import fit_local_model, has_local_model, local_predict_proba
from .methods import SiteExport, SiteInput, get_method


def hash_ids(ids: np.ndarray, key: bytes) -> np.ndarray:
    """HMAC-SHA-256 of every id under the participants' key: (n, 32) uint8, irreversible to the analyst."""
    out = np.empty((len(ids), 32), dtype=np.uint8)
    for i, v in enumerate(ids):
        out[i] = np.frombuffer(hmac.new(key, str(v).encode("utf-8"), hashlib.sha256).digest(), dtype=np.uint8)
    return out


class ParticipantExport:
    """One site's export for one project.

    Parameters
    ----------
    kit, kit_path : the verified project kit and where it was read from (copied into the workspace).
    identity : the site's unlocked identity (signs the bundle).
    anchor : the project's anchor file (``None`` only for methods that need none).
    workspace : where f_i and the permutation are kept.
    site_settings : reduction ("pca"|"lpp"|"random"), dimension (None = m − 1), noise, seed.
    """

    def __init__(self, kit: Kit, kit_path: str | Path, identity: Identity, anchor: AnchorFile | None,
                 workspace: SiteWorkspace, site_settings: dict | None = None):
        if anchor is not None and anchor.project_id != kit.project_id:
            raise ConfigError("the anchor file belongs to another project than the kit")
        if not kit.roster_allows(identity.card):
            raise ConfigError("this identity is not on the kit's roster of expected sites")
        self.kit, self.kit_path, self.identity, self.anchor = kit, Path(kit_path), identity, anchor
        self.workspace = workspace
        self.method = get_method(kit.method, kit.settings)
        self.site_settings = dict(site_settings or {})
        self.table: LocalTable | None = None
        self.block: str | None = None
        self.export_: SiteExport | None = None
        self.local_baseline = True  # train the own-rows model that ``apply --validate`` compares with

    def load(self, csv_path: str | Path, options: CsvOptions | None = None, *, block: str | None = None,
             control: JobControl | None = None) -> LocalTable:
        """Read the CSV against the kit. A clustering kit's site holds one feature block: ``block`` names it,
        or it is the one block whose columns are all in the file (ConfigError naming the columns if none)."""
        schema = self.kit.schema
        self.block = None
        if self.kit.task == "clustering":
            header = [str(c) for c in preview(csv_path, options, nrows=0)[0].columns]
            if block is None:
                try:
                    block = schema.detect_block(header)
                except ConfigError as exc:
                    raise ConfigError(exc.message, path=csv_path) from None
            columns = schema.block_columns(block)
            absent = [c for c in columns if c not in header]
            if absent:
                raise DataError(f"the file lacks {', '.join(repr(c) for c in absent)} of feature block '{block}' "
                                f"(the block's columns are {', '.join(repr(c) for c in columns)})", path=csv_path)
            self.block = block
            schema = schema.block_schema(block)
        linked = self.kit.task == "clustering" and len(self.kit.schema.block_names) > 1
        needs_ids = bool(schema.id_column) and linked
        self.table = read_table(csv_path, schema, options=options,
                                labels=self.method.labels_leave != "none" and schema.label is not None,
                                ids=needs_ids, control=control)
        self.export_ = None
        return self.table

    def compute(self, control: JobControl | None = None) -> SiteExport:
        if self.table is None:
            raise ConfigError("load a CSV first")
        t = self.table
        ids_hashed = None
        if t.ids is not None:
            if self.anchor is None:
                raise ConfigError("linking rows by id needs the project's anchor file")
            values, counts = np.unique(t.ids, return_counts=True)
            if (counts > 1).any():
                dup = np.argsort(-counts, kind="stable")[: int((counts > 1).sum())]
                shown = ", ".join(f"'{values[i]}' ({counts[i]} rows)" for i in dup[:5])
                more = f" and {len(dup) - 5} more" if len(dup) > 5 else ""
                raise DataError(f"the id column '{self.kit.schema.id_column}' has {len(dup)} duplicate value(s), "
                                f"e.g. {shown}{more}; every row needs its own id", path=t.source)
            ids_hashed = hash_ids(t.ids, self.anchor.id_hash_key())
        anchor = None if self.anchor is None else self.anchor.generate()
        if anchor is not None and self.block is not None:
            anchor = anchor[:, self.kit.schema.block_indices(self.block)]  # the anchor split by the same blocks
        site = SiteInput(t.X, t.y, list(self.kit.schema.classes), anchor, ids_hashed, self.site_settings,
                         block=self.block)
        self.export_ = self.method.site_compute(site, control)
        if self.local_baseline and self.kit.task == "classification" and t.y is not None \
                and len(np.unique(t.y)) >= 2:
            # The site's own-rows baseline (issue #15): kept in the workspace beside f_i, never in the bundle.
            self.export_.private_arrays.update(fit_local_model(t.X, t.y, len(self.kit.schema.classes)))
            self.export_.private_meta["local_model"] = {
                "kind": "multinomial logistic regression (L2, λ = 1) on standardised raw columns",
                "rows": int(min(t.n_rows, 20000))}
            self.export_.stays.append("a logistic regression trained on these rows (to check the package against)")
        return self.export_

    def seal(self, out_path: str | Path, control: JobControl | None = None) -> SealedFile:
        control = ensure(control)
        if self.export_ is None:
            self.compute(control.sub(0.0, 0.5))
            control = control.sub(0.5, 1.0)
        ex = self.export_
        manifest = {**ex.manifest, "method": self.method.name, "family": self.method.family,
                    "kit_digest": self.kit.digest(), "schema_digest": self.kit.schema.digest(),
                    "site": self.identity.card.name, "software": __version__}
        sealed = seal(out_path, Payload(manifest, ex.arrays), kind="bundle", project_id=self.kit.project_id,
                      sender=self.identity, recipient=self.kit.analyst, control=control)
        self.workspace.save_export(self.kit_path, self.kit.project_id, sealed.digest, ex.private_arrays,
                                   {**ex.private_meta, "method": self.method.name, "csv": str(self.table.source),
                                    "rows": int(self.table.n_rows), "envelope_id": sealed.binding.envelope_id})
        self.workspace.audit.append("export", project=self.kit.project_id, file=str(Path(out_path).resolve()),
                                    digest=sealed.digest, envelope_id=sealed.binding.envelope_id,
                                    rows=int(self.table.n_rows), arrays=sorted(ex.arrays))
        return sealed


@dataclass
class ApplyResult:
    out_path: Path
    rows: int
    columns: list[str]
    method: str
    summary: dict
    validation: dict | None = None  # with ``validate``: the package beside the site's own model (see below)


def apply_package(package_path: str | Path, identity: Identity, csv_path: str | Path, out_path: str | Path, *,
                  workspace: SiteWorkspace, options: CsvOptions | None = None,
                  control: JobControl | None = None, with_representation: bool = False,
                  validate: bool = False) -> ApplyResult:
    """Verify a package against the kit's analyst, map this site's rows with it and write RESULT.csv.

    ``with_representation`` (clustering): also write the rows' clustering representation Z_i as columns
    ``z1`` … ``zq`` (empty for rows left out).

    ``validate``: the CSV's rows carry labels the site trusts. The package's predictions and those of the
    site's own-rows model (trained at export, kept in the workspace) are scored on them, each accuracy with its
    row count and 95 % Wilson interval, plus McNemar's exact test on the rows where the two disagree; the
    better is recommended and its predictions written as ``recommended`` (beside ``prediction`` and
    ``local_prediction``). Nothing leaves the site."""
    control = ensure(control)
    binding = inspect(package_path)
    kit_path = workspace.kit_path(binding.project_id)
    if not kit_path.exists():
        raise FormatError("this package is for a project this site's workspace does not know", path=package_path)
    kit = Kit.load(kit_path)
    opened = open_sealed(package_path, identity, expect_kind="package", expect_project=kit.project_id,
                         expect_sender=kit.analyst, control=control.sub(0.0, 0.3))
    if not opened.binding.in_reply_to:
        raise FormatError("package is not bound to a bundle", path=package_path)
    meta, private = workspace.load_export(kit.project_id, opened.binding.in_reply_to)
    manifest, arrays = opened.payload.manifest, opened.payload.arrays
    method = get_method(manifest.get("method", ""))
    control.step(0.4, "reading the CSV")
    schema = kit.schema.block_schema(meta["block"]) if meta.get("block") else kit.schema
    table = read_table(csv_path, schema, options=options, labels=validate)
    control.step(0.6, "applying the package")
    columns = method.apply(manifest, arrays, private, table.X)
    validation = None
    if validate:
        if table.y is None or "prediction" not in columns:
            raise ConfigError("only a classification package can be validated against labelled rows")
        validation = _validate(columns, private, table, list(manifest.get("classes", [])), manifest)
    if with_representation and hasattr(method, "representation"):
        Z, _ = method.representation(arrays, private)
        for q in range(Z.shape[1]):
            columns[f"z{q + 1}"] = np.array(["" if np.isnan(v) else repr(float(v)) for v in Z[:, q]], dtype=object)
    control.step(0.8, "writing the results")
    fmt = table.format
    original = pd.read_csv(csv_path, sep=fmt.delimiter, encoding=fmt.encoding, dtype=str, keep_default_na=False)
    for name, values in columns.items():
        original[name] = values
    with atomic_writer(out_path, "w") as fh:
        original.to_csv(fh, index=False)
    workspace.audit.append("apply", project=kit.project_id, package=str(Path(package_path).resolve()),
                           package_digest=opened.digest, in_reply_to=opened.binding.in_reply_to,
                           rows=int(table.n_rows), out=str(Path(out_path).resolve()),
                           **({"validation": {k: validation[k] for k in ("package", "local", "recommend")}}
                              if validation else {}))
    control.step(1.0, "done")
    return ApplyResult(Path(out_path), int(table.n_rows), list(columns), method.name, manifest, validation)


def _validate(columns: dict, private: dict, table: LocalTable, classes: list[str], manifest: dict) -> dict:
    """Score the package and the site's own model on labelled rows; add ``local_prediction`` and
    ``recommended`` to ``columns``; return the numbers (every accuracy with n and a 95 % interval)."""
    from scipy.stats import binomtest

    truth = np.asarray(classes, dtype=object)[table.y]
    pkg_ok = columns["prediction"] == truth
    n = int(len(truth))
    out = {"rows": n, "package": estimate(float(pkg_ok.mean()) if n else 0.0, n),
           "analyst_expected": manifest.get("expected"), "local": None, "recommend": "package",
           "reason": "this workspace holds no own-rows model (exported before it was kept)"}
    if has_local_model(private):
        local_pred = np.asarray(classes, dtype=object)[local_predict_proba(private, table.X).argmax(axis=1)]
        loc_ok = local_pred == truth
        out["local"] = estimate(float(loc_ok.mean()) if n else 0.0, n)
        b, c = int(np.sum(pkg_ok & ~loc_ok)), int(np.sum(~pkg_ok & loc_ok))  # rows only one model gets right
        p = float(binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0
        out.update({"package_only_right": b, "local_only_right": c, "mcnemar_p": p})
        better = "local" if c > b else "package"
        out["recommend"] = better
        out["reason"] = (("the package" if better == "package" else "your own model") + " is right on "
                         f"{max(b, c)} row(s) where the other is wrong, and wrong on {min(b, c)} where the other is "
                         "right" + (f"; the difference is not clear at this size (McNemar p = {p:.2f})"
                                    if p >= 0.05 else f" (McNemar p = {p:.3f})"))
        columns["local_prediction"] = local_pred
        columns["recommended"] = local_pred if better == "local" else columns["prediction"]
    out["weak"] = bool(out["package"]["weak"])
    return out
