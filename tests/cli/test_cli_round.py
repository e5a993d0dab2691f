"""A scripted CLI round (DESIGN §5) and every refusal the round issue lists.

Each refusal must be one line on stderr, a non-zero exit, and no output written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.formats.envelope import Payload, seal
from core.formats.identity import Identity, PublicCard
from core.learn.mlp import BatchedMLP
from tests.support.cli import WF, analyst_of, anchor_to, apply_packages, confirm, refused, run
from tests.support.roundkit import CLASSES, FEATURES, make_sites


@pytest.fixture(scope="module")
def round_dir(tmp_path_factory):
    """Run one whole round through the CLI; return its folder (tests below reuse it)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", "correct horse battery staple")
    d = tmp_path_factory.mktemp("round")
    sites = make_sites(d / "data")
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Skewed",
               "--schema-from", d / "data/sample.csv", "--label", "label", "--method", "dccfl",
               "--set", "seed=3", "--out", d / "p.dckit") == 0
    for name in sites:
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
    assert run("anchor", "new", "--kit", d / "p.dckit", "--seed-csv", d / "data/seed.csv",
               "--out", d / "site0/p.dcanchor", *anchor_to(d, "site0", sites)) == 0
    for name, (train, _) in sites.items():
        assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "site0/p.dcanchor",
                   "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                   "--identity", d / name / f"{name}.dcid", "--csv", train,
                   "--out", d / "bundles" / f"{name}.dcbundle", "--seed", "1") == 0
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, sites)) == 0
    apply_packages(d, {name: test for name, (_, test) in sites.items()})
    yield d, sites
    mp.undo()


def _local_accuracy(train: Path, test: Path) -> float:
    tr, te = pd.read_csv(train), pd.read_csv(test)
    X, Xt = tr[FEATURES].to_numpy(), te[FEATURES].to_numpy()
    mu, sd = X.mean(0), X.std(0)
    y = np.array([CLASSES.index(c) for c in tr["label"]])
    m = BatchedMLP(random_state=3).fit([((X - mu) / sd, y)], 4).models_[0]
    return float(np.mean(np.asarray(CLASSES)[m.predict_proba((Xt - mu) / sd).argmax(1)] == te["label"]))


def test_round_outputs_and_accuracy(round_dir):
    d, sites = round_dir
    summary = json.loads((d / "out/summary.json").read_text())
    report = (d / "out/report.html").read_text()
    assert report.startswith("<!doctype html>") and report.rstrip().endswith("</html>")
    # the audit trail: every bundle's and every package's SHA-256 is in the report
    assert all(i["bundle_digest"] in report for i in summary["inputs"])
    assert all(p["digest"] in report for p in summary["packages"]) and len(summary["packages"]) == 4
    # t = auto picks by hold-out accuracy; with per-site prior correction one shared model can tie with two
    # cluster models (the anchor secret, hence the representation, is fresh each run). Whatever it picks, sites
    # of one label-skew group are never split, and where it separates the groups it does so along the skew.
    clusters = {s["site"]: s["cluster"] for s in summary["sites"]}
    assert clusters["site0"] == clusters["site1"] and clusters["site2"] == clusters["site3"]
    assert summary["n_clusters"] in (1, 2)
    curve = summary["validation_curve"]
    assert len(curve) >= 9 and max(curve.values()) == curve[f"{summary['t']:g}"]
    package_acc, local_acc = [], []
    for name, (train, test) in sites.items():
        res = pd.read_csv(d / name / "result.csv")
        assert list(res.columns[-5:]) == ["prediction"] + [f"prob_{c}" for c in CLASSES]
        assert len(res) == len(pd.read_csv(test))
        np.testing.assert_allclose(res[[f"prob_{c}" for c in CLASSES]].sum(axis=1), 1, atol=1e-5)
        package_acc.append(float(np.mean(res["prediction"] == res["label"])))
        local_acc.append(_local_accuracy(train, test))
    # in line with a local-only model or better (the sites pool rows of the same distribution)
    assert np.mean(package_acc) >= np.mean(local_acc) - 0.02, (package_acc, local_acc)
    assert min(package_acc) > 0.6


def test_audit_logs_chain(round_dir):
    from core.formats.audit import AuditLog

    d, _ = round_dir
    assert AuditLog(d / "site1/site1.workspace/audit.jsonl").verify() >= 2  # export + apply
    assert AuditLog(d / "analyst/analyst.workspace/audit.jsonl").verify() >= 8  # 4 imports + 4 packages


def test_site_cannot_apply_another_sites_package(round_dir, capsys):
    d, sites = round_dir
    out = d / "site1/stolen.csv"
    refused(capsys, "participant", "apply", "--package", d / "out/site0.dcpkg", "--identity",
            d / "site1/site1.dcid", "--csv", sites["site1"][1], "--out", out, expect="recipient")
    assert not out.exists()


def _analyst_run_refused(capsys, d: Path, bundle_dir: Path, expect: str) -> None:
    out = d / "refused-out"
    shutil.rmtree(out, ignore_errors=True)
    refused(capsys, "analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
            "--bundles", bundle_dir, "--out", out, "--workspace", d / "fresh-ws",
            *confirm(d, [f"site{i}" for i in range(4)]), expect=expect)
    assert not out.exists() or not any(out.iterdir())


def _one_bundle_dir(d: Path, name: str, data: bytes) -> Path:
    folder = d / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "x.dcbundle").write_bytes(data)
    return folder


@pytest.mark.parametrize("where", [0.0, 0.01, 0.3, 0.6, 0.999])
def test_bit_flip_anywhere_in_a_bundle_is_refused(round_dir, capsys, where):
    d, _ = round_dir
    data = bytearray((d / "bundles/site2.dcbundle").read_bytes())
    pos = min(int(where * len(data)), len(data) - 1)
    data[pos] ^= 0x10
    _analyst_run_refused(capsys, d, _one_bundle_dir(d, f"flip{where}", bytes(data)), expect="x.dcbundle")


def test_truncated_bundle_is_refused(round_dir, capsys):
    d, _ = round_dir
    data = (d / "bundles/site2.dcbundle").read_bytes()
    _analyst_run_refused(capsys, d, _one_bundle_dir(d, "trunc", data[: len(data) // 2]), expect="x.dcbundle")


def test_unknown_format_version_is_refused(round_dir, capsys):
    d, _ = round_dir
    data = (d / "bundles/site2.dcbundle").read_bytes().replace(b"dcstudio-envelope/v1", b"dcstudio-envelope/v9", 1)
    _analyst_run_refused(capsys, d, _one_bundle_dir(d, "version", data), expect="version")


def test_same_bundle_twice_is_refused_as_duplicate(round_dir, capsys):
    d, _ = round_dir
    folder = _one_bundle_dir(d, "dup", (d / "bundles/site2.dcbundle").read_bytes())
    shutil.copy(d / "bundles/site2.dcbundle", folder / "y.dcbundle")
    # the copy is left out with one line naming it; the run goes on with the first (one file never blocks a run)
    shutil.rmtree(d / "dup-out", ignore_errors=True)
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid", "--bundles",
               folder, "--out", d / "dup-out", "--workspace", d / "dup-ws",
               *confirm(d, [f"site{i}" for i in range(4)])) == 0
    out = capsys.readouterr().out
    assert "refused: y.dcbundle from 'site2'" in out and "duplicate of x.dcbundle" in out
    summary = json.loads((d / "dup-out/summary.json").read_text())
    assert [r["file"] for r in summary["refused"]] == ["y.dcbundle"] and len(summary["sites"]) == 1
    # and importing a bundle the workspace already holds is reported as a duplicate
    refused(capsys, "analyst", "import", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
            "--bundle", d / "bundles/site2.dcbundle", expect="already imported")
    # re-running the analysis over the same folder is idempotent: the stored copies are used
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "rerun") == 0
    assert "already imported" in capsys.readouterr().out


def test_an_empty_or_unreadable_file_in_the_folder_is_left_out_of_the_run_in_one_line(round_dir, capsys):
    """As the app lists such a file and goes on, `analyst run` leaves it out with one line naming it (issue #32)."""
    d, _ = round_dir
    folder = _one_bundle_dir(d, "with-empty", (d / "bundles/site2.dcbundle").read_bytes())
    (folder / "empty.dcbundle").write_bytes(b"")
    (folder / "folder.dcbundle").mkdir()
    shutil.rmtree(d / "with-empty-out", ignore_errors=True)
    capsys.readouterr()
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid", "--bundles",
               folder, "--out", d / "with-empty-out", "--workspace", d / "with-empty-ws",
               *confirm(d, [f"site{i}" for i in range(4)])) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("refused:")]
    assert len(lines) == 2 and any("empty.dcbundle: the file is empty (0 bytes)" in line for line in lines)
    assert any("folder.dcbundle" in line and "is a folder" in line for line in lines)
    assert all(line.endswith("it is left out of this run") for line in lines)
    summary = json.loads((d / "with-empty-out/summary.json").read_text())
    assert sorted(r["file"] for r in summary["refused"]) == ["empty.dcbundle", "folder.dcbundle"]


def test_bundle_for_another_project_or_analyst_is_refused(round_dir, capsys):
    d, sites = round_dir
    # another project, same analyst
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Other",
               "--schema-from", d / "data/sample.csv", "--label", "label", "--out", d / "other.dckit") == 0
    assert run("anchor", "new", "--kit", d / "other.dckit", "--seed-csv", d / "data/seed.csv",
               "--out", d / "other.dcanchor", "--plain") == 0
    assert run("participant", "export", "--kit", d / "other.dckit", "--anchor", d / "other.dcanchor",
               "--analyst-fingerprint", analyst_of(d / "other.dckit"), "--accept-poor-privacy",
               "--identity", d / "site3/site3.dcid", "--csv", sites["site3"][0],
               "--out", d / "otherproj/x.dcbundle") == 0
    capsys.readouterr()
    _analyst_run_refused(capsys, d, d / "otherproj", expect="project")
    # this project, but sealed to another analyst's key
    kit_body = json.loads((d / "p.dckit").read_text())["kit"]
    site = Identity.load(d / "site3/site3.dcid", "correct horse battery staple")
    stranger = Identity.generate("stranger")
    (d / "stranger").mkdir(exist_ok=True)
    seal(d / "stranger/x.dcbundle", Payload({"n_rows": 1}, {"x": np.zeros(3)}), kind="bundle",
         project_id=kit_body["project_id"], sender=site, recipient=stranger.card)
    _analyst_run_refused(capsys, d, d / "stranger", expect="recipient")


@pytest.mark.parametrize("n_rows", [None, "80", 1.5, -1, True])
def test_a_site_that_signs_a_bundle_with_a_malformed_row_count_is_refused_in_one_line(round_dir, capsys, n_rows):
    """An insider holds a valid key: a bundle re-sealed by its own site with ``n_rows`` null (or text, a fraction,
    negative, a boolean) is refused with one sentence naming the field, never a Python traceback."""
    from core.formats.envelope import open_sealed

    d, _ = round_dir
    analyst = Identity.load(d / "analyst/analyst.dcid", "correct horse battery staple")
    site0 = Identity.load(d / "site0/site0.dcid", "correct horse battery staple")
    opened = open_sealed(d / "bundles/site0.dcbundle", analyst, expect_kind="bundle")
    manifest = {**opened.payload.manifest, "n_rows": n_rows}
    folder = d / f"malformed-{n_rows!s}"
    seal(folder / "site0.dcbundle", Payload(manifest, opened.payload.arrays), kind="bundle",
         project_id=opened.binding.project_id, sender=site0, recipient=analyst.card)
    capsys.readouterr()
    _analyst_run_refused(capsys, d, folder, expect="n_rows")


def test_package_for_another_bundle_or_project_is_refused(round_dir, capsys):
    d, sites = round_dir
    # site1 re-exports (a new bundle, new private map); a package for its first bundle still applies,
    # but a package bound to a bundle this workspace never exported is refused
    analyst = Identity.load(d / "analyst/analyst.dcid", "correct horse battery staple")
    site1 = Identity.load(d / "site1/site1.dcid", "correct horse battery staple")
    kit_body = json.loads((d / "p.dckit").read_text())["kit"]
    seal(d / "forged.dcpkg", Payload({"method": "dccfl"}, {"x": np.zeros(2)}), kind="package",
         project_id=kit_body["project_id"], sender=analyst, recipient=site1.card, in_reply_to="ab" * 32)
    out = d / "site1/forged.csv"
    refused(capsys, "participant", "apply", "--package", d / "forged.dcpkg", "--identity", d / "site1/site1.dcid",
            "--csv", sites["site1"][1], "--out", out, expect="bundle")
    assert not out.exists()
    seal(d / "otherproj.dcpkg", Payload({"method": "dccfl"}, {"x": np.zeros(2)}), kind="package",
         project_id="0" * 32, sender=analyst, recipient=site1.card, in_reply_to="ab" * 32)
    refused(capsys, "participant", "apply", "--package", d / "otherproj.dcpkg", "--identity",
            d / "site1/site1.dcid", "--csv", sites["site1"][1], "--out", out, expect="project")
    assert not out.exists()


def test_kit_whose_signature_fails_is_refused(round_dir, capsys):
    d, sites = round_dir
    doc = json.loads((d / "p.dckit").read_text())
    doc["kit"]["settings"]["t"] = 0.9
    (d / "tampered.dckit").write_text(json.dumps(doc))
    out = d / "tampered.dcbundle"
    refused(capsys, "participant", "export", "--kit", d / "tampered.dckit", "--anchor", d / "site0/p.dcanchor",
            "--identity", d / "site2/site2.dcid", "--csv", sites["site2"][0], "--out", out, expect="signature")
    assert not out.exists()


def test_without_roster_or_confirmation_the_run_fails_closed(round_dir, capsys, tmp_path):
    d, sites = round_dir
    base = ["analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
            "--bundles", d / "bundles", "--workspace", tmp_path / "ws"]
    err = refused(capsys, *base, "--out", tmp_path / "out", expect="--confirm")
    assert "site0" in err and not (tmp_path / "out").exists()
    # fingerprints typed in (compared by phone) work as well as cards; a flagged or unwanted site can be left out
    fingerprints = [PublicCard.load(d / n / f"{n}.dcpub").fingerprint for n in sites]
    assert run(*base, "--out", tmp_path / "out", "--confirm", *fingerprints, "--exclude", "site3") == 0
    out = capsys.readouterr().out
    assert "excluded: 'site3'" in out
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert [e["site"] for e in summary["excluded"]] == ["site3"] and len(summary["packages"]) == 3
    assert not (tmp_path / "out/site3.dcpkg").exists()
    # the confirmations are remembered in the workspace
    assert run(*base, "--out", tmp_path / "out2") == 0


def test_analyst_run_decrypts_each_bundle_once(round_dir, monkeypatch, tmp_path):
    """The analyst's round keeps every bundle it imported open: importing and fitting decrypt each file once
    (they were decrypted twice, by the import and again by the fit's re-reading)."""
    import core.analyst as analyst

    d, sites = round_dir
    opened = []
    real = analyst.open_sealed
    monkeypatch.setattr(analyst, "open_sealed", lambda path, *a, **k: (opened.append(Path(path).name),
                                                                        real(path, *a, **k))[1])
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", tmp_path / "out", "--workspace", tmp_path / "ws",
               *confirm(d, sites)) == 0
    assert sorted(opened) == sorted(p.name for p in (d / "bundles").glob("*.dcbundle"))


def test_every_package_has_its_model_card(round_dir):
    """Issue #23: export writes <site>.model_card.md beside each package, names it in summary.json, and the report
    shows every card."""
    d, sites = round_dir
    summary = json.loads((d / "out/summary.json").read_text())
    report = (d / "out/report.html").read_text()
    assert sorted(p.name for p in (d / "out").glob("*.model_card.md")) == sorted(f"{n}.model_card.md" for n in sites)
    for p in summary["packages"]:
        assert p["model_card"] == p["file"].removesuffix(".dcpkg") + ".model_card.md"
        card = (d / "out" / p["model_card"]).read_text()
        x = next(x for x in summary["sites"] if x["site"] == p["site"])
        assert card.startswith(f"# Model card — package for {p['site']}")
        assert f"{x['metrics']['rows']} rows" in card and "macro-AUC" in card  # four classes: the multi-class card
        assert "x0" in card and "'label'" in card  # its columns and its outcome
        assert f"Model card — package for {p['site']}" in report
        # issue #33 item 11: dated by the run and versioned (TRIPOD+AI items 1-2)
        from datetime import datetime

        when = datetime.fromisoformat(summary["run"]["created"].replace("Z", "+00:00"))
        assert f"Date of the analysis: {when.day} {when:%B %Y}" in card and f"DC Studio {summary['software']}" in card


def test_one_unconfirmed_bundle_is_left_out_and_the_rest_run(round_dir, capsys, tmp_path):
    """A file dropped in the bundles folder by a sender nobody confirmed cannot stop the run (issue #26): that file
    is refused in one line, named in summary.json and in the audit log, and every other site gets its package."""
    d, sites = round_dir
    names = sorted(sites)
    ws = tmp_path / "ws"
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", tmp_path / "out", "--workspace", ws,
               *confirm(d, names[:-1])) == 0
    out = capsys.readouterr().out
    refused_lines = [line for line in out.splitlines() if line.startswith("refused:")]
    assert len(refused_lines) == 1 and f"{names[-1]}.dcbundle" in refused_lines[0]
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert [e["file"] for e in summary["refused"]] == [f"{names[-1]}.dcbundle"]
    assert len(summary["packages"]) == len(names) - 1
    assert not (tmp_path / "out" / f"{names[-1]}.dcpkg").exists()
    audit = [json.loads(line) for line in next(ws.rglob("audit.jsonl")).read_text().splitlines()]
    export = [e for e in audit if e.get("event") == "export-packages"][-1]
    assert [e["file"] for e in export["refused"]] == [f"{names[-1]}.dcbundle"]
    # analyst import too: the confirmed files are imported, the other one is left out in one line
    files = [d / "bundles" / f"{n}.dcbundle" for n in names]
    assert run("analyst", "import", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--workspace", tmp_path / "ws-import", "--bundle", *files, *confirm(d, names[:-1])) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out if line.startswith(("refused", "imported"))].count("imported") \
        == len(names) - 1
    assert sum(line.startswith("refused:") and f"{names[-1]}.dcbundle" in line for line in out) == 1
