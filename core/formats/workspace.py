"""Workspaces: what each party keeps on its own machine between the two halves of a round.

Site workspace (``<identity>.workspace/`` beside the identity file unless ``--workspace`` is given)::

    audit.jsonl, audit.head             signed, hash-chained log of every export and import, and its head
    projects/<project_id>/kit.dckit     the signed kit (to verify the analyst's package later)
    projects/<project_id>/analyst.json  the analyst key pinned on first use (trust on first use)
    projects/<project_id>/exports/<digest16>/state.json + *.npy
                                        per bundle: the private map f_i, the row permutation, settings
                                        (+ applied.json: the packages applied to it, to warn on re-use)

Analyst workspace (same default rule)::

    audit.jsonl
    projects/<project_id>/registry.json one entry per imported bundle id (replay protection)
    projects/<project_id>/confirmed.json the site keys the analyst confirmed (fingerprint → name, when, how)
    projects/<project_id>/bundles/<envelope_id>.dcbundle   the sealed files as received

Arrays are ``.npy`` read with ``allow_pickle=False``; metadata is JSON; every write is atomic. Folders are
0700 and files 0600 whatever the umask; opening a workspace removes ``.part`` files a killed run left, and
a site workspace the export folders a killed export left without a published bundle.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
from pathlib import Path

import numpy as np

from ..errors import DCError, DuplicateError, FormatError, VerificationError
from ..fileio import (
    OLD_SUFFIX,
    STAGING_SUFFIX,
    atomic_writer,
    clean_stale_parts,
    private_dir,
    process_alive,
    publish_folder,
    read_json_capped,
    staging_folder,
    utc_now,
    write_json_atomic,
    writer_gone,
)
from .audit import AuditLog
from .identity import PublicCard

_NAME = re.compile(r"^[a-z0-9_]{1,64}$")


def default_workspace(identity_path: str | Path) -> Path:
    p = Path(identity_path)
    return p.with_name(p.stem + ".workspace")


def save_arrays(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    private_dir(folder)
    for name, a in arrays.items():
        if not _NAME.match(name):
            raise ValueError(f"bad array name {name!r}")
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
        with atomic_writer(folder / f"{name}.npy", private=True) as fh:
            fh.write(buf.getvalue())


def load_arrays(folder: Path, names: list[str]) -> dict[str, np.ndarray]:
    out = {}
    for name in names:
        path = folder / f"{name}.npy"
        try:
            out[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise FormatError(f"workspace array is missing or unreadable ({exc.__class__.__name__})",
                              path=path) from exc
    return out


class _Workspace:
    def __init__(self, root: str | Path):
        self.root = private_dir(root)
        clean_stale_parts(self.root, recursive=True)
        self.audit = AuditLog(self.root / "audit.jsonl", has_history=self._has_history)

    def _has_history(self) -> bool:
        """Whether the workspace holds project files, which only a command that also wrote the audit log
        makes (its owner is bound, so its log started, before anything else is written)."""
        projects = self.root / "projects"
        return projects.is_dir() and any(p.is_file() for p in projects.rglob("*"))

    def project_dir(self, project_id: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{32}", project_id):
            raise FormatError("malformed project id")
        private_dir(self.root / "projects")
        return self.root / "projects" / project_id

    def _json(self, path: Path, default):
        if not path.exists():
            return default
        value = read_json_capped(path)
        if not isinstance(value, type(default)):
            raise FormatError("workspace file is not what this program wrote", path=path)
        return value


class SiteWorkspace(_Workspace):
    """A participant's private state: kit copies and, per exported bundle, f_i and the permutation.

    Opening it removes what a killed export left (:func:`clean_orphan_exports`)."""

    def __init__(self, root: str | Path):
        super().__init__(root)
        for exports in (self.root / "projects").glob("*/exports"):
            clean_orphan_exports(exports, self.audit)

    def export_dir(self, project_id: str, digest: str) -> Path:
        return self.project_dir(project_id) / "exports" / digest[:16]

    def save_export(self, kit_path: Path, project_id: str, digest: str, private_arrays: dict[str, np.ndarray],
                    meta: dict, privacy: dict | None = None) -> Path:
        """Keep an export's private state: written whole into a staging folder (state.json last) that one rename
        makes ``exports/<digest16>/``, so a kill at any moment leaves either no folder or a complete one.
        ``privacy``: the export's privacy assessment (raw numbers, core.privacy), kept as ``privacy.json``."""
        folder = self.export_dir(project_id, digest)
        clean_orphan_exports(folder.parent, self.audit)
        stage = staging_folder(folder)
        shutil.rmtree(stage, ignore_errors=True)
        save_arrays(stage, private_arrays)
        kit_copy = self.project_dir(project_id) / "kit.dckit"
        if Path(kit_path).resolve() != kit_copy.resolve():
            with atomic_writer(kit_copy, private=True) as fh, open(kit_path, "rb") as src:
                shutil.copyfileobj(src, fh)
        if privacy is not None:
            write_json_atomic(stage / "privacy.json", {**privacy, "bundle_digest": digest, "saved": utc_now()},
                              private=True)
        write_json_atomic(stage / "state.json", {**meta, "bundle_digest": digest, "arrays": sorted(private_arrays),
                                                 "saved": utc_now(), "writer": os.getpid()}, private=True)
        publish_folder(stage, folder)
        return folder

    # ---- trust on first use -------------------------------------------------------------------------
    def pinned_analyst(self, project_id: str) -> dict | None:
        pin = self._json(self.project_dir(project_id) / "analyst.json", {})
        return pin or None

    def pin_analyst(self, project_id: str, card: PublicCard, *, record: bool = True, how: str = "") -> str:
        """Pin ``card`` as this project's analyst the first time; refuse a different key later.

        Returns ``"pinned"`` (first use), ``"new"`` (first use with ``record=False``: checked, nothing written,
        so a failed export leaves no trace) or ``"known"``; VerificationError with both fingerprints otherwise.
        ``how``: how the site confirmed the key the first time (kept with the pin and in the audit line)."""
        pin = self.pinned_analyst(project_id)
        if pin is None:
            if not record:
                return "new"
            private_dir(self.project_dir(project_id))
            # the audit line first: a damaged log refuses before the pin takes effect, and a kill between the two
            # leaves no pin (the next export asks for the fingerprint again), never a pin the log does not record
            self.audit.append("pin-analyst", project=project_id, analyst=card.name, fingerprint=card.fingerprint,
                              **({"confirmed": how} if how else {}))
            write_json_atomic(self.project_dir(project_id) / "analyst.json",
                              {"name": card.name, "fingerprint": card.fingerprint, "key_id": card.key_id,
                               "pinned": utc_now(), **({"confirmed": how} if how else {})}, private=True)
            return "pinned"
        if pin.get("key_id") != card.key_id:
            raise VerificationError(
                f"this kit for project {project_id} is signed by {card.name!r} ({card.fingerprint}), but this site "
                f"accepted {pin.get('name')!r} ({pin.get('fingerprint')}) as the project's analyst on "
                f"{pin.get('pinned')}; refused (ask the analyst by phone which key is genuine)")
        return "known"

    # ---- applied packages (warn on re-use) ----------------------------------------------------------
    def applied(self, project_id: str, digest: str) -> list[dict]:
        return self._json(self.export_dir(project_id, digest) / "applied.json", [])

    def record_applied(self, project_id: str, digest: str, entry: dict) -> None:
        folder = self.export_dir(project_id, digest)
        write_json_atomic(folder / "applied.json", [*self.applied(project_id, digest), entry], private=True)

    def load_export(self, project_id: str, digest: str) -> tuple[dict, dict[str, np.ndarray]]:
        folder = self.export_dir(project_id, digest)
        state_path = folder / "state.json"
        if not state_path.exists():
            raise FormatError("this workspace holds no export for the bundle this package answers "
                              f"(looked in {folder}); use the workspace the bundle was exported from")
        meta = self._json(state_path, {})
        arrays = meta.get("arrays")
        if meta.get("bundle_digest") != digest or not isinstance(arrays, list) \
                or not all(isinstance(a, str) and _NAME.match(a) for a in arrays):
            raise FormatError("workspace state does not match the bundle digest", path=state_path)
        return meta, load_arrays(folder, arrays)

    def kit_path(self, project_id: str) -> Path:
        return self.project_dir(project_id) / "kit.dckit"


class AnalystWorkspace(_Workspace):
    """The analyst's imported bundles and the replay registry."""

    def registry_path(self, project_id: str) -> Path:
        return self.project_dir(project_id) / "registry.json"

    def registry(self, project_id: str) -> dict:
        return self._json(self.registry_path(project_id), {})

    # ---- confirmed senders ----------------------------------------------------------------------------
    def confirmed(self, project_id: str) -> dict:
        """fingerprint → {"name", "confirmed", "how"} of every site key the analyst confirmed."""
        return self._json(self.project_dir(project_id) / "confirmed.json", {})

    def confirm(self, project_id: str, fingerprint: str, name: str, how: str) -> bool:
        """Record that the analyst confirmed this site key (True if it is new); an audit line says how."""
        known = self.confirmed(project_id)
        if fingerprint in known:
            return False
        private_dir(self.project_dir(project_id))
        # the audit line first: a damaged log refuses the confirmation before it takes effect
        self.audit.append("confirm-site", project=project_id, site=name, fingerprint=fingerprint, how=how)
        known[fingerprint] = {"name": name, "confirmed": utc_now(), "how": how}
        write_json_atomic(self.project_dir(project_id) / "confirmed.json", known, private=True)
        return True

    def check_new(self, project_id: str, envelope_id: str, digest: str, site_fingerprint: str) -> str:
        """'new' or 'same' (identical file already imported); DuplicateError for a replay/conflict."""
        reg = self.registry(project_id)
        seen = reg.get(envelope_id)
        if seen is not None:
            if seen["digest"] == digest:
                return "same"
            raise DuplicateError(f"a different file with the same bundle id was imported on {seen['imported']}")
        for entry in reg.values():
            if entry["fingerprint"] == site_fingerprint and entry["digest"] != digest and "set_aside" not in entry:
                raise DuplicateError(f"site '{entry['site']}' already sent bundle {entry['envelope_id'][:8]}… "
                                     f"on {entry['imported']}; one bundle per site per project")
        return "new"

    def store(self, project_id: str, source: Path, envelope_id: str, digest: str, site: str,
              fingerprint: str, rows: int) -> Path:
        folder = self.project_dir(project_id) / "bundles"
        dest = folder / f"{envelope_id}.dcbundle"
        private_dir(folder)
        with atomic_writer(dest, private=True) as fh, open(source, "rb") as src:
            shutil.copyfileobj(src, fh)
        reg = self.registry(project_id)
        reg[envelope_id] = {"envelope_id": envelope_id, "digest": digest, "site": site,
                            "fingerprint": fingerprint, "rows": rows, "file": dest.name, "imported": utc_now()}
        write_json_atomic(self.registry_path(project_id), reg, private=True)
        return dest

    def stored(self, project_id: str) -> list[Path]:
        """The stored bundles in import order (those set aside left out)."""
        reg = self.registry(project_id)
        folder = self.project_dir(project_id) / "bundles"
        return [folder / e["file"] for e in sorted(reg.values(), key=lambda e: e["imported"]) if "set_aside" not in e]

    def set_aside(self, project_id: str, envelope_id: str, reason: str) -> None:
        """Withdraw a stored bundle that no longer passes the checks so that its site's next bundle can take its place:
        its registry entry says when and why (its id stays known, so a replay is still refused) and it is no longer
        :meth:`stored`; the file stays where it was. The audit line comes first."""
        reg = self.registry(project_id)
        entry = reg.get(envelope_id)
        if entry is None or "set_aside" in entry:
            return
        self.audit.append("set-aside-bundle", project=project_id, envelope_id=envelope_id, site=entry.get("site"),
                          fingerprint=entry.get("fingerprint"), digest=entry.get("digest"), reason=reason)
        entry["set_aside"] = {"when": utc_now(), "reason": reason}
        write_json_atomic(self.registry_path(project_id), reg, private=True)


def workspace_audit(root: str | Path) -> AuditLog:
    """The audit log of the workspace at ``root`` (site or analyst: kept alike), for ``dcstudio audit``."""
    return _Workspace(root).audit


def clean_orphan_exports(exports: Path, audit: AuditLog | None = None) -> int:
    """Remove private state that no bundle can answer to, left by a killed export; returns how many folders.

    An export keeps its state (staging folder → one rename), then appends its audit line, then publishes the
    bundle. So an orphan is: a staging (or set-aside ``.old``) folder whose writer is gone; an export folder
    without ``state.json`` (left by earlier versions, which wrote in place); and, when ``audit`` can be read, a
    complete folder whose writer is gone and whose digest no ``export`` line names (killed before its bundle
    could exist). A set-aside folder whose replacement never appeared is put back instead."""
    if not exports.is_dir():
        return 0
    exported: set | None = None

    def exported_digests() -> set | None:
        """The digests the audit log's ``export`` lines name (read once, and only when a folder needs it)."""
        nonlocal exported
        if exported is None and audit is not None:
            with contextlib.suppress(DCError, OSError):
                exported = {e.get("digest") for e in audit.entries() if e.get("event") == "export"}
        return exported

    removed = 0
    for entry in sorted(exports.iterdir()):
        if not entry.is_dir():
            continue
        if entry.name.startswith("."):
            final = exports / entry.name[1:].split(".", 1)[0]
            if entry.name.endswith(OLD_SUFFIX) and writer_gone(entry, final.name, OLD_SUFFIX) \
                    and not final.exists():
                os.rename(entry, final)
                continue
            orphan = any(entry.name.endswith(sfx) and writer_gone(entry, final.name, sfx)
                         for sfx in (STAGING_SUFFIX, OLD_SUFFIX))
        elif not (entry / "state.json").is_file():
            orphan = True
        else:
            orphan = _unexported(entry / "state.json", exported_digests)
        if orphan:
            shutil.rmtree(entry, ignore_errors=True)
            removed += 1
    return removed


def _unexported(state_path: Path, exported_digests) -> bool:
    """A complete export folder whose writer is gone and whose bundle digest no audit ``export`` line names
    (``exported_digests()``: those digests, or None when the log cannot be read — then nothing is judged)."""
    try:
        state = read_json_capped(state_path)
    except (DCError, OSError):
        return False
    if not isinstance(state, dict):
        return False
    writer = state.get("writer")
    if not isinstance(writer, int) or isinstance(writer, bool) or process_alive(writer):
        return False
    exported = exported_digests()
    return exported is not None and state.get("bundle_digest") not in exported


def remove_empty_workspace(root: str | Path) -> None:
    """Remove ``root`` and its sub-folders if no file was written under them (a failed or abandoned first
    export: the CLI after an error, the wizard when it closes)."""
    root = Path(root)
    if not root.is_dir() or any(p.is_file() or p.is_symlink() for p in root.rglob("*")):
        return
    for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        d.rmdir()
    root.rmdir()
