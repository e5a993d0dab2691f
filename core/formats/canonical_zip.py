"""The canonical ZIP of an envelope's plaintext: the one byte layout FORMAT §4.6 allows for given members.

Everything in the archive but the member data is a function of the members' names, sizes and CRC-32s:
local headers, central directory, end records (and ZIP64 records where sizes or offsets need them), with
fixed versions, flags, timestamps, attributes, disk numbers and counts, an alignment extra field on every
``.npy`` member and nothing between, before or after. A reader re-derives those bytes and compares them
with what it received (:func:`check`), so a sender has no field left to vary: no covert channel, and one
archive per payload.

The layout is the one Python's ``zipfile`` writes for the :func:`member_info` headers (the writer uses
it); a test pins the two together.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import FormatError

DATA_ALIGN = 64
ALIGN_EXTRA_ID = 0xD935
ZIP64_EXTRA_ID = 0x0001
DOS_TIME, DOS_DATE = 0x0000, 0x0021  # 1980-01-01 00:00:00
VERSION = 20  # "version made by" (low byte) and "version needed" without ZIP64
ZIP64_VERSION = 45
CREATE_SYSTEM = 3  # Unix
EXTERNAL_ATTR = 0o644 << 16
LOCAL_HEADER_SIZE = 30
_SENTINEL32 = 0xFFFFFFFF
_SENTINEL16 = 0xFFFF

# (field name, struct code); a 's' code is a fixed signature, "var" marks the variable-length tail fields.
_LOCAL = (("signature", "4s"), ("version needed", "H"), ("flags", "H"), ("method", "H"),
          ("modification time", "H"), ("modification date", "H"), ("CRC-32", "L"), ("compressed size", "L"),
          ("uncompressed size", "L"), ("name length", "H"), ("extra-field length", "H"))
_CENTRAL = (("signature", "4s"), ("version made by", "H"), ("version needed", "H"), ("flags", "H"),
            ("method", "H"), ("modification time", "H"), ("modification date", "H"), ("CRC-32", "L"),
            ("compressed size", "L"), ("uncompressed size", "L"), ("name length", "H"),
            ("extra-field length", "H"), ("comment length", "H"), ("disk number", "H"),
            ("internal attributes", "H"), ("external attributes", "L"), ("local-header offset", "L"))
_ZIP64_END = (("signature", "4s"), ("record size", "Q"), ("version made by", "H"), ("version needed", "H"),
              ("disk number", "L"), ("directory disk", "L"), ("entries on this disk", "Q"),
              ("entries", "Q"), ("directory size", "Q"), ("directory offset", "Q"))
_LOCATOR = (("signature", "4s"), ("directory disk", "L"), ("ZIP64 end-record offset", "Q"), ("disks", "L"))
_END = (("signature", "4s"), ("disk number", "H"), ("directory disk", "H"), ("entries on this disk", "H"),
        ("entries", "H"), ("directory size", "L"), ("directory offset", "L"), ("comment length", "H"))

Field = tuple[str, bytes]  # a named run of canonical bytes


def _fields(spec: Sequence[tuple[str, str]], values: Sequence[object]) -> list[Field]:
    return [(name, struct.pack("<" + code, value)) for (name, code), value in zip(spec, values, strict=True)]


def _zip64_limit() -> int:
    return zipfile.ZIP64_LIMIT  # read at call time, so a test can lower it to exercise ZIP64 cheaply


def local_zip64(size: int) -> bool:
    """A member's local header carries ZIP64 sizes when its size could exceed the 32-bit limit."""
    return size * 1.05 > _zip64_limit()


def align_extra(name: str, size: int, offset: int) -> bytes:
    """The alignment extra field of a ``.npy`` member whose local header starts at ``offset``: id
    :data:`ALIGN_EXTRA_ID` with zero bytes, so that the data starts on a multiple of :data:`DATA_ALIGN`
    (at least 4 bytes: a field is never empty); ``b""`` when the data is already aligned."""
    zip64 = 20 if local_zip64(size) else 0
    pad = -(offset + LOCAL_HEADER_SIZE + len(name.encode("ascii")) + zip64) % DATA_ALIGN
    if not pad:
        return b""
    pad += DATA_ALIGN if pad < 4 else 0
    return struct.pack("<HH", ALIGN_EXTRA_ID, pad - 4) + bytes(pad - 4)


def member_extra(name: str, size: int, offset: int) -> bytes:
    """The writer's own extra field of a member (alignment for ``.npy`` members, none otherwise)."""
    return align_extra(name, size, offset) if name.endswith(".npy") else b""


def member_info(name: str, size: int, offset: int) -> zipfile.ZipInfo:
    """The ``zipfile`` header the writer gives a member whose local header starts at ``offset``."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.create_system = CREATE_SYSTEM
    info.external_attr = EXTERNAL_ATTR
    info.file_size = size
    info.extra = member_extra(name, size, offset)
    return info


def local_header(name: str, size: int, crc: int, offset: int) -> list[Field]:
    raw = name.encode("ascii")
    extra = member_extra(name, size, offset)
    version, usize = VERSION, size
    if local_zip64(size):
        extra += struct.pack("<HHQQ", ZIP64_EXTRA_ID, 16, size, size)
        version, usize = ZIP64_VERSION, _SENTINEL32
    return _fields(_LOCAL, (b"PK\x03\x04", version, 0, 0, DOS_TIME, DOS_DATE, crc, usize, usize, len(raw),
                            len(extra))) + [("name", raw), ("extra field", extra)]


def central_entry(name: str, size: int, crc: int, offset: int) -> list[Field]:
    raw = name.encode("ascii")
    limit = _zip64_limit()
    big = [size, size] if size > limit else []
    far = [offset] if offset > limit else []
    extra = member_extra(name, size, offset)
    if big or far:
        extra = struct.pack("<HH" + "Q" * len(big + far), ZIP64_EXTRA_ID, 8 * len(big + far), *big, *far) + extra
    version = ZIP64_VERSION if big or far or local_zip64(size) else VERSION
    usize = _SENTINEL32 if big else size
    return _fields(_CENTRAL, (b"PK\x01\x02", CREATE_SYSTEM << 8 | version, version, 0, 0, DOS_TIME, DOS_DATE, crc,
                              usize, usize, len(raw), len(extra), 0, 0, 0, EXTERNAL_ATTR,
                              _SENTINEL32 if far else offset)) + [("name", raw), ("extra field", extra),
                                                                  ("comment", b"")]


def end_records(count: int, dir_offset: int, dir_size: int) -> list[tuple[str, list[Field]]]:
    """The end record, preceded by a ZIP64 end record and locator when a count or an offset needs them."""
    limit = _zip64_limit()
    out: list[tuple[str, list[Field]]] = []
    if count > zipfile.ZIP_FILECOUNT_LIMIT or dir_offset > limit or dir_size > limit:
        out.append(("ZIP64 end record", _fields(_ZIP64_END, (b"PK\x06\x06", 44, ZIP64_VERSION, ZIP64_VERSION, 0, 0,
                                                             count, count, dir_size, dir_offset))))
        out.append(("ZIP64 end-record locator", _fields(_LOCATOR, (b"PK\x06\x07", 0, dir_offset + dir_size, 1))))
        count, dir_size, dir_offset = min(count, _SENTINEL16), min(dir_size, _SENTINEL32), min(dir_offset,
                                                                                               _SENTINEL32)
    out.append(("end record", _fields(_END, (b"PK\x05\x06", 0, 0, count, count, dir_size, dir_offset, 0))
                + [("comment", b"")]))
    return out


@dataclass(frozen=True)
class Member:
    """One member as the central directory declares it; :func:`check` proves the rest of the archive."""

    name: str
    size: int
    crc: int


def _show(data: bytes) -> str:
    if len(data) in (2, 4, 8) and not data.startswith(b"PK"):
        return f"0x{int.from_bytes(data, 'little'):0{2 * len(data)}x}"
    text = data[:24].hex()
    return (text + "…" if len(data) > 24 else text) or "nothing"


def _compare(plain: memoryview, pos: int, fields: list[Field], where: str) -> int:
    """Compare ``fields`` with ``plain`` from ``pos``; FormatError naming the first differing field."""
    for name, want in fields:
        got = bytes(plain[pos:pos + len(want)])
        if got != want:
            if len(got) < len(want):
                raise FormatError(f"{where} is cut off at its {name} (the archive ends early)")
            raise FormatError(f"{where} has {name} {_show(got)}, the format fixes {_show(want)}")
        pos += len(want)
    return pos


def check(plain: memoryview, members: Sequence[Member]) -> list[tuple[int, int]]:
    """Require ``plain`` to be exactly the canonical archive of ``members`` (in order) with CRC-32s that
    match the data; return each member's data region ``(start, end)``. Sizes were capped by the caller."""
    regions, offsets = [], []
    pos = 0
    for m in members:
        offsets.append(pos)
        pos = _compare(plain, pos, local_header(m.name, m.size, m.crc, pos),
                       f"ZIP member {m.name!r}: its local header")
        end = pos + m.size
        if end > len(plain):
            raise FormatError(f"ZIP member {m.name!r}: its data is cut off (the archive ends early)")
        if zlib.crc32(plain[pos:end]) != m.crc:
            raise FormatError(f"ZIP member {m.name!r}: its CRC-32 0x{m.crc:08x} does not match its data")
        regions.append((pos, end))
        pos = end
    dir_offset = pos
    for m, offset in zip(members, offsets, strict=True):
        pos = _compare(plain, pos, central_entry(m.name, m.size, m.crc, offset),
                       f"ZIP member {m.name!r}: its central-directory entry")
    dir_size = pos - dir_offset
    for where, fields in end_records(len(members), dir_offset, dir_size):
        pos = _compare(plain, pos, fields, f"the archive's {where}")
    if pos != len(plain):
        raise FormatError(f"the archive has {len(plain) - pos} bytes after its end record, which the format "
                          "does not allow")
    return regions
