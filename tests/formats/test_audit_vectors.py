"""The committed audit-log vectors (FORMAT §5, made by docs/tools/make_audit_vectors.py): re-derived here from
the spec with hashlib and the raw Ed25519 key, and accepted by the product's reader."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from core.errors import VerificationError
from core.formats.audit import AuditLog
from core.formats.identity import Identity
from core.formats.workspace import open_workspace

VECTORS = Path(__file__).parent / "vectors"


def canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def test_vector_log_follows_the_spec():
    raw = (VECTORS / "audit.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    lines = raw[:-1].split(b"\n")
    entries = [json.loads(line) for line in lines]
    assert [canonical(e) for e in entries] == lines
    owner = entries[0]["owner"]
    site = Identity.load_card(VECTORS / "site.dcid")
    assert entries[0]["event"] == "audit-start" and owner["signing_key"] == site.signing_key.hex()
    key = Ed25519PublicKey.from_public_bytes(bytes.fromhex(owner["signing_key"]))
    prev = "0" * 64
    for n, (line, entry) in enumerate(zip(lines, entries, strict=True), start=1):
        assert entry["seq"] == n and entry["prev"] == prev
        body = {k: v for k, v in entry.items() if k != "sig"}
        key.verify(bytes.fromhex(entry["sig"]), b"dcstudio/audit/v1 entry\0" + canonical(body))
        prev = hashlib.sha256(line).hexdigest()
    head = json.loads((VECTORS / "audit.head").read_text())
    assert head["format"] == "dcstudio/audit-head/v2" and head["seq"] == len(lines) and head["head"] == prev
    assert head["signing_key"] == owner["signing_key"] and head["size"] == len(raw)
    assert (head["workspace"], head["log"]) == (entries[0]["workspace"], entries[0]["log"])
    body = {k: head[k] for k in ("format", "workspace", "log", "seq", "head", "size", "signing_key")}
    key.verify(bytes.fromhex(head["sig"]), b"dcstudio/audit/v1 head\0" + canonical(body))
    # the workspace's id file (FORMAT §10.1), signed by the same key, names the workspace line 1 names
    ws = json.loads((VECTORS / "workspace.json").read_text())
    assert set(ws) == {"format", "kind", "where", "body", "signing_key", "sig"}
    assert (ws["format"], ws["kind"], ws["where"]) == ("dcstudio/signed-state/v1", "workspace", "workspace.json")
    assert ws["body"]["id"] == entries[0]["workspace"] and ws["signing_key"] == owner["signing_key"]
    signed = {k: v for k, v in ws.items() if k != "sig"}
    key.verify(bytes.fromhex(ws["sig"]), b"dcstudio/signed-state/v1\0" + canonical(signed))


def test_vector_log_is_accepted_and_its_edits_refused(tmp_path):
    state = AuditLog(VECTORS / "audit.jsonl").check()
    assert state.entries == 3 and not state.legacy and state.bound and state.head_file == "matches"
    for name in ("audit.jsonl", "audit.head", "workspace.json"):  # as a workspace: bound to its id file
        (tmp_path / "ws" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "ws" / name).write_bytes((VECTORS / name).read_bytes())
    assert open_workspace(tmp_path / "ws").audit.check().workspace == state.workspace
    assert state.owner.fingerprint == Identity.load_card(VECTORS / "site.dcid").fingerprint
    lines = (VECTORS / "audit.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "audit.head").write_bytes((VECTORS / "audit.head").read_bytes())
    (tmp_path / "audit.jsonl").write_bytes(b"".join(lines[:2]))
    with pytest.raises(VerificationError, match="lines were cut"):
        AuditLog(tmp_path / "audit.jsonl").check()
    (tmp_path / "audit.jsonl").write_bytes(b"".join(lines).replace(b'"rows":12', b'"rows":13'))
    with pytest.raises(VerificationError, match="line 3 has a wrong signature"):
        AuditLog(tmp_path / "audit.jsonl").check()
