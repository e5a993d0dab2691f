"""Workspaces: what each party keeps on its own machine between the two halves of a round.

Site workspace (``<identity>.workspace/`` beside the identity file unless ``--workspace`` is given)::

    audit.jsonl                         hash-chained log of every export and import
    projects/<project_id>/kit.dckit     the signed kit (to verify the analyst's package later)
    projects/<project_id>/exports/<digest16>/state.json + *.npy
                                        per bundle: the private map f_i, the row permutation, settings

Analyst workspace (same default rule)::

    audit.jsonl
    projects/<project_id>/registry.json one entry per imported bundle id (replay protection)
    projects/<project_id>/bundles/<envelope_id>.dcbundle   the sealed files as received

Arrays are ``.npy`` read with ``allow_pickle=False``; metadata is JSON; every write is atomic.
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import numpy as np

from ..errors import DuplicateError, FormatError
from .audit import AuditLog
from .fileio import atomic_writer, read_json_capped, utc_now, write_json_atomic

_NAME = re.compile(r"^[a-z0-9_]{1,64}$")


def default_workspace(identity_path: str | Path) -> Path:
    p = Path(identity_path)
    return p.with_name(p.stem + ".workspace")


def save_arrays(folder: Path, arrays: dict[str, np.ndarray]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, a in arrays.items():
        if not _NAME.match(name):
            raise ValueError(f"bad array name {name!r}")
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
        with atomic_writer(folder / f"{name}.npy") as fh:
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
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.audit = AuditLog(self.root / "audit.jsonl")

    def project_dir(self, project_id: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{32}", project_id):
            raise FormatError("malformed project id")
        return self.root / "projects" / project_id


class SiteWorkspace(_Workspace):
    """A participant's private state: kit copies and, per exported bundle, f_i and the permutation."""

    def export_dir(self, project_id: str, digest: str) -> Path:
        return self.project_dir(project_id) / "exports" / digest[:16]

    def save_export(self, kit_path: Path, project_id: str, digest: str, private_arrays: dict[str, np.ndarray],
                    meta: dict) -> Path:
        folder = self.export_dir(project_id, digest)
        save_arrays(folder, private_arrays)
        kit_copy = self.project_dir(project_id) / "kit.dckit"
        if Path(kit_path).resolve() != kit_copy.resolve():
            with atomic_writer(kit_copy) as fh, open(kit_path, "rb") as src:
                shutil.copyfileobj(src, fh)
        write_json_atomic(folder / "state.json", {**meta, "bundle_digest": digest, "arrays": sorted(private_arrays),
                                                  "saved": utc_now()})
        return folder

    def load_export(self, project_id: str, digest: str) -> tuple[dict, dict[str, np.ndarray]]:
        folder = self.export_dir(project_id, digest)
        state_path = folder / "state.json"
        if not state_path.exists():
            raise FormatError("this workspace holds no export for the bundle this package answers "
                              f"(looked in {folder}); use the workspace the bundle was exported from")
        meta = read_json_capped(state_path)
        if meta.get("bundle_digest") != digest:
            raise FormatError("workspace state does not match the bundle digest", path=state_path)
        return meta, load_arrays(folder, list(meta["arrays"]))

    def kit_path(self, project_id: str) -> Path:
        return self.project_dir(project_id) / "kit.dckit"


class AnalystWorkspace(_Workspace):
    """The analyst's imported bundles and the replay registry."""

    def registry_path(self, project_id: str) -> Path:
        return self.project_dir(project_id) / "registry.json"

    def registry(self, project_id: str) -> dict:
        path = self.registry_path(project_id)
        return read_json_capped(path) if path.exists() else {}

    def check_new(self, project_id: str, envelope_id: str, digest: str, site_fingerprint: str) -> str:
        """'new' or 'same' (identical file already imported); DuplicateError for a replay/conflict."""
        reg = self.registry(project_id)
        seen = reg.get(envelope_id)
        if seen is not None:
            if seen["digest"] == digest:
                return "same"
            raise DuplicateError(f"a different file with the same bundle id was imported on {seen['imported']}")
        for entry in reg.values():
            if entry["fingerprint"] == site_fingerprint and entry["digest"] != digest:
                raise DuplicateError(f"site '{entry['site']}' already sent bundle {entry['envelope_id'][:8]}… "
                                     f"on {entry['imported']}; one bundle per site per project")
        return "new"

    def store(self, project_id: str, source: Path, envelope_id: str, digest: str, site: str,
              fingerprint: str, rows: int) -> Path:
        folder = self.project_dir(project_id) / "bundles"
        dest = folder / f"{envelope_id}.dcbundle"
        with atomic_writer(dest) as fh, open(source, "rb") as src:
            shutil.copyfileobj(src, fh)
        reg = self.registry(project_id)
        reg[envelope_id] = {"envelope_id": envelope_id, "digest": digest, "site": site,
                            "fingerprint": fingerprint, "rows": rows, "file": dest.name, "imported": utc_now()}
        write_json_atomic(self.registry_path(project_id), reg)
        return dest

    def stored(self, project_id: str) -> list[Path]:
        reg = self.registry(project_id)
        folder = self.project_dir(project_id) / "bundles"
        return [folder / e["file"] for e in sorted(reg.values(), key=lambda e: e["imported"])]
