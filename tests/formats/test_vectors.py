"""The committed test vectors (tests/formats/vectors/, docs/FORMAT.md §13) open, verify and re-pack byte for byte.

Everything expected is read from ``tests/formats/vectors/expected.json`` (written by ``docs/tools/make_vectors.py``),
so a change of the format means regenerating the folder, not editing this file.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pyrage
import pytest

from core.control import ensure
from core.errors import FormatError, VerificationError
from core.fileio import canonical_json
from core.formats import envelope
from core.formats.anchor import AnchorFile
from core.formats.envelope import TRAILER_LEN, file_digest, inspect, open_sealed
from core.formats.identity import Identity, PublicCard
from core.formats.kit import Kit
from core.participant import hash_ids
from tests.support import HANG_S

VECTORS = Path(__file__).parent / "vectors"
EXPECTED = json.loads((VECTORS / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ids() -> dict[str, Identity]:
    return {who: Identity.load(VECTORS / e["file"], EXPECTED["passphrase"])
            for who, e in EXPECTED["identities"].items()}


@pytest.fixture(scope="module")
def kit() -> Kit:
    analyst = PublicCard.load(VECTORS / EXPECTED["identities"]["analyst"]["card"])
    return Kit.load(VECTORS / EXPECTED["kit"]["file"], expect_analyst=analyst)


def age_section(data: bytes) -> bytes:
    """FORMAT.md §4.1: the age file runs from the end of the second line to the 156-byte trailer."""
    first = data.index(b"\n") + 1
    return data[data.index(b"\n", first) + 1:len(data) - TRAILER_LEN]


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def open_vector(which: str, ids: dict[str, Identity], kit: Kit) -> envelope.Opened:
    e = EXPECTED[which]
    sender = ids[e["sender"]].card
    reply = EXPECTED["bundle"]["digest"] if which == "package" else None
    return open_sealed(VECTORS / e["file"], ids[e["recipient"]], expect_kind=e["kind"],
                       expect_project=kit.project_id, expect_sender=sender, expect_in_reply_to=reply)


def test_identities_and_cards(ids):
    for who, e in EXPECTED["identities"].items():
        card = PublicCard.load(VECTORS / e["card"])
        assert card == ids[who].card == Identity.load_card(VECTORS / e["file"])
        assert (card.key_id, card.fingerprint, card.name) == (e["key_id"], e["fingerprint"], e["name"])
        doc = json.loads((VECTORS / e["file"]).read_text(encoding="utf-8"))
        assert doc["kdf"]["log_n"] == EXPECTED["scrypt_log_n"]
    with pytest.raises(VerificationError, match="wrong passphrase"):
        Identity.load(VECTORS / EXPECTED["identities"]["site"]["file"], EXPECTED["passphrase"] + "x")


def test_kit_verifies(kit, ids):
    e = EXPECTED["kit"]
    assert kit.project_id == e["project_id"] and kit.method == e["method"]
    assert kit.digest() == e["digest"] and kit.schema.digest() == e["schema_digest"]
    body = json.loads((VECTORS / e["file"]).read_text(encoding="utf-8"))["kit"]  # §8: digests of the signed body
    assert hashlib.sha256(canonical_json(body)).hexdigest() == e["digest"]
    assert hashlib.sha256(canonical_json(body["schema"])).hexdigest() == e["schema_digest"]
    assert kit.settings == e["settings"] and kit.anchor == e["anchor"]
    assert kit.roster_allows(ids["site"].card) and not kit.roster_allows(ids["analyst"].card)


def test_anchor_regenerates(kit):
    e = EXPECTED["anchor"]
    anchor = AnchorFile.load(VECTORS / e["file"], expect_project=kit.project_id)
    X = anchor.generate()
    assert list(X.shape) == e["generated_shape"] and anchor.rows == e["rows"] == kit.anchor["rows"]
    assert hashlib.sha256(np.ascontiguousarray(X, "<f8").tobytes()).hexdigest() == e["generated_sha256"]
    key = anchor.id_hash_key()
    assert key.hex() == e["id_hash_key"]
    assert bytes(hash_ids(np.array([e["id_example"]]), key)[0]).hex() == e["id_example_hash"]


def test_anchor_follows_the_spec():
    """FORMAT.md §9 re-implemented from its text (NumPy only) gives the committed X^anc and id hash."""
    import hmac

    doc = json.loads((VECTORS / EXPECTED["anchor"]["file"]).read_text(encoding="utf-8"))
    assert doc["format"] == "dcstudio/anchor/v1" and doc["kind"] == "smote"
    secret, r, prm = bytes.fromhex(doc["secret"]), doc["rows"], doc["params"]
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(b"dcstudio/anchor-rng/v1\0" + secret).digest(), "big"))
    P = np.asarray(prm["seed_rows"], np.float64)
    p = len(P)
    mu, sd = P.mean(axis=0), P.std(axis=0)
    sd[~(sd > 1e-12)] = 1.0
    Z = (P - mu) / sd
    kk = min(prm["k"], p - 1)
    dist = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2)
    neighbours = np.argsort(dist, axis=1, kind="stable")[:, 1:kk + 1]
    c = -(-r // p)
    base = np.repeat(np.arange(p), c)
    q = neighbours[base, rng.integers(0, kk, size=p * c)]
    u = rng.uniform(0, prm["a"], size=(p * c, 1))
    X = (Z[base] + u * (Z[q] - Z[base])) * sd + mu
    assert hashlib.sha256(X.astype("<f8").tobytes()).hexdigest() == EXPECTED["anchor"]["generated_sha256"]
    key = hmac.new(secret, b"dcstudio/id-hash/v1", hashlib.sha256).digest()
    row = hmac.new(key, EXPECTED["anchor"]["id_example"].encode("utf-8"), hashlib.sha256).hexdigest()
    assert (key.hex(), row) == (EXPECTED["anchor"]["id_hash_key"], EXPECTED["anchor"]["id_example_hash"])


@pytest.mark.parametrize("which", ["bundle", "package"])
def test_sealed_file_opens_and_matches(which, ids, kit):
    e = EXPECTED[which]
    path = VECTORS / e["file"]
    data = path.read_bytes()
    assert len(data) == e["size"] and file_digest(path) == hashlib.sha256(data).hexdigest() == e["digest"]
    opened = open_vector(which, ids, kit)
    assert opened.digest == e["digest"]
    manifest = e["manifest"]
    assert inspect(path).to_header() == opened.binding.to_header() == manifest["binding"]
    assert opened.payload.manifest == manifest["content"]
    assert sorted(opened.payload.arrays) == sorted(e["arrays"])
    for name, arr in opened.payload.arrays.items():
        want = e["arrays"][name]
        assert (arr.dtype.str, list(arr.shape)) == (want["dtype"], want["shape"])
        assert hashlib.sha256(npy_bytes(arr)).hexdigest() == want["sha256"] == manifest["members"][f"{name}.npy"]

    # the decrypted age section is the committed archive, byte for byte
    archive = (VECTORS / e["archive"]).read_bytes()
    assert hashlib.sha256(archive).hexdigest() == e["archive_sha256"] and len(archive) == e["archive_size"]
    assert pyrage.decrypt(age_section(data), [ids[e["recipient"]].age_identity()]) == archive
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        assert zf.namelist() == e["members"]
        assert json.loads(zf.read("manifest.json")) == manifest
        for name in e["members"][:-2]:
            assert hashlib.sha256(zf.read(name)).hexdigest() == e["arrays"][name[:-4]]["sha256"]

    # the product's archive writer re-packs the opened payload into exactly those bytes
    arrays = envelope._normalize_arrays(opened.payload.arrays, envelope.DEFAULT_LIMITS)
    rebuilt = envelope._build_plaintext(arrays, opened.payload.manifest, opened.binding.to_header(),
                                        ids[e["sender"]], ensure(None)).getvalue()
    assert rebuilt == archive


def test_package_answers_the_bundle(ids, kit):
    opened = open_vector("package", ids, kit)
    assert opened.binding.in_reply_to == EXPECTED["bundle"]["digest"]
    assert opened.binding.sender.key_id == kit.analyst.key_id
    assert opened.binding.recipient == ids["site"].card.key_id
    content = opened.payload.manifest
    assert content["kit_digest"] == EXPECTED["kit"]["digest"] and content["method"] == EXPECTED["kit"]["method"]


def test_bundle_passes_the_analysts_checks(ids, kit, tmp_path):
    from core.analyst import AnalystRound
    from core.formats.workspace import AnalystWorkspace

    session = AnalystRound(kit, ids["analyst"], AnalystWorkspace(tmp_path / "ws"))
    bundle = session.open_bundle(VECTORS / EXPECTED["bundle"]["file"])
    assert bundle.digest == EXPECTED["bundle"]["digest"] and bundle.site == ids["site"].card.name


@pytest.mark.parametrize("which", ["bundle", "package"])
def test_one_flipped_byte_is_refused(which, ids, kit, tmp_path):
    e = EXPECTED[which]
    data = (VECTORS / e["file"]).read_bytes()
    header_end = data.index(b"\n", data.index(b"\n") + 1) + 1
    cases = {"version line": 3, "header": header_end // 2, "age magic": header_end + 5, "age stanza": header_end + 40,
             "ciphertext": (header_end + len(data) - TRAILER_LEN) // 2,
             "last ciphertext byte": len(data) - TRAILER_LEN - 1, "trailer": len(data) - 20}
    for where, pos in cases.items():
        bad = bytearray(data)
        bad[pos] ^= 0x01
        path = tmp_path / f"{where.replace(' ', '_')}{Path(e['file']).suffix}"
        path.write_bytes(bytes(bad))
        with pytest.raises((FormatError, VerificationError)) as info:
            open_sealed(path, ids[e["recipient"]], expect_kind=e["kind"], expect_project=kit.project_id)
        assert info.value.path is not None, where  # the product names the file it refuses
        if where in ("age stanza", "ciphertext", "last ciphertext byte"):
            assert isinstance(info.value, VerificationError), where  # the outer signature catches it


def test_flipped_kit_and_identity_are_refused(tmp_path):
    kit_text = (VECTORS / EXPECTED["kit"]["file"]).read_text(encoding="utf-8")
    bad = tmp_path / "bad.dckit"
    bad.write_text(kit_text.replace('"DC Studio test vectors"', '"DC Studio test vectorz"'), encoding="utf-8")
    with pytest.raises(VerificationError, match="signature"):
        Kit.load(bad)
    doc = json.loads((VECTORS / EXPECTED["identities"]["site"]["file"]).read_text(encoding="utf-8"))
    raw = bytearray(bytes.fromhex(doc["kdf"]["salt"]))
    raw[0] ^= 0x01
    doc["kdf"]["salt"] = raw.hex()
    bad_id = tmp_path / "bad.dcid"
    bad_id.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(VerificationError):
        Identity.load(bad_id, EXPECTED["passphrase"])


def test_stock_age_decrypts_the_bundle(ids, tmp_path):
    """FORMAT.md §4.9: a security officer's stock ``age`` gets the same archive bytes."""
    age = shutil.which("age")
    if age is None:
        pytest.skip("the stock age CLI is not installed")
    e = EXPECTED["bundle"]
    key = tmp_path / "analyst.key"
    ids["analyst"].export_age_identity(key)
    section = tmp_path / "payload.age"
    section.write_bytes(age_section((VECTORS / e["file"]).read_bytes()))
    out = tmp_path / "payload.zip"
    subprocess.run([age, "-d", "-i", str(key), "-o", str(out), str(section)], check=True, timeout=HANG_S)
    assert out.read_bytes() == (VECTORS / e["archive"]).read_bytes()


def test_vectors_stay_small():
    assert sum(p.stat().st_size for p in VECTORS.iterdir()) < 200_000

