"""The analyst's half of a round: import bundles → fit the method → one sealed package per site.

This module and everything it imports never read an anchor file (the privacy model's one hard rule):
``core.formats.anchor`` is not imported here, and a test checks that importing and running this pipeline leaves
``core.formats.anchor`` out of ``sys.modules``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .control import JobControl, ensure
from .errors import DCError, DuplicateError, FormatError, VerificationError
from .formats.envelope import Opened, Payload, SealedFile, open_sealed, seal
from .formats.fileio import write_json_atomic, write_text_atomic
from .formats.identity import Identity, PublicCard
from .formats.kit import Kit
from .formats.workspace import AnalystWorkspace
from .methods import MethodResult, ReceivedBundle, get_method


@dataclass
class ImportReport:
    """What happened to one offered bundle file."""

    path: Path
    status: str  # "imported" | "already imported" | "refused"
    reason: str = ""
    site: str = ""
    fingerprint: str = ""
    rows: int = 0
    envelope_id: str = ""
    label_counts: list[int] = field(default_factory=list)


@dataclass
class RunOutputs:
    packages: list[SealedFile]
    report: Path
    summary: Path


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "site"


class AnalystSession:
    """An analyst's open project: the kit, the analyst's identity and the workspace."""

    def __init__(self, kit: Kit, identity: Identity, workspace: AnalystWorkspace):
        if identity.card.key_id != kit.analyst.key_id:
            raise VerificationError("this identity is not the analyst named in the kit")
        self.kit, self.identity, self.workspace = kit, identity, workspace

    # ---- import ----------------------------------------------------------------------------------
    def open_bundle(self, path: str | Path, control: JobControl | None = None) -> ReceivedBundle:
        """Verify, decrypt and check one bundle against the kit. Changes nothing on disk."""
        opened = open_sealed(path, self.identity, expect_kind="bundle", expect_project=self.kit.project_id,
                             control=control)
        return self._received(opened, Path(path))

    def _received(self, opened: Opened, path: Path) -> ReceivedBundle:
        card: PublicCard = opened.binding.sender
        if not self.kit.roster_allows(card):
            raise VerificationError(f"sender '{card.name}' ({card.fingerprint}) is not on the kit's roster", path=path)
        m = opened.payload.manifest
        if m.get("kit_digest") != self.kit.digest():
            raise FormatError("bundle was made from a different version of the kit", path=path)
        if m.get("schema_digest") != self.kit.schema.digest():
            raise FormatError("bundle's columns do not match the kit's schema", path=path)
        method = get_method(self.kit.method, self.kit.settings)
        if m.get("family") != method.family:
            raise FormatError(f"bundle was made for method '{m.get('method')}', not for this kit's method", path=path)
        if self.kit.task == "clustering":
            self._check_block(m, opened.payload.arrays, path)
        bundle = ReceivedBundle(card.name, card.fingerprint, opened.digest, opened.binding.envelope_id, m,
                                opened.payload.arrays, card)
        try:
            method.validate_bundle(bundle, len(self.kit.schema.classes))
        except FormatError as exc:
            raise FormatError(exc.message, path=path) from None
        return bundle

    def _check_block(self, m: dict, arrays: dict, path: Path) -> None:
        """A clustering bundle holds one of the kit's feature blocks, with that block's column count."""
        schema = self.kit.schema
        block = m.get("block")
        if block not in schema.block_names:
            raise FormatError(f"bundle holds feature block {block!r}, which the kit does not declare (its blocks are "
                              f"{schema.describe_blocks()})", path=path)
        cols = schema.block_columns(block)
        if m.get("n_features") != len(cols):
            raise FormatError(f"bundle's block '{block}' has {m.get('n_features')} column(s); the kit's block has "
                              f"{len(cols)} ({', '.join(cols)})", path=path)
        if len(schema.block_names) > 1 and "id_hash" not in arrays:
            raise FormatError("bundle lacks the hashed row ids needed to link the feature blocks", path=path)

    def import_bundles(self, paths: list[str | Path], control: JobControl | None = None, *,
                       allow_known: bool = False) -> list[ImportReport]:
        """All or nothing: every file is verified first; if any is refused, nothing is imported.

        Raises the first refusal (a DCError naming the file); duplicates inside the offered set and
        replays of a bundle id already in the workspace are refused as :class:`DuplicateError`. With
        ``allow_known`` a file identical to one already imported is reported as such and not stored again
        (``analyst run`` re-runs over the same folder that way).
        """
        control = ensure(control)
        pid = self.kit.project_id
        checked, seen = [], {}
        for k, p in enumerate(paths):
            control.step(k / max(1, len(paths)), f"verifying {Path(p).name}")
            b = self.open_bundle(p)
            if b.envelope_id in seen:
                raise DuplicateError(f"duplicate of {seen[b.envelope_id].name}: the same bundle was offered twice",
                                     path=p)
            if any(c[1].fingerprint == b.fingerprint for c in checked):
                raise DuplicateError(f"a second bundle from site '{b.site}' in the same import", path=p)
            try:
                state = self.workspace.check_new(pid, b.envelope_id, b.digest, b.fingerprint)
            except DuplicateError as exc:
                raise DuplicateError(exc.message, path=p) from None
            if state == "same" and not allow_known:
                raise DuplicateError("duplicate: this bundle was already imported into this workspace", path=p)
            seen[b.envelope_id] = Path(p)
            checked.append((Path(p), b, state))
        reports = []
        for p, b, state in checked:
            rows = int(b.manifest.get("n_rows", 0))
            counts = b.arrays["label_counts"].tolist() if "label_counts" in b.arrays else []
            if state == "new":
                self.workspace.store(pid, p, b.envelope_id, b.digest, b.site, b.fingerprint, rows)
                self.workspace.audit.append("import", project=pid, file=str(p.resolve()), digest=b.digest,
                                            envelope_id=b.envelope_id, site=b.site, fingerprint=b.fingerprint)
            reports.append(ImportReport(p, "imported" if state == "new" else "already imported", "", b.site,
                                        b.fingerprint, rows, b.envelope_id, counts))
        control.step(1.0, "import done")
        return reports

    def try_import(self, path: str | Path) -> ImportReport:
        """Import one file, turning a refusal into a report (for tables in the GUI)."""
        try:
            return self.import_bundles([path])[0]
        except DCError as exc:
            return ImportReport(Path(path), "refused", exc.message)

    def received(self, envelope_ids: list[str] | None = None,
                 control: JobControl | None = None) -> list[ReceivedBundle]:
        """Re-open the stored bundles (in import order), optionally only the given ids."""
        control = ensure(control)
        paths = self.workspace.stored(self.kit.project_id)
        out = []
        for k, p in enumerate(paths):
            if envelope_ids is not None and p.stem not in envelope_ids:
                continue
            control.step(k / max(1, len(paths)), f"opening {p.name}")
            out.append(self.open_bundle(p))
        return out

    # ---- analysis --------------------------------------------------------------------------------
    def run(self, bundles: list[ReceivedBundle], method: str | None = None, settings: dict | None = None,
            control: JobControl | None = None, on_epoch=None) -> MethodResult:
        name = method or self.kit.method
        merged = {**(self.kit.settings if name == self.kit.method else {}), **(settings or {})}
        m = get_method(name, merged)
        if m.family != get_method(self.kit.method, self.kit.settings).family:
            raise FormatError(f"bundles of this kit cannot be analysed with method '{name}'")
        kwargs = {"on_epoch": on_epoch} if on_epoch is not None else {}
        if m.task == "clustering":
            kwargs["blocks"] = self.kit.schema.block_names
        return m.fit(bundles, list(self.kit.schema.classes), control=control, **kwargs)

    def export(self, result: MethodResult, bundles: list[ReceivedBundle], out_dir: str | Path,
               control: JobControl | None = None) -> RunOutputs:
        """Seal one package per site into ``out_dir`` and write report.html and summary.json beside them."""
        from .report import render_report

        control = ensure(control)
        out_dir = Path(out_dir)
        names = [safe_name(b.site) for b in bundles]
        dupes = {n for n in names if names.count(n) > 1}
        names = [f"{n}-{b.fingerprint[:4]}" if n in dupes else n for n, b in zip(names, bundles, strict=True)]
        sealed = []
        for k, (b, (manifest, arrays), name) in enumerate(zip(bundles, result.packages, names, strict=True)):
            control.step(k / len(bundles), f"sealing the package for {b.site}")
            manifest = {**manifest, "site": b.site, "kit_digest": self.kit.digest(), "software": __version__}
            sealed.append(seal(out_dir / f"{name}.dcpkg", Payload(manifest, arrays), kind="package",
                               project_id=self.kit.project_id, sender=self.identity, recipient=b.card,
                               in_reply_to=b.digest))
        # Listed by bundle digest: the same bundles give the same summary whatever order they came in.
        canon = sorted(range(len(bundles)), key=lambda k: (bundles[k].digest, bundles[k].fingerprint))
        summary = {**result.summary, "project": {"id": self.kit.project_id, "name": self.kit.name,
                                                 "kit_digest": self.kit.digest()},
                   "software": __version__,
                   "inputs": [{"site": bundles[k].site, "fingerprint": bundles[k].fingerprint,
                               "bundle_digest": bundles[k].digest} for k in canon],
                   "packages": [{"site": bundles[k].site, "file": sealed[k].path.name, "digest": sealed[k].digest}
                                for k in canon]}
        summary_path, report_path = out_dir / "summary.json", out_dir / "report.html"
        write_json_atomic(summary_path, summary)
        write_text_atomic(report_path, render_report(self.kit, result, summary))
        for b, s in zip(bundles, sealed, strict=True):
            self.workspace.audit.append("export-package", project=self.kit.project_id, site=b.site,
                                        file=str(s.path.resolve()), digest=s.digest, in_reply_to=b.digest)
        control.step(1.0, "packages written")
        return RunOutputs(sealed, report_path, summary_path)
