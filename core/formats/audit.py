"""The workspace's append-only audit log: hash-chained, every entry signed by the workspace owner, bound to its
workspace, and its head kept outside the log (FORMAT §5).

Line *n* (1-based) is the canonical JSON of ``{"seq": n, "time": …, "event": …, …fields, "prev": H,
"sig": S}`` where ``H`` is the SHA-256 hex of line *n-1*'s bytes (without its newline), or 64 zeros for
line 1, and ``S`` is the owner's Ed25519 signature of ``ENTRY_DOMAIN ‖ canonical JSON of the entry without
"sig"``. Line 1 is always an ``audit-start`` entry carrying the owner's public card (``owner``), the id of the
workspace the log belongs to (``workspace``, kept signed in ``workspace.json``), a random id of this log
(``log``), why it was started (``reason``) and, after a break, what is known of the log it replaces
(``previous``).

``audit.head`` beside the log holds the signed ``(workspace, log, seq, head, size)`` of the last line, rewritten
atomically after each append. So: an edited, inserted, removed or reordered line breaks a signature or the
chain; lines cut from the end, or a log rebuilt without the owner's key, no longer match the head file; a log
and head exchanged with another workspace's name another workspace; a deleted log is noticed because its head
file, or the workspace's other files, remain; a log rolled back to an earlier signed state no longer holds the
head a file sealed here later carried (the workspace keeps those heads, signed: ``sealed_records``). Binding
the owner (:meth:`AuditLog.bind`, which each command does first) verifies all of that, so a damaged log is
never extended: it is refused (:class:`~core.errors.AuditLogRefused`) with a sentence naming
``dcstudio audit new``, which starts a new log whose first entry records the break.

Appends within a command use the signed head as a checkpoint: the log's size and last line must still be what
the head file (byte for byte the one verified or written last) says, so an append costs O(1) instead of a
re-read of the whole log; a full verification stays with :meth:`AuditLog.check` (``dcstudio audit verify`` and
every command's :meth:`bind`).

Logs of earlier versions — unsigned (:attr:`Verified.legacy`) or signed but bound to no workspace
(:attr:`Verified.bound` False) — still verify as far as they go but are never extended: ``audit new`` keeps
them beside the new log and records their head.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import AuditLogRefused, ConfigError, DCError, VerificationError
from ..fileio import canonical_json, loads_checked, read_bytes_capped, utc_now, write_bytes_atomic
from .identity import Identity, PublicCard, is_hex

GENESIS = "0" * 64
RESERVED = frozenset({"seq", "time", "event", "prev", "sig"})
START_EVENT = "audit-start"
ENTRY_DOMAIN = b"dcstudio/audit/v1 entry\0"
HEAD_DOMAIN = b"dcstudio/audit/v1 head\0"
HEAD_FORMAT = "dcstudio/audit-head/v2"
HEAD_FORMAT_V1 = "dcstudio/audit-head/v1"  # logs bound to no workspace (read, never written)
HEAD_MEMBERS = ("format", "workspace", "log", "seq", "head", "size", "signing_key")
HEAD_MEMBERS_V1 = ("format", "seq", "head", "signing_key")
MAX_LINE_BYTES = 1 << 20


def _line_hash(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


def new_log_hint(path: Path) -> str:
    """The way on after a refusal (the app offers the same as a button, with the identity filled in)."""
    return (f"to keep working, start a new log that records this break: dcstudio audit new {path.parent} "
            "--identity YOUR.dcid --reason \"…\" (whatever is left of the old log is copied beside it as "
            "audit.before-TIME.*; no export is removed)")


def _refused(message: str, path: Path, log: Path) -> AuditLogRefused:
    return AuditLogRefused(message + "; " + new_log_hint(log), path=path, workspace=log.parent, problem=message)


class WorkspaceBinding(Protocol):
    """What a workspace tells its log: its id (``workspace.json``, signed by the owner) and the audit heads of the
    files sealed in it (:meth:`core.formats.workspace._Workspace.sealed_records`)."""

    def has_history(self) -> bool: ...

    def workspace_id(self, owner: PublicCard) -> str | None: ...

    def make_workspace_id(self, owner: Identity) -> str: ...

    def sealed_records(self, owner: PublicCard) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Verified:
    """What :meth:`AuditLog.check` established."""

    entries: int
    head: str  # SHA-256 of the last line (GENESIS when empty)
    owner: PublicCard | None  # whose key signed every entry (None: empty or unsigned log)
    legacy: bool  # written before entries were signed: read-only
    head_file: str  # "matches", "one behind" (the last append's head write was interrupted) or "none"
    bound: bool = False  # line 1 names its workspace and log (this version); False: an earlier version's
    workspace: str | None = None
    log: str | None = None
    start: dict[str, Any] | None = None  # line 1
    restart_after_rollback: str | None = None  # a sentence when this log replaced a log that had been rolled back

    @property
    def earlier_version(self) -> bool:
        return self.entries > 0 and (self.legacy or not self.bound)


@dataclass(frozen=True)
class _Checkpoint:
    """The log as its signed head file last said (verified or written by this instance)."""

    size: int
    seq: int
    head: str
    last_len: int
    head_bytes: bytes
    log: str
    workspace: str
    stat: tuple[int, int, int, int]  # the log file's (device, inode, size, ctime ns): any other writer changes it


def _stat_key(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_ctime_ns


class AuditLog:
    """The signed, hash-chained JSON-lines log of one workspace.

    ``owner`` is the unlocked identity that signs appends (see :meth:`bind`); ``workspace`` is the workspace the
    log belongs to (its id, the heads of files sealed there, whether it holds anything a log must have recorded:
    then a missing log is refused, not restarted). A bare log (tests) has no workspace: its id lives in the log.
    """

    def __init__(self, path: str | Path, owner: Identity | None = None,
                 has_history: Callable[[], bool] | None = None, workspace: WorkspaceBinding | None = None):
        self.path = Path(path)
        self.head_path = self.path.with_suffix(".head")
        self._owner = owner
        self._workspace = workspace
        self._has_history = has_history or (workspace.has_history if workspace is not None else (lambda: False))
        # (length, SHA-256, last line hash, owner) of the longest prefix of the file verified so far: a later
        # check verifies only the lines after it, as long as those bytes are unchanged
        self._verified: tuple[int, bytes, str, PublicCard | None] | None = None
        self._checkpoint: _Checkpoint | None = None
        self._head_bytes = b""
        self._lock = threading.Lock()

    # -- the owner -----------------------------------------------------------------------------------

    @property
    def owner(self) -> Identity | None:
        """The identity bound to sign appends (None until :meth:`bind`)."""
        return self._owner

    def bind(self, owner: Identity) -> Verified:
        """Sign later appends with ``owner``: start the log of a new workspace, otherwise verify it and
        check that ``owner`` keeps it. Refuses (AuditLogRefused, one sentence with the fix) a log that is
        missing, cut, edited, rebuilt, rolled back, another workspace's, an earlier version's or kept by another
        key."""
        with self._lock:
            self._owner = owner
            if not self.path.exists() and not self.head_path.exists() and not self._has_history():
                self._write_start(owner, "new workspace", None)
            return self._writable()

    def _writable(self) -> Verified:
        state = self.check()
        if state.legacy:
            raise _refused("this audit log was written by an earlier version of DC Studio and its entries are not "
                           "signed, so it is not extended", self.path, self.path)
        if state.entries and not state.bound:
            raise _refused("this audit log was written by an earlier version of DC Studio and is not bound to its "
                           "workspace, so it is not extended", self.path, self.path)
        if self._owner is None:
            raise ConfigError("the audit log needs the workspace owner's identity to sign an entry")
        if state.owner is not None and state.owner.key_id != self._owner.card.key_id:
            raise _refused(f"this audit log is kept by {state.owner.name!r} ({state.owner.fingerprint}), not by "
                           f"{self._owner.name!r} ({self._owner.card.fingerprint}); use that identity",
                           self.path, self.path)
        if state.head_file == "one behind":  # a kill between the fsynced line and its head: repair it first
            data, lines = self._read()
            self._write_head(state.workspace, state.log, state.entries, state.head, len(data), len(lines[-1]))
        return state

    # -- writing -----------------------------------------------------------------------------------

    def append(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one signed entry (fsynced), then rewrite the head file; return it. The log must be what its
        signed head says (O(1), :meth:`_current`); otherwise it is verified whole first and never extended when
        damaged."""
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
            point = self._current()
            if point is None:
                state = self._writable()  # never extend (and so re-chain) a damaged log
                if state.entries == 0:  # a log always opens with the entry naming its owner
                    self._write_start(self._owner, "new workspace", None)
                point = self._checkpoint
                if point is None:  # pragma: no cover - _writable leaves a checkpoint behind
                    raise AuditLogRefused("the audit log changed while it was being written", path=self.path,
                                          workspace=self.path.parent)
            return self._append_entry(point, event, fields)

    def _current(self) -> _Checkpoint | None:
        """The checkpoint, if the files still match it: the log's size, its last line's hash and the head file's
        bytes (so its signature) are those verified or written last. None: verify the whole log."""
        cp = self._checkpoint
        if cp is None or self._owner is None:
            return None
        try:
            if _stat_key(os.stat(self.path)) != cp.stat or read_bytes_capped(self.head_path, 64 << 10) != cp.head_bytes:
                return None
            start = cp.size - cp.last_len - 1
            with open(self.path, "rb") as fh:
                fh.seek(max(start - 1, 0))
                tail = fh.read(cp.last_len + 2 if start > 0 else cp.last_len + 1)
        except (OSError, DCError):
            return None
        line = tail[1:] if start > 0 else tail
        if (start > 0 and tail[:1] != b"\n") or line[-1:] != b"\n" or _line_hash(line[:-1]) != cp.head:
            return None
        return cp

    def _append_entry(self, point: _Checkpoint, event: str, fields: dict[str, Any]) -> dict[str, Any]:
        assert self._owner is not None
        entry = {"seq": point.seq + 1, "time": utc_now(), "event": event, **fields, "prev": point.head}
        line = self._signed_line(entry)
        st = self._write_line(line)
        self._write_head(point.workspace, point.log, point.seq + 1, _line_hash(line), point.size + len(line) + 1,
                         len(line), st)
        return json.loads(line)

    def _signed_line(self, entry: dict[str, Any]) -> bytes:
        try:
            body = canonical_json(entry)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"audit fields are not plain JSON ({exc})") from exc
        line = canonical_json({**entry, "sig": self._owner.sign(ENTRY_DOMAIN + body).hex()})
        if len(line) > MAX_LINE_BYTES:
            raise ConfigError("an audit entry is larger than 1 MiB")
        return line

    def _write_line(self, line: bytes) -> os.stat_result:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o600)
        with os.fdopen(fd, "ab") as fh:
            fh.write(line + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
            return os.fstat(fh.fileno())

    def _write_head(self, workspace: str, log: str, seq: int, head: str, size: int, last_len: int,
                    log_stat: os.stat_result | None = None) -> None:
        assert self._owner is not None
        body = {"format": HEAD_FORMAT, "workspace": workspace, "log": log, "seq": seq, "head": head, "size": size,
                "signing_key": self._owner.card.signing_key.hex()}
        sig = self._owner.sign(HEAD_DOMAIN + canonical_json(body)).hex()
        data = (json.dumps({**body, "sig": sig}, indent=2, sort_keys=True) + "\n").encode()
        write_bytes_atomic(self.head_path, data, private=True)
        st = log_stat if log_stat is not None else os.stat(self.path)
        self._checkpoint = _Checkpoint(size, seq, head, last_len, data, log, workspace, _stat_key(st)) \
            if st.st_size == size else None

    def _start_line(self, owner: Identity, reason: str, previous: dict[str, Any] | None,
                    workspace: str) -> tuple[bytes, str]:
        self._owner = owner
        log = secrets.token_hex(16)
        fields: dict[str, Any] = {"owner": owner.card.to_dict(), "reason": reason, "workspace": workspace,
                                  "log": log}
        if previous is not None:
            fields["previous"] = previous
        return self._signed_line({"seq": 1, "time": utc_now(), "event": START_EVENT, **fields, "prev": GENESIS}), log

    def _write_start(self, owner: Identity, reason: str, previous: dict[str, Any] | None) -> dict[str, Any]:
        workspace = (self._workspace.make_workspace_id(owner) if self._workspace is not None
                     else secrets.token_hex(16))
        line, log = self._start_line(owner, reason, previous, workspace)
        st = self._write_line(line)
        self._write_head(workspace, log, 1, _line_hash(line), len(line) + 1, len(line), st)
        return json.loads(line)

    def start_new(self, owner: Identity, reason: str) -> dict[str, Any]:
        """Start a new log (``dcstudio audit new``): the current log and head file, whatever their state, are
        copied aside (``audit.before-TIME.jsonl``/``.head``, never deleted) and replaced by a new log whose first
        entry, signed by ``owner``, records ``reason``, the copies' names and what is known of the old log (its
        log id, entries and head as far as they verify). Copy first, then one rename: a kill at any moment leaves
        the old log in place or the new one, and never touches anything else in the workspace."""
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError("say why the audit log is restarted: --reason \"…\"")
        with self._lock:
            previous: dict[str, Any] = {}
            stamp = utc_now().replace(":", "").replace("-", "")
            if self.path.exists():
                previous.update(self._describe_old())
                aside = free_name(self.path.with_name(f"{self.path.stem}.before-{stamp}.jsonl"))
                write_bytes_atomic(aside, self.path.read_bytes(), private=True)
                previous["file"] = aside.name
            if self.head_path.exists():
                previous["head_file"] = self._describe_old_head(owner)
                aside = free_name(self.head_path.with_name(f"{self.head_path.stem}.before-{stamp}.head"))
                write_bytes_atomic(aside, self.head_path.read_bytes(), private=True)
                previous["head_file"]["file"] = aside.name
            if not previous:
                previous["file"] = None  # no log was there (deleted, or never written)
            workspace = (self._workspace.make_workspace_id(owner) if self._workspace is not None
                         else secrets.token_hex(16))
            line, log = self._start_line(owner, reason.strip(), previous, workspace)
            write_bytes_atomic(self.path, line + b"\n", private=True)
            self._verified = None
            self._write_head(workspace, log, 1, _line_hash(line), len(line) + 1, len(line))
            return json.loads(line)

    def _describe_old(self) -> dict[str, Any]:
        """The old log as far as it can be read: its verified state, or why it failed and its last line."""
        try:
            state = self.check()
            out = {"entries": state.entries, "head": state.head, "verified": True, "signed": not state.legacy,
                   "bound": state.bound}
            if state.log is not None:
                out["log"] = state.log
            if state.restart_after_rollback:
                out["restart_after_rollback"] = state.restart_after_rollback
            return out
        except DCError as exc:
            data = self.path.read_bytes()
            complete = data[:data.rfind(b"\n")] if b"\n" in data else b""
            last = complete.rsplit(b"\n", 1)[-1]
            out = {"verified": False, "problem": exc.message, "last_line_hash": _line_hash(last) if last else None}
            with contextlib.suppress(ValueError, AttributeError, UnicodeDecodeError):
                first = json.loads(complete.split(b"\n", 1)[0])
                if is_hex(first.get("log"), 16):
                    out["log"] = first["log"]
            return out

    def _describe_old_head(self, owner: Identity) -> dict[str, Any]:
        try:
            head = self._read_head(owner.card)
            out = {"seq": head["seq"], "head": head["head"], "signature": "valid (this identity)"}
            if "log" in head:
                out["log"] = head["log"]
            return out
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
            raise _refused(f"audit log line {n} is incomplete (a write was interrupted)", self.path, self.path)
        return data, data[:-1].split(b"\n")

    def entries(self) -> list[dict[str, Any]]:
        """All entries, parsed (not verified: call :meth:`verify` for that)."""
        return [_parse_entry(line, n, self.path) for n, line in enumerate(self._lines(), start=1)]

    def _read_head(self, owner: PublicCard) -> dict[str, Any]:
        where = f"the audit head file {self.head_path.name}"
        raw = read_bytes_capped(self.head_path, 64 << 10)
        value = loads_checked(raw, path=self.head_path)
        fmt = value.get("format") if isinstance(value, dict) else None
        members = HEAD_MEMBERS if fmt == HEAD_FORMAT else HEAD_MEMBERS_V1
        ok = (isinstance(value, dict) and fmt in (HEAD_FORMAT, HEAD_FORMAT_V1) and set(value) == {*members, "sig"}
              and type(value["seq"]) is int and value["seq"] >= 0 and is_hex(value["head"], 32)
              and is_hex(value["signing_key"], 32) and is_hex(value["sig"], 64)
              and (fmt == HEAD_FORMAT_V1 or (is_hex(value["workspace"], 16) and is_hex(value["log"], 16)
                                             and type(value["size"]) is int and value["size"] >= 0)))
        if not ok:
            raise _refused(f"{where} is not valid: it was edited", self.head_path, self.path)
        if value["signing_key"] != owner.signing_key.hex():
            raise _refused(f"{where} is signed by another key than the log's owner {owner.name!r} "
                           f"({owner.fingerprint})", self.head_path, self.path)
        body = {k: value[k] for k in members}
        try:
            owner.verify(HEAD_DOMAIN + canonical_json(body), bytes.fromhex(value["sig"]))
        except VerificationError as exc:
            raise _refused(f"{where} has a wrong signature: it was edited", self.head_path, self.path) from exc
        self._head_bytes = raw  # exactly the bytes verified: the checkpoint compares them
        return value

    def verify(self) -> int:
        """:meth:`check` the log; return its number of entries."""
        return self.check().entries

    def check(self, *, check_head: bool = True) -> Verified:
        """Check the chain, every signature, the head file, the workspace the log belongs to and the heads of the
        files sealed there; AuditLogRefused names the first problem."""
        self._checkpoint = None  # set again below only when everything verifies
        read_stat = None
        with contextlib.suppress(OSError):
            read_stat = os.stat(self.path)
        data, lines = self._read()
        with contextlib.suppress(OSError):  # the checkpoint only from bytes nobody changed while they were read
            if read_stat is not None and _stat_key(os.stat(self.path)) != _stat_key(read_stat):
                read_stat = None
        if not lines:
            if self.head_path.exists():
                raise _refused(f"the audit log {self.path.name} is missing or empty, but its head file says it had "
                               "entries: it was deleted", self.path, self.path)
            if self._has_history():
                raise _refused(f"the audit log {self.path.name} is missing, but this workspace holds projects it "
                               "must have recorded: it was deleted", self.path, self.path)
            return Verified(0, GENESIS, None, False, "none")
        first = _parse_entry(lines[0], 1, self.path)
        legacy = "sig" not in first
        if legacy and self.head_path.exists():
            raise _refused("the audit log has no signatures but a head file beside it: a signed log was rewritten",
                           self.path, self.path)
        owner = None if legacy else _owner_of(first, self.path)
        bound = owner is not None and "workspace" in first
        prev, start = GENESIS, 1
        known = self._verified
        if known is not None and len(data) >= known[0] and known[3] == owner \
                and hashlib.sha256(data[:known[0]]).digest() == known[1]:
            prev, start = known[2], data[:known[0]].count(b"\n") + 1  # that prefix was verified, unchanged
        for n, line in enumerate(lines[start - 1:], start=start):
            entry = first if n == 1 else _parse_entry(line, n, self.path)
            if entry["seq"] != n or entry["prev"] != prev:
                raise _refused(f"audit log line {n} does not follow line {n - 1}: the log was edited, reordered or "
                               "cut", self.path, self.path)
            if ("sig" in entry) == legacy or (n > 1 and entry["event"] == START_EVENT):
                raise _refused(f"audit log line {n} is not a valid entry: the log was edited", self.path, self.path)
            if owner is not None:
                body = canonical_json({k: v for k, v in entry.items() if k != "sig"})
                try:
                    owner.verify(ENTRY_DOMAIN + body, bytes.fromhex(entry["sig"]))
                except VerificationError as exc:
                    raise _refused(f"audit log line {n} has a wrong signature: it was edited or rebuilt",
                                   self.path, self.path) from exc
            prev = _line_hash(line)
        self._verified = (len(data), hashlib.sha256(data).digest(), prev, owner)
        head_state, point = "none", None
        if owner is not None and check_head:
            head_state, point = self._check_head(owner, lines, first, len(data), read_stat)
        rollback = None
        if bound:
            self._check_workspace(owner, first)
            rollback = self._check_sealed(owner, first, lines)
            self._checkpoint = point
        return Verified(len(lines), prev, owner, legacy, head_state, bound, first.get("workspace"), first.get("log"),
                        first, rollback)

    def _check_head(self, owner: PublicCard, lines: list[bytes], first: dict[str, Any], size: int,
                    read_stat: os.stat_result | None) -> tuple[str, _Checkpoint | None]:
        if not self.head_path.exists():
            if len(lines) == 1 and not self._has_history():
                return "one behind", None  # a new log whose first head write was interrupted: nothing else written yet
            raise _refused(f"the audit head file {self.head_path.name} is missing, so lines cut from the end of the "
                           "log could not be seen", self.head_path, self.path)
        head = self._read_head(owner)
        bound = "workspace" in first
        if (head["format"] == HEAD_FORMAT) != bound:
            raise _refused(f"the audit head file {self.head_path.name} is of another version than the log: one of "
                           "them was replaced", self.head_path, self.path)
        if bound and (head["workspace"], head["log"]) != (first["workspace"], first["log"]):
            raise _refused(f"the audit head file {self.head_path.name} belongs to another audit log (log "
                           f"{head['log'][:8]}…, workspace {head['workspace'][:8]}…): one of the two files was "
                           "replaced or exchanged", self.head_path, self.path)
        n, seq = len(lines), head["seq"]
        if seq > n:
            raise _refused(f"the audit log has {n} entries but its head file records {seq}: lines were cut from its "
                           "end", self.path, self.path)
        if seq < n - 1:
            raise _refused(f"the audit log has {n} entries but its head file records only {seq}: the head file is "
                           "an old copy", self.head_path, self.path)
        if seq == 0 or head["head"] != _line_hash(lines[seq - 1]):
            raise _refused(f"audit log line {max(seq, 1)} is not the line its head file recorded: the log was "
                           "edited or rebuilt", self.path, self.path)
        through = size - (len(lines[-1]) + 1 if seq == n - 1 else 0)
        if bound and head["size"] != through:
            raise _refused(f"the audit head file {self.head_path.name} records another size of the log: it was "
                           "edited", self.head_path, self.path)
        if seq < n:
            return "one behind", None
        point = None
        if bound and read_stat is not None and read_stat.st_size == size:
            point = _Checkpoint(size, n, head["head"], len(lines[-1]), self._head_bytes, head["log"],
                                head["workspace"], _stat_key(read_stat))
        return "matches", point

    def _check_workspace(self, owner: PublicCard, first: dict[str, Any]) -> None:
        """A log bound to a workspace must be this workspace's (its id in the owner's signed workspace.json)."""
        if self._workspace is None:
            return
        try:
            expected = self._workspace.workspace_id(owner)
        except AuditLogRefused:
            raise
        except DCError as exc:
            raise _refused(exc.message, exc.path or self.path, self.path) from exc
        if expected is None:
            raise _refused(f"this workspace has no id file (workspace.json), so its audit log (of workspace "
                           f"{first['workspace'][:8]}…) cannot be shown to belong here: it was deleted",
                           self.path.parent / "workspace.json", self.path)
        if expected != first["workspace"]:
            raise _refused(f"this audit log belongs to workspace {first['workspace'][:8]}…, not to this one "
                           f"({expected[:8]}…): it was exchanged with another workspace's log", self.path, self.path)

    def _check_sealed(self, owner: PublicCard, first: dict[str, Any], lines: list[bytes]) -> str | None:
        """Compare the log with the heads of files sealed here (kept signed in the workspace): a record of this log
        whose line it no longer holds means the log was rolled back (refused); a record of the log this one
        replaced that the replaced log, as line 1 describes it, did not reach means the restart followed a
        rollback (returned as a sentence: ``audit verify`` reports it)."""
        if self._workspace is None:
            return None
        previous = first.get("previous") if isinstance(first.get("previous"), dict) else {}
        for r in self._workspace.sealed_records(owner):
            seq, head = r["seq"], r["head"]
            what = f"a file it sealed (SHA-256 {str(r.get('digest', ''))[:16]}…)"
            if r["log"] == first["log"]:
                held = GENESIS if seq == 0 else (_line_hash(lines[seq - 1]) if seq <= len(lines) else None)
                if held != head:
                    now = (f"has only {len(lines)} lines" if seq > len(lines) else
                           f"holds another line {seq}")
                    raise _refused(f"this workspace keeps the audit head of {what} when line {seq} of this log was "
                                   f"its last, but the log now {now}: it was rolled back", self.path, self.path)
            elif previous and r["log"] == previous.get("log"):
                reached = _previous_reach(previous)
                if reached is not None and (reached[0] < seq or (reached[0] == seq and reached[1] != head)):
                    return (f"this audit log was started on {first['time']} to replace a log that then had "
                            f"{reached[0]} lines, but this workspace had sealed {what} after line {seq} of that "
                            "log: the restart followed a rollback of the old log")
        return None

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

    def find_sealed_before_restart(self, state: Verified, audit_head: str, digest: str) -> tuple[str, int, int]:
        """Where the log this one replaced records a file its owner sealed (for ``audit verify --against`` after a
        declared restart): ``(copy's name, n, m)`` as :meth:`find_sealed` says them for the copy ``audit new`` kept,
        which must still be exactly what line 1 recorded (verified, its entries and head) and signed by the same
        owner. VerificationError when there is no such copy or it does not hold the file."""
        previous = (state.start or {}).get("previous") or {}
        name = previous.get("file")
        if not isinstance(name, str) or previous.get("verified") is not True or "/" in name or "\\" in name:
            raise VerificationError("this log's first entry names no verified log it replaced", path=self.path)
        copy = AuditLog(self.path.with_name(name))
        try:
            old = copy.check(check_head=False)
        except DCError as exc:
            raise VerificationError(f"the copy of the log this one replaced ({name}) does not verify: {exc.message}",
                                    path=copy.path) from exc
        if (old.entries, old.head) != (previous.get("entries"), previous.get("head")) or old.owner is None \
                or state.owner is None or old.owner.key_id != state.owner.key_id:
            raise VerificationError(f"the copy of the log this one replaced ({name}) is not the log line 1 "
                                    "recorded", path=copy.path)
        n, m = copy.find_sealed(audit_head, digest)
        return name, n, m

    def position(self) -> tuple[str, int, str]:
        """``(log id, entries, head)`` now: what a file sealed now carries as ``audit_head`` and the workspace keeps
        as its sealed record. From the checkpoint (O(1)) when the files still match it, else verified whole."""
        with self._lock:
            cp = self._current()
            if cp is not None:
                return cp.log, cp.seq, cp.head
        state = self.check()
        if not state.bound:
            raise _refused("this audit log is not bound to its workspace (an earlier version's)", self.path, self.path)
        return state.log, state.entries, state.head

    def head(self) -> str:
        """SHA-256 hex of the last line (64 zeros when empty): what sealed files carry as ``audit_head``."""
        cp = self._current()
        if cp is not None:
            return cp.head
        lines = self._lines()
        return _line_hash(lines[-1]) if lines else GENESIS


def _previous_reach(previous: dict[str, Any]) -> tuple[int, str | None] | None:
    """How far the replaced log went as line 1 describes it: ``(lines, head at that line)`` from its verified state
    or its head file signed by the owner (the further of the two), None when nothing of it is known."""
    known = []
    if previous.get("verified") is True and type(previous.get("entries")) is int:
        known.append((previous["entries"], previous.get("head")))
    hf = previous.get("head_file")
    if isinstance(hf, dict) and str(hf.get("signature", "")).startswith("valid") and type(hf.get("seq")) is int:
        known.append((hf["seq"], hf.get("head")))
    return max(known, key=lambda k: k[0]) if known else None


def free_name(path: Path) -> Path:
    """``path``, or ``path`` with ``-2``, ``-3`` … before its suffix when that name is taken."""
    k, out = 2, path
    while out.exists():
        out = path.with_name(f"{path.stem}-{k}{path.suffix}")
        k += 1
    return out


def _owner_of(first: dict[str, Any], path: Path) -> PublicCard:
    bound = {"workspace", "log"} if "workspace" in first or "log" in first else set()
    if first["event"] != START_EVENT or set(first) != RESERVED | {"owner", "reason"} | bound | (
            {"previous"} if "previous" in first else set()) or (bound and not (
                is_hex(first.get("workspace"), 16) and is_hex(first.get("log"), 16))):
        raise _refused(f"audit log line 1 is not an {START_EVENT!r} entry naming the owner: the log was edited",
                       path, path)
    try:
        return PublicCard.from_dict(first["owner"])
    except DCError as exc:
        raise _refused("audit log line 1 does not carry a valid owner card: the log was edited", path, path) from exc


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
        raise _refused(f"{where} is not a valid entry: the log was edited", path, path)
    return entry
