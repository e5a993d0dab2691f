"""Identities (private, ``*.dcid``) and public cards (``*.dcpub``).

Every party holds two unrelated key pairs: Ed25519 for signing and X25519 (as an age identity) for
encryption; one key is never used for both. The public half is a :class:`PublicCard`, self-signed with
the signing key so that its name and its encryption key cannot be altered without the private key. Its
``fingerprint`` is what two people compare over the phone before trusting a card.

Byte formats are specified in ``docs/FORMAT.md`` (sections "Public card" and "Identity file").
"""

from __future__ import annotations

import base64
import contextlib
import copy
import hashlib
import json
import math
import os
import re
import secrets
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyrage
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from ..errors import ConfigError, DCError, FormatError, VerificationError
from ..fileio import atomic_writer, canonical_json, read_json_capped, utc_now

CARD_FORMAT = "dcstudio/card/v1"
IDENTITY_FORMAT = "dcstudio/identity/v1"

_KEY_ID_DOMAIN = b"dcstudio/card/v1 key-id\0"
_SELF_SIG_DOMAIN = b"dcstudio/card/v1 self-signature\0"
_SCRYPT_DOMAIN = b"dcstudio/identity/v1 scrypt\0"
_AAD_DOMAIN = b"dcstudio/identity/v1\0"

SCRYPT_LOG_N_MIN = 14
SCRYPT_LOG_N_MAX = 22
SCRYPT_LOG_N_DEFAULT = 18

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_CARD_KEYS = frozenset({"format", "name", "signing_key", "age_recipient", "created", "self_signature",
                        "fingerprint"})
_TIME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_AGE_RECIPIENT_RE = re.compile(r"^age1[02-9ac-hj-np-z]{58}$")
_AGE_SECRET_RE = re.compile(r"^AGE-SECRET-KEY-1[02-9ACDEFGHJKLMNPQRSTUVWXYZ]{58}$")
_CARD_FILE_CAP = 64 << 10
_IDENTITY_FILE_CAP = 1 << 20
MAX_NAME_CHARS = 128


# ---------------------------------------------------------------------------------------------- helpers

def is_utc_time(value: object) -> bool:
    """True for a valid ``YYYY-MM-DDTHH:MM:SSZ`` string."""
    if not isinstance(value, str) or not _TIME_RE.match(value):
        return False
    try:
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return True


def is_hex(value: object, nbytes: int) -> bool:
    """True for a lowercase hex string encoding exactly ``nbytes`` bytes."""
    return (isinstance(value, str) and len(value) == 2 * nbytes
            and all(c in "0123456789abcdef" for c in value))


def check_name(name: object) -> str | None:
    """Return why ``name`` is not a valid party name, or None if it is."""
    if not isinstance(name, str):
        return "the name is not a string"
    if not name.strip():
        return "the name is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"the name is longer than {MAX_NAME_CHARS} characters"
    if name != name.strip() or any(unicodedata.category(c).startswith("C") for c in name):
        return "the name has control characters or leading/trailing spaces"
    return None


def _crockford(data: bytes, chars: int) -> str:
    n = int.from_bytes(data, "big")
    total = len(data) * 8
    return "".join(_CROCKFORD[(n >> (total - 5 * (i + 1))) & 31] for i in range(chars))


def _b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _b64decode_strict(text: object) -> bytes | None:
    """Standard padded base64, canonical only (re-encoding must give the same text)."""
    if not isinstance(text, str):
        return None
    try:
        data = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        return None
    return data if _b64encode(data) == text else None


def with_path(exc: DCError, path: str | Path) -> DCError:
    """A copy of ``exc`` that names ``path``."""
    new = copy.copy(exc)
    new.path = Path(path)
    return new


# ---------------------------------------------------------------------------------------------- card

@dataclass(frozen=True)
class PublicCard:
    """The public half of an identity; every instance is valid (checked on construction).

    ``self_signature`` is the card owner's Ed25519 signature over the other four fields, so a card whose
    name or encryption key was edited, or whose keys were paired by someone else, cannot be built.
    """

    name: str
    signing_key: bytes
    age_recipient: str
    created: str
    self_signature: bytes

    def __post_init__(self) -> None:
        why = check_name(self.name)
        if why is not None:
            raise FormatError(f"invalid public card: {why}")
        if not isinstance(self.signing_key, bytes) or len(self.signing_key) != 32:
            raise FormatError("invalid public card: the signing key is not 32 bytes")
        if not isinstance(self.age_recipient, str) or not _AGE_RECIPIENT_RE.match(self.age_recipient):
            raise FormatError("invalid public card: the encryption key is not an age1… recipient")
        try:
            canonical = str(pyrage.x25519.Recipient.from_str(self.age_recipient))
        except Exception as exc:
            raise FormatError("invalid public card: the encryption key is not a valid age key") from exc
        if canonical != self.age_recipient:
            raise FormatError("invalid public card: the encryption key is not in canonical form")
        if not is_utc_time(self.created):
            raise FormatError("invalid public card: the creation time is not YYYY-MM-DDTHH:MM:SSZ")
        if not isinstance(self.self_signature, bytes) or len(self.self_signature) != 64:
            raise FormatError("invalid public card: the self-signature is not 64 bytes")
        try:
            Ed25519PublicKey.from_public_bytes(self.signing_key).verify(self.self_signature,
                                                                        self._self_signed_bytes())
        except (InvalidSignature, ValueError) as exc:
            raise VerificationError("the public card was altered: its self-signature is wrong") from exc

    def _self_signed_bytes(self) -> bytes:
        return _SELF_SIG_DOMAIN + canonical_json({
            "name": self.name, "signing_key": self.signing_key.hex(),
            "age_recipient": self.age_recipient, "created": self.created,
        })

    def _digest(self) -> bytes:
        return hashlib.sha256(_KEY_ID_DOMAIN + self.signing_key + self.age_recipient.encode("ascii")).digest()

    @property
    def key_id(self) -> str:
        """SHA-256 hex over both public keys (domain-separated): the id envelopes bind to."""
        return self._digest().hex()

    @property
    def fingerprint(self) -> str:
        """First 80 bits of the key id in Crockford base32, grouped ``XXXX-XXXX-XXXX-XXXX``."""
        s = _crockford(self._digest()[:10], 16)
        return "-".join(s[i:i + 4] for i in range(0, 16, 4))

    def to_dict(self) -> dict[str, str]:
        return {
            "format": CARD_FORMAT,
            "name": self.name,
            "signing_key": self.signing_key.hex(),
            "age_recipient": self.age_recipient,
            "created": self.created,
            "self_signature": self.self_signature.hex(),
            "fingerprint": self.fingerprint,
        }

    @classmethod
    def from_dict(cls, d: Any) -> PublicCard:
        """Parse a card dict; FormatError if malformed, VerificationError if altered."""
        if not isinstance(d, dict):
            raise FormatError("invalid public card: not a JSON object")
        if d.get("format") != CARD_FORMAT:
            fmt = d.get("format")
            if isinstance(fmt, str) and fmt.startswith("dcstudio/card/"):
                raise FormatError(f"unsupported public card format version {fmt!r}; this program reads "
                                  f"{CARD_FORMAT}")
            raise FormatError("not a DC Studio public card")
        if set(d) != _CARD_KEYS:
            extra = sorted(set(d) - _CARD_KEYS)
            missing = sorted(_CARD_KEYS - set(d))
            raise FormatError(f"invalid public card: unexpected fields {extra} / missing fields {missing}")
        if not is_hex(d["signing_key"], 32):
            raise FormatError("invalid public card: the signing key is not 64 lowercase hex digits")
        if not is_hex(d["self_signature"], 64):
            raise FormatError("invalid public card: the self-signature is not 128 lowercase hex digits")
        card = cls(name=d["name"], signing_key=bytes.fromhex(d["signing_key"]),
                   age_recipient=d["age_recipient"], created=d["created"],
                   self_signature=bytes.fromhex(d["self_signature"]))
        if d["fingerprint"] != card.fingerprint:
            raise VerificationError("the public card was altered: its fingerprint does not match its keys")
        return card

    def save(self, path: str | Path) -> None:
        """Write the card as indented JSON (atomic, world-readable)."""
        text = json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        with atomic_writer(path, "w") as fh:
            with contextlib.suppress(AttributeError, OSError):
                os.fchmod(fh.fileno(), 0o644)
            fh.write(text)

    @classmethod
    def load(cls, path: str | Path) -> PublicCard:
        d = read_json_capped(path, _CARD_FILE_CAP)
        try:
            return cls.from_dict(d)
        except DCError as exc:
            raise with_path(exc, path) from exc

    def verify(self, message: bytes, signature: bytes) -> None:
        """Raise VerificationError unless ``signature`` is this card's Ed25519 signature of ``message``."""
        try:
            if len(signature) != 64:
                raise InvalidSignature
            Ed25519PublicKey.from_public_bytes(self.signing_key).verify(bytes(signature), message)
        except InvalidSignature as exc:
            raise VerificationError(f"the signature does not match the key of {self.name!r} "
                                    f"({self.fingerprint})") from exc

    def recipient(self) -> pyrage.x25519.Recipient:
        """This card's encryption key as a pyrage recipient."""
        return pyrage.x25519.Recipient.from_str(self.age_recipient)


# ---------------------------------------------------------------------------------------------- identity

_FINGERPRINT_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$")


def is_fingerprint(value: object) -> bool:
    """``XXXX-XXXX-XXXX-XXXX`` in Crockford base32 (upper case), as :attr:`PublicCard.fingerprint` writes it."""
    return isinstance(value, str) and bool(_FINGERPRINT_RE.match(value))


def read_fingerprint(text: object) -> str | None:
    """A fingerprint as a person types it or a barcode scanner enters it — any case, spaces or dashes anywhere,
    Crockford's look-alikes (O→0, I/L→1) — in the canonical ``XXXX-XXXX-XXXX-XXXX`` form; None if it is not one."""
    if not isinstance(text, str) or len(text) > 200:
        return None
    chars = re.sub(r"[\s\-]", "", text).upper().translate(str.maketrans("OIL", "011"))
    if len(chars) != 16:
        return None
    value = "-".join(chars[i:i + 4] for i in range(0, 16, 4))
    return value if is_fingerprint(value) else None


MIN_PASSPHRASE_CHARS = 8


def check_new_passphrase(passphrase: str) -> None:
    """The one policy for a new identity's passphrase (terminal prompt, DCSTUDIO_PASSPHRASE and the app):
    at least 8 characters after NFC normalisation, not only spaces."""
    text = unicodedata.normalize("NFC", passphrase) if isinstance(passphrase, str) else ""
    if len(text) < MIN_PASSPHRASE_CHARS or not text.strip():
        raise ConfigError(f"choose a passphrase of at least {MIN_PASSPHRASE_CHARS} characters")


def passphrase_score(passphrase: str) -> int:
    """0–4, the one strength rating both roles' pages show (a nudge, not a gate; no dictionary).

    bits = length × log2(alphabet: 26 lower, 26 upper, 10 digits, 33 other, as present) × min(1, distinct
    characters / max(4, length / 2)); 0 below the minimum length, then 1 / 2 / 3 / 4 from 45 / 65 / 90 bits."""
    text = unicodedata.normalize("NFC", passphrase) if isinstance(passphrase, str) else ""
    if len(text) < MIN_PASSPHRASE_CHARS or not text.strip():
        return 0
    pool = sum(n for test, n in ((str.islower, 26), (str.isupper, 26), (str.isdigit, 10)) if any(map(test, text)))
    pool += 33 if any(not c.isalnum() for c in text) else 0
    bits = len(text) * math.log2(max(pool, 2)) * min(1.0, len(set(text)) / max(4, len(text) / 2))
    return 1 + sum(bits >= b for b in (45, 65, 90))


def passphrase_ok(passphrase: str) -> bool:
    try:
        check_new_passphrase(passphrase)
    except ConfigError:
        return False
    return True


def _normalize_passphrase(passphrase: str) -> bytes:
    return unicodedata.normalize("NFC", passphrase).encode("utf-8")


def _scrypt_key(passphrase: str, salt: bytes, log_n: int) -> bytes:
    return Scrypt(salt=_SCRYPT_DOMAIN + salt, length=32, n=1 << log_n, r=8, p=1).derive(
        _normalize_passphrase(passphrase))


class Identity:
    """A party's private keys: Ed25519 for signing, X25519 (an age identity) for decryption."""

    def __init__(self, card: PublicCard, signing_key: Ed25519PrivateKey, age_secret_key: str):
        """Internal: use :meth:`generate` or :meth:`load`. Checks that the keys match the card."""
        if signing_key.public_key().public_bytes_raw() != card.signing_key:
            raise VerificationError("the identity's signing key does not match its public card")
        if str(pyrage.x25519.Identity.from_str(age_secret_key).to_public()) != card.age_recipient:
            raise VerificationError("the identity's encryption key does not match its public card")
        self._card = card
        self._signing = signing_key
        self._age_secret = age_secret_key

    def __repr__(self) -> str:
        return f"Identity({self._card.name!r}, {self._card.fingerprint})"

    @classmethod
    def generate(cls, name: str) -> Identity:
        """Fresh, independent Ed25519 and X25519 keys for ``name``."""
        why = check_name(name)
        if why is not None:
            raise ConfigError(f"cannot create an identity: {why}")
        signing = Ed25519PrivateKey.generate()
        age_id = pyrage.x25519.Identity.generate()
        pub = signing.public_key().public_bytes_raw()
        recipient = str(age_id.to_public())
        created = utc_now()
        message = _SELF_SIG_DOMAIN + canonical_json({
            "name": name, "signing_key": pub.hex(), "age_recipient": recipient, "created": created,
        })
        card = PublicCard(name=name, signing_key=pub, age_recipient=recipient, created=created,
                          self_signature=signing.sign(message))
        return cls(card, signing, str(age_id))

    @property
    def card(self) -> PublicCard:
        return self._card

    @property
    def name(self) -> str:
        return self._card.name

    def sign(self, message: bytes) -> bytes:
        """Ed25519 signature (64 bytes) of ``message``."""
        return self._signing.sign(message)

    def age_identity(self) -> pyrage.x25519.Identity:
        return pyrage.x25519.Identity.from_str(self._age_secret)

    def age_secret_key(self) -> str:
        """The ``AGE-SECRET-KEY-1…`` string, for the stock ``age`` tool."""
        return self._age_secret

    # -- files -------------------------------------------------------------------------------------

    def save(self, path: str | Path, passphrase: str, log_n: int = SCRYPT_LOG_N_DEFAULT) -> None:
        """Write a ``.dcid`` file: the card in clear, the private keys sealed under the passphrase."""
        if not isinstance(passphrase, str) or not passphrase:
            raise ConfigError("the passphrase must not be empty")
        if isinstance(log_n, bool) or not isinstance(log_n, int) or not (
                SCRYPT_LOG_N_MIN <= log_n <= SCRYPT_LOG_N_MAX):
            raise ConfigError(f"the scrypt work factor log_n must be between {SCRYPT_LOG_N_MIN} and "
                              f"{SCRYPT_LOG_N_MAX}")
        salt = secrets.token_bytes(16)
        nonce = secrets.token_bytes(12)
        public = {
            "card": self._card.to_dict(),
            "kdf": {"name": "scrypt", "log_n": log_n, "r": 8, "p": 1, "salt": salt.hex()},
            "cipher": {"name": "chacha20-poly1305", "nonce": nonce.hex()},
        }
        plaintext = canonical_json({
            "ed25519_seed": self._signing.private_bytes_raw().hex(),
            "age_secret_key": self._age_secret,
        })
        sealed = ChaCha20Poly1305(_scrypt_key(passphrase, salt, log_n)).encrypt(
            nonce, plaintext, _AAD_DOMAIN + canonical_json(public))
        doc = {"format": IDENTITY_FORMAT, **public, "secrets": _b64encode(sealed)}
        text = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        with atomic_writer(path, "w") as fh:
            with contextlib.suppress(AttributeError, OSError):
                os.fchmod(fh.fileno(), 0o600)
            fh.write(text)

    @classmethod
    def load(cls, path: str | Path, passphrase: str) -> Identity:
        """Read a ``.dcid`` file; VerificationError on a wrong passphrase or altered file."""
        doc = read_json_capped(path, _IDENTITY_FILE_CAP)
        try:
            return cls._from_doc(doc, passphrase)
        except DCError as exc:
            raise with_path(exc, path) from exc

    @staticmethod
    def load_card(path: str | Path) -> PublicCard:
        """The public card stored in clear in a ``.dcid`` file (no passphrase needed).

        Not authenticated until the file is opened with its passphrase; use it for display only.
        """
        doc = read_json_capped(path, _IDENTITY_FILE_CAP)
        try:
            if not isinstance(doc, dict) or doc.get("format") != IDENTITY_FORMAT:
                raise FormatError("not a DC Studio identity file (or an unsupported version of one)")
            return PublicCard.from_dict(doc.get("card"))
        except DCError as exc:
            raise with_path(exc, path) from exc

    @classmethod
    def _from_doc(cls, doc: Any, passphrase: str) -> Identity:
        if not isinstance(doc, dict):
            raise FormatError("not a DC Studio identity file")
        fmt = doc.get("format")
        if fmt != IDENTITY_FORMAT:
            if isinstance(fmt, str) and fmt.startswith("dcstudio/identity/"):
                raise FormatError(f"unsupported identity file format version {fmt!r}; this program reads "
                                  f"{IDENTITY_FORMAT}")
            raise FormatError("not a DC Studio identity file")
        if set(doc) != {"format", "card", "kdf", "cipher", "secrets"}:
            raise FormatError("invalid identity file: unexpected or missing fields")
        kdf, cipher = doc["kdf"], doc["cipher"]
        if not isinstance(kdf, dict) or set(kdf) != {"name", "log_n", "r", "p", "salt"} \
                or kdf["name"] != "scrypt" or kdf["r"] != 8 or kdf["p"] != 1 or not is_hex(kdf["salt"], 16):
            raise FormatError("invalid identity file: the key-derivation settings are malformed")
        log_n = kdf["log_n"]
        if isinstance(log_n, bool) or not isinstance(log_n, int):
            raise FormatError("invalid identity file: the scrypt work factor is not an integer")
        if not SCRYPT_LOG_N_MIN <= log_n <= SCRYPT_LOG_N_MAX:
            raise FormatError(f"the identity file asks for scrypt work factor 2^{log_n}, outside the "
                              f"accepted range 2^{SCRYPT_LOG_N_MIN}..2^{SCRYPT_LOG_N_MAX}")
        if not isinstance(cipher, dict) or set(cipher) != {"name", "nonce"} \
                or cipher["name"] != "chacha20-poly1305" or not is_hex(cipher["nonce"], 12):
            raise FormatError("invalid identity file: the cipher settings are malformed")
        sealed = _b64decode_strict(doc["secrets"])
        if sealed is None or len(sealed) < 16 or len(sealed) > 4096:
            raise FormatError("invalid identity file: the sealed secrets are not canonical base64")
        card = PublicCard.from_dict(doc["card"])
        public = {"card": doc["card"], "kdf": kdf, "cipher": cipher}
        salt = bytes.fromhex(kdf["salt"])
        key = _scrypt_key(passphrase if isinstance(passphrase, str) else "", salt, log_n)
        try:
            plaintext = ChaCha20Poly1305(key).decrypt(bytes.fromhex(cipher["nonce"]), sealed,
                                                      _AAD_DOMAIN + canonical_json(public))
        except InvalidTag as exc:
            raise VerificationError("wrong passphrase for this identity file") from exc
        try:
            inner = json.loads(plaintext.decode("utf-8"))
            seed = inner["ed25519_seed"]
            age_secret = inner["age_secret_key"]
            if set(inner) != {"ed25519_seed", "age_secret_key"} or not is_hex(seed, 32) \
                    or not isinstance(age_secret, str) or not _AGE_SECRET_RE.match(age_secret):
                raise ValueError
            signing = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(seed))
            pyrage.x25519.Identity.from_str(age_secret)
        except Exception as exc:
            raise FormatError("invalid identity file: the decrypted secrets are malformed") from exc
        return cls(card, signing, age_secret)

    def export_age_identity(self, path: str | Path) -> None:
        """Write the X25519 secret as a stock age identity file (``age -d -i PATH``), mode 0600."""
        text = (f"# created: {self._card.created}\n"
                f"# public key: {self._card.age_recipient}\n"
                f"# DC Studio identity: {self._card.name} ({self._card.fingerprint})\n"
                f"{self._age_secret}\n")
        with atomic_writer(path, "w") as fh:
            with contextlib.suppress(AttributeError, OSError):
                os.fchmod(fh.fileno(), 0o600)
            fh.write(text)
