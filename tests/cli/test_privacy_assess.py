"""Issue #24 from the command line: ``participant assess`` (nothing written; --json; --require-ok exits 2), the
findings printed by ``participant export``, and the kit's privacy limits that a site may only tighten."""

from __future__ import annotations

import json

import pytest

from core.formats.kit import Kit
from tests.support.cli import WF, analyst_of, refused, run
from tests.support.roundkit import make_sites

PASS = "correct horse battery staple"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", PASS)
    d = tmp_path_factory.mktemp("privacy")
    sites = make_sites(d / "data", rows=200)
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "P", "--schema-from",
               d / "data/sample.csv", "--label", "label", "--method", "dccfl", "--privacy-threshold",
               "group_size_min=10", "--privacy-threshold", "membership_auc_max=0.58", "--out", d / "p.dckit") == 0
    assert run("anchor", "new", "--kit", d / "p.dckit", "--seed-csv", d / "data/seed.csv", "--plain",
               "--out", d / "p.dcanchor") == 0
    assert run("keys", "new", "--name", "site0", "--out", d / "site0", *WF) == 0
    base = ["--kit", d / "p.dckit", "--anchor", d / "p.dcanchor", "--identity", d / "site0/site0.dcid",
            "--csv", sites["site0"][0]]
    yield d, base
    mp.undo()


def test_kit_states_the_limits(project, capsys):
    d, _ = project
    kit = Kit.load(d / "p.dckit")
    assert kit.privacy == {"group_size_min": 10, "membership_auc_max": 0.58}
    capsys.readouterr()
    assert run("kit", "show", d / "p.dckit") == 0
    assert "group_size_min = 10" in capsys.readouterr().out


def test_assess_prints_verdicts_and_writes_nothing(project, capsys):
    d, base = project
    capsys.readouterr()
    assert run("participant", "assess", *base) == 0
    out = capsys.readouterr().out
    assert "[poor] With the anchor, another site and the analyst could rebuild" in out
    assert "[not applicable]" in out and "(0.58, 5 %)" in out  # the kit's membership limit is the one judged by
    assert not (d / "site0" / "site0.workspace").exists()
    assert run("participant", "assess", *base, "--json") == 0
    raw = json.loads(capsys.readouterr().out)
    assert raw["verdict"] == "poor" and raw["thresholds"]["group_size_min"] == 10
    assert {f["attack"] for f in raw["findings"]} == {"collusion", "analyst_alone", "membership", "nearest_record",
                                                      "group_size"}


def test_require_ok_exits_2_on_a_poor_verdict_and_0_on_an_ok_one(project, capsys):
    d, base = project
    capsys.readouterr()
    assert run("participant", "assess", *base, "--require-ok") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "poor" in err and "collusion" in err
    assert run("participant", "assess", *base, "--require-ok", "--privacy-epsilon", "2") == 0


def test_a_site_cannot_loosen_the_kits_limits(project, capsys):
    _, base = project
    refused(capsys, "participant", "assess", *base, "--privacy-threshold", "group_size_min=3",
            expect="can only be made stricter")
    refused(capsys, "participant", "assess", *base, "--privacy-threshold", "epsilon=3", expect="--privacy-threshold")


def test_export_prints_the_findings_and_keeps_them_in_the_workspace(project, capsys):
    d, base = project
    capsys.readouterr()
    assert run("participant", "export", *base, "--out", d / "b.dcbundle", "--noise", "2",
               "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
               "--privacy-threshold", "membership_auc_max=0.55") == 0
    out = capsys.readouterr().out
    assert out.index("privacy (") < out.index("bundle: ")
    kept = list((d / "site0" / "site0.workspace").rglob("privacy.json"))
    assert len(kept) == 1
    raw = json.loads(kept[0].read_text())
    assert raw["thresholds"]["membership_auc_max"] == 0.55 and raw["findings"]


def test_export_with_a_poor_verdict_needs_the_sites_confirmation(project, capsys, tmp_path):
    """Issue #35: the CLI used to seal a bundle with poor verdicts without asking; now it refuses in one sentence,
    writes nothing, and with --accept-poor-privacy records the confirmation in the audit log."""
    d, base = project
    ws = tmp_path / "ws"
    args = ["participant", "export", *base, "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--workspace", ws]
    capsys.readouterr()
    err = refused(capsys, *args, "--out", tmp_path / "a.dcbundle", expect="--accept-poor-privacy")
    assert "collusion" in err and "audit log" in err
    assert not (tmp_path / "a.dcbundle").exists() and not ws.exists()
    assert run(*args, "--out", tmp_path / "b.dcbundle", "--accept-poor-privacy") == 0
    out = capsys.readouterr().out
    assert out.index("threat model") < out.index("privacy (") < out.index("you accept the risk")
    entry = [json.loads(line) for line in (ws / "audit.jsonl").read_text().splitlines()][-1]
    assert entry["event"] == "export" and entry["privacy_consent"]["how"] == "--accept-poor-privacy"
    assert any(a.startswith("collusion/") for a in entry["privacy_consent"]["accepted"])


def test_a_kit_that_rules_out_collusion_says_so_and_does_not_count_it(project, capsys, tmp_path):
    d, base = project
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "P2", "--schema-from",
               d / "data/sample.csv", "--label", "label", "--method", "dccfl", "--threat-model", "no-collusion",
               "--public-rows", "400", "--out", tmp_path / "n.dckit") == 0
    out = capsys.readouterr().out
    assert "sites do not work with the analyst" in out and "up to 400 rows" in out
    kit = Kit.load(tmp_path / "n.dckit")
    assert kit.threat_model == {"collusion": False, "public_rows": 400}
    assert Kit.load(d / "p.dckit").threat_model == {}  # the default is not written: older kits keep their digest
    assert run("anchor", "new", "--kit", tmp_path / "n.dckit", "--seed-csv", d / "data/seed.csv", "--plain",
               "--out", tmp_path / "n.dcanchor") == 0
    capsys.readouterr()
    assert run("participant", "assess", "--json", "--kit", tmp_path / "n.dckit", "--anchor", tmp_path / "n.dcanchor",
               *base[4:]) == 0
    raw = json.loads(capsys.readouterr().out)
    collusion = next(f for f in raw["findings"] if f["attack"] == "collusion")
    assert collusion["verdict"] == "poor" and collusion["in_scope"] is False
    assert raw["threat_model"] == {"collusion": False, "public_rows": 400} and raw["reference_rows"] <= 400
