"""The sealed envelope: one format for bundles (site → analyst) and packages (analyst → site).

A file is a version line, a canonical-JSON header carrying the binding fields, a complete standard age v1
file (X25519, to the recipient's card) and an Ed25519 signature line by the sender over a SHA-256 of all
preceding bytes. Inside the age layer is a deterministic ZIP (stored, fixed timestamps) of ``.npy``
arrays, a ``manifest.json`` that repeats the header and the SHA-256 of every array, and ``manifest.sig``
(the sender's signature of the manifest: sign-then-encrypt-then-sign).

Opening is fail-closed, cheapest and least trusting check first: size cap, strict parse, header fields and
expectations, outer signature (streamed, before any decryption), decryption, ZIP structure, inner
signature and binding, member hashes, ``.npy`` headers and size caps, and only then array allocation.

The byte-exact spec is ``docs/FORMAT.md``; keep the two in step.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import math
import os
import re
import secrets
import struct
import tempfile
import zipfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyrage

from .. import __version__
from ..control import JobControl, ensure
from ..errors import Cancelled, ConfigError, DCError, FormatError, UnconfirmedSender, VerificationError, project_label
from ..fileio import atomic_writer, canonical_json, json_depth_ok
from . import canonical_zip
from .canonical_zip import DATA_ALIGN
from .identity import Identity, PublicCard, check_name, is_hex, is_utc_time, utc_now, with_path

MAGIC = b"dcstudio-envelope/v1\n"
_MAGIC_FAMILY = b"dcstudio-envelope/"
AGE_MAGIC = b"age-encryption.org/v1\n"
TRAILER_PREFIX = b"dcstudio-signature ed25519 "
TRAILER_LEN = len(TRAILER_PREFIX) + 128 + 1
SIGNATURE_DOMAIN = b"dcstudio-envelope/v1 signature\0"
MANIFEST_SIGNATURE_DOMAIN = b"dcstudio-manifest/v1 signature\0"
MANIFEST_FORMAT = "dcstudio/manifest/v1"
MANIFEST_NAME = "manifest.json"
MANIFEST_SIG_NAME = "manifest.sig"
KINDS = ("bundle", "package")
HEADER_FIELDS = frozenset({"kind", "project_id", "envelope_id", "created", "sender", "recipient",
                           "in_reply_to", "software", "audit_head"})
NO_AUDIT = "0" * 64  # audit_head of a sender without an audit log (or with an empty one)
ALLOWED_DTYPES = frozenset({"<f4", "<f8", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "|b1"})
ARRAY_NAME_RE = re.compile(r"^[a-z0-9_]{1,64}$")
MEMBER_NAME_RE = re.compile(r"^[a-z0-9_]{1,64}\.npy$")
ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)
MAX_PROJECT_ID_CHARS = 128
MAX_SOFTWARE_CHARS = 64
MAX_NPY_HEADER_BYTES = 10_000
MAX_NDIM = 32
MAX_DIM = 1 << 40

_CHUNK = 1 << 20
_PROGRESS_EVERY = 8 << 20
_ZIP_SENTINEL = 0xFFFFFFFF


@dataclass(frozen=True)
class Limits:
    """Caps checked before anything of that size is read or allocated."""

    max_file_bytes: int = 16 << 30
    max_header_bytes: int = 64 << 10
    max_members: int = 512
    max_array_bytes: int = 8 << 30
    max_manifest_bytes: int = 16 << 20
    max_plaintext_bytes: int = 16 << 30
    max_directory_bytes: int = 512 * 256  # the ZIP central directory (members × a generous entry size)
    memory_plaintext_bytes: int = 256 << 20  # larger archives are decrypted into an unlinked temporary file


DEFAULT_LIMITS = Limits()


@dataclass
class Payload:
    """What travels inside the encryption: a JSON-able manifest and named arrays."""

    manifest: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True)
class Binding:
    """The signed header fields that tie a file to one project, sender, recipient and exchange."""

    kind: str
    project_id: str
    envelope_id: str
    created: str
    sender: PublicCard
    recipient: str
    in_reply_to: str | None
    software: str
    audit_head: str = NO_AUDIT  # SHA-256 of the last line of the sender's audit log when it sealed the file

    def to_header(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "project_id": self.project_id, "envelope_id": self.envelope_id,
            "created": self.created, "sender": self.sender.to_dict(), "recipient": self.recipient,
            "in_reply_to": self.in_reply_to, "software": self.software, "audit_head": self.audit_head,
        }


@dataclass(frozen=True)
class SealedFile:
    path: Path
    digest: str
    size: int
    binding: Binding


@dataclass
class Opened:
    binding: Binding
    payload: Payload
    digest: str


# ---------------------------------------------------------------------------------------------- helpers

def _check_project_id(value: object) -> str | None:
    if not isinstance(value, str) or not value or len(value) > MAX_PROJECT_ID_CHARS:
        return f"the project id must be 1 to {MAX_PROJECT_ID_CHARS} characters"
    if check_name(value) is not None:
        return "the project id has control characters or leading/trailing spaces"
    return None


def _header_problem(h: dict[str, Any]) -> str | None:
    """Why the header fields (all but the sender card) are invalid, or None."""
    if h["kind"] not in KINDS:
        return "the kind is neither 'bundle' nor 'package'"
    why = _check_project_id(h["project_id"])
    if why:
        return why
    if not is_hex(h["envelope_id"], 16):
        return "the envelope id is not 32 lowercase hex digits"
    if not is_utc_time(h["created"]):
        return "the creation time is not YYYY-MM-DDTHH:MM:SSZ"
    if not is_hex(h["recipient"], 32):
        return "the recipient key id is not 64 lowercase hex digits"
    if h["kind"] == "bundle" and h["in_reply_to"] is not None:
        return "a bundle cannot answer another file (in_reply_to must be null)"
    if h["kind"] == "package" and not is_hex(h["in_reply_to"], 32):
        return "a package must name the SHA-256 of the bundle it answers (64 lowercase hex digits)"
    sw = h["software"]
    if not isinstance(sw, str) or not 1 <= len(sw) <= MAX_SOFTWARE_CHARS or not sw.isascii() \
            or not sw.isprintable():
        return f"the software field must be 1 to {MAX_SOFTWARE_CHARS} printable ASCII characters"
    if not is_hex(h["audit_head"], 32):
        return "the audit head is not 64 lowercase hex digits"
    return None


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _strict_json(raw: bytes) -> Any:
    """Parse ``raw`` and require it to be exactly the canonical JSON of what it encodes."""
    if not json_depth_ok(raw):
        raise ValueError("nested too deeply")
    value = json.loads(raw.decode("utf-8"), object_pairs_hook=_reject_duplicates,
                       parse_constant=_reject_constant)
    if canonical_json(value) != raw:
        raise ValueError("not in canonical form")
    return value


def _parse_header(raw: bytes) -> Binding:
    try:
        h = _strict_json(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FormatError("the header is not canonical JSON (the file is damaged)") from exc
    if not isinstance(h, dict) or set(h) != HEADER_FIELDS:
        raise FormatError("the header does not have exactly the v1 fields")
    why = _header_problem(h)
    if why:
        raise FormatError(f"invalid header: {why}")
    sender = PublicCard.from_dict(h["sender"])
    return Binding(kind=h["kind"], project_id=h["project_id"], envelope_id=h["envelope_id"],
                   created=h["created"], sender=sender, recipient=h["recipient"],
                   in_reply_to=h["in_reply_to"], software=h["software"], audit_head=h["audit_head"])


def _parse_trailer(trailer: bytes) -> bytes | None:
    if len(trailer) != TRAILER_LEN or not trailer.startswith(TRAILER_PREFIX) or trailer[-1:] != b"\n":
        return None
    hexsig = trailer[len(TRAILER_PREFIX):-1]
    if any(c not in b"0123456789abcdef" for c in hexsig):
        return None
    return bytes.fromhex(hexsig.decode("ascii"))


class _HashingWriter:
    """Writes through to a file while hashing and counting every byte; remembers its exception.

    (A helper thread for hashing and writing was measured: the GIL hand-offs made it twice as slow.)
    """

    def __init__(self, fh: IO[bytes]):
        self._fh = fh
        self.hasher = hashlib.sha256()
        self.count = 0
        self.error: BaseException | None = None

    def write(self, data: Any) -> int:
        try:
            self._fh.write(data)
        except BaseException as exc:
            self.error = exc
            raise
        self.hasher.update(data)
        n = len(data)
        self.count += n
        return n

    def flush(self) -> None:
        self._fh.flush()


class _ViewReader:
    """``read(n)`` over a memory buffer, reporting progress; remembers the first exception it raised."""

    def __init__(self, view: memoryview, control: JobControl, text: str):
        self._view = view
        self._pos = 0
        self._control = control
        self._text = text
        self._next_report = 0
        self.error: BaseException | None = None

    def read(self, n: int = -1) -> bytes:
        try:
            if self._pos >= self._next_report:
                self._control.step(self._pos / max(len(self._view), 1), self._text)
                self._next_report = self._pos + _PROGRESS_EVERY
            end = len(self._view) if n is None or n < 0 else min(len(self._view), self._pos + n)
            out = self._view[self._pos:end].tobytes()
            self._pos = end
            return out
        except BaseException as exc:
            self.error = exc
            raise


class _FileSectionReader:
    """``read(n)`` over ``length`` bytes of an open file, reporting progress; remembers its exception."""

    def __init__(self, fh: IO[bytes], length: int, control: JobControl, text: str):
        self._fh = fh
        self._left = length
        self._length = length
        self._control = control
        self._text = text
        self._next_report = 0
        self.error: BaseException | None = None

    def read(self, n: int = -1) -> bytes:
        try:
            done = self._length - self._left
            if done >= self._next_report:
                self._control.step(done / max(self._length, 1), self._text)
                self._next_report = done + _PROGRESS_EVERY
            want = self._left if n is None or n < 0 else min(n, self._left)
            out = self._fh.read(want) if want else b""
            self._left -= len(out)
            return out
        except BaseException as exc:
            self.error = exc
            raise


class _BufferWriter:
    """Collects written bytes in a preallocated, uninitialised buffer (never grows: refuses to exceed it)."""

    def __init__(self, capacity: int):
        self.buf = np.empty(capacity, dtype=np.uint8)
        self._view = memoryview(self.buf)
        self.pos = 0

    def write(self, data: Any) -> int:
        n = len(data)
        if self.pos + n > len(self.buf):
            raise OSError("decrypted data larger than its ciphertext")
        self._view[self.pos:self.pos + n] = data
        self.pos += n
        return n

    def flush(self) -> None:
        pass

    def result(self) -> np.ndarray:
        return self.buf[:self.pos]


class _Segments:
    """A seekable write target for zipfile that keeps large ``bytes``/``memoryview`` writes by reference.

    zipfile lays out the archive (headers, CRCs, central directory) while array data is never copied; the
    archive is then read back in order with :meth:`reader`. Small writes are copied into owned buffers, so
    zipfile's seek-back rewrite of a local header lands in owned memory.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._bufs: list[Any] = []
        self._owned: list[bool] = []
        self._size = 0
        self._pos = 0

    @property
    def size(self) -> int:
        return self._size

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        if not 0 <= base + offset <= self._size:
            raise OSError("seek outside the written data")
        self._pos = base + offset
        return self._pos

    def flush(self) -> None:
        pass

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        n = len(view)
        if self._pos == self._size:
            if n >= 4096 and isinstance(data, bytes | memoryview):
                self._starts.append(self._size)
                self._bufs.append(view)
                self._owned.append(False)
            elif self._owned and self._owned[-1]:
                self._bufs[-1] += view
            else:
                self._starts.append(self._size)
                self._bufs.append(bytearray(view))
                self._owned.append(True)
            self._size += n
        else:
            if self._pos + n > self._size:
                raise OSError("overwrite past the end of the written data")
            self._overwrite(self._pos, view)
        self._pos += n
        return n

    def _overwrite(self, pos: int, view: memoryview) -> None:
        done = 0
        for i, start in enumerate(self._starts):
            buf = self._bufs[i]
            end = start + len(buf)
            if end <= pos + done or done == len(view):
                continue
            if not self._owned[i]:
                self._bufs[i] = buf = bytearray(buf)
                self._owned[i] = True
            a = pos + done - start
            k = min(len(buf) - a, len(view) - done)
            buf[a:a + k] = view[done:done + k]
            done += k

    def getvalue(self) -> bytes:
        return b"".join(bytes(b) for b in self._bufs)

    def reader(self, control: JobControl, text: str) -> _SegmentReader:
        return _SegmentReader([memoryview(b).cast("B") for b in self._bufs], self._size, control, text)


class _SegmentReader:
    """``read(n)`` over a list of buffers in order, reporting progress; remembers its exception."""

    def __init__(self, views: list[memoryview], total: int, control: JobControl, text: str):
        self._views = views
        self._i = 0
        self._cur = views[0] if views else memoryview(b"")
        self._off = 0
        self._done = 0
        self._total = total
        self._control = control
        self._text = text
        self._next_report = 0
        self.error: BaseException | None = None

    def read(self, n: int = -1) -> bytes:
        off = self._off
        if 0 < n and off + n <= len(self._cur) and self._done < self._next_report:  # the hot path
            self._off = off + n
            self._done += n
            return self._cur[off:off + n].tobytes()
        try:
            return self._read_slow(n)
        except BaseException as exc:
            self.error = exc
            raise

    def _read_slow(self, n: int) -> bytes:
        if self._done >= self._next_report:
            self._control.step(self._done / max(self._total, 1), self._text)
            self._next_report = self._done + _PROGRESS_EVERY
        want = self._total - self._done if n is None or n < 0 else n
        pieces = []
        while want > 0 and self._i < len(self._views):
            piece = self._cur[self._off:self._off + want]
            pieces.append(piece)
            want -= len(piece)
            self._off += len(piece)
            self._done += len(piece)
            if self._off >= len(self._cur):
                self._i += 1
                self._off = 0
                self._cur = self._views[self._i] if self._i < len(self._views) else memoryview(b"")
        return pieces[0].tobytes() if len(pieces) == 1 else b"".join(pieces)


class _MemFile:
    """A read-only, seekable file over a memoryview, without copying it."""

    def __init__(self, view: memoryview):
        self._view = view
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: len(self._view)}[whence]
        if base + offset < 0:
            raise OSError("negative seek position")
        self._pos = base + offset
        return self._pos

    def read(self, n: int = -1) -> bytes:
        end = len(self._view) if n is None or n < 0 else min(len(self._view), self._pos + n)
        out = self._view[self._pos:end].tobytes() if end > self._pos else b""
        self._pos = max(self._pos, end)
        return out


# ---------------------------------------------------------------------------------------------- writing

def _normalize_arrays(arrays: object, limits: Limits) -> list[tuple[str, np.ndarray]]:
    if not isinstance(arrays, dict) or not all(isinstance(k, str) for k in arrays):
        raise ConfigError("the payload arrays must be a dict of name → numpy array")
    if len(arrays) + 2 > limits.max_members:
        raise ConfigError(f"too many arrays: at most {limits.max_members - 2} can travel in one file")
    out = []
    for name in sorted(arrays):
        arr = arrays[name]
        if not isinstance(name, str) or not ARRAY_NAME_RE.match(name):
            raise ConfigError(f"array name {name!r} is not allowed: use 1 to 64 lowercase letters, digits "
                              "or underscores")
        if not isinstance(arr, np.ndarray):
            raise ConfigError(f"array {name!r} is not a numpy array")
        dtype = arr.dtype.newbyteorder("<") if arr.dtype.byteorder != "|" else arr.dtype
        if dtype.str not in ALLOWED_DTYPES or dtype.hasobject or dtype.fields is not None:
            raise ConfigError(f"array {name!r} has dtype {arr.dtype}, which cannot be shipped "
                              "(allowed: float32/64, int8-64, uint8-64, bool)")
        if arr.nbytes > limits.max_array_bytes:
            raise ConfigError(f"array {name!r} is {arr.nbytes} bytes, more than the "
                              f"{limits.max_array_bytes}-byte limit")
        out.append((name, np.require(arr, dtype=dtype, requirements=["C"])))
    return out


def _npy_header(arr: np.ndarray) -> bytes:
    d = np.lib.format.header_data_from_array_1_0(arr)
    buf = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buf, d)
    except ValueError:
        buf = io.BytesIO()
        np.lib.format.write_array_header_2_0(buf, d)
    return buf.getvalue()


def _zipinfo(name: str, size: int, offset: int | None = None) -> zipfile.ZipInfo:
    """A v1 member header (FORMAT §4.6); with ``offset`` (where its local header will start), a ``.npy``
    member gets the alignment extra field that starts its data on a multiple of :data:`DATA_ALIGN` bytes."""
    if offset is None:
        info = canonical_zip.member_info(name, size, 0)
        info.extra = b""
        return info
    return canonical_zip.member_info(name, size, offset)


def manifest_bytes(header: dict[str, Any], members: dict[str, str], content: dict[str, Any]) -> bytes:
    """The canonical manifest of an envelope (binding header, member hashes, content); no checks."""
    return canonical_json({"format": MANIFEST_FORMAT, "binding": header, "members": members,
                           "content": content})


def zip_members(members: list[tuple[str, Any]]) -> io.BytesIO:
    """The canonical stored ZIP (FORMAT §4.6) of ``(name, bytes-like)`` in the given order (no checks on
    names or order: also for tests)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, data in members:
            with zf.open(_zipinfo(name, len(data), buf.tell()), "w") as w:
                w.write(data)
    return buf


def _build_plaintext(arrays: list[tuple[str, np.ndarray]], content: dict[str, Any], header: dict[str, Any],
                     sender: Identity, control: JobControl) -> _Segments:
    """The age plaintext: arrays (sorted), then manifest.json and manifest.sig; hashed as written.

    Array data is referenced, not copied: ``arrays`` must stay alive and unchanged until it is encrypted.
    """
    total = sum(a.nbytes for _, a in arrays) or 1
    done = 0
    buf = _Segments()
    hashes: dict[str, str] = {}
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays:
            head = _npy_header(arr)
            raw = memoryview(arr.reshape(-1).view(np.uint8))
            h = hashlib.sha256(head)
            with zf.open(_zipinfo(f"{name}.npy", len(head) + len(raw), buf.tell()), "w") as w:
                w.write(head)
                for i in range(0, len(raw), _CHUNK):
                    control.step(done / total, "packing arrays")
                    piece = raw[i:i + _CHUNK]
                    h.update(piece)
                    w.write(piece)
                    done += len(piece)
            hashes[f"{name}.npy"] = h.hexdigest()
        manifest = manifest_bytes(header, hashes, content)
        if len(manifest) > DEFAULT_LIMITS.max_manifest_bytes:
            raise ConfigError("the payload manifest is larger than 16 MiB")
        for name, data in ((MANIFEST_NAME, manifest),
                           (MANIFEST_SIG_NAME, sender.sign(MANIFEST_SIGNATURE_DOMAIN + manifest))):
            with zf.open(_zipinfo(name, len(data), buf.tell()), "w") as w:
                w.write(data)
    control.step(1.0, "packing arrays")
    return buf


def write_envelope(path: str | Path, header: dict[str, Any], plaintext: Any, sender: Identity,
                    recipient: PublicCard, control: JobControl | None = None,
                    before_publish: Callable[[SealedFile], None] | None = None) -> SealedFile:
    """Write header, age section and trailer atomically. Does not check that the pieces agree.

    ``plaintext`` is a bytes-like object or the :class:`_Segments` built by :func:`_build_plaintext`.
    ``before_publish`` runs once the file is complete and fsynced but before it gets its final name (the
    caller's private state goes first, the shared file last); if it raises, no file appears.
    """
    control = ensure(control)
    header_line = canonical_json(header) + b"\n"
    reader: _ViewReader | _SegmentReader = (
        plaintext.reader(control, "encrypting") if isinstance(plaintext, _Segments)
        else _ViewReader(memoryview(plaintext).cast("B"), control, "encrypting"))
    binding = _parse_header(header_line[:-1])
    result: list[SealedFile] = []

    def publish_hook() -> None:
        if before_publish is not None:
            before_publish(result[0])

    with atomic_writer(path, "wb", before_rename=publish_hook) as fh:
        out = _HashingWriter(fh)
        out.write(MAGIC)
        out.write(header_line)
        try:
            pyrage.encrypt_io(reader, out, [recipient.recipient()])
        except Exception as exc:
            for error in (reader.error, out.error):
                if error is not None:
                    raise error from exc
            raise DCError(f"encryption failed ({exc})") from exc
        signature = sender.sign(SIGNATURE_DOMAIN + out.hasher.digest())
        out.write(TRAILER_PREFIX + signature.hex().encode("ascii") + b"\n")
        result.append(SealedFile(path=Path(path), digest=out.hasher.hexdigest(), size=out.count, binding=binding))
        control.step(1.0, "writing")
    return result[0]


def seal(path: str | Path, payload: Payload, *, kind: str, project_id: str, sender: Identity,
         recipient: PublicCard, in_reply_to: str | None = None, audit_head: str = NO_AUDIT,
         before_publish: Callable[[SealedFile], None] | None = None,
         control: JobControl | None = None) -> SealedFile:
    """Write ``payload`` as a signed, encrypted envelope from ``sender`` to ``recipient``.

    ``in_reply_to`` is required for a package (the SHA-256 hex of the bundle file it answers) and must be
    None for a bundle. ``audit_head`` is the head hash of the sender's audit log (signed in the header, so
    the other party can later tell whether that log was cut or rewritten). The file appears at ``path``
    only when complete, after ``before_publish`` (see :func:`write_envelope`) returned; cancelling leaves
    nothing.
    """
    control = ensure(control)
    binding = Binding(kind=kind, project_id=project_id, envelope_id=secrets.token_hex(16), created=utc_now(),
                      sender=sender.card, recipient=recipient.key_id, in_reply_to=in_reply_to,
                      software=f"dcstudio/{__version__}", audit_head=audit_head)
    header = binding.to_header()
    why = _header_problem(header)
    if why:
        raise ConfigError(f"cannot seal: {why}")
    if len(canonical_json(header)) > DEFAULT_LIMITS.max_header_bytes:
        raise ConfigError("cannot seal: the header would be larger than 64 KiB")
    if not isinstance(payload.manifest, dict):
        raise ConfigError("the payload manifest must be a dict")
    try:
        content_size = len(canonical_json(payload.manifest))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"the payload manifest is not plain JSON ({exc})") from exc
    if content_size > DEFAULT_LIMITS.max_manifest_bytes:
        raise ConfigError("the payload manifest is larger than 16 MiB")
    arrays = _normalize_arrays(payload.arrays, DEFAULT_LIMITS)
    plaintext = _build_plaintext(arrays, payload.manifest, header, sender, control.sub(0.0, 0.3))
    return write_envelope(path, header, plaintext, sender, recipient, control.sub(0.3, 1.0), before_publish)


# ---------------------------------------------------------------------------------------------- reading

@contextlib.contextmanager
def _open_capped(path: str | Path, limits: Limits) -> Iterator[tuple[IO[bytes], int]]:
    try:
        fh = open(path, "rb", buffering=_CHUNK)
    except FileNotFoundError as exc:
        raise FormatError("file not found") from exc
    except IsADirectoryError as exc:
        raise FormatError("is a folder, not a file") from exc
    except OSError as exc:
        raise FormatError(f"cannot be read ({exc.strerror or exc})") from exc
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size > limits.max_file_bytes:
            raise FormatError(f"file is {size} bytes, more than the {limits.max_file_bytes}-byte limit")
        yield fh, size


def _read_prefix(fh: IO[bytes], size: int, limits: Limits) -> tuple[Binding, int, bytes]:
    """Parse version line, header, age magic and trailer; return (binding, age_start, signature)."""
    first = fh.read(len(MAGIC))
    if first != MAGIC:
        if not first:
            raise FormatError("the file is empty (0 bytes): it was not copied completely, or was never written")
        if MAGIC.startswith(first):
            raise FormatError("the file is truncated (it ends inside its first line)")
        if first.startswith(_MAGIC_FAMILY):
            line = (first + fh.read(32)).split(b"\n", 1)[0].decode("ascii", "replace")
            raise FormatError(f"unsupported format version {line!r}; this program reads "
                              f"{MAGIC.decode().strip()}")
        raise FormatError("not a DC Studio bundle or package")
    block = fh.read(limits.max_header_bytes + 1)
    newline = block.find(b"\n")
    if newline < 0:
        if len(block) <= limits.max_header_bytes:
            raise FormatError("the file is truncated (it ends inside its header)")
        raise FormatError(f"the header line is longer than {limits.max_header_bytes} bytes")
    binding = _parse_header(block[:newline])
    age_start = len(MAGIC) + newline + 1
    if size < age_start + len(AGE_MAGIC) + TRAILER_LEN:
        raise FormatError("the file is truncated (no room for the encrypted section and signature)")
    fh.seek(age_start)
    if fh.read(len(AGE_MAGIC)) != AGE_MAGIC:
        raise FormatError("the encrypted section is not an age v1 file")
    fh.seek(size - TRAILER_LEN)
    signature = _parse_trailer(fh.read(TRAILER_LEN))
    if signature is None:
        raise FormatError("the file is truncated or damaged: it does not end with a signature line")
    return binding, age_start, signature


def _verify_outer(fh: IO[bytes], size: int, binding: Binding, signature: bytes,
                  control: JobControl) -> str:
    """Stream-hash everything before the trailer with constant memory, check the signature, return the
    SHA-256 hex of the whole file."""
    signed_len = size - TRAILER_LEN
    fh.seek(0)
    h = hashlib.sha256()
    block = bytearray(_CHUNK)
    view = memoryview(block)
    done = 0
    while done < signed_len:
        control.step(done / signed_len, "checking the signature")
        n = fh.readinto(view[:min(_CHUNK, signed_len - done)])
        if not n:
            raise FormatError("the file became shorter while being read")
        h.update(view[:n])
        done += n
    try:
        binding.sender.verify(SIGNATURE_DOMAIN + h.digest(), signature)
    except VerificationError as exc:
        raise VerificationError(f"the signature by {binding.sender.name!r} does not match: the file was "
                                "altered or damaged") from exc
    trailer = fh.read(TRAILER_LEN)
    if _parse_trailer(trailer) != signature or fh.read(1):
        raise FormatError("the file changed while being read")
    h.update(trailer)
    control.step(1.0, "checking the signature")
    return h.hexdigest()


def _check_expectations(binding: Binding, *, expect_kind: str, expect_project: str | None,
                        expect_sender: PublicCard | None, expect_in_reply_to: str | None,
                        me: PublicCard, project_names: dict[str, str] | None = None,
                        expect_senders: Collection[str] | None = None) -> None:
    what = binding.kind
    if binding.kind != expect_kind:
        raise VerificationError(f"this file is a {binding.kind}, but a {expect_kind} was expected")
    if expect_project is not None and binding.project_id != expect_project:
        raise VerificationError(f"this {what} belongs to {project_label(binding.project_id, project_names)}, "
                                f"not to {project_label(expect_project, project_names)}")
    if expect_sender is not None and binding.sender.key_id != expect_sender.key_id:
        raise VerificationError(f"this {what} was sent by {binding.sender.name!r} "
                                f"({binding.sender.fingerprint}), not by the expected sender "
                                f"{expect_sender.name!r} ({expect_sender.fingerprint})")
    if expect_senders is not None and binding.sender.fingerprint not in expect_senders:
        raise UnconfirmedSender(binding.sender, what)
    if binding.recipient != me.key_id:
        raise VerificationError(f"this {what} is encrypted to another recipient (key id "
                                f"{binding.recipient[:16]}…), not to {me.name!r} ({me.fingerprint})")
    if expect_in_reply_to is not None and binding.in_reply_to != expect_in_reply_to:
        raise VerificationError(f"this {what} answers another bundle ({str(binding.in_reply_to)[:16]}…), "
                                f"not the expected one ({expect_in_reply_to[:16]}…)")


class _TempFileWriter:
    """Collects decrypted bytes in an unlinked temporary file (large archives are not held 1:1 in memory);
    :meth:`result` maps it copy-on-write, so the pages come from the file, not from the heap."""

    def __init__(self, capacity: int):
        self._fh = tempfile.TemporaryFile(prefix="dcstudio-", suffix=".plain")
        self._capacity = capacity
        self.pos = 0

    def write(self, data: Any) -> int:
        n = len(data)
        if self.pos + n > self._capacity:
            raise OSError("decrypted data larger than its ciphertext")
        self._fh.write(data)
        self.pos += n
        return n

    def flush(self) -> None:
        self._fh.flush()

    def result(self) -> np.ndarray:
        self._fh.flush()
        if self.pos == 0:
            return np.empty(0, dtype=np.uint8)
        out = np.memmap(self._fh, dtype=np.uint8, mode="c", shape=(self.pos,))
        self._fh.close()  # the mapping keeps the (unlinked) file alive until the arrays are dropped
        return out


def _decrypt(fh: IO[bytes], age_start: int, age_len: int, identity: Identity,
             control: JobControl, limits: Limits = DEFAULT_LIMITS) -> _BufferWriter | _TempFileWriter:
    overhead = 4096 + 16 * (limits.max_plaintext_bytes // 65536 + 1)  # age header, stanzas and STREAM tags
    if age_len > limits.max_plaintext_bytes + overhead:
        raise FormatError(f"the encrypted section is {age_len} bytes, more than the "
                          f"{limits.max_plaintext_bytes}-byte plaintext limit")
    fh.seek(age_start)
    reader = _FileSectionReader(fh, age_len, control, "decrypting")
    writer: _BufferWriter | _TempFileWriter = (
        _BufferWriter(age_len) if age_len <= limits.memory_plaintext_bytes else _TempFileWriter(age_len))
    try:
        pyrage.decrypt_io(reader, writer, [identity.age_identity()])
    except Exception as exc:
        if reader.error is not None:
            if isinstance(reader.error, DCError):
                raise reader.error from exc
            raise FormatError(f"the file could not be read ({reader.error})") from exc
        if isinstance(exc, pyrage.DecryptError) and "no matching keys" in str(exc).lower():
            raise VerificationError("the encrypted section is not encrypted to this identity") from exc
        raise VerificationError("the encrypted section does not decrypt: it was altered or damaged") from exc
    control.step(1.0, "decrypting")
    return writer


def _inner_binding_mismatch(inner: object, outer: dict[str, Any]) -> str | None:
    if not isinstance(inner, dict):
        return "binding"
    for key in sorted(set(inner) | set(outer)):
        if key not in inner or key not in outer or canonical_json(inner[key]) != canonical_json(outer[key]):
            return key
    return None


def _unpack(buffer: np.ndarray, binding: Binding, limits: Limits, control: JobControl) -> Payload:
    """ZIP structure → inner signature and binding → member hashes → npy headers → arrays.

    ``buffer`` is the decrypted archive (uint8); arrays whose data is aligned in it are returned as views
    of it (no copy), others are copied.
    """
    plain = memoryview(buffer)
    if len(plain) < 22 or plain[-22:-18] != b"PK\x05\x06" or plain[-2:] != b"\0\0":
        raise FormatError("the decrypted content is not a v1 archive (bad end record)")
    _check_directory_size(plain, limits)
    try:
        with zipfile.ZipFile(_MemFile(plain)) as zf:  # type: ignore[arg-type]
            infos = zf.infolist()
            comment = zf.comment
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, struct.error,
            NotImplementedError, UnicodeDecodeError) as exc:
        raise FormatError("the decrypted content is not a valid archive") from exc
    if comment:
        raise FormatError("the archive has a comment, which v1 does not allow")
    if len(infos) > limits.max_members:
        raise FormatError(f"the archive has {len(infos)} members, more than the limit of "
                          f"{limits.max_members}")
    names = [info.orig_filename for info in infos]
    npy_names = names[:-2]
    if names[-2:] != [MANIFEST_NAME, MANIFEST_SIG_NAME]:
        raise FormatError("the archive does not end with manifest.json and manifest.sig")
    for name in npy_names:
        if not MEMBER_NAME_RE.match(name):
            raise FormatError(f"the archive has a member named {name!r}, which is not allowed")
    if len(set(names)) != len(names):
        raise FormatError("the archive has two members with the same name")
    if npy_names != sorted(npy_names):
        raise FormatError("the archive members are not in the v1 order")

    for info in infos:
        name = info.orig_filename
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits != 0:
            raise FormatError(f"archive member {name!r} is compressed, encrypted or flagged")
        if info.file_size != info.compress_size or tuple(info.date_time) != ZIP_DATE_TIME:
            raise FormatError(f"archive member {name!r} has inconsistent sizes or a non-v1 timestamp")
        cap = {MANIFEST_NAME: limits.max_manifest_bytes, MANIFEST_SIG_NAME: 64}.get(
            name, limits.max_array_bytes + MAX_NPY_HEADER_BYTES)
        if info.file_size > cap:
            raise FormatError(f"archive member {name!r} is {info.file_size} bytes, more than the limit")
    control.step(0.0, "checking the archive")
    spans = canonical_zip.check(plain, [canonical_zip.Member(i.orig_filename, i.file_size, i.CRC) for i in infos])
    regions = dict(zip(names, spans, strict=True))

    m0, m1 = regions[MANIFEST_NAME]
    s0, s1 = regions[MANIFEST_SIG_NAME]
    manifest_raw = bytes(plain[m0:m1])
    try:
        binding.sender.verify(MANIFEST_SIGNATURE_DOMAIN + manifest_raw, bytes(plain[s0:s1]))
    except VerificationError as exc:
        raise VerificationError("the inner signature of the manifest does not match the sender") from exc
    try:
        manifest = _strict_json(manifest_raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FormatError("the manifest is not canonical JSON") from exc
    if not isinstance(manifest, dict) or set(manifest) != {"format", "binding", "members", "content"} \
            or manifest["format"] != MANIFEST_FORMAT:
        raise FormatError("the manifest does not have exactly the v1 fields")
    mismatch = _inner_binding_mismatch(manifest["binding"], binding.to_header())
    if mismatch is not None:
        raise VerificationError(f"the signed inner manifest does not match the outer header (field "
                                f"{mismatch!r}): the file was re-packaged")
    members, content = manifest["members"], manifest["content"]
    if not isinstance(content, dict) or not isinstance(members, dict):
        raise FormatError("the manifest's members or content is not a JSON object")
    if set(members) != set(npy_names) or not all(is_hex(v, 32) for v in members.values()):
        raise VerificationError("the manifest does not list exactly the arrays in the archive")

    total = sum(regions[n][1] - regions[n][0] for n in npy_names) or 1
    done = 0
    arrays: dict[str, np.ndarray] = {}
    for name in npy_names:
        control.step(done / total, "reading arrays")
        start, end = regions[name]
        member = plain[start:end]
        if hashlib.sha256(member).hexdigest() != members[name]:
            raise VerificationError(f"array {name!r} does not match its SHA-256 in the manifest")
        arrays[name[:-4]] = _load_npy(buffer, start, end, name, limits)
        done += end - start
    control.step(1.0, "reading arrays")
    return Payload(manifest=content, arrays=arrays)


def _check_directory_size(plain: memoryview, limits: Limits) -> None:
    """Refuse an archive whose end record declares more members or a larger central directory than the
    caps, before zipfile reads (and allocates) a single directory entry. ZIP64 records are followed."""
    entries, cd_size = struct.unpack("<HL", plain[-12:-6])
    if (entries == 0xFFFF or cd_size == _ZIP_SENTINEL) and len(plain) >= 42 \
            and plain[-42:-38] == b"PK\x06\x07":
        (z64_off,) = struct.unpack("<Q", plain[-34:-26])
        if z64_off + 56 > len(plain) or plain[z64_off:z64_off + 4] != b"PK\x06\x06":
            raise FormatError("the decrypted content is not a v1 archive (bad ZIP64 end record)")
        entries, cd_size = struct.unpack("<QQ", plain[z64_off + 32:z64_off + 48])
    if entries > limits.max_members:
        raise FormatError(f"the archive declares {entries} members, more than the limit of {limits.max_members}")
    if cd_size > limits.max_directory_bytes:
        raise FormatError(f"the archive's directory is {cd_size} bytes, more than the "
                          f"{limits.max_directory_bytes}-byte limit")


def _parse_npy_header(raw: bytes, name: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Parse the text header of a ``.npy`` member strictly: a Python dict literal with exactly ``descr``
    (an allow-listed dtype string), ``fortran_order`` (a bool) and ``shape`` (a tuple of at most
    :data:`MAX_NDIM` non-negative integers, each at most :data:`MAX_DIM`). Anything else is a FormatError."""
    bad = FormatError(f"array {name!r} does not have a valid .npy header")
    try:
        text = raw.decode("latin1")
        if not text.endswith("\n") or len(text) > MAX_NPY_HEADER_BYTES:
            raise bad
        d = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, UnicodeDecodeError) as exc:
        raise bad from exc
    if not isinstance(d, dict) or set(d) != {"descr", "fortran_order", "shape"}:
        raise bad
    descr, fortran, shape = d["descr"], d["fortran_order"], d["shape"]
    if not isinstance(descr, str) or descr not in ALLOWED_DTYPES:
        raise FormatError(f"array {name!r} has dtype {descr!r}, which is not allowed")
    if not isinstance(fortran, bool) or not isinstance(shape, tuple) or len(shape) > MAX_NDIM or not all(
            type(k) is int and 0 <= k <= MAX_DIM for k in shape):
        raise bad
    return shape, fortran, np.dtype(descr)


def _load_npy(buffer: np.ndarray, start: int, end: int, name: str, limits: Limits) -> np.ndarray:
    """Parse and cap the ``.npy`` header in ``buffer[start:end]`` before touching the data.

    The header is read with ``numpy.lib.format`` exactly as ``np.load`` reads it; the data of an
    allow-listed plain dtype is then used in place (a view of ``buffer``) when aligned, else copied once.
    No pickle code path exists here.
    """
    member = memoryview(buffer)[start:end]
    head = bytes(member[:12])
    if len(head) < 10 or head[:6] != b"\x93NUMPY" or head[6:8] not in (b"\x01\x00", b"\x02\x00"):
        raise FormatError(f"array {name!r} does not have a valid .npy header")
    if head[6] == 1:
        hlen, hstart = struct.unpack("<H", head[8:10])[0], 10
    else:
        if len(head) < 12:
            raise FormatError(f"array {name!r} does not have a valid .npy header")
        hlen, hstart = struct.unpack("<L", head[8:12])[0], 12
    if hlen > MAX_NPY_HEADER_BYTES or hstart + hlen > len(member):
        raise FormatError(f"array {name!r} does not have a valid .npy header")
    shape, fortran, dtype = _parse_npy_header(bytes(member[hstart:hstart + hlen]), name)
    data_offset = hstart + hlen
    if fortran:
        raise FormatError(f"array {name!r} is stored in Fortran order, which v1 does not allow")
    if dtype.hasobject or dtype.str not in ALLOWED_DTYPES or dtype.fields is not None:
        raise FormatError(f"array {name!r} has dtype {dtype.str!r}, which is not allowed")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > limits.max_array_bytes:
        raise FormatError(f"array {name!r} declares {nbytes} bytes, more than the "
                          f"{limits.max_array_bytes}-byte limit")
    data_start = start + data_offset
    if data_start + nbytes != end:
        raise FormatError(f"array {name!r} has {end - data_start} data bytes, but its header "
                          f"declares {nbytes}")
    raw = buffer[data_start:end]
    if dtype == np.bool_ and raw.size and raw.max() > 1:
        raise FormatError(f"boolean array {name!r} holds values other than 0 and 1")
    if data_start % DATA_ALIGN != 0:
        raw = np.array(raw)
    return raw.view(dtype).reshape(shape)


def file_digest(path: str | Path, control: JobControl | None = None) -> str:
    """SHA-256 hex of a whole file, streamed with constant memory."""
    control = ensure(control)
    h = hashlib.sha256()
    block = bytearray(_CHUNK)
    view = memoryview(block)
    try:
        fh = open(path, "rb", buffering=0)
    except FileNotFoundError as exc:
        raise FormatError("file not found", path=path) from exc
    except OSError as exc:
        raise FormatError(f"cannot be read ({exc.strerror or exc})", path=path) from exc
    with fh:
        size = max(os.fstat(fh.fileno()).st_size, 1)
        done = 0
        while n := fh.readinto(view):
            h.update(view[:n])
            done += n
            control.step(done / size, "hashing")
    return h.hexdigest()


def _named(exc: DCError, path: str | Path) -> DCError:
    return exc if exc.path is not None or isinstance(exc, Cancelled) else with_path(exc, path)


def inspect(path: str | Path, limits: Limits = DEFAULT_LIMITS,
            control: JobControl | None = None) -> Binding:
    """Parse the header and verify the outer signature, without decrypting anything."""
    control = ensure(control)
    try:
        with _open_capped(path, limits) as (fh, size):
            binding, _age_start, signature = _read_prefix(fh, size, limits)
            _verify_outer(fh, size, binding, signature, control)
        return binding
    except DCError as exc:
        raise _named(exc, path) from exc


def read_header(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Binding:
    """The clear header only (no signature check, nothing decrypted): what deciding whether to open a file
    from this sender costs. Trust nothing in it until :func:`open_sealed` or :func:`inspect` checked it."""
    try:
        with _open_capped(path, limits) as (fh, size):
            return _read_prefix(fh, size, limits)[0]
    except DCError as exc:
        raise _named(exc, path) from exc


def open_sealed(path: str | Path, identity: Identity, *, expect_kind: str, expect_project: str | None = None,
                expect_sender: PublicCard | None = None, expect_in_reply_to: str | None = None,
                expect_senders: Collection[str] | None = None,
                limits: Limits = DEFAULT_LIMITS, control: JobControl | None = None,
                project_names: dict[str, str] | None = None) -> Opened:
    """Verify, decrypt and unpack an envelope addressed to ``identity``; the first failed check wins.

    ``expect_senders`` (fingerprints the reader has confirmed) is checked from the clear header, before the
    signature and before anything is decrypted: an unconfirmed sender's file costs no more than its header
    (:class:`UnconfirmedSender`).

    The returned arrays are views into one buffer holding the decrypted archive (no second copy); copy an
    array if it must outlive the others without keeping that buffer alive.
    """
    if expect_kind not in KINDS:
        raise ConfigError(f"expect_kind must be one of {KINDS}")
    control = ensure(control)
    try:
        with _open_capped(path, limits) as (fh, size):
            binding, age_start, signature = _read_prefix(fh, size, limits)
            _check_expectations(binding, expect_kind=expect_kind, expect_project=expect_project,
                                expect_sender=expect_sender, expect_in_reply_to=expect_in_reply_to,
                                me=identity.card, project_names=project_names, expect_senders=expect_senders)
            digest = _verify_outer(fh, size, binding, signature, control.sub(0.0, 0.3))
            plain = _decrypt(fh, age_start, size - TRAILER_LEN - age_start, identity, control.sub(0.3, 0.75),
                             limits)
        payload = _unpack(plain.result(), binding, limits, control.sub(0.75, 1.0))
        return Opened(binding=binding, payload=payload, digest=digest)
    except DCError as exc:
        raise _named(exc, path) from exc
