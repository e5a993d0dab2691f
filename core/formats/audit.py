"""The workspace's append-only, hash-chained audit log (JSON lines).

Line *n* (1-based) is the canonical JSON of ``{"seq": n, "time": …, "event": …, …fields, "prev": H}``
where ``H`` is the SHA-256 hex of line *n-1*'s bytes (without its newline), or 64 zeros for line 1. Editing,
inserting, deleting or reordering any line breaks the chain at the first line after the change. Dropping
lines from the *end* cannot be seen from the file alone: compare :meth:`AuditLog.head` with a value kept
elsewhere (e.g. a signed checkpoint) for that.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from ..errors import ConfigError, VerificationError
from ..fileio import canonical_json, utc_now
from .identity import is_hex

GENESIS = "0" * 64
RESERVED = frozenset({"seq", "time", "event", "prev"})
MAX_LINE_BYTES = 1 << 20
_TAIL_BLOCK = 64 << 10


def _line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


class AuditLog:
    """Append-only JSON-lines log; each entry carries the SHA-256 of the previous line."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = threading.Lock()

    # -- writing -----------------------------------------------------------------------------------

    def append(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one entry (fsynced before returning) and return it."""
        if not isinstance(event, str) or not event:
            raise ConfigError("an audit event needs a non-empty name")
        clash = RESERVED & set(fields)
        if clash:
            raise ConfigError(f"audit fields {sorted(clash)} are reserved")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.verify()  # never extend (and so re-chain) a log that was edited
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o600)
            with os.fdopen(fd, "ab+") as fh:
                seq, prev = self._tail_state(fh)
                entry = {"seq": seq + 1, "time": utc_now(), "event": event, **fields, "prev": prev}
                try:
                    line = canonical_json(entry)
                except (TypeError, ValueError) as exc:
                    raise ConfigError(f"audit fields are not plain JSON ({exc})") from exc
                if len(line) > MAX_LINE_BYTES:
                    raise ConfigError("an audit entry is larger than 1 MiB")
                fh.write(line + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
        return entry

    def _tail_state(self, fh: Any) -> tuple[int, str]:
        """(seq, hash) of the last line, read backwards from the end; (0, zeros) for an empty log."""
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return 0, GENESIS
        fh.seek(size - 1)
        if fh.read(1) != b"\n":
            raise VerificationError("the audit log ends with an incomplete line (a write was interrupted)",
                                    path=self.path)
        end = size - 1  # the final newline; the last line is the bytes just before it
        pos = end
        tail = b""
        while pos > 0:
            step = min(_TAIL_BLOCK, pos)
            pos -= step
            fh.seek(pos)
            tail = fh.read(step) + tail
            if b"\n" in tail:
                break
            if len(tail) > MAX_LINE_BYTES:
                raise VerificationError("the last audit log line is too long", path=self.path)
        line = tail[tail.rfind(b"\n") + 1:]
        seq = _parse_entry(line, None, self.path)["seq"]
        return seq, _line_hash(line)

    # -- reading -----------------------------------------------------------------------------------

    def _lines(self) -> list[bytes]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        if not data:
            return []
        if not data.endswith(b"\n"):
            n = data.count(b"\n") + 1
            raise VerificationError(f"audit log line {n} is incomplete (a write was interrupted)",
                                    path=self.path)
        return data[:-1].split(b"\n")

    def entries(self) -> list[dict[str, Any]]:
        """All entries, parsed (not verified: call :meth:`verify` for that)."""
        return [_parse_entry(line, n, self.path) for n, line in enumerate(self._lines(), start=1)]

    def verify(self) -> int:
        """Check the whole chain; return the number of entries.

        Raises VerificationError naming the first line that was edited, inserted, removed or moved.
        """
        prev = GENESIS
        lines = self._lines()
        for n, line in enumerate(lines, start=1):
            entry = _parse_entry(line, n, self.path)
            if entry["seq"] != n or entry["prev"] != prev:
                raise VerificationError(f"audit log line {n} does not follow line {n - 1}: the log was "
                                        "edited, reordered or cut", path=self.path)
            prev = _line_hash(line)
        return len(lines)

    def head(self) -> str:
        """SHA-256 hex of the last line (64 zeros when empty): what a checkpoint records."""
        lines = self._lines()
        return _line_hash(lines[-1]) if lines else GENESIS


def _parse_entry(line: bytes, n: int | None, path: Path) -> dict[str, Any]:
    where = "the last audit log line" if n is None else f"audit log line {n}"
    try:
        entry = json.loads(line.decode("utf-8"))
        ok = (isinstance(entry, dict) and canonical_json(entry) == line
              and isinstance(entry.get("seq"), int) and not isinstance(entry.get("seq"), bool)
              and entry["seq"] >= 1 and isinstance(entry.get("time"), str)
              and isinstance(entry.get("event"), str) and is_hex(entry.get("prev"), 32))
    except (UnicodeDecodeError, ValueError, RecursionError):
        ok = False
    if not ok:
        raise VerificationError(f"{where} is not a valid entry: the log was edited", path=path)
    return entry
