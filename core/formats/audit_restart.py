"""Starting a new audit log: ``dcstudio audit new`` and the app's "Start a new audit log…" (FORMAT §5).

The old log and head file are copied aside and a new log is started whose signed first entry records the
reason and what is known of the log it replaces (:meth:`core.formats.audit.AuditLog.start_new`). Nothing else in
the workspace is touched — no export folder is removed, whatever the old log said or failed to say.

After an upgrade (the replaced log is an earlier version's: unsigned, or bound to no workspace), or when asked
with ``adopt_unsigned``, the earlier version's unsigned state files are signed by the owner (export states and
their applied lists, the bundle registry), each listed with its SHA-256 in an ``adopt-unsigned`` audit entry.
Trust decisions are never adopted: an unsigned analyst pin or list of confirmed sites stays refused until the
fingerprint is confirmed again (:attr:`Restart.reconfirm` says which).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DCError
from ..fileio import loads_checked, read_bytes_capped, utc_now
from .identity import Identity
from .signed_state import is_signed, read_plain, sign_line, write_state
from .workspace import LEGACY_REGISTRY, REGISTRY, Workspace, open_workspace


@dataclass
class Restart:
    """What ``audit new`` did: the new log's first entry, the earlier files it signed, and the files that still
    need a fingerprint confirmed again (each with the sentence saying so)."""

    start: dict[str, Any]
    adopted: list[str] = field(default_factory=list)
    reconfirm: list[str] = field(default_factory=list)

    @property
    def earlier_version(self) -> bool:
        return _earlier(self.start.get("previous") or {})


def _earlier(previous: dict[str, Any]) -> bool:
    return previous.get("verified") is True and (previous.get("signed") is False or previous.get("bound") is False)


def restart_audit(root: str | Path, owner: Identity, reason: str, *, adopt_unsigned: bool | None = None) -> Restart:
    """Start a new audit log in the workspace at ``root``; sign an earlier version's state files when the replaced
    log is an earlier version's (``adopt_unsigned`` None) or when ``adopt_unsigned`` is True."""
    ws = open_workspace(root)
    start = ws.audit.start_new(owner, reason)
    ws.audit.bind(owner)
    adopt = _earlier(start.get("previous") or {}) if adopt_unsigned is None else adopt_unsigned
    out = Restart(start)
    if adopt:
        files = _adopt(ws, owner)
        out.adopted = [f["file"] for f in files]
    out.reconfirm = _untrusted_decisions(ws, owner)
    return out


def _adopt(ws: Workspace, owner: Identity) -> list[dict[str, str]]:
    """Sign every unsigned export state, applied list and bundle registry of ``ws`` (the audit entry first, listing
    each file's SHA-256 as it was)."""
    todo: list[tuple[Path, Any]] = []
    projects = ws.root / "projects"
    for path in sorted(projects.glob("*/exports/[0-9a-f]*/state.json")) + sorted(
            projects.glob("*/exports/[0-9a-f]*/applied.json")) + sorted(projects.glob(f"*/{LEGACY_REGISTRY}")):
        value = read_plain(path)
        if value is not None and not is_signed(value):
            todo.append((path, value))
    if not todo:
        return []
    files = [{"file": ws.where(p), "sha256": hashlib.sha256(read_bytes_capped(p, 64 << 20)).hexdigest()}
             for p, _ in todo]
    ws.audit.append("adopt-unsigned", files=files)
    for path, value in todo:
        if path.name == "state.json" and isinstance(value, dict):
            digests = {}
            for name in value.get("arrays") or []:
                npy = path.parent / f"{name}.npy"
                if isinstance(name, str) and npy.is_file():
                    digests[name] = hashlib.sha256(npy.read_bytes()).hexdigest()
            write_state(path, owner, "export-state", ws.where(path),
                        {**value, "array_sha256": digests, "adopted": utc_now()})
        elif path.name == "applied.json":
            write_state(path, owner, "applied", ws.where(path), value)
        elif path.name == LEGACY_REGISTRY and isinstance(value, dict):
            _adopt_registry(ws, owner, path, value)
    return files


def _adopt_registry(ws: Workspace, owner: Identity, path: Path, value: dict) -> None:
    """The earlier ``registry.json`` (one object) as signed ``registry.jsonl`` lines; the old file is kept aside."""
    target = path.with_name(REGISTRY)
    where = ws.where(target)
    known = set()
    if target.exists():  # an adoption killed half-way: do not list a bundle twice
        with open(target, "rb") as fh:
            for line in fh:
                entry = (read_json_line(line) or {}).get("entry")
                if isinstance(entry, dict):
                    known.add(entry.get("envelope_id"))
    lines = [sign_line(owner, where, entry) + b"\n" for entry in sorted(
        (e for e in value.values() if isinstance(e, dict) and e.get("envelope_id") not in known),
        key=lambda e: str(e.get("imported")))]
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "ab") as fh:
        fh.write(b"".join(lines))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(path, path.with_name(f"registry.before-{utc_now().replace(':', '').replace('-', '')}.json"))


def read_json_line(line: bytes) -> dict | None:
    try:
        value = loads_checked(line.strip())
    except DCError:
        return None
    return value if isinstance(value, dict) else None


def _untrusted_decisions(ws: Workspace, owner: Identity) -> list[str]:
    """A sentence per analyst pin or confirmation file that cannot be trusted (never adopted)."""
    out = []
    for project in sorted((ws.root / "projects").glob("*")):
        try:
            if (project / "analyst.json").exists():
                problem = ws.pin_state(project.name, owner.card)[1]
                if problem:
                    out.append(problem)
            if (project / "confirmed.json").exists():
                ws.confirmed(project.name, owner.card)
        except DCError as exc:
            out.append(exc.message)
    return out
