"""Identities (.dcid) and public cards (.dcpub): keys, fingerprints, passphrase wrapping, tampering."""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata

import pyrage
import pytest

from core.errors import ConfigError, DCError, FormatError, VerificationError
from core.formats import identity as identity_mod
from core.formats.identity import CARD_FORMAT, Identity, PublicCard

LOG_N = 14
FP_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$")
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file modes")


@pytest.fixture(scope="module")
def alice() -> Identity:
    return Identity.generate("Alice — Ward 7")


@pytest.fixture(scope="module")
def bob() -> Identity:
    return Identity.generate("Bob")


def test_card_fields_and_fingerprint(alice, bob):
    card = alice.card
    assert card.name == "Alice — Ward 7"
    assert len(card.signing_key) == 32
    assert card.age_recipient.startswith("age1") and len(card.age_recipient) == 62
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", card.created)
    assert FP_RE.match(card.fingerprint)
    assert re.match(r"^[0-9a-f]{64}$", card.key_id)
    assert card.fingerprint != bob.card.fingerprint and card.key_id != bob.card.key_id
    # the fingerprint is the start of the key id, read in Crockford base32
    assert int(card.key_id[:20], 16) == int("".join(
        f"{'0123456789ABCDEFGHJKMNPQRSTVWXYZ'.index(c):05b}" for c in card.fingerprint.replace("-", "")), 2)


def test_signing_and_encryption_keys_are_independent(alice):
    age_public = str(alice.age_identity().to_public())
    assert age_public == alice.card.age_recipient
    # the X25519 secret is not derived from (or equal to) the Ed25519 seed
    assert alice._signing.private_bytes_raw().hex() not in alice.age_secret_key().lower()


def test_sign_and_verify(alice, bob):
    sig = alice.sign(b"hello")
    assert len(sig) == 64
    alice.card.verify(b"hello", sig)
    with pytest.raises(VerificationError):
        alice.card.verify(b"hellO", sig)
    with pytest.raises(VerificationError):
        bob.card.verify(b"hello", sig)
    with pytest.raises(VerificationError):
        alice.card.verify(b"hello", sig[:63])


def test_card_dict_round_trip_and_file(tmp_path, alice):
    d = alice.card.to_dict()
    assert d["format"] == CARD_FORMAT and d["fingerprint"] == alice.card.fingerprint
    assert PublicCard.from_dict(d) == alice.card
    path = tmp_path / "alice.dcpub"
    alice.card.save(path)
    assert PublicCard.load(path) == alice.card
    assert json.loads(path.read_text("utf-8"))["fingerprint"] == alice.card.fingerprint


@posix_only
def test_card_file_is_world_readable(tmp_path, alice):
    path = tmp_path / "alice.dcpub"
    alice.card.save(path)
    assert os.stat(path).st_mode & 0o777 == 0o644


@pytest.mark.parametrize("field,value,error", [
    ("name", "Mallory", VerificationError),                         # self-signature no longer matches
    ("fingerprint", "0000-0000-0000-0000", VerificationError),
    ("created", "2001-01-01T00:00:00Z", VerificationError),
    ("signing_key", "00" * 32, DCError),
    ("self_signature", "00" * 64, VerificationError),
    ("format", "dcstudio/card/v9", FormatError),
    ("signing_key", "AB" * 32, FormatError),                        # hex must be lowercase
    ("created", "2001-01-01 00:00:00", FormatError),
    ("name", "", FormatError),
    ("name", "two\nlines", FormatError),
])
def test_card_tampering_is_detected(alice, field, value, error):
    d = alice.card.to_dict()
    d[field] = value
    with pytest.raises(error):
        PublicCard.from_dict(d)


def test_card_with_swapped_encryption_key_is_refused(alice, bob):
    d = alice.card.to_dict()
    d["age_recipient"] = bob.card.age_recipient
    with pytest.raises(DCError):
        PublicCard.from_dict(d)


def test_card_strict_structure(alice):
    d = alice.card.to_dict()
    with pytest.raises(FormatError):
        PublicCard.from_dict({**d, "extra": 1})
    missing = dict(d)
    del missing["created"]
    with pytest.raises(FormatError):
        PublicCard.from_dict(missing)
    with pytest.raises(FormatError):
        PublicCard.from_dict({**d, "age_recipient": d["age_recipient"].upper()})  # not canonical
    with pytest.raises(FormatError):
        PublicCard.from_dict([d])
    with pytest.raises(FormatError, match="unsupported"):
        PublicCard.from_dict({**d, "format": "dcstudio/card/v2"})


def test_card_load_names_the_file(tmp_path, alice):
    path = tmp_path / "c.dcpub"
    d = alice.card.to_dict()
    d["name"] = "Eve"
    path.write_text(json.dumps(d), "utf-8")
    with pytest.raises(VerificationError) as err:
        PublicCard.load(path)
    assert err.value.path == path and str(path) in str(err.value)


def test_identity_file_round_trip(tmp_path, alice):
    path = tmp_path / "alice.dcid"
    alice.save(path, "correct horse", log_n=LOG_N)
    doc = json.loads(path.read_text("utf-8"))
    assert doc["format"] == "dcstudio/identity/v1" and doc["kdf"]["log_n"] == LOG_N
    assert alice.age_secret_key() not in path.read_text("utf-8")
    loaded = Identity.load(path, "correct horse")
    assert loaded.card == alice.card
    assert loaded.age_secret_key() == alice.age_secret_key()
    alice.card.verify(b"m", loaded.sign(b"m"))
    assert Identity.load_card(path) == alice.card
    assert "AGE-SECRET" not in repr(loaded)


@posix_only
def test_identity_file_is_private(tmp_path, alice):
    path = tmp_path / "alice.dcid"
    alice.save(path, "pw", log_n=LOG_N)
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_wrong_passphrase(tmp_path, alice):
    path = tmp_path / "alice.dcid"
    alice.save(path, "right", log_n=LOG_N)
    with pytest.raises(VerificationError) as err:
        Identity.load(path, "wrong")
    assert err.value.message == "wrong passphrase for this identity file"
    assert err.value.path == path


def test_passphrase_is_unicode_normalised(tmp_path, alice):
    path = tmp_path / "alice.dcid"
    alice.save(path, unicodedata.normalize("NFC", "café"), log_n=LOG_N)
    assert Identity.load(path, unicodedata.normalize("NFD", "café")).card == alice.card


@pytest.mark.parametrize("edit", ["card", "salt", "nonce", "secrets", "log_n"])
def test_identity_file_tampering(tmp_path, alice, bob, edit):
    path = tmp_path / "alice.dcid"
    alice.save(path, "pw", log_n=LOG_N)
    doc = json.loads(path.read_text("utf-8"))
    if edit == "card":
        doc["card"] = bob.card.to_dict()          # the card is authenticated data: cannot be swapped
    elif edit == "salt":
        doc["kdf"]["salt"] = "00" * 16
    elif edit == "nonce":
        doc["cipher"]["nonce"] = "00" * 12
    elif edit == "secrets":
        doc["secrets"] = doc["secrets"][:8] + ("A" if doc["secrets"][8] != "A" else "B") + doc["secrets"][9:]
    elif edit == "log_n":
        doc["kdf"]["log_n"] = LOG_N + 1
    path.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(DCError):
        Identity.load(path, "pw")


@pytest.mark.parametrize("log_n", [13, 23, 40, "18", True])
def test_work_factor_is_capped_before_scrypt(tmp_path, alice, monkeypatch, log_n):
    path = tmp_path / "alice.dcid"
    alice.save(path, "pw", log_n=LOG_N)
    doc = json.loads(path.read_text("utf-8"))
    doc["kdf"]["log_n"] = log_n
    path.write_text(json.dumps(doc), "utf-8")

    def no_scrypt(*a, **k):
        raise AssertionError("scrypt must not run for an out-of-range work factor")

    monkeypatch.setattr(identity_mod, "Scrypt", no_scrypt)
    with pytest.raises(FormatError):
        Identity.load(path, "pw")


def test_save_refuses_bad_settings(tmp_path, alice):
    with pytest.raises(ConfigError):
        alice.save(tmp_path / "a.dcid", "", log_n=LOG_N)
    with pytest.raises(ConfigError):
        alice.save(tmp_path / "a.dcid", "pw", log_n=12)
    assert not (tmp_path / "a.dcid").exists()


@pytest.mark.parametrize("name", ["", "   ", "x" * 129, "tab\tname", " padded"])
def test_generate_refuses_bad_names(name):
    with pytest.raises(ConfigError):
        Identity.generate(name)


def test_not_an_identity_file(tmp_path, alice):
    path = tmp_path / "x.dcid"
    alice.card.save(path)
    with pytest.raises(FormatError):
        Identity.load(path, "pw")
    path.write_text(json.dumps({"format": "dcstudio/identity/v7"}), "utf-8")
    with pytest.raises(FormatError, match="unsupported"):
        Identity.load(path, "pw")


def test_export_age_identity(tmp_path, alice):
    path = tmp_path / "alice.age.txt"
    alice.export_age_identity(path)
    lines = path.read_text("utf-8").splitlines()
    secret = [ln for ln in lines if not ln.startswith("#")]
    assert secret == [alice.age_secret_key()]
    if sys.platform != "win32":
        assert os.stat(path).st_mode & 0o777 == 0o600
    ident = pyrage.x25519.Identity.from_str(secret[0])
    ciphertext = pyrage.encrypt(b"for alice", [alice.card.recipient()])
    assert pyrage.decrypt(ciphertext, [ident]) == b"for alice"
