"""Files a workspace keeps and trusts later, signed by the workspace's owner (FORMAT §10.1).

A signed state file is the JSON object ``{"format": STATE_FORMAT, "kind": K, "where": P, "body": B,
"signing_key": hex(32), "sig": hex(64)}``: ``P`` is the file's path inside its workspace (POSIX, e.g.
``projects/<id>/analyst.json``) and ``sig`` = Ed25519(owner, ``STATE_DOMAIN`` ‖ canonical JSON of the object
without ``sig``). A body therefore cannot be edited, re-pointed to another key, or moved to another file or
project without the owner's private key. Append-only files (the analyst's bundle registry) sign each line
instead: ``{"entry": B, "sig": hex(64)}`` with ``sig`` = Ed25519(owner, ``LINE_DOMAIN`` ‖ P ‖ ``\\0`` ‖ canonical
JSON of B).

A file of the same name written by an earlier version (plain JSON, no ``format``) is :class:`UnsignedState`:
never trusted silently; the caller names the remedy (confirm a fingerprint again, or sign the earlier
version's files with ``dcstudio audit new``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import FormatError, VerificationError
from ..fileio import canonical_json, loads_checked, read_bytes_capped, write_json_atomic
from .identity import Identity, PublicCard, is_hex

STATE_FORMAT = "dcstudio/signed-state/v1"
STATE_DOMAIN = b"dcstudio/signed-state/v1\0"
LINE_DOMAIN = b"dcstudio/signed-line/v1\0"
_MEMBERS = frozenset({"format", "kind", "where", "body", "signing_key", "sig"})
STATE_CAP = 64 << 20


class UnsignedState(VerificationError):
    """A state file in the form an earlier version wrote: plain JSON, not signed by anyone."""


def sign_state(owner: Identity, kind: str, where: str, body: Any) -> dict[str, Any]:
    """The signed object of ``body`` (``kind`` names what it is, ``where`` its path in the workspace)."""
    doc = {"format": STATE_FORMAT, "kind": kind, "where": where, "body": body,
           "signing_key": owner.card.signing_key.hex()}
    return {**doc, "sig": owner.sign(STATE_DOMAIN + canonical_json(doc)).hex()}


def write_state(path: str | Path, owner: Identity, kind: str, where: str, body: Any) -> None:
    """Write ``body`` signed, atomically, mode 0600."""
    write_json_atomic(path, sign_state(owner, kind, where, body), private=True)


def is_signed(doc: Any) -> bool:
    """Whether a parsed JSON value is in the signed form (not yet whether its signature holds)."""
    return isinstance(doc, dict) and doc.get("format") == STATE_FORMAT


def check_state(doc: Any, kind: str, where: str, owner: PublicCard, what: str, remedy: str,
                path: str | Path | None = None) -> Any:
    """The body of a parsed signed state object, after checking that it is ``kind`` at ``where`` and signed by
    ``owner``. UnsignedState (an earlier version's plain file) or VerificationError: one sentence naming
    ``what`` and ending with ``remedy``."""
    if not is_signed(doc):
        raise UnsignedState(f"{what} was written by an earlier version of DC Studio and is not signed, so it is not "
                            f"trusted; {remedy}", path=path)
    ok = (set(doc) == _MEMBERS and doc["kind"] == kind and isinstance(doc["where"], str)
          and is_hex(doc["signing_key"], 32) and is_hex(doc["sig"], 64))
    if not ok:
        raise VerificationError(f"{what} is not a valid signed file: it was edited; {remedy}", path=path)
    if doc["where"] != where:
        raise VerificationError(f"{what} was signed for {doc['where']!r}, not for this place: it was copied or "
                                f"moved; {remedy}", path=path)
    if doc["signing_key"] != owner.signing_key.hex():
        raise VerificationError(f"{what} is not signed by this workspace's owner {owner.name!r} "
                                f"({owner.fingerprint}): it was replaced; {remedy}", path=path)
    body = {k: doc[k] for k in ("format", "kind", "where", "body", "signing_key")}
    try:
        owner.verify(STATE_DOMAIN + canonical_json(body), bytes.fromhex(doc["sig"]))
    except VerificationError as exc:
        raise VerificationError(f"{what} has a wrong signature: it was edited; {remedy}", path=path) from exc
    return doc["body"]


def read_state(path: str | Path, kind: str, where: str, owner: PublicCard, what: str, remedy: str,
               cap: int = STATE_CAP) -> Any:
    """:func:`check_state` of the file at ``path`` (FormatError if it is not JSON)."""
    doc = loads_checked(read_bytes_capped(path, cap), path=path)
    return check_state(doc, kind, where, owner, what, remedy, path)


def read_plain(path: str | Path, cap: int = STATE_CAP) -> Any:
    """The file's JSON as it stands, signed or not (for describing it; never for a trust decision)."""
    try:
        return loads_checked(read_bytes_capped(path, cap), path=path)
    except FormatError:
        return None


def sign_line(owner: Identity, where: str, entry: dict[str, Any]) -> bytes:
    """One line (without its newline) of a signed JSON-lines file at ``where``."""
    sig = owner.sign(LINE_DOMAIN + where.encode() + b"\0" + canonical_json(entry)).hex()
    return canonical_json({"entry": entry, "sig": sig})


def check_line(line: bytes, where: str, owner: PublicCard, what: str, remedy: str,
               path: str | Path | None = None) -> dict[str, Any]:
    """The entry of one line written by :func:`sign_line`; VerificationError naming ``what`` otherwise."""
    try:
        doc = loads_checked(line, path=path)
    except FormatError:
        doc = None
    if not (isinstance(doc, dict) and set(doc) == {"entry", "sig"} and isinstance(doc["entry"], dict)
            and is_hex(doc["sig"], 64)):
        raise VerificationError(f"{what} is not a valid signed line: it was edited; {remedy}", path=path)
    try:
        owner.verify(LINE_DOMAIN + where.encode() + b"\0" + canonical_json(doc["entry"]), bytes.fromhex(doc["sig"]))
    except VerificationError as exc:
        raise VerificationError(f"{what} is not signed by this workspace's owner {owner.name!r} "
                                f"({owner.fingerprint}): it was edited or forged; {remedy}", path=path) from exc
    return doc["entry"]
