"""Trust, fourth pass (issue #32, findings 1–4 and the import's cost): nothing a site exported is removed on an
unverified log's word, logs are bound to their workspace, a restart after a rollback is reported, and every file the
product trusts later is signed by the workspace's owner (FORMAT §5, §10.1).

Each export here is sealed in a child process that then exits, as a real ``participant export`` does, so that the
workspace's writer is gone when the workspace is opened again (what earlier versions' cleanup looked at)."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pandas as pd
import pytest

from core.analyst import AnalystRound
from core.errors import AuditLogRefused, ConfigError, DCError, VerificationError
from core.fileio import canonical_json
from core.formats.audit import AuditLog
from core.formats.audit_restart import restart_audit
from core.formats.identity import Identity
from core.formats.kit import Kit
from core.formats.workspace import AnalystWorkspace, SiteWorkspace
from core.participant import ParticipantRound, apply_package
from tests.support.cli import run
from tests.support.roundkit import small_dc_round

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="exports in a forked child")


def in_child(fn) -> None:
    """Run ``fn`` in a forked child process that then exits (its pid is dead once this returns)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            fn()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the export in the child failed"


@pytest.fixture(scope="module")
def rnd(tmp_path_factory):
    """An analyst, two sites and a ``dc`` kit; site0 exported from two workspaces of its own (``a.ws``, ``b.ws``),
    site1 from one; the analyst's package for the bundle of ``a.ws``."""
    d = tmp_path_factory.mktemp("wstrust")
    r = small_dc_round(d, "ws-trust", rows=200, seed=7, epochs=2, anchor_rows=60)
    frame = r.frame
    r.csv = {}
    for name, site, rows in (("a", 0, slice(20, 90)), ("b", 0, slice(90, 130)), ("c", 1, slice(130, 200))):
        frame.iloc[rows].to_csv(d / f"{name}.csv", index=False)
        r.csv[name] = d / f"{name}.csv"
        job = ParticipantRound(r.kit, r.kit_path, r.sites[site], d / f"{name}.ws", anchor=r.anchor,
                               site_settings={"seed": site})
        job.confirm_analyst(r.kit.analyst, how="test")
        job.load(r.csv[name])
        job.compute()
        job.accept_privacy_risk("the test accepts the default kit's collusion risk")
        in_child(lambda job=job, name=name: job.seal(d / "bundles" / f"{name}.dcbundle"))
    session = AnalystRound(r.kit, r.analyst, AnalystWorkspace(d / "analyst.ws"))
    for site in r.sites:
        session.confirm(site.card)
    received = [session.open_bundle(d / "bundles" / f"{n}.dcbundle") for n in ("a", "c")]
    r.packages = session.export(session.run(received), d / "out").packages
    r.package = r.packages[0].path
    return r


def copy_ws(rnd, name: str, tmp_path):
    dest = tmp_path / f"{name}.ws"
    shutil.copytree(rnd.d / f"{name}.ws", dest)
    return dest


def export_folders(root) -> list[str]:
    return sorted(p.name for p in root.glob("projects/*/exports/*"))


def apply_to(rnd, ws_root, tmp_path, **kw):
    return apply_package(rnd.package, rnd.sites[0], rnd.csv["a"], tmp_path / "result.csv",
                         workspace=SiteWorkspace(ws_root), **kw)


# ---- finding 1: no export is removed on the word of a log that does not verify -------------------------------

@pytest.mark.parametrize("damage", ["audit new", "missing", "emptied", "swapped", "both missing"])
def test_opening_a_workspace_never_removes_a_complete_export(rnd, tmp_path, damage):
    """After ``audit new`` — the product's own advice after any refusal — or with the log missing, emptied or
    swapped, opening the workspace keeps every export folder (private map, row order, own model), so the analyst's
    package can still be applied once a new log is started."""
    ws = copy_ws(rnd, "a", tmp_path)
    before = export_folders(ws)
    assert len(before) == 1
    if damage == "audit new":
        restart_audit(ws, rnd.sites[0], "restarted on purpose (test)")
    elif damage == "missing":
        (ws / "audit.jsonl").unlink()
    elif damage == "emptied":
        (ws / "audit.jsonl").write_bytes(b"")
    elif damage == "swapped":
        other = rnd.d / "b.ws"
        for name in ("audit.jsonl", "audit.head"):
            (ws / name).write_bytes((other / name).read_bytes())
    else:
        (ws / "audit.jsonl").unlink()
        (ws / "audit.head").unlink()
    SiteWorkspace(ws)
    SiteWorkspace(ws)
    assert export_folders(ws) == before
    if damage != "audit new":
        with pytest.raises(AuditLogRefused, match="dcstudio audit new"):
            apply_to(rnd, ws, tmp_path)
        restart_audit(ws, rnd.sites[0], f"log {damage} (test)")
    assert export_folders(ws) == before
    result = apply_to(rnd, ws, tmp_path)
    assert result.rows == len(pd.read_csv(rnd.csv["a"]))


def test_audit_new_removes_nothing_and_keeps_the_old_log(rnd, tmp_path, capsys, monkeypatch):
    ws = copy_ws(rnd, "a", tmp_path)
    before = sorted(str(p.relative_to(ws)) for p in ws.rglob("*") if p.is_file())
    old = (ws / "audit.jsonl").read_bytes()
    assert run("audit", "new", ws, "--identity", _saved(rnd.sites[0], tmp_path, monkeypatch), "--reason", "test") == 0
    out = capsys.readouterr().out
    assert "no export was removed" in out
    after = {str(p.relative_to(ws)) for p in ws.rglob("*") if p.is_file()}
    assert set(before) <= after  # every file still there (the log itself replaced, its copy beside it)
    start = AuditLog(ws / "audit.jsonl").entries()[0]
    assert (ws / start["previous"]["file"]).read_bytes() == old
    assert start["previous"]["verified"] is True and start["previous"]["entries"] == len(old.splitlines())


def _saved(identity: Identity, tmp_path, monkeypatch) -> str:
    """``identity`` as a .dcid file for the CLI, its passphrase in DCSTUDIO_PASSPHRASE for this test only (set
    for the process, it leaked into whichever tests ran next in the same worker)."""
    passphrase = "correct horse battery staple"
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", passphrase)
    path = tmp_path / f"{identity.name}.dcid"
    if not path.exists():
        identity.save(path, passphrase, log_n=14)
    return str(path)


# ---- finding 2: a log and its head are bound to their workspace ----------------------------------------------

def test_logs_exchanged_between_two_workspaces_of_one_owner_fail_verify(rnd, tmp_path, capsys):
    a, b = copy_ws(rnd, "a", tmp_path), copy_ws(rnd, "b", tmp_path)
    assert run("audit", "verify", a) == 0 and run("audit", "verify", b) == 0
    capsys.readouterr()
    for name in ("audit.jsonl", "audit.head"):
        da, db = (a / name).read_bytes(), (b / name).read_bytes()
        (a / name).write_bytes(db)
        (b / name).write_bytes(da)
    for ws in (a, b):
        assert run("audit", "verify", ws) == 1
        assert "exchanged with another workspace's log" in capsys.readouterr().err
        with pytest.raises(AuditLogRefused, match="exchanged"):
            SiteWorkspace(ws).audit.bind(rnd.sites[0])
    # the head alone swapped back is another log's head
    (a / "audit.head").write_bytes((b / "audit.head").read_bytes())
    with pytest.raises(AuditLogRefused):
        SiteWorkspace(a).audit.check()


def test_a_deleted_or_foreign_workspace_id_is_refused(rnd, tmp_path):
    a, b = copy_ws(rnd, "a", tmp_path), copy_ws(rnd, "b", tmp_path)
    (a / "workspace.json").write_bytes((b / "workspace.json").read_bytes())
    with pytest.raises(AuditLogRefused, match="exchanged"):
        SiteWorkspace(a).audit.check()
    (a / "workspace.json").unlink()
    with pytest.raises(AuditLogRefused, match="workspace.json"):
        SiteWorkspace(a).audit.check()


# ---- finding 3: a rollback, and a restart that follows one -------------------------------------------------

def test_a_rolled_back_log_is_refused_and_a_restart_after_it_is_reported(rnd, tmp_path, capsys):
    """Both log files rolled back to an earlier state the owner signed: the workspace knows (signed) the head its
    last bundle carried, so the log is refused; ``audit new`` then records what it replaces, and ``verify`` reports
    that the restart followed a rollback (exit 1), which a restart from the intact log does not."""
    ws = copy_ws(rnd, "a", tmp_path)
    lines = (ws / "audit.jsonl").read_bytes().splitlines(keepends=True)
    events = [json.loads(x)["event"] for x in lines]
    assert events[-1] == "export"
    log = AuditLog(ws / "audit.jsonl", rnd.sites[0])
    cut = events.index("pin-analyst")  # back to before the pin and the export: what an old backup holds
    (ws / "audit.jsonl").write_bytes(b"".join(lines[:cut]))
    from tests.support.audit import write_head_for
    write_head_for(ws / "audit.jsonl", rnd.sites[0])
    assert log.verify() == cut  # alone, the log and its head are consistent
    with pytest.raises(AuditLogRefused, match="rolled back"):
        SiteWorkspace(ws).audit.bind(rnd.sites[0])
    assert run("audit", "verify", ws) == 1
    assert "rolled back" in capsys.readouterr().err
    restart_audit(ws, rnd.sites[0], "refused; restarted")
    assert run("audit", "verify", ws) == 1
    assert "the restart followed a rollback" in capsys.readouterr().err
    # a restart from the intact log is a declared break, not a rollback
    ok = copy_ws(rnd, "a", tmp_path / "ok")
    restart_audit(ok, rnd.sites[0], "restarted on purpose")
    assert run("audit", "verify", ok) == 0
    assert "replace another" in capsys.readouterr().out
    # and a bundle sealed before it is found in the copy of the log it replaced, named as such
    assert run("audit", "verify", ok, "--against", rnd.d / "bundles" / "a.dcbundle") == 0
    assert "of the log this one replaced (audit.before-" in capsys.readouterr().out
    copy = next(ok.glob("audit.before-*.jsonl"))
    copy.write_bytes(b"".join(copy.read_bytes().splitlines(keepends=True)[:-1]))  # the kept copy cut
    assert run("audit", "verify", ok, "--against", rnd.d / "bundles" / "a.dcbundle") == 1
    capsys.readouterr()


# ---- finding 4: every file the product trusts later is signed -----------------------------------------------

def _impostor_kit(rnd, tmp_path):
    impostor = Identity.generate("analyst")
    fake = Kit.from_dict({**rnd.kit.to_dict(), "analyst": impostor.card.to_dict()})
    fake.save(tmp_path / "fake.dckit", impostor)
    return impostor, Kit.load(tmp_path / "fake.dckit")


@pytest.mark.parametrize("how", ["plain", "signed by the insider"])
def test_a_re_pointed_pin_is_refused_and_fails_verify(rnd, tmp_path, capsys, how):
    """The pin re-pointed to an impostor's key (with a kit the impostor signs): nothing is sealed to the impostor,
    one sentence says why, and ``audit verify`` does not return 0."""
    ws = copy_ws(rnd, "a", tmp_path)
    impostor, fake = _impostor_kit(rnd, tmp_path)
    pin_path = ws / "projects" / rnd.kit.project_id / "analyst.json"
    body = {"project": rnd.kit.project_id, "name": impostor.card.name, "fingerprint": impostor.card.fingerprint,
            "key_id": impostor.card.key_id, "pinned": "2026-01-01T00:00:00Z"}
    if how == "plain":  # the form earlier versions wrote
        pin_path.write_text(json.dumps({k: v for k, v in body.items() if k != "project"}))
    else:
        from core.formats.signed_state import write_state
        write_state(pin_path, impostor, "analyst-pin", f"projects/{rnd.kit.project_id}/analyst.json", body)
    job = ParticipantRound(fake, tmp_path / "fake.dckit", rnd.sites[0], ws, anchor=rnd.anchor)
    assert job.first_use  # the pin cannot be trusted: the fingerprint is asked again
    job.load(rnd.csv["a"])
    job.accept_privacy_risk("the test accepts the default kit's collusion risk")
    with pytest.raises(VerificationError) as err:
        job.seal(tmp_path / "to-impostor.dcbundle")
    assert "analyst pin" in err.value.message and "--analyst-fingerprint" in err.value.message
    assert not (tmp_path / "to-impostor.dcbundle").exists()
    with pytest.raises(VerificationError, match="not that of the key"):  # the real analyst's fingerprint
        job.confirm_analyst(rnd.analyst.card.fingerprint, how="phone")
    assert run("audit", "verify", ws) == 1
    assert "analyst pin" in capsys.readouterr().err
    with pytest.raises(VerificationError, match="analyst pin"):
        apply_to(rnd, ws, tmp_path)  # the package is not verified against a pin nobody signed
    # the way on: the fingerprint confirmed again by phone (the real analyst's, which signed the kept kit)
    assert apply_to(rnd, ws, tmp_path, analyst_fingerprint=rnd.analyst.card.fingerprint).rows > 0
    assert run("audit", "verify", ws) == 0


def test_a_replaced_stored_kit_or_edited_export_state_is_refused(rnd, tmp_path, capsys):
    ws = copy_ws(rnd, "a", tmp_path)
    kit_copy = ws / "projects" / rnd.kit.project_id / "kit.dckit"
    kept = kit_copy.read_bytes()
    _, fake = _impostor_kit(rnd, tmp_path)
    kit_copy.write_bytes((tmp_path / "fake.dckit").read_bytes())
    with pytest.raises(VerificationError, match="it was replaced"):
        apply_to(rnd, ws, tmp_path)
    assert run("audit", "verify", ws) == 1
    capsys.readouterr()
    kit_copy.write_bytes(kept)
    state = next(ws.glob("projects/*/exports/*/state.json"))
    doc = json.loads(state.read_text())
    doc["body"]["fill_values"] = {"x0": 1e9}
    state.write_text(json.dumps(doc))
    with pytest.raises(VerificationError, match="wrong signature"):
        apply_to(rnd, ws, tmp_path)
    doc = json.loads(state.read_text())
    state.write_text(json.dumps(doc["body"]))  # the unsigned form of an earlier version: never trusted silently
    with pytest.raises(VerificationError, match="earlier version .* --adopt-unsigned"):
        apply_to(rnd, ws, tmp_path)
    npy = next(state.parent.glob("*.npy"))
    assert run("audit", "verify", ws) == 1
    capsys.readouterr()
    restart_audit(ws, rnd.sites[0], "upgrade", adopt_unsigned=True)
    assert apply_to(rnd, ws, tmp_path).rows > 0
    npy.write_bytes(npy.read_bytes()[:-8] + bytes(8))  # an array edited behind the signed state's back
    with pytest.raises(DCError, match="SHA-256"):
        apply_to(rnd, ws, tmp_path)


def test_a_forged_confirmation_is_refused_and_a_new_one_replaces_it(rnd, tmp_path, capsys):
    """confirmed.json is signed: a site added by hand (as an insider would, to get a bundle opened) is refused with
    the way on; confirming again writes a signed file that holds only what was confirmed since."""
    ws = tmp_path / "analyst.ws"
    shutil.copytree(rnd.d / "analyst.ws", ws)
    path = ws / "projects" / rnd.kit.project_id / "confirmed.json"
    doc = json.loads(path.read_text())
    intruder = Identity.generate("intruder")
    doc["body"][intruder.card.fingerprint] = {"name": "intruder", "confirmed": "2026-01-01T00:00:00Z", "how": "x"}
    path.write_text(json.dumps(doc))
    session = AnalystRound(rnd.kit, rnd.analyst, AnalystWorkspace(ws))
    with pytest.raises(VerificationError, match="confirmed site keys .* wrong signature"):
        session.open_bundle(rnd.d / "bundles" / "a.dcbundle")
    assert run("audit", "verify", ws) == 1
    capsys.readouterr()
    path.write_text(json.dumps(doc["body"]))  # the plain form earlier versions wrote
    with pytest.raises(VerificationError, match="earlier version"):
        session.confirmed_fingerprints()
    session.confirm(rnd.sites[0].card)
    assert session.confirmed_fingerprints() == {rnd.sites[0].card.fingerprint}
    assert session.open_bundle(rnd.d / "bundles" / "a.dcbundle").site == "site0"
    line = [e for e in session.workspace.audit.entries() if e["event"] == "confirm-site"][-1]
    assert "earlier version" in line["replaces"]
    assert run("audit", "verify", ws) == 0


def test_an_upgraded_workspace_signs_its_state_but_asks_for_the_fingerprint_again(rnd, tmp_path, capsys):
    """A workspace as an earlier version left it — a log bound to no workspace, unsigned pin and export state: every
    command is refused until ``audit new``, which signs the export state (the owner's own files) and never the pin,
    whose analyst fingerprint must be confirmed again."""
    ws = copy_ws(rnd, "a", tmp_path)
    _downgrade(ws, rnd.sites[0])
    with pytest.raises(AuditLogRefused, match="earlier version"):
        apply_to(rnd, ws, tmp_path)
    assert run("audit", "verify", ws) == 1
    assert "earlier version" in capsys.readouterr().err
    done = restart_audit(ws, rnd.sites[0], "upgrade")
    assert done.earlier_version and any(f.endswith("state.json") for f in done.adopted)
    assert len(done.reconfirm) == 1 and "analyst pin" in done.reconfirm[0]
    with pytest.raises(VerificationError, match="analyst pin .* earlier version"):
        apply_to(rnd, ws, tmp_path)
    with pytest.raises(VerificationError, match="not that of the key"):
        apply_to(rnd, ws, tmp_path, analyst_fingerprint=Identity.generate("x").card.fingerprint)
    assert apply_to(rnd, ws, tmp_path, analyst_fingerprint=rnd.analyst.card.fingerprint).rows > 0
    assert run("audit", "verify", ws) == 0
    events = [e["event"] for e in AuditLog(ws / "audit.jsonl").entries()]
    assert events[:3] == ["audit-start", "adopt-unsigned", "pin-analyst"]


def _downgrade(ws, owner: Identity) -> None:
    """What an earlier version wrote: a signed log whose first line names no workspace (head v1), and plain JSON
    for the pin, the export state and the applied list."""
    import hashlib

    from core.formats.audit import ENTRY_DOMAIN, HEAD_DOMAIN

    prev, out = "0" * 64, []
    for n, line in enumerate((ws / "audit.jsonl").read_bytes().splitlines(), start=1):
        entry = {k: v for k, v in json.loads(line).items() if k not in ("sig", "workspace", "log")}
        entry.update(seq=n, prev=prev)
        entry["sig"] = owner.sign(ENTRY_DOMAIN + canonical_json(entry)).hex()
        out.append(canonical_json(entry))
        prev = hashlib.sha256(out[-1]).hexdigest()
    (ws / "audit.jsonl").write_bytes(b"\n".join(out) + b"\n")
    head = {"format": "dcstudio/audit-head/v1", "seq": len(out), "head": prev,
            "signing_key": owner.card.signing_key.hex()}
    head["sig"] = owner.sign(HEAD_DOMAIN + canonical_json(head)).hex()
    (ws / "audit.head").write_text(json.dumps(head))
    (ws / "workspace.json").unlink()
    (ws / "sealed.json").unlink()
    for name in ("analyst.json", "exports/*/state.json", "exports/*/applied.json"):
        for path in ws.glob(f"projects/*/{name}"):
            body = json.loads(path.read_text())["body"]
            path.write_text(json.dumps(body))


# ---- issue #36: an import appends in O(1) --------------------------------------------------------------------

def test_an_import_neither_re_reads_the_log_nor_rewrites_the_registry(rnd, tmp_path, monkeypatch):
    """Once the command has verified the log (bind), each bundle's audit line is appended from the signed head
    (no whole-log check), and its registry line is appended to what was there, which stays byte for byte."""
    session = AnalystRound(rnd.kit, rnd.analyst, AnalystWorkspace(tmp_path / "an.ws"))
    for site in rnd.sites:
        session.confirm(site.card)
    checks = []
    real = AuditLog.check
    monkeypatch.setattr(AuditLog, "check", lambda self, **kw: checks.append(1) or real(self, **kw))
    session.import_bundles([rnd.d / "bundles" / "a.dcbundle"])
    registry = session.workspace.registry_path(rnd.kit.project_id)
    first = registry.read_bytes()
    session.import_bundles([rnd.d / "bundles" / "c.dcbundle"])
    assert checks == []
    assert registry.read_bytes().startswith(first) and registry.read_bytes().count(b"\n") == 2
    monkeypatch.setattr(AuditLog, "check", real)
    assert session.workspace.audit.verify() == 1 + 2 + 2  # start, two confirmations, two imports
    assert [p.name for p in session.workspace.stored(rnd.kit.project_id)] == [
        f"{e}.dcbundle" for e in sorted(session.workspace.registry(rnd.kit.project_id),
                                        key=lambda k: session.workspace.registry(rnd.kit.project_id)[k]["imported"])]
    with pytest.raises(DCError, match="one bundle per site"):
        session.workspace.check_new(rnd.kit.project_id, "ab" * 16, "cd" * 32, rnd.sites[0].card.fingerprint)


def test_an_edit_to_the_log_by_another_writer_is_still_seen_by_the_next_append(rnd, tmp_path):
    """The O(1) append trusts the checkpoint only while the log file is untouched by anyone else: an edit of an
    earlier line (same size) makes the next append verify the whole log and refuse."""
    ws = SiteWorkspace(tmp_path / "x.ws")
    ws.audit.bind(rnd.sites[0])
    for i in range(3):
        ws.audit.append("note", n=i)
    data = (ws.root / "audit.jsonl").read_bytes()
    (ws.root / "audit.jsonl").write_bytes(data.replace(b'"n":1', b'"n":7'))
    with pytest.raises(AuditLogRefused, match="line 3 has a wrong signature"):
        ws.audit.append("more")
    with pytest.raises(ConfigError):
        ws.audit.append("", n=1)
