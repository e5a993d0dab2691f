"""Workspaces: what each party keeps on its own machine between the two halves of a round.

Site workspace (``<identity>.workspace/`` beside the identity file unless ``--workspace`` is given)::

    workspace.json                      the workspace's id, signed by its owner (the audit log names it)
    audit.jsonl, audit.head             signed, hash-chained log of every export and import, and its head
    sealed.json                         the audit head of the last file sealed here, signed (rollback evidence)
    projects/<project_id>/kit.dckit     the signed kit (to verify the analyst's package later)
    projects/<project_id>/analyst.json  the analyst key pinned on first use (trust on first use), signed
    projects/<project_id>/exports/<digest16>/state.json + *.npy
                                        per bundle: the private map f_i, the row permutation, settings, the
                                        SHA-256 of every array and the audit head it was sealed at, signed
                                        (+ applied.json: the packages applied to it, to warn on re-use, signed)

Analyst workspace (same default rule)::

    workspace.json, audit.jsonl, audit.head, sealed.json
    projects/<project_id>/registry.jsonl one signed line per imported bundle id (replay protection), appended
    projects/<project_id>/confirmed.json the site keys the analyst confirmed (fingerprint → name, when, how), signed
    projects/<project_id>/bundles/<envelope_id>.dcbundle   the sealed files as received

Every file the product trusts later is signed by the workspace's owner (core/formats/signed_state.py) or checked
against a signed source (the stored kit against the signed pin, a stored bundle against its sender's signature).
Arrays are ``.npy`` read with ``allow_pickle=False``; metadata is JSON; every write is atomic. Folders are
0700 and files 0600 whatever the umask. Opening a workspace removes ``.part`` files a killed run left and, in a
site workspace, the staging folders of killed exports (never published) — and nothing else: an export folder
appears only after its audit line, so no log is read to decide what to remove.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, DCError, DuplicateError, FormatError, VerificationError
from ..fileio import (
    OLD_SUFFIX,
    STAGING_SUFFIX,
    atomic_writer,
    clean_stale_parts,
    private_dir,
    publish_folder,
    staging_folder,
    utc_now,
    write_bytes_atomic,
    write_json_atomic,
    writer_gone,
)
from .audit import AuditLog, free_name, new_log_hint
from .identity import Identity, PublicCard, is_fingerprint, is_hex, is_utc_time
from .kit import Kit
from .signed_state import UnsignedState, check_line, read_state, sign_line, write_state

_NAME = re.compile(r"^[a-z0-9_]{1,64}$")
WORKSPACE_FILE = "workspace.json"
SEALED_FILE = "sealed.json"
LEGACY_REGISTRY = "registry.json"
REGISTRY = "registry.jsonl"
MAX_REGISTRY_LINE = 64 << 10

PIN_REMEDY = ("confirm the analyst's fingerprint with them by phone and give it again (participant export or "
              "apply --analyst-fingerprint FINGERPRINT; in the app: the export wizard's kit page, or the results "
              "window's analyst fingerprint field)")
CONFIRM_REMEDY = ("compare each site's fingerprint with the site again and confirm it (analyst import|run --confirm "
                  "FINGERPRINT or SITE.dcpub; in the app: the Bundles page)")


class UntrustedPin(VerificationError):
    """The site holds no analyst pin it can trust for the project (none, an earlier version's unsigned one, or one
    edited or re-pointed): the analyst's fingerprint must be confirmed again."""


def adopt_remedy(root: Path) -> str:
    """The way on for an earlier version's unsigned state file (signed by the owner on purpose)."""
    return ("if this workspace is yours and nobody else could write to it, sign its earlier files: dcstudio audit new "
            f"{root} --identity YOUR.dcid --reason \"upgrade\" --adopt-unsigned")


def default_workspace(identity_path: str | Path) -> Path:
    p = Path(identity_path)
    return p.with_name(p.stem + ".workspace")


def save_arrays(folder: Path, arrays: dict[str, np.ndarray]) -> dict[str, str]:
    """Write each array as ``<name>.npy`` (atomic, 0600); return the SHA-256 of each file, by name."""
    private_dir(folder)
    digests = {}
    for name, a in arrays.items():
        if not _NAME.match(name):
            raise ValueError(f"bad array name {name!r}")
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
        data = buf.getvalue()
        with atomic_writer(folder / f"{name}.npy", private=True) as fh:
            fh.write(data)
        digests[name] = hashlib.sha256(data).hexdigest()
    return digests


def load_arrays(folder: Path, names: list[str], digests: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    """The arrays ``names`` of ``folder``; with ``digests`` each file must have its recorded SHA-256."""
    out = {}
    for name in names:
        path = folder / f"{name}.npy"
        try:
            with open(path, "rb") as fh:  # hashed, then read, through one open file (no second copy in memory)
                if digests is not None:
                    h = hashlib.sha256()
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        h.update(chunk)
                    if h.hexdigest() != digests.get(name):
                        raise VerificationError("workspace array does not match the SHA-256 its signed state.json "
                                                "records: it was edited or replaced", path=path)
                    fh.seek(0)
                out[name] = np.load(fh, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise FormatError(f"workspace array is missing or unreadable ({exc.__class__.__name__})",
                              path=path) from exc
    return out


class _Workspace:
    """What both roles' workspaces share: the folder, its id, its audit log and the heads of files sealed there."""

    def __init__(self, root: str | Path):
        self.root = private_dir(root)
        clean_stale_parts(self.root, recursive=True)
        self.audit = AuditLog(self.root / "audit.jsonl", workspace=self)

    # ---- what the audit log asks of its workspace (core.formats.audit.WorkspaceBinding) -------------------
    def has_history(self) -> bool:
        """Whether the workspace holds project files, which only a command that also wrote the audit log
        makes (its owner is bound, so its log started, before anything else is written)."""
        projects = self.root / "projects"
        return projects.is_dir() and any(p.is_file() for p in projects.rglob("*"))

    def workspace_id(self, owner: PublicCard) -> str | None:
        """The id in ``workspace.json`` (signed by ``owner``); None when there is none yet."""
        path = self.root / WORKSPACE_FILE
        if not path.exists():
            return None
        body = read_state(path, "workspace", WORKSPACE_FILE, owner, "this workspace's id file (workspace.json)",
                          new_log_hint(self.audit.path))
        if not (isinstance(body, dict) and set(body) == {"id", "created"} and is_hex(body["id"], 16)):
            raise VerificationError("this workspace's id file (workspace.json) is not valid", path=path)
        return body["id"]

    def make_workspace_id(self, owner: Identity) -> str:
        """The workspace's id, made (and ``workspace.json`` written, signed) when there is none or the one there is
        not ``owner``'s (that file is copied aside first)."""
        path = self.root / WORKSPACE_FILE
        with contextlib.suppress(DCError):
            known = self.workspace_id(owner.card)
            if known is not None:
                return known
        if path.exists():  # not this owner's, or not valid: kept for whoever looks into it
            stamp = utc_now().replace(":", "").replace("-", "")
            write_bytes_atomic(free_name(path.with_name(f"workspace.before-{stamp}.json")), path.read_bytes(),
                               private=True)
        new = secrets.token_hex(16)
        write_state(path, owner, "workspace", WORKSPACE_FILE, {"id": new, "created": utc_now()})
        return new

    def sealed_records(self, owner: PublicCard) -> list[dict[str, Any]]:
        """``{"log", "seq", "head", "digest"}`` of files sealed in this workspace, from files signed by ``owner``
        (``sealed.json``; at a site also every export's state.json): a record another key signed is left out."""
        out = []
        with contextlib.suppress(DCError, OSError):
            if (self.root / SEALED_FILE).exists():
                out.append(_record(read_state(self.root / SEALED_FILE, "sealed-head", SEALED_FILE, owner,
                                              "sealed.json", "")))
        return [r for r in out if r is not None]

    def record_sealed(self, owner: Identity, position: tuple[str, int, str], digest: str) -> None:
        """Keep, signed, the audit head a file sealed here carries (the newest such file)."""
        log, seq, head = position
        write_state(self.root / SEALED_FILE, owner, "sealed-head", SEALED_FILE,
                    {"log": log, "seq": seq, "head": head, "digest": digest, "time": utc_now()})

    def owner(self) -> Identity:
        owner = self.audit.owner
        if owner is None:
            raise ConfigError("bind the workspace owner's identity first (workspace.audit.bind)")
        return owner

    def _card(self, owner: PublicCard | None) -> PublicCard:
        return owner if owner is not None else self.owner().card

    def where(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def project_dir(self, project_id: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{32}", project_id):
            raise FormatError("malformed project id")
        private_dir(self.root / "projects")
        return self.root / "projects" / project_id


def _record(body: Any) -> dict[str, Any] | None:
    ok = (isinstance(body, dict) and is_hex(body.get("log"), 16) and type(body.get("seq")) is int
          and body["seq"] >= 0 and is_hex(body.get("head"), 32))
    return {"log": body["log"], "seq": body["seq"], "head": body["head"], "digest": str(body.get("digest", ""))} \
        if ok else None


class SiteWorkspace(_Workspace):
    """A participant's private state: kit copies and, per exported bundle, f_i and the permutation.

    Opening it removes the staging folders of killed exports (:func:`clean_orphan_exports`)."""

    def __init__(self, root: str | Path):
        super().__init__(root)
        for exports in (self.root / "projects").glob("*/exports"):
            clean_orphan_exports(exports)

    def export_dir(self, project_id: str, digest: str) -> Path:
        return self.project_dir(project_id) / "exports" / digest[:16]

    def sealed_records(self, owner: PublicCard) -> list[dict[str, Any]]:
        out = super().sealed_records(owner)
        for state in (self.root / "projects").glob("*/exports/[0-9a-f]*/state.json"):
            with contextlib.suppress(DCError, OSError):
                body = read_state(state, "export-state", self.where(state), owner, "state.json", "")
                record = _record(body.get("audit") if isinstance(body, dict) else None)
                if record is not None:
                    out.append({**record, "digest": str(body.get("bundle_digest", ""))})
        return out

    def stage_export(self, kit_path: Path, project_id: str, digest: str, private_arrays: dict[str, np.ndarray],
                     meta: dict, privacy: dict | None = None, *, sealed_at: tuple[str, int, str]) -> Path:
        """Write an export's private state whole into a staging folder (state.json, signed, last) and return it;
        :meth:`publish_export` makes it ``exports/<digest16>/`` with one rename once the audit line is written, so a
        kill at any moment leaves a staging folder (never published: removed on the next open) or a complete,
        recorded folder (never removed). ``privacy``: the export's privacy assessment (raw numbers, core.privacy),
        kept as ``privacy.json``; ``sealed_at``: the audit log's (log id, entries, head) the bundle carries."""
        owner = self.owner()
        folder = self.export_dir(project_id, digest)
        clean_orphan_exports(folder.parent)
        stage = staging_folder(folder)
        shutil.rmtree(stage, ignore_errors=True)
        digests = save_arrays(stage, private_arrays)
        kit_copy = self.project_dir(project_id) / "kit.dckit"
        if Path(kit_path).resolve() != kit_copy.resolve():
            with atomic_writer(kit_copy, private=True) as fh, open(kit_path, "rb") as src:
                shutil.copyfileobj(src, fh)
        if privacy is not None:
            write_json_atomic(stage / "privacy.json", {**privacy, "bundle_digest": digest, "saved": utc_now()},
                              private=True)
        log, seq, head = sealed_at
        write_state(stage / "state.json", owner, "export-state", self.where(folder / "state.json"),
                    {**meta, "bundle_digest": digest, "arrays": sorted(private_arrays), "array_sha256": digests,
                     "audit": {"log": log, "seq": seq, "head": head}, "saved": utc_now(), "writer": os.getpid()})
        return stage

    def publish_export(self, stage: Path, project_id: str, digest: str) -> Path:
        folder = self.export_dir(project_id, digest)
        publish_folder(stage, folder)
        return folder

    # ---- trust on first use -------------------------------------------------------------------------
    def pin_state(self, project_id: str, owner: PublicCard | None = None) -> tuple[dict | None, str | None]:
        """``(pin, None)`` for a pin signed by the owner, ``(None, None)`` when there is none, ``(None, why)`` when
        the file there cannot be trusted (an earlier version's unsigned pin, or an edited or replaced one)."""
        path = self.project_dir(project_id) / "analyst.json"
        if not path.exists():
            return None, None
        what = f"the analyst pin of project {project_id[:8]}… (projects/{project_id}/analyst.json)"
        try:
            pin = read_state(path, "analyst-pin", self.where(path), self._card(owner), what, PIN_REMEDY)
        except DCError as exc:
            return None, exc.message
        if not (isinstance(pin, dict) and is_hex(pin.get("key_id"), 32) and is_fingerprint(pin.get("fingerprint"))
                and isinstance(pin.get("name"), str) and pin.get("project") == project_id):
            return None, f"{what} is not valid; {PIN_REMEDY}"
        return pin, None

    def pinned_analyst(self, project_id: str, owner: PublicCard | None = None) -> dict | None:
        """The pin, signed by the owner; None when there is none; VerificationError when it cannot be trusted."""
        pin, problem = self.pin_state(project_id, owner)
        if problem is not None:
            raise UntrustedPin(problem)
        return pin

    def pin_analyst(self, project_id: str, card: PublicCard, *, record: bool = True, how: str = "",
                    owner: PublicCard | None = None) -> str:
        """Pin ``card`` as this project's analyst the first time; refuse a different key later.

        Returns ``"pinned"`` (first use, or a pin that could not be trusted replaced after the site confirmed
        ``card`` again: the caller checks that), ``"new"`` (no trusted pin, with ``record=False``: checked, nothing
        written, so a failed export leaves no trace) or ``"known"``; VerificationError with both fingerprints when a
        trusted pin names another key. ``how``: how the site confirmed the key (kept with the pin and in the audit
        line). Recording signs with the bound owner."""
        pin, problem = self.pin_state(project_id, owner)
        if pin is None:
            if not record:
                return "new"
            private_dir(self.project_dir(project_id))
            # the audit line first: a damaged log refuses before the pin takes effect, and a kill between the two
            # leaves no pin (the next export asks for the fingerprint again), never a pin the log does not record
            self.audit.append("pin-analyst", project=project_id, analyst=card.name, fingerprint=card.fingerprint,
                              **({"confirmed": how} if how else {}), **({"replaces": problem} if problem else {}))
            path = self.project_dir(project_id) / "analyst.json"
            write_state(path, self.owner(), "analyst-pin", self.where(path),
                        {"project": project_id, "name": card.name, "fingerprint": card.fingerprint,
                         "key_id": card.key_id, "pinned": utc_now(), **({"confirmed": how} if how else {})})
            return "pinned"
        if pin.get("key_id") != card.key_id:
            raise VerificationError(
                f"this kit for project {project_id} is signed by {card.name!r} ({card.fingerprint}), but this site "
                f"accepted {pin.get('name')!r} ({pin.get('fingerprint')}) as the project's analyst on "
                f"{pin.get('pinned')}; refused (ask the analyst by phone which key is genuine)")
        return "known"

    def kit(self, project_id: str, owner: PublicCard | None = None) -> Kit:
        """The project's kit kept here, checked against the signed pin: its project is this folder's and it is signed
        by the pinned analyst key (VerificationError naming the file otherwise)."""
        path = self.kit_path(project_id)
        pin = self.pinned_analyst(project_id, owner)
        if pin is None:
            raise UntrustedPin(f"this workspace holds no analyst pin for project {project_id[:8]}…, so its kit "
                               f"cannot be trusted; {PIN_REMEDY}", path=path)
        kit = Kit.load(path)
        if kit.project_id != project_id or kit.analyst.key_id != pin["key_id"]:
            raise VerificationError(f"this kit is not project {project_id[:8]}…'s kit signed by the analyst this site "
                                    f"pinned ({pin['fingerprint']}): it was replaced", path=path)
        return kit

    # ---- applied packages (warn on re-use) ----------------------------------------------------------
    def applied(self, project_id: str, digest: str, owner: PublicCard | None = None, *,
                folder: Path | None = None) -> list[dict]:
        path = (folder or self.export_dir(project_id, digest)) / "applied.json"
        if not path.exists():
            return []
        value = read_state(path, "applied", self.where(path), self._card(owner),
                           "the list of packages applied to this export", adopt_remedy(self.root))
        if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
            raise FormatError("workspace file is not what this program wrote", path=path)
        return value

    def record_applied(self, project_id: str, digest: str, entry: dict) -> None:
        path = self.export_dir(project_id, digest) / "applied.json"
        write_state(path, self.owner(), "applied", self.where(path), [*self.applied(project_id, digest), entry])

    def load_export(self, project_id: str, digest: str, owner: PublicCard | None = None, *,
                    folder: Path | None = None) -> tuple[dict, dict[str, np.ndarray]]:
        """The export's signed state and its arrays (each checked against the SHA-256 the state records)."""
        folder = folder or self.export_dir(project_id, digest)
        state_path = folder / "state.json"
        if not state_path.exists():
            raise FormatError("this workspace holds no export for the bundle this package answers "
                              f"(looked in {folder}); use the workspace the bundle was exported from")
        meta = read_state(state_path, "export-state", self.where(state_path), self._card(owner),
                          "the private state of this export", adopt_remedy(self.root))
        arrays, digests = (meta.get("arrays"), meta.get("array_sha256")) if isinstance(meta, dict) else (None, None)
        if not isinstance(arrays, list) or not all(isinstance(a, str) and _NAME.match(a) for a in arrays) \
                or not isinstance(digests, dict) or (digest and meta.get("bundle_digest") != digest):
            raise FormatError("workspace state does not match the bundle digest", path=state_path)
        return meta, load_arrays(folder, arrays, digests)

    def export_states(self, project_id: str, owner: PublicCard | None = None) -> list[dict]:
        """The signed state (``state.json``, without its arrays) of every export of ``project_id`` this workspace
        keeps, each verified against the owner's signature (VerificationError naming a file that fails): what was
        exported, whatever happened to the audit log since (the ε ledger, core/privacy/ledger.py)."""
        out = []
        for folder in sorted((self.project_dir(project_id) / "exports").glob("[0-9a-f]*")):
            path = folder / "state.json"
            if path.is_file():
                out.append(read_state(path, "export-state", self.where(path), self._card(owner),
                                      "the private state of this export", adopt_remedy(self.root)))
        return out

    def kit_path(self, project_id: str) -> Path:
        return self.project_dir(project_id) / "kit.dckit"


class AnalystWorkspace(_Workspace):
    """The analyst's imported bundles, the replay registry and the confirmed site keys."""

    def __init__(self, root: str | Path):
        super().__init__(root)
        # project id → (bytes of registry.jsonl read and verified, file identity, entries by envelope id,
        #               envelope id by site fingerprint): appends cost O(1), a changed file is read again
        self._registries: dict[str, tuple[int, tuple, dict[str, dict], dict[str, str]]] = {}
        self._confirmed: dict[str, tuple[tuple, dict, frozenset[str]]] = {}

    def registry_path(self, project_id: str) -> Path:
        return self.project_dir(project_id) / REGISTRY

    def registry(self, project_id: str, owner: PublicCard | None = None) -> dict:
        """envelope id → ``{"envelope_id", "digest", "site", "fingerprint", "rows", "file", "imported"}`` of every
        imported bundle, each line signed by the owner (lines appended since the last read are verified; a file
        that changed otherwise is read whole again)."""
        return dict(self._registry(project_id, owner)[2])

    def _registry(self, project_id: str, owner: PublicCard | None) -> tuple[int, tuple, dict[str, dict], dict]:
        card = self._card(owner)
        legacy = self.project_dir(project_id) / LEGACY_REGISTRY
        if legacy.exists():
            raise UnsignedState(f"the bundle registry of project {project_id[:8]}… was written by an earlier version "
                                f"of DC Studio and is not signed, so it is not trusted; {adopt_remedy(self.root)}",
                                path=legacy)
        path = self.registry_path(project_id)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return 0, (), {}, {}
        ident = (st.st_dev, st.st_ino, card.signing_key)
        done, seen_ident, entries, by_site = self._registries.get(project_id, (0, (), {}, {}))
        if seen_ident != ident or st.st_size < done:
            done, entries, by_site = 0, {}, {}
        if st.st_size > done:
            with open(path, "rb") as fh:
                fh.seek(done)
                data = fh.read(st.st_size - done)
            if not data.endswith(b"\n"):
                data = data[:data.rfind(b"\n") + 1]  # a line being written (or torn by a kill) is not read yet
            where = self.where(path)
            for line in data.split(b"\n")[:-1]:
                what = f"line {len(entries) + 1} of the bundle registry of project {project_id[:8]}…"
                if len(line) > MAX_REGISTRY_LINE:
                    raise VerificationError(f"{what} is too long: it was edited", path=path)
                e = check_line(line, where, card, what, new_log_hint(self.audit.path), path)
                if not _registry_line(e, entries, by_site):
                    raise VerificationError(f"{what} is not valid: it was edited", path=path)
            done += len(data)
            self._registries[project_id] = (done, ident, entries, by_site)
        return done, ident, entries, by_site

    # ---- confirmed senders ----------------------------------------------------------------------------
    def confirmed(self, project_id: str, owner: PublicCard | None = None) -> dict:
        """fingerprint → {"name", "confirmed", "how"} of every site key the analyst confirmed, signed by the owner
        (VerificationError with the remedy when the file cannot be trusted)."""
        path = self.project_dir(project_id) / "confirmed.json"
        try:
            st = os.stat(path)
        except FileNotFoundError:
            self._confirmed.pop(project_id, None)
            return {}
        card = self._card(owner)
        key = (st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns, card.signing_key)
        cached = self._confirmed.get(project_id)
        if cached is not None and cached[0] == key:
            return dict(cached[1])
        self._confirmed.pop(project_id, None)
        value = read_state(path, "confirmed-sites", self.where(path), card,
                           f"the confirmed site keys of project {project_id[:8]}… (confirmed.json)", CONFIRM_REMEDY)
        if not isinstance(value, dict) or not all(is_fingerprint(k) and isinstance(v, dict) for k, v in value.items()):
            raise FormatError("workspace file is not what this program wrote", path=path)
        self._confirmed[project_id] = (key, value, frozenset(value))
        return dict(value)

    def confirmed_keys(self, project_id: str) -> frozenset[str]:
        """The confirmed fingerprints (from the signed file, read again only when it changed)."""
        self.confirmed(project_id)
        cached = self._confirmed.get(project_id)
        return frozenset() if cached is None else cached[2]

    def confirm(self, project_id: str, fingerprint: str, name: str, how: str) -> bool:
        """Record that the analyst confirmed this site key (True if it is new); an audit line says how. A file of
        confirmations that cannot be trusted is replaced by one holding only the keys confirmed from now on."""
        problem = None
        try:
            known = self.confirmed(project_id)
        except DCError as exc:
            known, problem = {}, exc.message
        if fingerprint in known:
            return False
        private_dir(self.project_dir(project_id))
        # the audit line first: a damaged log refuses the confirmation before it takes effect
        self.audit.append("confirm-site", project=project_id, site=name, fingerprint=fingerprint, how=how,
                          **({"replaces": problem} if problem else {}))
        known[fingerprint] = {"name": name, "confirmed": utc_now(), "how": how}
        path = self.project_dir(project_id) / "confirmed.json"
        write_state(path, self.owner(), "confirmed-sites", self.where(path), known)
        return True

    def check_new(self, project_id: str, envelope_id: str, digest: str, site_fingerprint: str) -> str:
        """'new' or 'same' (identical file already imported); DuplicateError for a replay/conflict. O(1)."""
        _, _, entries, by_site = self._registry(project_id, None)
        seen = entries.get(envelope_id)
        if seen is not None:
            if seen["digest"] == digest:
                return "same"
            raise DuplicateError(f"a different file with the same bundle id was imported on {seen['imported']}")
        other = by_site.get(site_fingerprint)
        if other is not None:
            entry = entries[other]
            raise DuplicateError(f"site '{entry['site']}' already sent bundle {entry['envelope_id'][:8]}… "
                                 f"on {entry['imported']}; one bundle per site per project")
        return "new"

    def store(self, project_id: str, source: Path, envelope_id: str, digest: str, site: str,
              fingerprint: str, rows: int) -> Path:
        """Keep the sealed file as received, then append its signed registry line (fsynced): O(1) per bundle."""
        folder = self.project_dir(project_id) / "bundles"
        dest = folder / f"{envelope_id}.dcbundle"
        private_dir(folder)
        # the folder was cleaned when the workspace was opened: no scan of (thousands of) bundles per bundle
        with atomic_writer(dest, private=True, clean=False) as fh, open(source, "rb") as src:
            shutil.copyfileobj(src, fh)
        entry = {"envelope_id": envelope_id, "digest": digest, "site": site, "fingerprint": fingerprint,
                 "rows": rows, "file": dest.name, "imported": utc_now()}
        done, _, entries, by_site = self._registry(project_id, None)  # verified up to here
        self._append_registry(project_id, entry, done, entries, by_site)
        return dest

    def _append_registry(self, project_id: str, record: dict, done: int, entries: dict, by_site: dict) -> None:
        """Append one signed registry line (fsynced) after the ``done`` bytes already verified: O(1)."""
        path = self.registry_path(project_id)
        line = sign_line(self.owner(), self.where(path), record) + b"\n"
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o600)
        if os.fstat(fd).st_size > done:  # a line torn by a kill: never complete, never read; cut before appending
            os.ftruncate(fd, done)
        with os.fdopen(fd, "ab") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
            st = os.fstat(fh.fileno())
        if st.st_size == done + len(line):  # nobody else wrote meanwhile: the line just signed joins the cache
            _registry_line(dict(record), entries, by_site)  # in place: O(1) (readers copy under the GIL)
            self._registries[project_id] = (st.st_size, (st.st_dev, st.st_ino, self.owner().card.signing_key),
                                             entries, by_site)

    def stored(self, project_id: str) -> list[Path]:
        entries = self._registry(project_id, None)[2]
        folder = self.project_dir(project_id) / "bundles"
        return [folder / e["file"] for e in sorted(entries.values(), key=lambda e: e["imported"])
                if "set_aside" not in e]

    def set_aside(self, project_id: str, envelope_id: str, reason: str) -> None:
        """Withdraw a stored bundle that no longer passes the checks so that its site's next bundle can take its place:
        a signed registry line says when and why (its id stays known, so a replay is still refused) and it is no longer
        :meth:`stored`; the file stays where it was. The audit line comes first."""
        done, _, entries, by_site = self._registry(project_id, None)
        entry = entries.get(envelope_id)
        if entry is None or "set_aside" in entry:
            return
        self.audit.append("set-aside-bundle", project=project_id, envelope_id=envelope_id, site=entry.get("site"),
                          fingerprint=entry.get("fingerprint"), digest=entry.get("digest"), reason=reason)
        self._append_registry(project_id, {"set_aside": envelope_id, "when": utc_now(), "reason": reason[:1000]},
                              done, entries, by_site)


def _registry_line(e: dict, entries: dict, by_site: dict) -> bool:
    """Take one verified registry line into (entries, by_site): a bundle's entry, or a later line setting one aside
    (its site may then send another). False when the line is neither."""
    if set(e) == {"set_aside", "when", "reason"}:
        target = entries.get(e["set_aside"]) if isinstance(e["set_aside"], str) else None
        if target is None or not isinstance(e["reason"], str) or not is_utc_time(e["when"]):
            return False
        target["set_aside"] = {"when": e["when"], "reason": e["reason"]}
        if by_site.get(target["fingerprint"]) == target["envelope_id"]:
            del by_site[target["fingerprint"]]
        return True
    if not _registry_entry_ok(e):
        return False
    entries[e["envelope_id"]] = e
    by_site.setdefault(e["fingerprint"], e["envelope_id"])
    return True


def _registry_entry_ok(e: dict) -> bool:
    return (set(e) == {"envelope_id", "digest", "site", "fingerprint", "rows", "file", "imported"}
            and is_hex(e["envelope_id"], 16) and is_hex(e["digest"], 32) and isinstance(e["site"], str)
            and is_fingerprint(e["fingerprint"]) and type(e["rows"]) is int and e["rows"] >= 0
            and e["file"] == f"{e['envelope_id']}.dcbundle" and is_utc_time(e["imported"]))


class Workspace(SiteWorkspace, AnalystWorkspace):
    """A workspace of either role, as ``dcstudio audit`` sees it: its log and every signed file it may hold."""

    def check_files(self, owner: PublicCard) -> list[str]:
        """One sentence per file of this workspace that the product would refuse to trust (``audit verify``):
        the id file, the sealed record, and every pin, stored kit, export state, applied list, confirmation file
        and registry line, each checked against ``owner``'s signature."""
        problems = []

        def check(fn) -> None:
            try:
                fn()
            except DCError as exc:
                problems.append(str(exc))

        if (self.root / SEALED_FILE).exists():
            check(lambda: read_state(self.root / SEALED_FILE, "sealed-head", SEALED_FILE, owner, "sealed.json",
                                     new_log_hint(self.audit.path)))
        for project in sorted((self.root / "projects").glob("*")):
            pid = project.name
            if (project / "analyst.json").exists():
                check(lambda pid=pid: self.kit(pid, owner))
            for export in sorted((project / "exports").glob("[0-9a-f]*")):
                check(lambda export=export, pid=pid: self.load_export(pid, "", owner, folder=export))
                if (export / "applied.json").exists():
                    check(lambda export=export, pid=pid: self.applied(pid, "", owner, folder=export))
            if (project / "confirmed.json").exists():
                check(lambda pid=pid: self.confirmed(pid, owner))
            if (project / REGISTRY).exists() or (project / LEGACY_REGISTRY).exists():
                check(lambda pid=pid: self.registry(pid, owner))
        return problems


def open_workspace(root: str | Path) -> Workspace:
    """The workspace at ``root`` (site or analyst: their logs and signed files are kept alike), for
    ``dcstudio audit``."""
    return Workspace(root)


def workspace_audit(root: str | Path) -> AuditLog:
    """The audit log of the workspace at ``root``."""
    return open_workspace(root).audit


def clean_orphan_exports(exports: Path) -> int:
    """Remove the private state of exports killed before they were published; returns how many folders.

    An export writes its state into ``.<digest16>.PID.staging``, appends its audit line, and only then renames the
    folder to ``<digest16>`` (and publishes the bundle). So a staging folder whose writer is gone was never
    published (no bundle can answer to it) and is removed; every other folder is kept, whatever any log says — no
    log, verified or not, is read here. A set-aside ``.old`` folder whose replacement never appeared is put back."""
    if not exports.is_dir():
        return 0
    removed = 0
    for entry in sorted(exports.iterdir()):
        if not entry.is_dir() or not entry.name.startswith("."):
            continue  # a published folder is never removed
        final = exports / entry.name[1:].split(".", 1)[0]
        if entry.name.endswith(OLD_SUFFIX) and writer_gone(entry, final.name, OLD_SUFFIX) and not final.exists():
            os.rename(entry, final)
        elif entry.name.endswith(STAGING_SUFFIX) and writer_gone(entry, final.name, STAGING_SUFFIX):
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


def remove_empty_workspace(root: str | Path) -> None:
    """Remove ``root`` and its sub-folders if no file was written under them (a failed or abandoned first
    export: the CLI after an error, the wizard when it closes)."""
    root = Path(root)
    if not root.is_dir() or any(p.is_file() or p.is_symlink() for p in root.rglob("*")):
        return
    for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        d.rmdir()
    root.rmdir()

