"""Writing an audit head file for a log as it stands (what an insider with a key, or a restored backup, leaves)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from core.formats.audit import AuditLog
from core.formats.identity import Identity


def write_head_for(path: Path, signer: Identity, seq: int | None = None) -> None:
    """Sign with ``signer`` a head file for the log at ``path`` through its line ``seq`` (default: the last)."""
    data = Path(path).read_bytes()
    lines = data[:-1].split(b"\n")
    seq = len(lines) if seq is None else seq
    first = json.loads(lines[0])
    log = AuditLog(path, signer)
    log._write_head(first.get("workspace", "0" * 32), first.get("log", "0" * 32), seq,
                    hashlib.sha256(lines[seq - 1]).hexdigest(), sum(len(x) + 1 for x in lines[:seq]),
                    len(lines[seq - 1]))
