"""The workspace's append-only audit log: hash-chained, every entry signed by the workspace owner, and its
head kept outside the log (FORMAT §5).

Line *n* (1-based) is the canonical JSON of ``{"seq": n, "time": …, "event": …, …fields, "prev": H,
"sig": S}`` where ``H`` is the SHA-256 hex of line *n-1*'s bytes (without its newline), or 64 zeros for
line 1, and ``S`` is the owner's Ed25519 signature of ``ENTRY_DOMAIN ‖ canonical JSON of the entry without
"sig"``. Line 1 is always an ``audit-start`` entry carrying the owner's public card (``owner``), why the log
was started (``reason``) and, after a break, what is known of the log it replaces (``previous``).

``audit.head`` beside the log holds the signed ``(seq, head)`` of the last line, rewritten atomically after
each append. So: an edited, inserted, removed or reordered line breaks a signature or the chain; lines cut
from the end, or a log rebuilt without the owner's key, no longer match the head file; a deleted log is
noticed because its head file, or the workspace's other files, remain. Every append (and binding the owner
with :meth:`AuditLog.bind`, which each command does first) checks all of that, so a damaged log is never
extended: it is refused with a sentence naming ``dcstudio audit new``, which starts a new log whose first
entry records the break.

A log written before entries were signed (no ``sig``) still verifies as a plain chain (:attr:`Verified.legacy`)
but is never extended: ``audit new`` keeps it beside the new log and records its head.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DCError, VerificationError
from ..fileio import canonical_json, read_json_capped, utc_now, write_json_atomic
from .identity import Identity, PublicCard, is_hex

GENESIS = "0" * 64
RESERVED = frozenset({"seq", "time", "event", "prev", "sig"})
START_EVENT = "audit-start"
ENTRY_DOMAIN = b"dcstudio/audit/v1 entry\0"
HEAD_DOMAIN = b"dcstudio/audit/v1 head\0"
HEAD_FORMAT = "dcstudio/audit-head/v1"
MAX_LINE_BYTES = 1 << 20


def _line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def _new_log_hint(path: Path) -> str:
    return (f"to keep working, start a new log that records this break: dcstudio audit new {path.parent} "
            "--identity YOUR.dcid --reason \"…\" (the old log is kept beside it)")


@dataclass(frozen=True)
class Verified:
    """What :meth:`AuditLog.verify` established."""

    entries: int
    head: str  # SHA-256 of the last line (GENESIS when empty)
    owner: PublicCard | None  # whose key signed every entry (None: empty or legacy log)
    legacy: bool  # written before entries were signed: read-only
    head_file: str  # "matches", "one behind" (the last append's head write was interrupted) or "none"


class AuditLog:
    """The signed, hash-chained JSON-lines log of one workspace.

    ``owner`` is the unlocked identity that signs appends (see :meth:`bind`); ``has_history`` says whether
    the workspace holds anything a log must have recorded (then a missing log is refused, not restarted).
    """

    def __init__(self, path: str | Path, owner: Identity | None = None,
                 has_history: Callable[[], bool] | None = None):
        self.path = Path(path)
        self.head_path = self.path.with_suffix(".head")
        self._owner = owner
        self._has_history = has_history or (lambda: False)
        # (length, SHA-256, last line hash, owner) of the longest prefix of the file verified so far: a later
        # check verifies only the lines after it, as long as those bytes are unchanged
        self._verified: tuple[int, bytes, str, PublicCard | None] | None = None
        self._lock = threading.Lock()

    # -- the owner -----------------------------------------------------------------------------------

    def bind(self, owner: Identity) -> Verified:
        """Sign later appends with ``owner``: start the log of a new workspace, otherwise verify it and
        check that ``owner`` keeps it. Refuses (VerificationError, one sentence with the fix) a log that is
        missing, cut, edited, rebuilt, unsigned (an earlier version's) or kept by another key."""
        with self._lock:
            self._owner = owner
            if not self.path.exists() and not self.head_path.exists() and not self._has_history():
                self._write_start(owner, "new workspace", None)
            return self._writable()

    def _writable(self) -> Verified:
        state = self.check()
        if state.legacy:
            raise VerificationError("this audit log was written by an earlier version of DC Studio and its "
                                    "entries are not signed, so it is not extended; "
                                    + _new_log_hint(self.path), path=self.path)
        if self._owner is None:
            raise ConfigError("the audit log needs the workspace owner's identity to sign an entry")
        if state.owner is not None and state.owner.key_id != self._owner.card.key_id:
            raise VerificationError(
                f"this audit log is kept by {state.owner.name!r} ({state.owner.fingerprint}), not by "
                f"{self._owner.name!r} ({self._owner.card.fingerprint}); use that identity, or "
                + _new_log_hint(self.path), path=self.path)
        if state.head_file == "one behind":  # a kill between the fsynced line and its head: repair it first
            self._write_head(state.entries, state.head)
        return state

    # -- writing -----------------------------------------------------------------------------------

    def append(self, event: str, **fields: Any) -> dict[str, Any]:
        """Verify the whole log, append one signed entry (fsynced), then rewrite the head file; return it."""
        if not isinstance(event, str) or not event or event == START_EVENT:
            raise ConfigError(f"an audit event needs a non-empty name other than {START_EVENT!r}")
        clash = RESERVED & set(fields)
        if clash:
            raise ConfigError(f"audit fields {sorted(clash)} are reserved")
        try:
            size = len(canonical_json(fields))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"audit fields are not plain JSON ({exc})") from exc
        if size > MAX_LINE_BYTES - 512:
            raise ConfigError("an audit entry is larger than 1 MiB")
        with self._lock:
            state = self._writable()  # never extend (and so re-chain) a damaged log
            seq, head = state.entries, state.head
            if seq == 0:  # a log always opens with the entry naming its owner
                self._write_start(self._owner, "new workspace", None)
                seq, head = 1, self.head()
            return self._append_entry(seq, head, event, fields)

    def _append_entry(self, seq: int, prev: str, event: str, fields: dict[str, Any]) -> dict[str, Any]:
        assert self._owner is not None
        entry = {"seq": seq + 1, "time": utc_now(), "event": event, **fields, "prev": prev}
        try:
            body = canonical_json(entry)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"audit fields are not plain JSON ({exc})") from exc
        entry["sig"] = self._owner.sign(ENTRY_DOMAIN + body).hex()
        line = canonical_json(entry)
        if len(line) > MAX_LINE_BYTES:
            raise ConfigError("an audit entry is larger than 1 MiB")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o600)
        with os.fdopen(fd, "ab") as fh:
            fh.write(line + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._write_head(seq + 1, _line_hash(line))
        return entry

    def _write_head(self, seq: int, head: str) -> None:
        assert self._owner is not None
        body = {"format": HEAD_FORMAT, "seq": seq, "head": head, "signing_key": self._owner.card.signing_key.hex()}
        sig = self._owner.sign(HEAD_DOMAIN + canonical_json(body)).hex()
        write_json_atomic(self.head_path, {**body, "sig": sig}, private=True)

    def _write_start(self, owner: Identity, reason: str, previous: dict[str, Any] | None) -> dict[str, Any]:
        self._owner = owner
        fields: dict[str, Any] = {"owner": owner.card.to_dict(), "reason": reason}
        if previous is not None:
            fields["previous"] = previous
        return self._append_entry(0, GENESIS, START_EVENT, fields)

    def start_new(self, owner: Identity, reason: str) -> dict[str, Any]:
        """Start a new log (``dcstudio audit new``): the current log and head file, whatever their state,
        are renamed aside (never deleted) and the new log's first entry, signed by ``owner``, records
        ``reason``, the old files' names and the old head as far as it is known."""
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError("say why the audit log is restarted: --reason \"…\"")
        with self._lock:
            previous: dict[str, Any] = {}
            stamp = utc_now().replace(":", "").replace("-", "")
            if self.path.exists():
                previous.update(self._describe_old())
                aside = self.path.with_name(f"{self.path.stem}.before-{stamp}.jsonl")
                os.replace(self.path, aside)
                previous["file"] = aside.name
            if self.head_path.exists():
                previous["head_file"] = self._describe_old_head(owner)
                aside = self.head_path.with_name(f"{self.head_path.stem}.before-{stamp}.head")
                os.replace(self.head_path, aside)
            if not previous:
                previous["file"] = None  # no log was there (deleted, or never written)
            return self._write_start(owner, reason.strip(), previous)

    def _describe_old(self) -> dict[str, Any]:
        """The old log as far as it can be read: its verified state, or why it failed and its last line."""
        try:
            state = self.check()
            return {"entries": state.entries, "head": state.head, "verified": True,
                    "signed": not state.legacy}
        except DCError as exc:
            data = self.path.read_bytes()
            complete = data[:data.rfind(b"\n")] if b"\n" in data else b""
            last = complete.rsplit(b"\n", 1)[-1]
            return {"verified": False, "problem": exc.message,
                    "last_line_hash": _line_hash(last) if last else None}

    def _describe_old_head(self, owner: Identity) -> dict[str, Any]:
        try:
            head = self._read_head(owner.card)
            return {"seq": head["seq"], "head": head["head"], "signature": "valid (this identity)"}
        except DCError as exc:
            return {"signature": f"not checked: {exc.message}"}

    # -- reading -----------------------------------------------------------------------------------

    def _lines(self) -> list[bytes]:
        return self._read()[1]

    def _read(self) -> tuple[bytes, list[bytes]]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return b"", []
        if not data:
            return b"", []
        if not data.endswith(b"\n"):
            n = data.count(b"\n") + 1
            raise VerificationError(f"audit log line {n} is incomplete (a write was interrupted); "
                                    + _new_log_hint(self.path), path=self.path)
        return data, data[:-1].split(b"\n")

    def entries(self) -> list[dict[str, Any]]:
        """All entries, parsed (not verified: call :meth:`verify` for that)."""
        return [_parse_entry(line, n, self.path) for n, line in enumerate(self._lines(), start=1)]

    def _read_head(self, owner: PublicCard) -> dict[str, Any]:
        where = f"the audit head file {self.head_path.name}"
        value = read_json_capped(self.head_path, 64 << 10)
        ok = (isinstance(value, dict) and set(value) == {"format", "seq", "head", "signing_key", "sig"}
              and value["format"] == HEAD_FORMAT and type(value["seq"]) is int and value["seq"] >= 0
              and is_hex(value["head"], 32) and is_hex(value["signing_key"], 32) and is_hex(value["sig"], 64))
        if not ok:
            raise VerificationError(f"{where} is not valid: it was edited; " + _new_log_hint(self.path),
                                    path=self.head_path)
        if value["signing_key"] != owner.signing_key.hex():
            raise VerificationError(f"{where} is signed by another key than the log's owner "
                                    f"{owner.name!r} ({owner.fingerprint}); " + _new_log_hint(self.path),
                                    path=self.head_path)
        body = {k: value[k] for k in ("format", "seq", "head", "signing_key")}
        try:
            owner.verify(HEAD_DOMAIN + canonical_json(body), bytes.fromhex(value["sig"]))
        except VerificationError as exc:
            raise VerificationError(f"{where} has a wrong signature: it was edited; " + _new_log_hint(self.path),
                                    path=self.head_path) from exc
        return value

    def verify(self) -> int:
        """:meth:`check` the log; return its number of entries."""
        return self.check().entries

    def check(self, *, check_head: bool = True) -> Verified:
        """Check the chain, every signature and the head file; VerificationError names the first problem."""
        data, lines = self._read()
        if not lines:
            if self.head_path.exists():
                raise VerificationError(f"the audit log {self.path.name} is missing or empty, but its head file "
                                        "says it had entries: it was deleted; " + _new_log_hint(self.path),
                                        path=self.path)
            if self._has_history():
                raise VerificationError(f"the audit log {self.path.name} is missing, but this workspace holds "
                                        "projects it must have recorded: it was deleted; "
                                        + _new_log_hint(self.path), path=self.path)
            return Verified(0, GENESIS, None, False, "none")
        first = _parse_entry(lines[0], 1, self.path)
        legacy = "sig" not in first
        if legacy and self.head_path.exists():
            raise VerificationError("the audit log has no signatures but a head file beside it: a signed log was "
                                    "rewritten; " + _new_log_hint(self.path), path=self.path)
        owner = None if legacy else _owner_of(first, self.path)
        prev, start = GENESIS, 1
        known = self._verified
        if known is not None and len(data) >= known[0] and known[3] == owner \
                and hashlib.sha256(data[:known[0]]).digest() == known[1]:
            prev, start = known[2], data[:known[0]].count(b"\n") + 1  # that prefix was verified, unchanged
        for n, line in enumerate(lines[start - 1:], start=start):
            entry = first if n == 1 else _parse_entry(line, n, self.path)
            if entry["seq"] != n or entry["prev"] != prev:
                raise VerificationError(f"audit log line {n} does not follow line {n - 1}: the log was "
                                        "edited, reordered or cut; " + _new_log_hint(self.path), path=self.path)
            if ("sig" in entry) == legacy or (n > 1 and entry["event"] == START_EVENT):
                raise VerificationError(f"audit log line {n} is not a valid entry: the log was edited; "
                                        + _new_log_hint(self.path), path=self.path)
            if owner is not None:
                body = canonical_json({k: v for k, v in entry.items() if k != "sig"})
                try:
                    owner.verify(ENTRY_DOMAIN + body, bytes.fromhex(entry["sig"]))
                except VerificationError as exc:
                    raise VerificationError(f"audit log line {n} has a wrong signature: it was edited or "
                                            "rebuilt; " + _new_log_hint(self.path), path=self.path) from exc
            prev = _line_hash(line)
        self._verified = (len(data), hashlib.sha256(data).digest(), prev, owner)
        head_state = "none"
        if owner is not None and check_head:
            head_state = self._check_head(owner, lines)
        return Verified(len(lines), prev, owner, legacy, head_state)

    def _check_head(self, owner: PublicCard, lines: list[bytes]) -> str:
        if not self.head_path.exists():
            if len(lines) == 1 and not self._has_history():
                return "one behind"  # a new log whose first head write was interrupted: nothing else written yet
            raise VerificationError(f"the audit head file {self.head_path.name} is missing, so lines cut from "
                                    "the end of the log could not be seen; " + _new_log_hint(self.path),
                                    path=self.head_path)
        head = self._read_head(owner)
        n, seq = len(lines), head["seq"]
        if seq > n:
            raise VerificationError(f"the audit log has {n} entries but its head file records {seq}: lines were "
                                    "cut from its end; " + _new_log_hint(self.path), path=self.path)
        if seq < n - 1:
            raise VerificationError(f"the audit log has {n} entries but its head file records only {seq}: the "
                                    "head file is an old copy; " + _new_log_hint(self.path), path=self.head_path)
        if seq == 0 or head["head"] != _line_hash(lines[seq - 1]):
            raise VerificationError(f"audit log line {max(seq, 1)} is not the line its head file recorded: the "
                                    "log was edited or rebuilt; " + _new_log_hint(self.path), path=self.path)
        return "matches" if seq == n else "one behind"

    def find_sealed(self, audit_head: str, digest: str) -> tuple[int, int]:
        """Where this log records a file its owner sealed: ``(n, m)``, the file was sealed when line ``n`` was
        the last (0: empty log) and line ``m`` records its ``digest``. Compares the log with a head kept
        outside it, in a signed file's header: VerificationError when the log does not hold that head (it was
        rolled back, replaced or restarted since) or no later line records the file (lines were cut)."""
        lines = self._lines()
        hashes = [GENESIS] + [_line_hash(line) for line in lines]
        if audit_head not in hashes:
            raise VerificationError(f"the file was sealed when this audit log's head was {audit_head[:16]}…, "
                                    "which is not in the log: the log was rolled back, replaced or restarted "
                                    "since", path=self.path)
        n = hashes.index(audit_head)
        for m in range(n + 1, len(lines) + 1):
            entry = json.loads(lines[m - 1])
            recorded = [entry.get("digest")] + [p.get("digest") for p in entry.get("packages", [])
                                                if isinstance(p, dict)]
            if digest in recorded:
                return n, m
        raise VerificationError(f"no line after line {n} of this audit log records the file (SHA-256 "
                                f"{digest[:16]}…): lines were cut from the log", path=self.path)

    def head(self) -> str:
        """SHA-256 hex of the last line (64 zeros when empty): what sealed files carry as ``audit_head``."""
        lines = self._lines()
        return _line_hash(lines[-1]) if lines else GENESIS


def _owner_of(first: dict[str, Any], path: Path) -> PublicCard:
    if first["event"] != START_EVENT or set(first) != RESERVED | {"owner", "reason"} | (
            {"previous"} if "previous" in first else set()):
        raise VerificationError(f"audit log line 1 is not an {START_EVENT!r} entry naming the owner: the log was "
                                "edited; " + _new_log_hint(path), path=path)
    try:
        return PublicCard.from_dict(first["owner"])
    except DCError as exc:
        raise VerificationError("audit log line 1 does not carry a valid owner card: the log was edited; "
                                + _new_log_hint(path), path=path) from exc


def _parse_entry(line: bytes, n: int | None, path: Path) -> dict[str, Any]:
    where = "the last audit log line" if n is None else f"audit log line {n}"
    try:
        entry = json.loads(line.decode("utf-8"))
        ok = (isinstance(entry, dict) and canonical_json(entry) == line
              and type(entry.get("seq")) is int and entry["seq"] >= 1 and isinstance(entry.get("time"), str)
              and isinstance(entry.get("event"), str) and is_hex(entry.get("prev"), 32)
              and ("sig" not in entry or is_hex(entry["sig"], 64)))
    except (UnicodeDecodeError, ValueError, RecursionError):
        ok = False
    if not ok:
        raise VerificationError(f"{where} is not a valid entry: the log was edited; " + _new_log_hint(path),
                                path=path)
    return entry
