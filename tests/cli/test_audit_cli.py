"""The audit log through the CLI (FORMAT §5): a deleted, cut or edited log stops `analyst run` and
`participant apply` with one sentence naming `dcstudio audit new`, which then starts a new, signed log that
records the break."""

from __future__ import annotations

import json

import pytest

from core.fileio import canonical_json
from core.formats.audit import START_EVENT, AuditLog
from tests.support.audit import write_head_for
from tests.support.cli import confirm, export_dccfl_round, refused, run
from tests.support.roundkit import make_sites


@pytest.fixture(scope="module")
def round_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", "correct horse battery staple")
    d = tmp_path_factory.mktemp("auditround")
    sites = dict(list(make_sites(d / "data", rows=120).items())[:2])
    export_dccfl_round(d, sites, "Audit", "seed=3")
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, sites)) == 0
    yield d, sites
    mp.undo()


def _apply(d, name, test_csv, out):
    return ("participant", "apply", "--package", d / "out" / f"{name}.dcpkg", "--identity",
            d / name / f"{name}.dcid", "--csv", test_csv, "--out", out)


def _analyst_run(d, sites, out):
    return ("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
            "--bundles", d / "bundles", "--out", out, *confirm(d, sites))


def test_a_round_keeps_signed_logs(round_dir, capsys):
    d, _ = round_dir
    assert run("audit", "verify", d / "site0/site0.workspace") == 0
    out = capsys.readouterr().out
    assert "every entry signed by 'site0'" in out and "head file matches" in out
    first = AuditLog(d / "analyst/analyst.workspace/audit.jsonl").entries()[0]
    assert first["event"] == START_EVENT and first["owner"]["name"] == "analyst"


def test_verify_against_a_sealed_file_shows_a_rollback(round_dir, capsys):
    """The site's log rolled back by one entry (both files, as an older backup would be) still verifies on its
    own, but not against the bundle it sealed, whose signed header carries the head of its time."""
    from core.formats.identity import Identity

    d, _ = round_dir
    ws = d / "site0/site0.workspace"
    bundle = d / "bundles/site0.dcbundle"
    assert run("audit", "verify", ws, "--against", bundle) == 0
    assert "recorded in line" in capsys.readouterr().out
    kept = (ws / "audit.jsonl").read_bytes(), (ws / "audit.head").read_bytes()
    try:
        log = AuditLog(ws / "audit.jsonl", Identity.load(d / "site0/site0.dcid", "correct horse battery staple"))
        lines = kept[0].splitlines(keepends=True)
        assert json.loads(lines[-1])["event"] == "export"
        log.path.write_bytes(b"".join(lines[:-1]))
        write_head_for(log.path, log.owner)
        assert run("audit", "verify", ws) == 0
        capsys.readouterr()
        refused(capsys, "audit", "verify", ws, "--against", bundle, expect="lines were cut")
        refused(capsys, "audit", "verify", d / "analyst/analyst.workspace", "--against", bundle,
                expect="not by this log's owner")
    finally:
        (ws / "audit.jsonl").write_bytes(kept[0])
        (ws / "audit.head").write_bytes(kept[1])


def test_deleted_site_log_stops_apply_until_a_new_log_is_started(round_dir, capsys):
    d, sites = round_dir
    ws = d / "site0/site0.workspace"
    (ws / "audit.jsonl").unlink()
    out = d / "site0/result.csv"
    refused(capsys, *_apply(d, "site0", sites["site0"][1], out), expect="dcstudio audit new")
    assert not out.exists()
    assert run("audit", "verify", ws) == 1
    assert run("audit", "new", ws, "--identity", d / "site0/site0.dcid", "--reason", "log deleted (test)") == 0
    assert run(*_apply(d, "site0", sites["site0"][1], out)) == 0
    start, *rest = AuditLog(ws / "audit.jsonl").entries()
    assert start["reason"] == "log deleted (test)" and start["previous"]["head_file"]["seq"] >= 3
    assert [e["event"] for e in rest] == ["apply"]
    assert run("audit", "verify", ws) == 0


def test_deleted_analyst_log_stops_the_run(round_dir, capsys):
    d, sites = round_dir
    ws = d / "analyst/analyst.workspace"
    (ws / "audit.jsonl").unlink()
    (ws / "audit.head").unlink()  # both gone: the workspace's projects still show a log was kept
    refused(capsys, *_analyst_run(d, sites, d / "out2"), expect="is missing, but this workspace holds projects")
    assert not (d / "out2").exists()
    assert run("audit", "new", ws, "--identity", d / "analyst/analyst.dcid", "--reason", "deleted") == 0
    assert run(*_analyst_run(d, sites, d / "out2")) == 0
    events = [e["event"] for e in AuditLog(ws / "audit.jsonl").entries()]
    assert events[0] == START_EVENT and "export-packages" in events


def test_edited_or_cut_site_log_is_refused(round_dir, capsys):
    d, sites = round_dir
    ws = d / "site1/site1.workspace"
    log = ws / "audit.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    last = json.loads(lines[-1])
    last["rows"] = 1
    lines[-1] = canonical_json(last) + b"\n"  # a well-formed entry whose signature no longer fits
    log.write_bytes(b"".join(lines))
    assert run("audit", "verify", ws) == 1
    assert "wrong signature" in capsys.readouterr().err
    refused(capsys, *_apply(d, "site1", sites["site1"][1], d / "site1/r.csv"), expect="wrong signature")
    log.write_bytes(b"".join(lines[:-1]))
    refused(capsys, *_apply(d, "site1", sites["site1"][1], d / "site1/r.csv"), expect="lines were cut")
    assert not (d / "site1/r.csv").exists()
