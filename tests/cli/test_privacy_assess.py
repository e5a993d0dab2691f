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
               "--analyst-fingerprint", analyst_of(d / "p.dckit"),
               "--privacy-threshold", "membership_auc_max=0.55") == 0
    out = capsys.readouterr().out
    assert out.index("privacy (") < out.index("bundle: ")
    kept = list((d / "site0" / "site0.workspace").rglob("privacy.json"))
    assert len(kept) == 1
    raw = json.loads(kept[0].read_text())
    assert raw["thresholds"]["membership_auc_max"] == 0.55 and raw["findings"]
