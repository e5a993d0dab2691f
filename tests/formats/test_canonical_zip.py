"""The canonical archive (FORMAT §4.6): a re-signed file that changes any ZIP byte the format fixes is refused,
naming the field; the writer's own archives (and the committed test vectors) are exactly canonical."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from core.control import JobControl
from core.errors import FormatError
from core.formats import canonical_zip
from core.formats import envelope as env
from core.formats.identity import Identity

PROJECT = "proj-canonical"
VECTORS = Path(__file__).parent / "vectors"


@pytest.fixture(scope="module")
def site() -> Identity:
    return Identity.generate("Insider site")


@pytest.fixture(scope="module")
def analyst() -> Identity:
    return Identity.generate("Analyst")


def _header(site: Identity, analyst: Identity) -> dict:
    return env.Binding("bundle", PROJECT, "cd" * 16, "2024-05-01T10:00:00Z", site.card,
                       analyst.card.key_id, None, "dcstudio/test").to_header()


def _arrays() -> dict[str, np.ndarray]:
    return {"a": np.arange(10, dtype=np.float64), "b": np.arange(6, dtype=np.int8).reshape(2, 3)}


@pytest.fixture(scope="module")
def plain(site, analyst) -> bytes:
    arrays = env._normalize_arrays(_arrays(), env.DEFAULT_LIMITS)
    return env._build_plaintext(arrays, {"k": 1}, _header(site, analyst), site, JobControl()).getvalue()


def _members(data: bytes) -> list[canonical_zip.Member]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return [canonical_zip.Member(i.filename, i.file_size, i.CRC) for i in zf.infolist()]


def _layout(data: bytes) -> tuple[int, int, int]:
    """(offset of the first local header, of the first central entry, of the end record)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return zf.infolist()[0].header_offset, zf.start_dir, len(data) - 22


def _put(data: bytes, at: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, at, value)
    return bytes(out)


# Each mutation: (what, where: 'local' | 'central' | 'end', byte offset in that record, struct code, value,
# the field the refusal must name). Offsets are those of the ZIP specification (APPNOTE 4.3.7, 4.3.12, 4.3.16).
MUTATIONS = [
    ("local version needed", "local", 4, "<H", 0x0314, "local header has version needed 0x0314"),
    ("local flags", "local", 6, "<H", 0x0800, "local header has flags 0x0800"),
    ("local time", "local", 10, "<H", 0x0001, "local header has modification time"),
    ("local date", "local", 12, "<H", 0x0022, "local header has modification date"),
    ("local CRC", "local", 14, "<L", 0x12345678, "local header has CRC-32"),
    ("local extra id", "local", 30 + 5, "<H", 0xCAFE, "local header has extra field"),
    ("local extra content", "local", 30 + 5 + 4, "<B", 0x41, "local header has extra field"),
    ("central version made by", "central", 4, "<H", 0x0014, "central-directory entry has version made by 0x0014"),
    ("central version needed", "central", 6, "<H", 0x002D, "central-directory entry has version needed"),
    ("central disk number", "central", 34, "<H", 1, "central-directory entry has disk number"),
    ("central internal attributes", "central", 36, "<H", 1, "central-directory entry has internal attributes"),
    ("central external attributes", "central", 38, "<L", 0o100600 << 16,
     "central-directory entry has external attributes"),
    ("central extra field", "central", 46 + 5 + 4, "<B", 0x41, "central-directory entry has extra field"),
    ("central extra id", "central", 46 + 5, "<H", 0xCAFE, "central-directory entry has extra field"),
    ("central CRC (data unchanged)", "central", 16, "<L", 0x12345678, "local header has CRC-32"),
    ("end disk number", "end", 4, "<H", 1, "end record has disk number"),
    ("end directory disk", "end", 6, "<H", 1, "end record has directory disk"),
    ("end entries on this disk", "end", 8, "<H", 3, "end record has entries on this disk"),
]


@pytest.mark.parametrize("what,where,at,fmt,value,match", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_resigned_mutation_of_a_fixed_field_is_refused(tmp_path, site, analyst, plain, what, where, at, fmt,
                                                       value, match):
    """An insider re-signs (and re-encrypts) a bundle whose archive differs only in one fixed ZIP field."""
    local, central, end = _layout(plain)
    base = {"local": local, "central": central, "end": end}[where]
    evil = _put(plain, base + at, fmt, value)
    assert evil != plain
    target = tmp_path / "evil.dcbundle"
    env.write_envelope(target, _header(site, analyst), evil, site, analyst.card)
    with pytest.raises(FormatError, match=match):
        env.open_sealed(target, analyst, expect_kind="bundle")


def test_crc_that_does_not_match_the_data_is_refused(site, analyst, plain):
    local, central, _ = _layout(plain)
    evil = _put(_put(plain, local + 14, "<L", 0x12345678), central + 16, "<L", 0x12345678)
    with pytest.raises(FormatError, match=r"ZIP member 'a\.npy': its CRC-32 0x12345678 does not match its data"):
        canonical_zip.check(memoryview(evil), _members(evil))


def test_gap_or_trailing_bytes_are_refused(plain):
    members = _members(plain)
    with pytest.raises(FormatError, match="bytes after its end record"):
        canonical_zip.check(memoryview(plain + b"\0"), members)
    with pytest.raises(FormatError, match="local header has signature"):
        canonical_zip.check(memoryview(b"\0" * 4 + plain), members)
    with pytest.raises(FormatError, match="ends early"):
        canonical_zip.check(memoryview(plain[:-30]), members)


def test_unpadded_npy_member_is_refused(site, analyst):
    """The alignment field is part of the canonical bytes: an archive without it is another encoding."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = env._zipinfo("a.npy", 3)  # no offset: no alignment field
        zf.writestr(info, b"abc")
    data = buf.getvalue()
    with pytest.raises(FormatError, match=r"ZIP member 'a\.npy': its local header has extra-field length"):
        canonical_zip.check(memoryview(data), _members(data))


def test_writer_output_is_canonical(plain):
    regions = canonical_zip.check(memoryview(plain), _members(plain))
    assert [start % canonical_zip.DATA_ALIGN == 0 for start, _ in regions[:2]] == [True, True]


@pytest.mark.parametrize("limit", [1000, 40])
def test_writer_output_with_zip64_records_is_canonical(site, analyst, monkeypatch, limit):
    """Sizes and offsets past the 32-bit limit (lowered here so the test stays small) use ZIP64 records,
    including the ZIP64 end record when the directory starts past it."""
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", limit)
    arrays = env._normalize_arrays({"a": np.arange(700, dtype=np.float64), "b": np.arange(5, dtype=np.int8)},
                                   env.DEFAULT_LIMITS)
    data = env._build_plaintext(arrays, {}, _header(site, analyst), site, JobControl()).getvalue()
    assert b"PK\x06\x06" in data
    canonical_zip.check(memoryview(data), _members(data))


@pytest.mark.parametrize("name", ["bundle.archive.zip", "package.archive.zip"])
def test_committed_vectors_are_canonical(name):
    data = (VECTORS / name).read_bytes()
    canonical_zip.check(memoryview(data), _members(data))


def _unpack(data: bytes, binding) -> None:
    env._unpack(np.frombuffer(data, dtype=np.uint8).copy(), binding, env.DEFAULT_LIMITS, JobControl())


def test_every_byte_of_the_archive_is_fixed(site, analyst, plain):
    """Exhaustive: any change to any single byte of a genuine archive (headers, directory, end record, array
    data, manifest, signature) is refused by the reader's archive step, whoever re-signs the outer file."""
    from core.errors import DCError
    from core.fileio import canonical_json

    binding = env._parse_header(canonical_json(_header(site, analyst)))
    _unpack(plain, binding)  # the genuine archive opens
    local, central, end = _layout(plain)
    accepted = []
    for pos in range(len(plain)):
        values = {plain[pos] ^ 0x01, plain[pos] ^ 0x80} | ({0x00, 0xFF} - {plain[pos]} if pos >= central else set())
        for value in values:
            evil = plain[:pos] + bytes([value]) + plain[pos + 1:]
            try:
                _unpack(evil, binding)
            except DCError:
                continue
            accepted.append((pos, value))
    assert accepted == []
