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
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from . import __version__
from .control import JobControl, ensure
from .errors import (
    Cancelled,
    ConfigError,
    DCError,
    DuplicateError,
    FormatError,
    UnconfirmedSender,
    VerificationError,
)
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
from .formats.fields import site_rows
from .formats.identity import Identity, PublicCard, is_fingerprint, utc_now
from .formats.kit import Kit
from .formats.workspace import AnalystWorkspace
from .learn.own_cv import read_own_cv
from .methods import FitContext, Method, MethodResult, ReceivedBundle, get_method
from .methods.base import canonical_order
from .methods.views import Text
from .model_card import CARD_SUFFIX, card_for, model_cards
from .privacy.formal_summary import formal_block, formal_lines
from .robustness import ScaleFlag, scale_flags


@dataclass
class ImportReport:
    """What happened to one offered bundle file."""

    path: Path
    # "imported" | "already imported" | "refused" (empty, unreadable, or failed a check: reason says which) |
    # "unconfirmed" (sender not confirmed: not opened)
    status: str
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
    # the files left out of the run, each with its reason: a sender not confirmed, an empty or unreadable file, a
    # bundle that failed a check, one made with a different anchor than the other sites'
    refused: list[ImportReport] = field(default_factory=list)
    _views: list | None = field(default=None, repr=False, compare=False)

    def refused_entries(self) -> list[dict]:
        """The refused files as the summary and the audit log name them."""
        return [{"file": r.path.name, "site": r.site, "fingerprint": r.fingerprint, "reason": r.reason}
                for r in self.refused]

    def refused_lines(self) -> list[str]:
        """One line per file left out of the run, as the CLI prints it."""
        return [left_out_line(r, "run") for r in self.refused]

    def summary_lines(self) -> list[str]:
        return self.method.summary_lines(self.result.summary) + formal_lines(self.result.summary.get("formal_privacy"))

    def views(self) -> list:
        """The method's views of this run, made once (the app makes them on its job's thread), after the formal
        option's statement when a site used it (the Models page)."""
        if self._views is None:
            formal = formal_lines(self.result.summary.get("formal_privacy"))
            self._views = ([Text(" ".join(formal), tone="warning")] if formal else []) + self.method.views(self.result)
        return self._views


@dataclass(frozen=True)
class _Senders(Collection):
    """The kit's roster and the confirmed keys, as one collection of fingerprints (membership only)."""

    roster: frozenset[str]
    confirmed: frozenset[str]

    def __contains__(self, fingerprint: object) -> bool:
        return fingerprint in self.roster or fingerprint in self.confirmed

    def __iter__(self):
        return iter(self.roster | self.confirmed)

    def __len__(self) -> int:
        return len(self.roster | self.confirmed)


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
        self._roster = frozenset(e.get("fingerprint") for e in kit.roster or [])
        # once: they hash the whole kit, roster included (O(sites)); every bundle is checked against both
        self._kit_digest, self._schema_digest = kit.digests()
        self._sealed_at: tuple[str, int, str] | None = None  # the audit position the last packages carry
        self._open: dict[str, ReceivedBundle] = {}  # envelope id → bundle decrypted in this round
        self._paths: dict[str, Path] = {}  # envelope id → the file it was opened from
        self._flags: dict[tuple[str, ...], list[ScaleFlag]] = {}
        # stored bundles that no longer pass the checks (opened by :meth:`received`): left out of every run, named
        self.left_out: dict[str, ImportReport] = {}

    # ---- confirmed senders -----------------------------------------------------------------------
    def confirmed_fingerprints(self) -> set[str]:
        return self._roster | set(self.workspace.confirmed(self.kit.project_id))  # signed by the owner

    def _senders(self) -> _Senders:
        """The confirmed fingerprints as a view (no union copied per bundle: an import of S bundles stays O(S))."""
        return _Senders(self._roster, self.workspace.confirmed_keys(self.kit.project_id))

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
                                 expect_senders=self._senders(), control=control,
                                 project_names={self.kit.project_id: self.kit.name})
        except UnconfirmedSender as exc:
            exc.path = Path(path)
            raise
        card: PublicCard = opened.binding.sender
        if self.kit.roster is not None and card.fingerprint not in self._roster:  # the kit's roster, as a set
            raise VerificationError(f"sender '{card.name}' ({card.fingerprint}) is not on the kit's roster", path=path)
        try:  # the sender is verified from here on: a refusal names the site
            bundle = self._received(opened, self.method)
        except FormatError as exc:
            raise FormatError(f"the bundle of site '{card.name}' ({card.fingerprint}) is refused: {exc.message}",
                              path=path) from exc
        self._paths[bundle.envelope_id] = Path(path)
        return bundle

    def _received(self, opened: Opened, method: Method) -> ReceivedBundle:
        """The checks of a verified, decrypted bundle, in order: the kit it was made from, its declaration (members,
        arrays, rules; only the declared members are kept), the site's own-model scores, the method's own checks."""
        card: PublicCard = opened.binding.sender
        m = opened.payload.manifest
        if not isinstance(m, dict) or m.get("kit_digest") != self._kit_digest:
            raise FormatError("bundle was made from a different version of the kit")
        if m.get("schema_digest") != self._schema_digest:
            raise FormatError("bundle's columns do not match the kit's schema")
        m = _check_common_manifest(m, opened.payload.arrays, method, self.kit)
        bundle = ReceivedBundle(card.name, card.fingerprint, opened.digest, opened.binding.envelope_id, m,
                                opened.payload.arrays, card)
        if self.kit.task == "classification":  # the site's own-model scores, if any: refused when malformed
            read_own_cv(m, site_rows(m), len(self.kit.schema.classes))
        method.check_bundle(bundle, self.kit)
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
        checked, seen, senders, replaced = [], {}, set(), []
        for k, p in enumerate(paths):
            control.step(k / max(1, len(paths)), f"verifying {Path(p).name}")
            b = self.open_bundle(p)
            if b.envelope_id in seen:
                raise DuplicateError(f"duplicate of {seen[b.envelope_id].name}: the same bundle was offered twice",
                                     path=p)
            if b.fingerprint in senders:
                raise DuplicateError(f"a second bundle from site '{b.site}' in the same import", path=p)
            senders.add(b.fingerprint)
            try:
                state = self.workspace.check_new(pid, b.envelope_id, b.digest, b.fingerprint)
            except DuplicateError as exc:
                fault = self._stored_fault(b) if b.envelope_id not in self.workspace.registry(pid) else None
                if fault is None:
                    raise DuplicateError(exc.message, path=p) from exc
                replaced.append(fault)  # the site's stored bundle fails the checks now: this one takes its place
                state = "new"
            if state == "same" and not allow_known:
                raise DuplicateError("duplicate: this bundle was already imported into this workspace", path=p)
            seen[b.envelope_id] = Path(p)
            checked.append((Path(p), b, state))
        for envelope_id, reason in replaced:
            self.workspace.set_aside(pid, envelope_id, reason)
            self._open.pop(envelope_id, None)
            self.left_out.pop(envelope_id, None)
        reports = []
        for p, b, state in checked:
            rows = int(b.manifest.get("n_rows") or 0)  # checked by _check_common_manifest: a whole number or absent
            counts = b.arrays["label_counts"].tolist() if "label_counts" in b.arrays else []
            self._open[b.envelope_id] = b
            if state == "new":  # the audit line first: no bundle is kept that the log does not record
                self.workspace.audit.append("import", project=pid, file=str(p.resolve()), digest=b.digest,
                                            envelope_id=b.envelope_id, site=b.site, fingerprint=b.fingerprint)
                self.workspace.store(pid, p, b.envelope_id, b.digest, b.site, b.fingerprint, rows)
            reports.append(ImportReport(p, "imported" if state == "new" else "already imported", "", b.site,
                                        b.fingerprint, rows, b.envelope_id, counts))
        control.step(1.0, "import done")
        return reports

    def try_import(self, path: str | Path) -> ImportReport:
        """Import one file, turning a refusal into a report (for tables in the GUI); the identical file offered
        again is reported "already imported" (nothing to do), not refused."""
        try:
            return self.import_bundles([path], allow_known=True)[0]
        except Cancelled:
            raise
        except DCError as exc:
            return self._refused_report(Path(path), exc)

    def received(self, envelope_ids: list[str] | None = None,
                 control: JobControl | None = None) -> list[ReceivedBundle]:
        """The stored bundles (in import order), optionally only the given ids: those imported in this round as
        they were opened then, the others (imported earlier) verified, decrypted and checked from the workspace now.
        A stored bundle that no longer passes the checks (e.g. one a version that checked less imported) is left out
        and kept in :attr:`left_out`, which every run names; its site's next bundle replaces it."""
        control = ensure(control)
        pid = self.kit.project_id
        paths = self.workspace.stored(pid)
        out = []
        for k, p in enumerate(paths):
            if envelope_ids is not None and p.stem not in envelope_ids or p.stem in self.left_out:
                continue
            if p.stem not in self._open:
                control.step(k / max(1, len(paths)), f"opening {p.name}")
                try:
                    self._open[p.stem] = self.open_bundle(p)
                except Cancelled:
                    raise
                except DCError as exc:
                    entry = self.workspace.registry(pid).get(p.stem, {})
                    self.left_out[p.stem] = ImportReport(p, "refused", exc.message, str(entry.get("site", "")),
                                                         str(entry.get("fingerprint", "")), envelope_id=p.stem)
                    continue
            out.append(self._open[p.stem])
        return out

    def import_folder(self, folder: str | Path, control: JobControl | None = None, *,
                      leave_out: bool = False) -> tuple[list[ImportReport], list[ReceivedBundle]]:
        """Import every .dcbundle of ``folder`` (files identical to imported ones are reported, not stored
        again) and return the reports with the bundles they hold.

        ``leave_out``: a file that cannot be used is left out with a report saying why instead of stopping the
        import, as the app lists it and goes on — one file in the folder cannot block the run: a sender this
        project has not confirmed (``unconfirmed``, read from the clear header, so nothing of it is opened); an
        empty or unreadable file, a duplicate, or a bundle that fails a check (``refused``, naming the site when
        its signature verified). A folder with no usable file is still refused, with the first file's reason."""
        d = Path(folder)
        if not d.is_dir():
            raise ConfigError(f"{d} is not a folder")
        files = sorted(d.glob("*.dcbundle"))
        if not files:
            raise ConfigError(f"{d} holds no .dcbundle files")
        if not leave_out:
            reports = self.import_bundles(files, control, allow_known=True)
            return reports, self.received([r.envelope_id for r in reports])
        control = ensure(control)
        pending = self.unconfirmed(files)
        if len(pending) == len(files):
            raise UnconfirmedSender(pending[0][1], "bundle")
        waiting = {p for p, _ in pending}
        reports = [ImportReport(p, "unconfirmed", f"sender '{c.name}' ({c.fingerprint}) is not confirmed for this "
                                "project", c.name, c.fingerprint, card=c) for p, c in pending]
        used, first_refusal, seen = [], None, {}
        for k, f in enumerate(files):
            if f in waiting:
                continue
            control.step(k / len(files), f"verifying {f.name}")
            try:
                report = self.import_bundles([f], allow_known=True)[0]
                if report.envelope_id in seen:
                    raise DuplicateError(f"duplicate of {seen[report.envelope_id].name}: the same bundle was offered "
                                         "twice", path=f)
            except Cancelled:
                raise
            except DCError as exc:
                first_refusal = first_refusal or exc
                reports.append(self._refused_report(f, exc))
                continue
            seen[report.envelope_id] = f
            reports.append(report)
            used.append(report)
        if not used:
            raise first_refusal if first_refusal is not None else UnconfirmedSender(pending[0][1], "bundle")
        return reports, self.received([r.envelope_id for r in used])

    @staticmethod
    def _refused_report(path: Path, exc: DCError) -> ImportReport:
        """A refused file's report: its reason, and the sender its clear header names (when it has one)."""
        site = fingerprint = ""
        with contextlib.suppress(DCError):
            header = read_header(path)
            site, fingerprint = header.sender.name, header.sender.fingerprint
        if isinstance(exc, UnconfirmedSender):
            return ImportReport(path, "unconfirmed", exc.message, exc.card.name, exc.card.fingerprint, card=exc.card)
        return ImportReport(path, "refused", exc.message, site, fingerprint)

    def _stored_fault(self, bundle: ReceivedBundle) -> tuple[str, str] | None:
        """(envelope id, why) of the bundle stored for ``bundle``'s site when it fails the checks now (or was made
        with another anchor than the other stored bundles), so that ``bundle`` may replace it; None when it is
        sound (one bundle per site: the new one is then refused)."""
        pid = self.kit.project_id
        mine = [e for e, entry in self.workspace.registry(pid).items()
                if entry.get("fingerprint") == bundle.fingerprint and "set_aside" not in entry]
        if not mine:
            return None
        stored = self.received()
        for envelope_id in mine:
            if envelope_id in self.left_out:
                return envelope_id, self.left_out[envelope_id].reason
        _, disagree = self._same_anchor(stored)
        for b, reason in disagree:
            if b.envelope_id in mine:
                return b.envelope_id, reason
        return None

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
        summary).

        One site never blocks a run: a bundle that fails the run method's checks, or was made with another anchor
        than most sites' (:meth:`_same_anchor`), is left out and named with its reason beside ``refused`` (files the
        caller left out) and the stored bundles :meth:`received` left out; ConfigError when no bundle is left."""
        name = method or self.kit.method
        merged = {**(self.kit.settings if name == self.kit.method else {}), **(settings or {})}
        m = get_method(name, merged)
        if m.family != self.method.family:
            raise FormatError(f"bundles of this kit cannot be analysed with method '{name}'")
        left_out = [*(refused or []), *(r for r in self.left_out.values()
                                         if r.envelope_id not in {x.envelope_id for x in refused or []})]
        usable = []
        for b in bundles:
            why = self._fault_for_run(b, m)
            if why is None:
                usable.append(b)
            else:
                left_out.append(self._left_out_report(b, why))
        usable, disagree = self._same_anchor(usable)
        left_out += [self._left_out_report(b, why) for b, why in disagree]
        if not usable:
            raise ConfigError("no bundle is left to analyse: " + "; ".join(left_out_line(r, "run") for r in left_out)
                              if left_out else "no bundles to analyse")
        context = FitContext(list(self.kit.schema.classes), list(self.kit.schema.block_names), control, on_epoch,
                             features=list(self.kit.schema.encoded_names))
        # Every method sees the sites in the canonical order (by content digest), never in file or import order;
        # its packages go back in the caller's order (the result's summary and details keep the canonical one).
        order = canonical_order(usable)
        result = m.fit([usable[i] for i in order], context)
        # (ε, δ) per site, what it covers, what figures rest on
        formal = formal_block([usable[i] for i in order], m.discloses)
        if formal:
            result.summary["formal_privacy"] = formal
        kept = {b.fingerprint: b.manifest["rows_kept_at_site"] for b in usable if b.manifest.get("rows_kept_at_site")}
        for entry in result.summary.get("sites", []):  # a site's rows = sent + kept to check: said beside each other
            if isinstance(entry, dict) and entry.get("fingerprint") in kept:
                entry["rows_kept_at_site"] = int(kept[entry["fingerprint"]])
        back = np.argsort(order)
        result.packages = [result.packages[j] for j in back]
        return AnalystRun(m, result, list(usable), list(excluded or []), self.scale_flags(usable), left_out)

    def _fault_for_run(self, bundle: ReceivedBundle, method: Method) -> str | None:
        """Why ``bundle`` cannot go into a run of ``method`` (its checks, when it is not the kit's method), or None."""
        if type(method) is type(self.method):
            return None
        try:
            method.check_bundle_declared(bundle.manifest, bundle.arrays, self.kit)
            method.check_bundle(bundle, self.kit)
        except FormatError as exc:
            return f"the bundle of site '{bundle.site}' ({bundle.fingerprint}) does not fit method {method.name}: " \
                   f"{exc.message}"
        return None

    def _same_anchor(self, bundles: list[ReceivedBundle]
                     ) -> tuple[list[ReceivedBundle], list[tuple[ReceivedBundle, str]]]:
        """(kept, [(left out, why)]): every bundle that ships an anchor image must have been made with the same
        anchor, i.e. the same anchor row count. The count most sites share wins (a tie: the count nearest the kit's
        anchor rows, then the larger); the other bundles are left out, each with one sentence."""
        counts = {b.envelope_id: int(b.arrays["anchor_tilde"].shape[0]) for b in bundles if "anchor_tilde" in b.arrays}
        tally = Counter(counts.values())
        if len(tally) <= 1:
            return list(bundles), []
        target = int(self.kit.anchor.get("rows", 0) or 0) if isinstance(self.kit.anchor, dict) else 0
        common = max(tally, key=lambda c: (tally[c], -abs(c - target), c))
        kept, out = [], []
        for b in bundles:
            c = counts.get(b.envelope_id, common)
            if c == common:
                kept.append(b)
            else:
                out.append((b, f"the bundle of site '{b.site}' ({b.fingerprint}) was made with another anchor ({c} "
                               f"anchor rows; {tally[common]} other site(s) used one of {common}), so it cannot be "
                               "aligned with theirs; the site must export again with the project's anchor file"))
        return kept, out

    def _left_out_report(self, b: ReceivedBundle, why: str) -> ImportReport:
        return ImportReport(self._paths.get(b.envelope_id, Path(f"{b.envelope_id}.dcbundle")), "refused", why, b.site,
                            b.fingerprint, envelope_id=b.envelope_id)

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
            self.workspace.record_sealed(self.identity, self._sealed_at, outputs[1])  # rollback evidence (§5)
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
        self.workspace.audit.verify()  # the whole log, once per run
        self._sealed_at = self.workspace.audit.position()  # the packages carry its head; the workspace keeps it
        _, run_seq, audit_head = self._sealed_at  # the audit log only grows: run_seq orders runs within one second
        names = unique_names([portable_name(b.site) for b in bundles], [b.fingerprint[:4] for b in bundles])
        sealed = []
        for k, (b, (manifest, arrays), name) in enumerate(zip(bundles, result.packages, names, strict=True)):
            control.step(k / len(bundles), f"sealing the package for {b.site}")
            # written only as the package's declaration allows, checked as the site will check it
            manifest = run.method.write_package_manifest({
                **manifest, "site": b.site, "kit_digest": self._kit_digest, "software": __version__,
                "run_id": run_id, "run_created": run_created, "run_seq": run_seq})
            sealed.append(seal(out_dir / f"{name}.dcpkg", Payload(manifest, arrays), kind="package",
                               project_id=self.kit.project_id, sender=self.identity, recipient=b.card,
                               in_reply_to=b.digest, audit_head=audit_head))
        # Beside each package, its model card for the site's clinicians (core.model_card).
        cards = model_cards(self.kit, run.method, {**result.summary, "software": __version__,  # dated and versioned
                                                   "run": {"id": run_id, "created": run_created}})
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
                                                 "kit_digest": self._kit_digest},
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


def _check_common_manifest(m: dict, arrays: dict[str, np.ndarray], method: Method, kit: Kit) -> dict:
    """The bundle checked against the kit method's declaration (``bundle:<method>``, core/formats/fields.py: members
    typed and ranged, arrays of the declared dtypes and shapes, the rules between them and the kit) before any member
    is used, ``n_rows`` equal to the rows of ``x_tilde`` (when both are present) and every float array finite.
    Returns the declared members only: nothing else of the manifest is ever read."""
    for name, a in arrays.items():
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise FormatError(f"the bundle's array '{name}' holds non-finite values")
    m = method.check_bundle_declared(m, arrays, kit)
    n = m.get("n_rows")
    x = arrays.get("x_tilde")
    if x is not None and (x.ndim != 2 or (n is not None and x.shape[0] != n)):
        raise FormatError("the bundle's reduced rows do not match its row count")
    return m


def left_out_line(r: ImportReport, what: str) -> str:
    """The one line that names a file left out of an import or a run, and why."""
    sender = f" from '{r.site}' ({r.fingerprint})" if r.site else ""
    if r.status == "unconfirmed":
        return (f"refused: {r.path.name}{sender}: sender not confirmed for this project, so it is left out of this "
                f"{what}; compare the fingerprint with the site and {what} again with --confirm")
    return f"refused: {r.path.name}{sender}: {r.reason}; it is left out of this {what}"


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
