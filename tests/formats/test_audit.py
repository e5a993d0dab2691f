"""The hash-chained audit log: appends, verification, and every kind of edit it must notice."""

from __future__ import annotations

import hashlib
import json

import pytest

from core.errors import ConfigError, VerificationError
from core.formats.audit import GENESIS, AuditLog


def filled(tmp_path, n: int = 5) -> AuditLog:
    log = AuditLog(tmp_path / "ws" / "audit.jsonl")
    for i in range(n):
        log.append("import", file=f"site{i}.dcbundle", digest=f"{i:064x}", rows=i * 10)
    return log


def lines(log: AuditLog) -> list[bytes]:
    return log.path.read_bytes().splitlines(keepends=True)


def test_append_and_chain(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    assert log.verify() == 0 and log.entries() == [] and log.head() == GENESIS
    first = log.append("export", project="p1", file="a.dcbundle")
    assert first["seq"] == 1 and first["prev"] == GENESIS and first["event"] == "export"
    assert first["project"] == "p1" and first["time"].endswith("Z")
    second = log.append("import", n=2)
    raw = lines(log)
    assert second["prev"] == hashlib.sha256(raw[0].rstrip(b"\n")).hexdigest()
    assert log.entries() == [first, second]
    assert log.verify() == 2
    assert log.head() == hashlib.sha256(raw[1].rstrip(b"\n")).hexdigest()


def test_chain_continues_across_instances(tmp_path):
    log = filled(tmp_path, 3)
    again = AuditLog(log.path)
    entry = again.append("apply")
    assert entry["seq"] == 4
    assert again.verify() == 4


def test_long_lines_are_chained(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    log.append("big", blob="x" * 200_000)
    log.append("big", blob="y" * 70_000)
    assert log.append("small")["seq"] == 3
    assert log.verify() == 3


def test_edited_line_is_detected(tmp_path):
    log = filled(tmp_path)
    raw = lines(log)
    entry = json.loads(raw[1])
    entry["file"] = "forged.dcbundle"
    raw[1] = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    log.path.write_bytes(b"".join(raw))
    with pytest.raises(VerificationError, match="line 3") as err:
        log.verify()
    assert err.value.path == log.path


def test_reformatted_line_is_detected(tmp_path):
    log = filled(tmp_path)
    raw = lines(log)
    raw[2] = json.dumps(json.loads(raw[2]), indent=None).encode() + b"\n"  # same data, other spacing
    log.path.write_bytes(b"".join(raw))
    with pytest.raises(VerificationError, match="line 3"):
        log.verify()


def test_reordered_lines_are_detected(tmp_path):
    log = filled(tmp_path)
    raw = lines(log)
    raw[1], raw[2] = raw[2], raw[1]
    log.path.write_bytes(b"".join(raw))
    with pytest.raises(VerificationError, match="line 2"):
        log.verify()


def test_removed_middle_line_is_detected(tmp_path):
    log = filled(tmp_path)
    raw = lines(log)
    del raw[2]
    log.path.write_bytes(b"".join(raw))
    with pytest.raises(VerificationError, match="line 3"):
        log.verify()


def test_removed_first_line_is_detected(tmp_path):
    log = filled(tmp_path)
    log.path.write_bytes(b"".join(lines(log)[1:]))
    with pytest.raises(VerificationError, match="line 1"):
        log.verify()


def test_cut_at_the_end_changes_the_head(tmp_path):
    """Dropping the last lines leaves a valid chain; the head (kept elsewhere) is what shows it."""
    log = filled(tmp_path)
    head = log.head()
    log.path.write_bytes(b"".join(lines(log)[:-1]))
    assert log.verify() == 4
    assert log.head() != head


def test_garbage_and_torn_lines(tmp_path):
    log = filled(tmp_path, 2)
    log.path.write_bytes(log.path.read_bytes() + b'{"seq":3')
    with pytest.raises(VerificationError, match="incomplete"):
        log.verify()
    with pytest.raises(VerificationError, match="incomplete"):
        log.append("more")
    log.path.write_bytes(b"".join(lines(log)[:2]) + b"not json\n")
    with pytest.raises(VerificationError, match="line 3"):
        log.verify()
    with pytest.raises(VerificationError):
        log.append("more")


def test_bad_fields_are_refused(tmp_path):
    log = AuditLog(tmp_path / "audit.jsonl")
    with pytest.raises(ConfigError):
        log.append("x", seq=5)
    with pytest.raises(ConfigError):
        log.append("x", prev="0" * 64)
    with pytest.raises(ConfigError):
        log.append("")
    with pytest.raises(ConfigError):
        log.append("x", value=float("nan"))
    with pytest.raises(ConfigError):
        log.append("x", value=object())
    assert log.verify() == 0
