"""The analyst's half of a round: import bundles → fit the method → one sealed package per site.

This module and everything it imports never read an anchor file (the privacy model's one hard rule):
``core.formats.anchor`` is not imported here, and a test checks that importing and running this pipeline leaves
``core.formats.anchor`` out of ``sys.modules``.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from . import __version__
from .control import JobControl, ensure
from .errors import ConfigError, DCError, DuplicateError, FormatError, UnconfirmedSender, VerificationError
from .fileio import (
    portable_name,
    publish_folder,
    staging_folder,
    unique_names,
    write_json_atomic,
    write_text_atomic,
    writer_gone,
)
from .formats.envelope import Opened, Payload, SealedFile, open_sealed, read_header, seal
from .formats.identity import Identity, PublicCard, is_fingerprint, utc_now
from .formats.kit import Kit
from .formats.workspace import AnalystWorkspace
from .learn.own_cv import read_own_cv, site_rows
from .methods import FitContext, Method, MethodResult, ReceivedBundle, get_method
from .methods.base import canonical_order
from .model_card import CARD_SUFFIX, card_for, model_cards
from .robustness import ScaleFlag, scale_flags


@dataclass
class ImportReport:
    """What happened to one offered bundle file."""

    path: Path
    status: str  # "imported" | "already imported" | "refused" | "unconfirmed" (sender not confirmed: not opened)
    reason: str = ""
    site: str = ""
    fingerprint: str = ""
    rows: int = 0
    envelope_id: str = ""
    label_counts: list[int] = field(default_factory=list)
    card: PublicCard | None = None  # the sender's card from the clear header, for an unconfirmed sender


@dataclass
class RunOutputs:
    packages: list[SealedFile]
    report: Path
    summary: Path


@dataclass
class AnalystRun:
    """One fit of the round, as the front ends show and export it: the method object that made it (built
    once, with the kit's settings overlaid by the run's), its result, the bundles it covers, the sites the
    analyst left out, and the out-of-scale flags of the bundles it covers (worked out once)."""

    method: Method
    result: MethodResult
    bundles: list[ReceivedBundle]
    excluded: list[ReceivedBundle] = field(default_factory=list)
    scale_flags: list[ScaleFlag] = field(default_factory=list)
    refused: list[ImportReport] = field(default_factory=list)  # files of the folder left out (sender not confirmed)
    _views: list | None = field(default=None, repr=False, compare=False)

    def refused_entries(self) -> list[dict]:
        """The refused files as the summary and the audit log name them."""
        return [{"file": r.path.name, "site": r.site, "fingerprint": r.fingerprint, "reason": r.reason}
                for r in self.refused]

    def summary_lines(self) -> list[str]:
        return self.method.summary_lines(self.result.summary)

    def views(self) -> list:
        """The method's views of this run, made once (the app makes them on its job's thread)."""
        if self._views is None:
            self._views = self.method.views(self.result)
        return self._views


OUTPUT_SUFFIXES = (".dcpkg",)
OUTPUT_NAMES = ("report.html", "report.pdf", "summary.json")


class AnalystRound:
    """The analyst's round for one project: the object the app holds and the CLI drives.

    It owns every step both front ends need, each done once: the senders the analyst confirmed, verifying,
    decrypting and checking each bundle (once: an imported bundle is kept open, :meth:`received` reuses it),
    the kit's method object, the out-of-scale flags, the fit, and sealing the packages with the report,
    summary and audit line as one unit.

    Only confirmed senders reach the parser: a bundle is opened only when its sender's fingerprint (read from
    the clear header, before the signature check and decryption) is on the kit's roster or was confirmed by
    the analyst (:meth:`confirm`, kept in the workspace). With neither, every bundle is refused with a
    sentence saying how to confirm (fail closed).
    """

    def __init__(self, kit: Kit, identity: Identity, workspace: AnalystWorkspace):
        if identity.card.key_id != kit.analyst.key_id:
            raise VerificationError("this identity is not the analyst named in the kit")
        workspace.audit.bind(identity)  # starts a new workspace's log; refuses a missing, cut or edited one
        self.kit, self.identity, self.workspace = kit, identity, workspace
        self.method = get_method(kit.method, kit.settings)  # checks every bundle; fixes the bundle family
        self._open: dict[str, ReceivedBundle] = {}  # envelope id → bundle decrypted in this round
        self._flags: dict[tuple[str, ...], list[ScaleFlag]] = {}

    # ---- confirmed senders -----------------------------------------------------------------------
    def confirmed_fingerprints(self) -> set[str]:
        roster = {e["fingerprint"] for e in self.kit.roster or []}
        return roster | set(self.workspace.confirmed(self.kit.project_id))

    def confirm(self, who: PublicCard | str, name: str = "", how: str = "confirmed by the analyst") -> str:
        """Confirm a site key (a card, or a fingerprint the analyst compared with the site); returns its
        fingerprint. Kept in the workspace with an audit line."""
        if isinstance(who, PublicCard):
            fingerprint, name = who.fingerprint, name or who.name
        else:
            fingerprint = str(who).strip().upper()
            if not is_fingerprint(fingerprint):
                raise ConfigError(f"'{who}' is not a fingerprint (16 characters like K8ZA-XT1E-2PKR-1GNP) or a .dcpub "
                                  "card")
        self.workspace.confirm(self.kit.project_id, fingerprint, name or "(by fingerprint)", how)
        return fingerprint

    def unconfirmed(self, paths: list[str | Path]) -> list[tuple[Path, PublicCard]]:
        """(file, sender card) of the offered files of this project whose sender is not confirmed; reads headers
        only (a file of another project is left to the import, which names both projects)."""
        known = self.confirmed_fingerprints()
        out = []
        for p in paths:
            with contextlib.suppress(DCError):
                header = read_header(p)
                if header.project_id == self.kit.project_id and header.sender.fingerprint not in known:
                    out.append((Path(p), header.sender))
        return out

    # ---- import ----------------------------------------------------------------------------------
    def open_bundle(self, path: str | Path, control: JobControl | None = None) -> ReceivedBundle:
        """Verify, decrypt and check one bundle against the kit. Changes nothing on disk.

        The sender is checked against the confirmed set from the clear header first (UnconfirmedSender)."""
        try:
            opened = open_sealed(path, self.identity, expect_kind="bundle", expect_project=self.kit.project_id,
                                 expect_senders=self.confirmed_fingerprints(), control=control,
                                 project_names={self.kit.project_id: self.kit.name})
        except UnconfirmedSender as exc:
            exc.path = Path(path)
            raise
        _check_common_manifest(opened, Path(path), self.method)
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
        bundle = ReceivedBundle(card.name, card.fingerprint, opened.digest, opened.binding.envelope_id, m,
                                opened.payload.arrays, card)
        try:
            if self.kit.task == "classification":  # the site's own-model scores, if any: refused when malformed
                read_own_cv(m, site_rows(m), len(self.kit.schema.classes))
            self.method.check_bundle(bundle, self.kit)
        except FormatError as exc:
            raise FormatError(exc.message, path=path) from exc
        return bundle

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
                raise DuplicateError(exc.message, path=p) from exc
            if state == "same" and not allow_known:
                raise DuplicateError("duplicate: this bundle was already imported into this workspace", path=p)
            seen[b.envelope_id] = Path(p)
            checked.append((Path(p), b, state))
        reports = []
        for p, b, state in checked:
            rows = int(b.manifest.get("n_rows") or 0)  # checked by _check_common_manifest: a whole number or absent
            counts = b.arrays["label_counts"].tolist() if "label_counts" in b.arrays else []
            self._open[b.envelope_id] = b
            if state == "new":
                self.workspace.store(pid, p, b.envelope_id, b.digest, b.site, b.fingerprint, rows)
                self.workspace.audit.append("import", project=pid, file=str(p.resolve()), digest=b.digest,
                                            envelope_id=b.envelope_id, site=b.site, fingerprint=b.fingerprint)
            reports.append(ImportReport(p, "imported" if state == "new" else "already imported", "", b.site,
                                        b.fingerprint, rows, b.envelope_id, counts))
        control.step(1.0, "import done")
        return reports

    def try_import(self, path: str | Path) -> ImportReport:
        """Import one file, turning a refusal into a report (for tables in the GUI); the identical file offered
        again is reported "already imported" (nothing to do), not refused."""
        try:
            return self.import_bundles([path], allow_known=True)[0]
        except UnconfirmedSender as exc:
            return ImportReport(Path(path), "unconfirmed", exc.message, exc.card.name, exc.card.fingerprint,
                                card=exc.card)
        except DCError as exc:
            return ImportReport(Path(path), "refused", exc.message)

    def received(self, envelope_ids: list[str] | None = None,
                 control: JobControl | None = None) -> list[ReceivedBundle]:
        """The stored bundles (in import order), optionally only the given ids: those imported in this round as
        they were opened then, the others (imported earlier) verified and decrypted from the workspace now."""
        control = ensure(control)
        paths = self.workspace.stored(self.kit.project_id)
        out = []
        for k, p in enumerate(paths):
            if envelope_ids is not None and p.stem not in envelope_ids:
                continue
            if p.stem not in self._open:
                control.step(k / max(1, len(paths)), f"opening {p.name}")
                self._open[p.stem] = self.open_bundle(p)
            out.append(self._open[p.stem])
        return out

    def import_folder(self, folder: str | Path, control: JobControl | None = None, *,
                      skip_unconfirmed: bool = False) -> tuple[list[ImportReport], list[ReceivedBundle]]:
        """Import every .dcbundle of ``folder`` (files identical to imported ones are reported, not stored
        again) and return the reports with the bundles they hold.

        ``skip_unconfirmed``: a file whose sender this project has not confirmed (read from its clear header, so
        nothing of it is opened) is left out with an ``unconfirmed`` report instead of stopping the import — one
        file dropped in the folder cannot block the run; a folder with no other file is still refused."""
        d = Path(folder)
        if not d.is_dir():
            raise ConfigError(f"{d} is not a folder")
        files = sorted(d.glob("*.dcbundle"))
        if not files:
            raise ConfigError(f"{d} holds no .dcbundle files")
        skipped = []
        if skip_unconfirmed:
            pending = self.unconfirmed(files)
            if len(pending) == len(files):
                raise UnconfirmedSender(pending[0][1], "bundle")
            left_out = {p for p, _ in pending}
            files = [f for f in files if f not in left_out]
            skipped = [ImportReport(p, "unconfirmed", f"sender '{c.name}' ({c.fingerprint}) is not confirmed for this "
                                    "project", c.name, c.fingerprint, card=c) for p, c in pending]
        reports = self.import_bundles(files, control, allow_known=True)
        return skipped + reports, self.received([r.envelope_id for r in reports])

    def scale_flags(self, bundles: list[ReceivedBundle]) -> list[ScaleFlag]:
        """The out-of-scale sites among ``bundles`` (:mod:`core.robustness`), worked out once per set."""
        key = tuple(sorted(b.digest for b in bundles))
        if key not in self._flags:
            self._flags[key] = scale_flags(bundles)
        return self._flags[key]

    @staticmethod
    def split_excluded(bundles: list[ReceivedBundle], names: list[str]
                       ) -> tuple[list[ReceivedBundle], list[ReceivedBundle]]:
        """(kept, excluded): the sites named (by site name or fingerprint) are left out; a name that matches no
        site, or leaving no site, is refused."""
        wanted = {n.strip() for n in names}
        hit = {n for n in wanted for b in bundles if n in (b.site, b.fingerprint)}
        if wanted - hit:
            raise ConfigError(f"no imported site is named {', '.join(sorted(wanted - hit))} (to exclude)")
        keep = [b for b in bundles if b.site not in wanted and b.fingerprint not in wanted]
        if not keep:
            raise ConfigError("excluding these sites leaves no site to analyse")
        return keep, [b for b in bundles if b not in keep]

    # ---- analysis --------------------------------------------------------------------------------
    def run(self, bundles: list[ReceivedBundle], method: str | None = None, settings: dict | None = None,
            control: JobControl | None = None, on_epoch=None, *,
            excluded: list[ReceivedBundle] | None = None, refused: list[ImportReport] | None = None) -> AnalystRun:
        """Fit the kit's method (or another of the same bundle family) with the kit's settings overlaid by
        ``settings``, on ``bundles``; ``excluded`` lists sites the analyst left out (no package, named in the
        summary)."""
        name = method or self.kit.method
        merged = {**(self.kit.settings if name == self.kit.method else {}), **(settings or {})}
        m = get_method(name, merged)
        if m.family != self.method.family:
            raise FormatError(f"bundles of this kit cannot be analysed with method '{name}'")
        context = FitContext(list(self.kit.schema.classes), list(self.kit.schema.block_names), control, on_epoch,
                             features=list(self.kit.schema.encoded_names))
        # Every method sees the sites in the canonical order (by content digest), never in file or import order;
        # its packages go back in the caller's order (the result's summary and details keep the canonical one).
        order = canonical_order(bundles)
        result = m.fit([bundles[i] for i in order], context)
        back = np.argsort(order)
        result.packages = [result.packages[j] for j in back]
        return AnalystRun(m, result, list(bundles), list(excluded or []), self.scale_flags(bundles),
                          list(refused or []))

    def export(self, run: AnalystRun, out_dir: str | Path, control: JobControl | None = None) -> RunOutputs:
        """Seal one package per site, write its ``<site>.model_card.md`` beside it, and report.html and
        summary.json: one unit, in ``out_dir``.

        Everything is written into a staging folder beside ``out_dir`` (summary.json last), the audit line
        is appended, and only then the staging folder becomes ``out_dir`` by rename (a previous ``out_dir``
        holding only run outputs is replaced). A kill at any moment leaves either the old set or the new
        set, never a mix; :func:`recover_outputs` finishes or discards an interrupted publish on the next run.
        """
        control = ensure(control)
        out_dir = Path(out_dir).absolute()
        recover_outputs(out_dir)
        _check_output_folder(out_dir)
        stage = staging_folder(out_dir)
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        try:
            outputs = self._write_outputs(run, stage, control)
            bundles = run.bundles
            self.workspace.audit.append("export-packages", project=self.kit.project_id, run_id=outputs[1],
                                        out=str(out_dir), packages=[
                                            {"site": b.site, "file": s.path.name, "digest": s.digest,
                                             "in_reply_to": b.digest} for b, s in zip(bundles, outputs[0].packages,
                                                                                      strict=True)],
                                        **({"refused": run.refused_entries()} if run.refused else {}))
            publish_folder(stage, out_dir)
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        o = outputs[0]
        return RunOutputs([replace(s, path=out_dir / s.path.name) for s in o.packages], out_dir / o.report.name,
                          out_dir / o.summary.name)

    def _write_outputs(self, run: AnalystRun, out_dir: Path, control: JobControl) -> tuple[RunOutputs, str]:
        from .report import render_report

        result, bundles, excluded = run.result, run.bundles, run.excluded
        run_id, run_created = secrets.token_hex(8), utc_now()
        run_seq = self.workspace.audit.verify()  # the audit log only grows: orders runs made within one second
        audit_head = self.workspace.audit.head()
        names = unique_names([portable_name(b.site) for b in bundles], [b.fingerprint[:4] for b in bundles])
        sealed = []
        for k, (b, (manifest, arrays), name) in enumerate(zip(bundles, result.packages, names, strict=True)):
            control.step(k / len(bundles), f"sealing the package for {b.site}")
            manifest = {**manifest, "site": b.site, "kit_digest": self.kit.digest(), "software": __version__,
                        "run_id": run_id, "run_created": run_created, "run_seq": run_seq}
            sealed.append(seal(out_dir / f"{name}.dcpkg", Payload(manifest, arrays), kind="package",
                               project_id=self.kit.project_id, sender=self.identity, recipient=b.card,
                               in_reply_to=b.digest, audit_head=audit_head))
        # Beside each package, its model card for the site's clinicians (core.model_card).
        cards = model_cards(self.kit, run.method, result.summary)
        card_files: dict[int, str] = {}
        for k, (b, s) in enumerate(zip(bundles, sealed, strict=True)):
            card = card_for(cards, result.summary, b.site, b.fingerprint)
            if card is not None:
                card_files[k] = s.path.name.removesuffix(".dcpkg") + CARD_SUFFIX
                write_text_atomic(out_dir / card_files[k], card.markdown())
        # Listed in the canonical site order (by content digest): the same bundles give the same summary whatever
        # order, names or times their files had.
        canon = canonical_order(bundles)
        summary = {**result.summary, "project": {"id": self.kit.project_id, "name": self.kit.name,
                                                 "kit_digest": self.kit.digest()},
                   "software": __version__,
                   "inputs": [{"site": bundles[k].site, "fingerprint": bundles[k].fingerprint,
                               "bundle_digest": bundles[k].digest} for k in canon],
                   "packages": [{"site": bundles[k].site, "file": sealed[k].path.name, "digest": sealed[k].digest,
                                 **({"model_card": card_files[k]} if k in card_files else {})} for k in canon],
                   "run": {"id": run_id, "created": run_created, "audit_head": audit_head},
                   "scale_flags": [f.to_dict() for f in run.scale_flags],
                   "excluded": [{"site": excluded[k].site, "fingerprint": excluded[k].fingerprint,
                                 "bundle_digest": excluded[k].digest} for k in canonical_order(excluded)],
                   **({"refused": run.refused_entries()} if run.refused else {})}
        summary_path, report_path = out_dir / "summary.json", out_dir / "report.html"
        write_text_atomic(report_path, render_report(self.kit, run.method, result, summary))
        write_json_atomic(summary_path, summary)  # last: its presence marks the staged set complete
        control.step(1.0, "packages written")
        return RunOutputs(sealed, report_path, summary_path), run_id


def _check_common_manifest(opened: Opened, path: Path, method: Method) -> None:
    """The bundle manifest's fields typed and ranged by the kit method's schema (``bundle:<method>``,
    core/formats/fields.py) before any of them is used, and ``n_rows`` equal to the rows of ``x_tilde``
    (when both are present); every float array finite."""
    m, arrays = opened.payload.manifest, opened.payload.arrays
    try:
        method.check_bundle_fields(m, arrays)
    except FormatError as exc:
        raise FormatError(exc.message, path=path) from exc
    n = m.get("n_rows")
    x = arrays.get("x_tilde")
    if x is not None and (x.ndim != 2 or (n is not None and x.shape[0] != n)):
        raise FormatError("the bundle's reduced rows do not match its row count", path=path)
    for name, a in arrays.items():
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise FormatError(f"the bundle's array '{name}' holds non-finite values", path=path)


def _is_output(p: Path) -> bool:
    return (p.name in OUTPUT_NAMES or p.suffix in OUTPUT_SUFFIXES or p.name.endswith(CARD_SUFFIX)
            or (p.name.startswith(".") and p.suffix == ".part"))


def _check_output_folder(out_dir: Path) -> None:
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} is a file; choose a folder for the packages")
    if out_dir.is_dir():
        other = sorted(p.name for p in out_dir.iterdir() if not _is_output(p))
        if other:
            raise ConfigError(f"the output folder {out_dir} holds other files ({', '.join(other[:3])}"
                              f"{'…' if len(other) > 3 else ''}); choose a new or empty folder for the packages")


def recover_outputs(out_dir: str | Path) -> None:
    """Finish or undo what a killed :meth:`AnalystRound.export` left beside ``out_dir``.

    A staging folder whose writer is gone is published if complete (it has summary.json, written last; its
    audit line was appended before publishing) and removed otherwise; a set-aside previous output folder is
    put back if nothing replaced it, else removed."""
    out_dir = Path(out_dir).absolute()
    parent = out_dir.parent
    if not parent.is_dir():
        return

    def stale(p: Path, suffix: str) -> bool:
        return writer_gone(p, out_dir.name, suffix)

    for stage in sorted(parent.glob(f".{out_dir.name}.*.staging")):
        if not stale(stage, ".staging"):
            continue
        if (stage / "summary.json").is_file():
            publish_folder(stage, out_dir)
        else:
            shutil.rmtree(stage, ignore_errors=True)
    for old in sorted(parent.glob(f".{out_dir.name}.*.old")):
        if not stale(old, ".old"):
            continue
        if out_dir.exists():
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(old, out_dir)
