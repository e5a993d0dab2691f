"""The signed, hash-chained audit log (FORMAT §5): appends, the head file, every kind of edit it must notice,
starting a new log explicitly, and logs written by the earlier (unsigned) version."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from core.errors import ConfigError, VerificationError
from core.fileio import canonical_json
from core.formats.audit import ENTRY_DOMAIN, GENESIS, START_EVENT, AuditLog
from core.formats.identity import Identity
from tests.support.audit import write_head_for


@pytest.fixture(scope="module")
def owner() -> Identity:
    return Identity.generate("Ward 7 data manager")


@pytest.fixture(scope="module")
def insider() -> Identity:
    """Someone with write access to the folder and a valid key of their own, but not the owner's."""
    return Identity.generate("Insider")


def filled(tmp_path, owner, n: int = 5) -> AuditLog:
    log = AuditLog(tmp_path / "ws" / "audit.jsonl", owner)
    for i in range(n):
        log.append("import", file=f"site{i}.dcbundle", digest=f"{i:064x}", rows=i * 10)
    return log


def lines(log: AuditLog) -> list[bytes]:
    return log.path.read_bytes().splitlines(keepends=True)


def resign(entry: dict, signer: Identity) -> bytes:
    body = {k: v for k, v in entry.items() if k != "sig"}
    sig = signer.sign(ENTRY_DOMAIN + canonical_json(body)).hex()
    return canonical_json({**body, "sig": sig}) + b"\n"


def rebuild(raw: list[bytes], signer: Identity) -> list[bytes]:
    """Re-chain (and re-sign with ``signer``) every line: what an editor does to hide a change."""
    out, prev = [], GENESIS
    for n, line in enumerate(raw, start=1):
        entry = {**json.loads(line), "seq": n, "prev": prev}
        out.append(resign(entry, signer))
        prev = hashlib.sha256(out[-1].rstrip(b"\n")).hexdigest()
    return out


def write_head(path, signer: Identity, seq: int | None = None) -> None:
    """A head file signed by ``signer`` for the log at ``path`` as it now stands (through line ``seq``)."""
    write_head_for(path, signer, seq)


def test_append_signs_chains_and_keeps_the_head_outside(tmp_path, owner):
    log = AuditLog(tmp_path / "audit.jsonl", owner)
    assert log.verify() == 0 and log.entries() == [] and log.head() == GENESIS
    first = log.append("export", project="p1", file="a.dcbundle")
    start, entry = log.entries()
    assert start["event"] == START_EVENT and start["seq"] == 1 and start["prev"] == GENESIS
    assert start["owner"]["fingerprint"] == owner.card.fingerprint and start["reason"] == "new workspace"
    assert entry == first and first["seq"] == 2 and first["project"] == "p1" and first["time"].endswith("Z")
    raw = lines(log)
    assert first["prev"] == hashlib.sha256(raw[0].rstrip(b"\n")).hexdigest()
    body = {k: v for k, v in first.items() if k != "sig"}
    owner.card.verify(ENTRY_DOMAIN + canonical_json(body), bytes.fromhex(first["sig"]))
    state = log.check()
    assert (state.entries, state.owner.key_id, state.legacy, state.head_file) == (2, owner.card.key_id, False,
                                                                                  "matches")
    head = json.loads(log.head_path.read_text())
    assert head["seq"] == 2 and head["head"] == log.head() == hashlib.sha256(raw[1].rstrip(b"\n")).hexdigest()
    assert oct(log.path.stat().st_mode & 0o777) == "0o600" and oct(log.head_path.stat().st_mode & 0o777) == "0o600"


def test_chain_continues_across_instances(tmp_path, owner):
    log = filled(tmp_path, owner, 3)
    again = AuditLog(log.path, owner)
    assert again.append("apply")["seq"] == 5
    assert AuditLog(log.path).verify() == 5  # reading needs no key


def test_long_lines_are_chained(tmp_path, owner):
    log = AuditLog(tmp_path / "audit.jsonl", owner)
    log.append("big", blob="x" * 200_000)
    log.append("big", blob="y" * 70_000)
    assert log.append("small")["seq"] == 4
    assert log.verify() == 4


def test_edited_last_line_is_refused_by_verify_and_by_the_next_append(tmp_path, owner):
    log = filled(tmp_path, owner)
    raw = lines(log)
    entry = json.loads(raw[-1])
    entry["file"] = "forged.dcbundle"
    raw[-1] = canonical_json(entry) + b"\n"  # canonical, chained, but its signature no longer matches
    log.path.write_bytes(b"".join(raw))
    with pytest.raises(VerificationError, match="line 6 has a wrong signature") as err:
        log.verify()
    assert err.value.path == log.path and "dcstudio audit new" in str(err.value)
    with pytest.raises(VerificationError, match="line 6 has a wrong signature"):
        log.append("more")
    assert lines(log) == raw  # nothing chained onto the edit


def test_last_line_resigned_by_another_key_is_refused(tmp_path, owner, insider):
    log = filled(tmp_path, owner)
    raw = lines(log)
    raw[-1] = resign({**json.loads(raw[-1]), "file": "forged.dcbundle"}, insider)
    log.path.write_bytes(b"".join(raw))
    with pytest.raises(VerificationError, match="line 6 has a wrong signature"):
        log.verify()


@pytest.mark.parametrize("k", [1, 2, 5])
def test_lines_cut_from_the_end_are_refused(tmp_path, owner, k):
    log = filled(tmp_path, owner)
    log.path.write_bytes(b"".join(lines(log)[:-k]))
    with pytest.raises(VerificationError, match=f"has {6 - k} entries but its head file records 6: lines were cut"):
        log.verify()
    with pytest.raises(VerificationError, match="lines were cut"):
        log.append("more")


def test_chain_rebuilt_after_a_deletion_is_refused(tmp_path, owner, insider):
    log = filled(tmp_path, owner)
    raw = lines(log)
    del raw[2]
    log.path.write_bytes(b"".join(rebuild(raw, insider)))
    with pytest.raises(VerificationError, match="line 1 has a wrong signature"):
        log.verify()


def test_log_rebuilt_under_another_owner_is_refused_by_the_owner(tmp_path, owner, insider):
    """A whole new log and head file under the insider's own key verifies as the insider's, so the owner's
    next command refuses it, naming both keys."""
    log = filled(tmp_path, owner)
    raw = lines(log)
    del raw[3]
    first = json.loads(raw[0])
    raw[0] = canonical_json({**first, "owner": insider.card.to_dict()}) + b"\n"
    log.path.write_bytes(b"".join(rebuild(raw, insider)))
    fake = AuditLog(log.path, insider)
    write_head(log.path, insider)
    assert fake.check().owner.key_id == insider.card.key_id
    with pytest.raises(VerificationError) as err:
        AuditLog(log.path).bind(owner)
    assert insider.card.fingerprint in str(err.value) and owner.card.fingerprint in str(err.value)


def test_deleted_log_is_refused_while_its_head_or_the_workspace_remains(tmp_path, owner):
    log = filled(tmp_path, owner)
    log.path.unlink()
    with pytest.raises(VerificationError, match="missing or empty, but its head file"):
        AuditLog(log.path, owner).append("more")
    log.head_path.unlink()
    with_history = AuditLog(log.path, owner, has_history=lambda: True)
    with pytest.raises(VerificationError, match="missing, but this workspace holds projects"):
        with_history.bind(owner)
    assert not log.path.exists()


def test_head_file_edited_or_missing_is_refused(tmp_path, owner):
    log = filled(tmp_path, owner, 2)
    head = json.loads(log.head_path.read_text())
    log.head_path.write_text(json.dumps({**head, "seq": 2}))
    with pytest.raises(VerificationError, match="head file .* wrong signature"):
        log.verify()
    log.head_path.unlink()
    with pytest.raises(VerificationError, match="head file audit.head is missing"):
        log.verify()


def test_interrupted_head_write_is_tolerated_and_repaired(tmp_path, owner):
    """A kill between the fsynced line and the head file leaves the head one entry behind: accepted (the
    line is signed), and the next append writes the head again."""
    log = filled(tmp_path, owner, 2)
    old_head = log.head_path.read_bytes()
    log.append("more")
    log.head_path.write_bytes(old_head)
    assert log.check().head_file == "one behind"
    log.append("again")
    assert log.check().head_file == "matches"


def test_new_log_records_the_break_and_keeps_the_old_one(tmp_path, owner):
    log = filled(tmp_path, owner)
    known_head = json.loads(log.head_path.read_text())
    log.path.write_bytes(b"".join(lines(log)[:-2]))  # cut
    with pytest.raises(VerificationError):
        log.append("more")
    start = log.start_new(owner, "two lines were cut; restarted after checking the exports")
    assert start["seq"] == 1 and start["event"] == START_EVENT and start["reason"].startswith("two lines")
    prev = start["previous"]
    assert prev["head_file"]["head"] == known_head["head"] and prev["head_file"]["seq"] == 6
    assert prev["verified"] is False and "cut" in prev["problem"]
    assert (log.path.parent / prev["file"]).exists()
    assert log.append("export")["seq"] == 2
    assert log.verify() == 2
    with pytest.raises(ConfigError, match="reason"):
        log.start_new(owner, "  ")


def test_new_log_after_a_deletion(tmp_path, owner):
    log = filled(tmp_path, owner)
    log.path.unlink()
    start = log.start_new(owner, "audit.jsonl was deleted")
    assert "file" not in start["previous"] and start["previous"]["head_file"]["seq"] == 6
    assert log.verify() == 1


def test_earlier_unsigned_log_is_read_only_until_a_new_log_is_started(tmp_path, owner):
    path = tmp_path / "audit.jsonl"
    prev, raw = GENESIS, []
    for n in range(1, 4):  # what the previous version wrote: no owner, no signatures, no head file
        line = canonical_json({"seq": n, "time": "2024-01-01T00:00:00Z", "event": "export", "prev": prev})
        raw.append(line + b"\n")
        prev = hashlib.sha256(line).hexdigest()
    path.write_bytes(b"".join(raw))
    log = AuditLog(path, owner)
    state = log.check()
    assert state.legacy and state.entries == 3 and state.head == prev
    with pytest.raises(VerificationError, match="earlier version .* not signed"):
        log.append("more")
    with pytest.raises(VerificationError, match="earlier version"):
        log.bind(owner)
    start = log.start_new(owner, "upgraded DC Studio")
    assert start["previous"]["head"] == prev and start["previous"]["signed"] is False
    assert log.append("more")["seq"] == 2
    assert (tmp_path / start["previous"]["file"]).read_bytes() == b"".join(raw)
    log.head_path.write_bytes((tmp_path / "audit.head").read_bytes())
    path.write_bytes(b"".join(raw))  # a signed log rewritten as an unsigned one, its head file left in place
    with pytest.raises(VerificationError, match="no signatures but a head file"):
        AuditLog(path).verify()
    log.head_path.unlink()
    raw[1] = raw[1].replace(b"export", b"import")  # an edit inside an unsigned log still breaks its chain
    path.write_bytes(b"".join(raw))
    with pytest.raises(VerificationError, match="line 3"):
        AuditLog(path).verify()


def test_reordered_removed_and_torn_lines(tmp_path, owner):
    log = filled(tmp_path, owner)
    raw = lines(log)
    raw[1], raw[2] = raw[2], raw[1]
    log.path.write_bytes(b"".join(raw))
    with pytest.raises(VerificationError, match="line 2"):
        log.verify()
    log.path.write_bytes(b"".join(lines(log)[1:]))
    with pytest.raises(VerificationError, match="line 1"):
        log.verify()
    log = filled(tmp_path / "b", owner, 2)
    log.path.write_bytes(log.path.read_bytes() + b'{"seq":4')
    with pytest.raises(VerificationError, match="incomplete"):
        log.append("more")
    log.path.write_bytes(b"".join(lines(log)[:3]) + b"not json\n")
    with pytest.raises(VerificationError, match="line 4"):
        log.verify()


def test_bad_fields_are_refused(tmp_path, owner):
    log = AuditLog(tmp_path / "audit.jsonl", owner)
    for bad in ({"seq": 5}, {"prev": "0" * 64}, {"sig": "00"}, {"value": float("nan")}, {"value": object()}):
        with pytest.raises(ConfigError):
            log.append("x", **bad)
    for event in ("", START_EVENT):
        with pytest.raises(ConfigError):
            log.append(event)
    with pytest.raises(ConfigError, match="owner's identity"):
        AuditLog(tmp_path / "other.jsonl").append("x")
    assert log.verify() == 0 and not log.path.exists()
    assert not os.path.exists(log.head_path)


def test_first_head_write_interrupted(tmp_path, owner):
    """A kill between a new log's first line and its first head file: accepted while the workspace holds
    nothing else (and repaired), refused once it does (then a cut to one line would look the same)."""
    log = AuditLog(tmp_path / "audit.jsonl", owner)
    log.bind(owner)
    log.head_path.unlink()
    assert AuditLog(log.path, owner).bind(owner).head_file == "one behind"
    assert log.check().head_file == "matches"
    log.head_path.unlink()
    with pytest.raises(VerificationError, match="head file audit.head is missing"):
        AuditLog(log.path, owner, has_history=lambda: True).bind(owner)


def test_a_sealed_files_head_shows_a_rolled_back_log(tmp_path, owner):
    """Both files rolled back to an earlier state the owner signed verify; the head a sealed file carries
    (FORMAT §4.3 audit_head) does not fit them."""
    log = filled(tmp_path, owner, 2)
    saved = log.path.read_bytes(), log.head_path.read_bytes()
    head_at_seal = log.head()
    log.append("export", digest="cd" * 32)
    log.append("import", digest="ef" * 32)
    assert log.find_sealed(head_at_seal, "cd" * 32) == (3, 4)
    with pytest.raises(VerificationError, match="lines were cut"):
        log.find_sealed(log.head(), "cd" * 32)
    log.path.write_bytes(saved[0])
    log.head_path.write_bytes(saved[1])
    assert log.verify() == 3
    with pytest.raises(VerificationError, match="no line after line 3 .* records the file"):
        log.find_sealed(head_at_seal, "cd" * 32)
    with pytest.raises(VerificationError, match="not in the log: the log was rolled back"):
        log.find_sealed("ab" * 32, "cd" * 32)


def test_an_instance_that_verified_the_log_still_sees_a_later_edit(tmp_path, owner):
    """Checks after the first verify only the new lines while the verified bytes are unchanged; an edit to
    an earlier line (by another process) makes it verify everything again."""
    log = filled(tmp_path, owner, 4)
    assert log.verify() == 5
    raw = lines(log)
    raw[1] = raw[1].replace(b'"rows":0', b'"rows":9')
    log.path.write_bytes(b"".join(raw))
    with pytest.raises(VerificationError, match="line 2 has a wrong signature"):
        log.append("more")
