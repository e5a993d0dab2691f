"""The sealed envelope (docs/FORMAT.md): round trips, every refusal, atomicity and age interoperability."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from core.control import JobControl
from core.errors import Cancelled, ConfigError, DCError, FormatError, VerificationError
from core.fileio import canonical_json
from core.formats import envelope as env
from core.formats.identity import Identity
from tests.support import HANG_S

PROJECT = "proj-2024-heart"


@pytest.fixture(scope="module")
def site() -> Identity:
    return Identity.generate("St. Mary ward 7")


@pytest.fixture(scope="module")
def analyst() -> Identity:
    return Identity.generate("Analyst")


@pytest.fixture(scope="module")
def other() -> Identity:
    return Identity.generate("Other site")


def sample_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    return {
        "x_tilde": rng.standard_normal((300, 40)).astype(np.float32),      # ~48 KB
        "anchors": rng.standard_normal((100, 40)),                          # float64, 32 KB
        "y": rng.integers(0, 5, 300).astype(np.int64),
        "counts": np.array([3, 0, 7], dtype=np.uint16),
        "mask": rng.random(17) > 0.5,
        "small": np.arange(-4, 4, dtype=np.int8),
        "u8": np.arange(250, dtype=np.uint8),
        "big_endian": np.arange(6, dtype=">i4").reshape(2, 3),
        "strided": rng.standard_normal((20, 10)).astype(np.float32)[::2, ::3],  # not contiguous
        "fortran": np.asfortranarray(np.arange(12, dtype=np.uint32).reshape(3, 4)),
        "scalar": np.array(2.5),
        "empty": np.zeros((0, 4), dtype=np.float32),
        "u64": np.array([2**64 - 1], dtype=np.uint64),
        "i16": np.array([-300, 300], dtype=np.int16),
    }


MANIFEST = {"method": "dc-cfl", "rows": 300, "columns": ["a", "b"], "note": "ünïcode ok",
            "nested": {"k": [1, 2.5]}}


def seal_bundle(path: Path, site: Identity, analyst: Identity, **kw) -> env.SealedFile:
    payload = env.Payload(dict(MANIFEST), sample_arrays())
    return env.seal(path, payload, kind="bundle", project_id=PROJECT, sender=site, recipient=analyst.card,
                    **kw)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory, site, analyst) -> env.SealedFile:
    return seal_bundle(tmp_path_factory.mktemp("bundle") / "site.dcbundle", site, analyst)


def open_bundle(path: Path, analyst: Identity, **kw) -> env.Opened:
    return env.open_sealed(path, analyst, expect_kind="bundle", **kw)


def sections(path: Path) -> tuple[int, int, int]:
    """(age_start, age_end, size) by the documented rule: after the second newline, before the trailer."""
    data = path.read_bytes()
    age_start = data.index(b"\n", data.index(b"\n") + 1) + 1
    return age_start, len(data) - env.TRAILER_LEN, len(data)


def reassemble(path: Path, header: dict, age: bytes, signer: Identity) -> None:
    body = env.MAGIC + canonical_json(header) + b"\n" + age
    sig = signer.sign(env.SIGNATURE_DOMAIN + hashlib.sha256(body).digest())
    path.write_bytes(body + env.TRAILER_PREFIX + sig.hex().encode() + b"\n")


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, allow_pickle=False)
    return buf.getvalue()


def raw_npy(descr: str, shape: tuple, data: bytes) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue() + data


def seal_members(path: Path, members: list[tuple[str, bytes]], site: Identity, analyst: Identity, *,
                 hashes: dict[str, str] | None = None, compression: int = zipfile.ZIP_STORED) -> None:
    """A hand-built envelope whose archive holds ``members`` plus a correctly signed manifest."""
    binding = env.Binding("bundle", PROJECT, "ab" * 16, "2024-05-01T10:00:00Z", site.card,
                          analyst.card.key_id, None, "dcstudio/test")
    header = binding.to_header()
    if hashes is None:
        hashes = {name: hashlib.sha256(data).hexdigest() for name, data in members}
    manifest = env.manifest_bytes(header, hashes, {"crafted": True})
    sig = site.sign(env.MANIFEST_SIGNATURE_DOMAIN + manifest)
    everything = [*members, (env.MANIFEST_NAME, manifest), (env.MANIFEST_SIG_NAME, sig)]
    if compression == zipfile.ZIP_STORED:
        plaintext = env.zip_members(everything).getvalue()
    else:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=compression) as zf:
            for name, data in everything:
                zf.writestr(env._zipinfo(name, len(data)), data, compress_type=compression)
        plaintext = buf.getvalue()
    env.write_envelope(path, header, plaintext, site, analyst.card)


# ---------------------------------------------------------------------------------------------- round trip

def test_round_trip(bundle, site, analyst):
    opened = open_bundle(bundle.path, analyst, expect_project=PROJECT, expect_sender=site.card)
    arrays = sample_arrays()
    assert opened.payload.manifest == MANIFEST
    assert sorted(opened.payload.arrays) == sorted(arrays)
    for name, want in arrays.items():
        got = opened.payload.arrays[name]
        assert got.shape == want.shape, name
        assert got.dtype == want.dtype.newbyteorder("<"), name  # same type, always little-endian
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert opened.digest == bundle.digest == env.file_digest(bundle.path)
    assert bundle.size == bundle.path.stat().st_size
    b = opened.binding
    assert (b.kind, b.project_id, b.sender, b.recipient, b.in_reply_to) == (
        "bundle", PROJECT, site.card, analyst.card.key_id, None)
    assert b == bundle.binding == env.inspect(bundle.path)
    assert len(b.envelope_id) == 32 and b.software.startswith("dcstudio/")


def test_opened_arrays_are_aligned_and_writable(bundle, analyst):
    x = open_bundle(bundle.path, analyst).payload.arrays["x_tilde"]
    assert x.flags.aligned and x.flags.c_contiguous and x.flags.writeable
    x[0, 0] = 1.0


def test_each_seal_is_fresh(tmp_path, site, analyst):
    a = seal_bundle(tmp_path / "a", site, analyst)
    b = seal_bundle(tmp_path / "b", site, analyst)
    assert a.binding.envelope_id != b.binding.envelope_id and a.digest != b.digest


def test_archive_is_deterministic(site, analyst):
    header = env.Binding("bundle", PROJECT, "cd" * 16, "2024-05-01T10:00:00Z", site.card,
                         analyst.card.key_id, None, "dcstudio/test").to_header()
    arrays = env._normalize_arrays(sample_arrays(), env.DEFAULT_LIMITS)
    one = env._build_plaintext(arrays, MANIFEST, header, site, JobControl()).getvalue()
    two = env._build_plaintext(arrays, MANIFEST, header, site, JobControl()).getvalue()
    assert one == two
    with zipfile.ZipFile(io.BytesIO(one)) as zf:
        assert zf.testzip() is None
        names = zf.namelist()
        assert names[-2:] == ["manifest.json", "manifest.sig"] and names[:-2] == sorted(names[:-2])
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) and i.compress_type == zipfile.ZIP_STORED
                   for i in zf.infolist())


def test_zip64_members_round_trip(tmp_path, site, analyst, monkeypatch):
    """Arrays over 4 GiB need ZIP64 records; shrink zipfile's threshold to exercise that path cheaply."""
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 1000)
    arrays = {"a": np.arange(700, dtype=np.float64), "b": np.arange(5, dtype=np.int8)}
    sealed = env.seal(tmp_path / "z.dcbundle", env.Payload({}, arrays), kind="bundle", project_id=PROJECT,
                      sender=site, recipient=analyst.card)
    opened = open_bundle(sealed.path, analyst)
    for name, want in arrays.items():
        np.testing.assert_array_equal(opened.payload.arrays[name], want)
    assert opened.payload.arrays["a"].flags.aligned


def test_package_round_trip_and_reply_binding(tmp_path, bundle, site, analyst):
    payload = env.Payload({"model": "m"}, {"g": np.eye(3, dtype=np.float32)})
    pkg = env.seal(tmp_path / "p.dcpkg", payload, kind="package", project_id=PROJECT, sender=analyst,
                   recipient=site.card, in_reply_to=bundle.digest)
    opened = env.open_sealed(pkg.path, site, expect_kind="package", expect_project=PROJECT,
                             expect_sender=analyst.card, expect_in_reply_to=bundle.digest)
    assert opened.binding.in_reply_to == bundle.digest
    np.testing.assert_array_equal(opened.payload.arrays["g"], np.eye(3))
    with pytest.raises(VerificationError, match="answers another bundle"):
        env.open_sealed(pkg.path, site, expect_kind="package", expect_in_reply_to="0" * 64)


def test_seal_refuses_bad_reply_fields(tmp_path, site, analyst, bundle):
    payload = env.Payload({}, {})
    with pytest.raises(ConfigError):
        env.seal(tmp_path / "p", payload, kind="package", project_id=PROJECT, sender=analyst,
                 recipient=site.card)
    with pytest.raises(ConfigError):
        env.seal(tmp_path / "b", payload, kind="bundle", project_id=PROJECT, sender=site,
                 recipient=analyst.card, in_reply_to=bundle.digest)
    with pytest.raises(ConfigError):
        env.seal(tmp_path / "k", payload, kind="kit", project_id=PROJECT, sender=site, recipient=analyst.card)
    with pytest.raises(ConfigError):
        env.seal(tmp_path / "e", payload, kind="bundle", project_id="", sender=site, recipient=analyst.card)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("arrays,manifest", [
    ({"X": np.zeros(2)}, {}),                                   # upper case name
    ({"a.b": np.zeros(2)}, {}),
    ({"../x": np.zeros(2)}, {}),
    ({"o": np.array([object()], dtype=object)}, {}),
    ({"h": np.zeros(2, dtype=np.float16)}, {}),
    ({"c": np.zeros(2, dtype=np.complex64)}, {}),
    ({"s": np.array(["a"])}, {}),
    ({"l": [1, 2]}, {}),
    ({}, {"nan": float("nan")}),
    ({}, {"obj": object()}),
])
def test_seal_refuses_what_cannot_travel(tmp_path, site, analyst, arrays, manifest):
    with pytest.raises(ConfigError):
        env.seal(tmp_path / "x", env.Payload(manifest, arrays), kind="bundle", project_id=PROJECT,
                 sender=site, recipient=analyst.card)
    assert not (tmp_path / "x").exists()


# ---------------------------------------------------------------------------------------------- tampering

def flip_positions(path: Path) -> list[int]:
    age_start, age_end, size = sections(path)
    spread = np.linspace(0, size - 1, 40).astype(int).tolist()
    chosen = [0, 5, len(env.MAGIC) - 1, len(env.MAGIC) + 2, age_start - 2, age_start - 1, age_start,
              age_start + 30, age_start + 90, age_start + 200, age_end - 17, age_end - 1, age_end,
              age_end + 10, age_end + 40, size - 30, size - 2, size - 1]
    return sorted(set(spread + chosen))


def test_every_single_bit_flip_is_refused(tmp_path, bundle, analyst):
    original = bundle.path.read_bytes()
    positions = flip_positions(bundle.path)
    assert len(positions) >= 55 and positions[0] == 0 and positions[-1] == len(original) - 1
    target = tmp_path / "flipped.dcbundle"
    for k, pos in enumerate(positions):
        data = bytearray(original)
        data[pos] ^= 1 << (k % 8)
        target.write_bytes(bytes(data))
        with pytest.raises(DCError):
            open_bundle(target, analyst)
        with pytest.raises(DCError):
            env.inspect(target)


def test_truncation_is_refused(tmp_path, bundle, analyst):
    original = bundle.path.read_bytes()
    age_start, age_end, size = sections(bundle.path)
    target = tmp_path / "cut.dcbundle"
    for cut in [0, 1, 10, len(env.MAGIC), len(env.MAGIC) + 50, age_start - 1, age_start, age_start + 100,
                (age_start + age_end) // 2, age_end - 1, age_end, age_end + 1, size - 1]:
        target.write_bytes(original[:cut])
        with pytest.raises(DCError):
            open_bundle(target, analyst)
    target.write_bytes(original + b"\n")
    with pytest.raises(DCError):
        open_bundle(target, analyst)


def test_another_project_is_refused(bundle, analyst):
    with pytest.raises(VerificationError, match="project"):
        open_bundle(bundle.path, analyst, expect_project="another-project")


def test_another_recipient_is_refused(bundle, other):
    with pytest.raises(VerificationError, match="encrypted to another recipient") as err:
        open_bundle(bundle.path, other)
    assert err.value.path == bundle.path


def test_wrong_kind_is_refused(bundle, analyst):
    with pytest.raises(VerificationError, match="is a bundle, but a package was expected"):
        env.open_sealed(bundle.path, analyst, expect_kind="package")


def test_unexpected_sender_is_refused(bundle, analyst, other):
    with pytest.raises(VerificationError, match="not by the expected sender"):
        open_bundle(bundle.path, analyst, expect_sender=other.card)


def test_unknown_format_version_is_refused(tmp_path, bundle, analyst):
    data = bundle.path.read_bytes()
    target = tmp_path / "v2.dcbundle"
    target.write_bytes(b"dcstudio-envelope/v2\n" + data[len(env.MAGIC):])
    with pytest.raises(FormatError, match="unsupported format version"):
        open_bundle(target, analyst)
    with pytest.raises(FormatError, match="unsupported format version"):
        env.inspect(target)
    target.write_bytes(b"PK\x03\x04" + data)
    with pytest.raises(FormatError, match="not a DC Studio"):
        open_bundle(target, analyst)


def test_forged_sender_card_is_refused(tmp_path, bundle, analyst, other):
    """Swapping the sender card in the header breaks the outer signature."""
    data = bundle.path.read_bytes()
    age_start, age_end, _ = sections(bundle.path)
    header = json.loads(data[len(env.MAGIC):age_start - 1])
    header["sender"] = other.card.to_dict()
    target = tmp_path / "forged.dcbundle"
    target.write_bytes(env.MAGIC + canonical_json(header) + b"\n" + data[age_start:])
    with pytest.raises(VerificationError, match="signature"):
        open_bundle(target, analyst)


def test_resigned_by_someone_else_is_refused(tmp_path, bundle, analyst, other):
    """A valid outer signature by another key does not make the inner (site-signed) content theirs."""
    data = bundle.path.read_bytes()
    age_start, age_end, _ = sections(bundle.path)
    header = json.loads(data[len(env.MAGIC):age_start - 1])
    header["sender"] = other.card.to_dict()
    target = tmp_path / "resigned.dcbundle"
    reassemble(target, header, data[age_start:age_end], other)
    env.inspect(target)  # the outer layer alone is consistent
    with pytest.raises(VerificationError, match="inner signature"):
        open_bundle(target, analyst)


def test_inner_outer_binding_mismatch_is_refused(tmp_path, site, analyst):
    outer = env.Binding("bundle", PROJECT, "ef" * 16, "2024-05-01T10:00:00Z", site.card,
                        analyst.card.key_id, None, "dcstudio/test").to_header()
    inner = {**outer, "project_id": "some-other-project"}
    arrays = env._normalize_arrays({"x": np.ones(3, dtype=np.float32)}, env.DEFAULT_LIMITS)
    plaintext = env._build_plaintext(arrays, {}, inner, site, JobControl())
    target = tmp_path / "mismatch.dcbundle"
    env.write_envelope(target, outer, plaintext, site, analyst.card)
    env.inspect(target)
    with pytest.raises(VerificationError, match="project_id"):
        open_bundle(target, analyst)


def test_encrypted_to_someone_else_despite_header(tmp_path, site, analyst, other):
    header = env.Binding("bundle", PROJECT, "01" * 16, "2024-05-01T10:00:00Z", site.card,
                         analyst.card.key_id, None, "dcstudio/test").to_header()
    target = tmp_path / "misaddressed.dcbundle"
    env.write_envelope(target, header, b"irrelevant", site, other.card)
    with pytest.raises(VerificationError, match="not encrypted to this identity"):
        open_bundle(target, analyst)


def test_crafted_archive_round_trips(tmp_path, site, analyst):
    """The hand-built path used below produces an acceptable file when nothing is wrong."""
    target = tmp_path / "ok.dcbundle"
    seal_members(target, [("a.npy", npy_bytes(np.arange(5.0)))], site, analyst)
    opened = open_bundle(target, analyst)
    a = opened.payload.arrays["a"]
    np.testing.assert_array_equal(a, np.arange(5.0))
    assert a.flags.aligned  # the crafted archive is canonical, so padded: the data is used in place


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize("members,match", [
    ([("../x.npy", npy_bytes(np.zeros(2)))], "not allowed"),
    ([("dir/", b"")], "not allowed"),
    ([("X.npy", npy_bytes(np.zeros(2)))], "not allowed"),
    ([("a.npy", npy_bytes(np.zeros(2))), ("a.npy", npy_bytes(np.ones(2)))], "same name"),
    ([("b.npy", npy_bytes(np.zeros(2))), ("a.npy", npy_bytes(np.zeros(2)))], "order"),
    ([("o.npy", raw_npy("|O", (1,), b"\0" * 8))], "dtype"),
    ([("f.npy", raw_npy("<f2", (2,), b"\0" * 4))], "dtype"),
    ([("s.npy", raw_npy([("a", "<f4")], (1,), b"\0" * 4))], "dtype"),
    ([("big.npy", raw_npy("<f8", (10**12,), b"\0" * 8))], "declares"),
    ([("neg.npy", raw_npy("<f8", (2,), b"\0" * 8))], "data bytes"),
    ([("bad.npy", b"\x93NUMPY\x01\x00" + b"\x10\x00" + b"{'descr': 1}    ")], "npy header"),
    ([("bool.npy", raw_npy("|b1", (3,), b"\x00\x01\x02"))], "0 and 1"),
    ([("fo.npy", npy_bytes(np.asfortranarray(np.zeros((2, 2)))))], "Fortran"),
])
def test_malicious_archives_are_refused(tmp_path, site, analyst, members, match):
    target = tmp_path / "evil.dcbundle"
    seal_members(target, members, site, analyst)
    with pytest.raises(DCError, match=match):
        open_bundle(target, analyst)


def test_member_hash_mismatch_is_refused(tmp_path, site, analyst):
    target = tmp_path / "hash.dcbundle"
    seal_members(target, [("a.npy", npy_bytes(np.zeros(3)))], site, analyst, hashes={"a.npy": "0" * 64})
    with pytest.raises(VerificationError, match="SHA-256"):
        open_bundle(target, analyst)


def test_unlisted_member_is_refused(tmp_path, site, analyst):
    target = tmp_path / "unlisted.dcbundle"
    seal_members(target, [("a.npy", npy_bytes(np.zeros(3)))], site, analyst, hashes={})
    with pytest.raises(VerificationError, match="exactly the arrays"):
        open_bundle(target, analyst)


def test_compressed_member_is_refused(tmp_path, site, analyst):
    target = tmp_path / "deflated.dcbundle"
    seal_members(target, [("a.npy", npy_bytes(np.zeros(300)))], site, analyst,
                 compression=zipfile.ZIP_DEFLATED)
    with pytest.raises(FormatError, match="compressed"):
        open_bundle(target, analyst)


def test_not_a_zip_inside_is_refused(tmp_path, site, analyst):
    header = env.Binding("bundle", PROJECT, "02" * 16, "2024-05-01T10:00:00Z", site.card,
                         analyst.card.key_id, None, "dcstudio/test").to_header()
    target = tmp_path / "notzip.dcbundle"
    env.write_envelope(target, header, b"just some text", site, analyst.card)
    with pytest.raises(FormatError, match="archive"):
        open_bundle(target, analyst)


def test_oversized_array_refused_before_allocation(tmp_path, bundle, site, analyst):
    """The declared size is capped before the data length is even compared, let alone copied."""
    target = tmp_path / "huge.dcbundle"
    seal_members(target, [("big.npy", raw_npy("<f4", (1 << 40,), b"\0" * 16))], site, analyst)
    with pytest.raises(FormatError, match="declares 4398046511104 bytes, more than"):
        open_bundle(target, analyst)
    with pytest.raises(FormatError, match="more than the"):
        open_bundle(bundle.path, analyst, limits=env.Limits(max_array_bytes=1000))


def test_limits(bundle, analyst):
    with pytest.raises(FormatError, match="limit"):
        open_bundle(bundle.path, analyst, limits=env.Limits(max_file_bytes=1000))
    with pytest.raises(FormatError, match="header line is longer"):
        open_bundle(bundle.path, analyst, limits=env.Limits(max_header_bytes=100))
    with pytest.raises(FormatError, match="members"):
        open_bundle(bundle.path, analyst, limits=env.Limits(max_members=3))
    with pytest.raises(FormatError, match="manifest.json"):
        open_bundle(bundle.path, analyst, limits=env.Limits(max_manifest_bytes=10))


def test_missing_file_and_folder(tmp_path, analyst):
    with pytest.raises(FormatError, match="not found"):
        open_bundle(tmp_path / "nope.dcbundle", analyst)
    with pytest.raises(FormatError):
        open_bundle(tmp_path, analyst)


# ---------------------------------------------------------------------------------------------- jobs

def test_cancelled_seal_leaves_nothing(tmp_path, site, analyst):
    for at in (0.1, 0.3, 0.5):  # packing; at the first read inside the encryptor; mid-encryption
        seen: list[float] = []
        control = JobControl(lambda f, t, seen=seen: seen.append(f))

        def cancel_at(f: float, t: str, at=at, control=control, seen=seen) -> None:
            seen.append(f)
            if f >= at:
                control.cancel()

        control._progress = cancel_at
        big = env.Payload({}, {"x": np.ones(3_000_000, dtype=np.float32)})  # 12 MB: many progress steps
        target = tmp_path / "cancelled.dcbundle"
        with pytest.raises(Cancelled):
            env.seal(target, big, kind="bundle", project_id=PROJECT, sender=site, recipient=analyst.card,
                     control=control)
        assert not target.exists()
        assert list(tmp_path.iterdir()) == [], "a temporary file was left behind"
        assert max(seen) >= at


def test_cancelled_open_raises(tmp_path, site, analyst):
    big = env.Payload({}, {"x": np.ones(3_000_000, dtype=np.float32)})
    sealed = env.seal(tmp_path / "b.dcbundle", big, kind="bundle", project_id=PROJECT, sender=site,
                      recipient=analyst.card)
    for at in (0.1, 0.3, 0.5, 0.75):  # hashing; inside the decryptor; after it; while unpacking
        control = JobControl()
        control._progress = lambda f, t, at=at, control=control: control.cancel() if f >= at else None
        with pytest.raises(Cancelled):
            open_bundle(sealed.path, analyst, control=control)


def test_progress_is_reported(tmp_path, site, analyst):
    seen: list[float] = []
    big = env.Payload({}, {"x": np.ones(3_000_000, dtype=np.float32)})
    sealed = env.seal(tmp_path / "b.dcbundle", big, kind="bundle", project_id=PROJECT, sender=site,
                      recipient=analyst.card, control=JobControl(lambda f, t: seen.append(f)))
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > 5
    seen.clear()
    open_bundle(sealed.path, analyst, control=JobControl(lambda f, t: seen.append(f)))
    assert seen == sorted(seen) and seen[-1] == 1.0 and len(seen) > 5


# ---------------------------------------------------------------------------------------------- interop

@pytest.mark.skipif(shutil.which("age") is None, reason="the stock `age` CLI is not installed")
def test_stock_age_decrypts_the_payload(tmp_path, bundle, analyst):
    age_start, age_end, _ = sections(bundle.path)
    data = bundle.path.read_bytes()
    assert data[age_start:age_start + len(env.AGE_MAGIC)] == env.AGE_MAGIC
    cut = tmp_path / "payload.age"
    cut.write_bytes(data[age_start:age_end])
    key = tmp_path / "analyst.key"
    analyst.export_age_identity(key)
    out = tmp_path / "payload.zip"
    subprocess.run([shutil.which("age"), "-d", "-i", str(key), "-o", str(out), str(cut)],
                   check=True, capture_output=True, timeout=HANG_S)
    with zipfile.ZipFile(out) as zf:
        assert zf.testzip() is None
        manifest = json.loads(zf.read("manifest.json"))
        assert manifest["content"] == MANIFEST
        assert manifest["binding"] == bundle.binding.to_header()
        x = np.load(io.BytesIO(zf.read("x_tilde.npy")), allow_pickle=False)
        np.testing.assert_array_equal(x, sample_arrays()["x_tilde"])
        for name, digest in manifest["members"].items():
            assert hashlib.sha256(zf.read(name)).hexdigest() == digest
    bundle.binding.sender.verify(env.MANIFEST_SIGNATURE_DOMAIN + zipfile.ZipFile(out).read("manifest.json"),
                                 zipfile.ZipFile(out).read("manifest.sig"))


@pytest.mark.skipif(shutil.which("age") is None, reason="the stock `age` CLI is not installed")
def test_stock_age_refuses_wrong_key(tmp_path, bundle, other):
    age_start, age_end, _ = sections(bundle.path)
    cut = tmp_path / "payload.age"
    cut.write_bytes(bundle.path.read_bytes()[age_start:age_end])
    key = tmp_path / "other.key"
    other.export_age_identity(key)
    result = subprocess.run([shutil.which("age"), "-d", "-i", str(key), str(cut)], capture_output=True,
                            timeout=HANG_S)
    assert result.returncode != 0


def test_file_digest_streams(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(os.urandom(3 << 20) + b"tail")
    assert env.file_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest()
