"""Trust under attack (issue #10): pinning, confirmed senders, malformed input, crash order, audit binding,
package re-use, out-of-scale sites, permissions, passphrases and the encrypted, row-free anchor."""

from __future__ import annotations

import json
import os
import struct

import numpy as np
import pandas as pd
import pytest

from core.analyst import AnalystRound, recover_outputs
from core.data.tabular import read_table
from core.errors import ConfigError, DCError, FormatError, UnconfirmedSender, VerificationError
from core.fileio import clean_stale_parts, safe_cell
from core.formats import envelope as env
from core.formats.anchor import AnchorFile, anchor_for_kit, statistics_seed
from core.formats.audit import AuditLog
from core.formats.identity import Identity, check_new_passphrase
from core.formats.kit import Kit
from core.formats.workspace import AnalystWorkspace, SiteWorkspace
from core.participant import ParticipantRound, apply_package, check_package
from core.robustness import scale_flags
from tests.formats.test_envelope import raw_npy, seal_members
from tests.support.cli import run
from tests.support.roundkit import small_dc_round


@pytest.fixture(scope="module")
def rnd(tmp_path_factory):
    """Analyst, two sites (no roster), a ``dc`` kit, a plain anchor, one bundle per site and their packages."""
    d = tmp_path_factory.mktemp("trust")
    r = small_dc_round(d, "trust", rows=160, seed=5, epochs=3, anchor_rows=80)
    frame = r.frame
    r.ws, r.csv, r.bundles = [], [], []
    for i, site in enumerate(r.sites):
        part = frame.iloc[20 + 70 * i: 90 + 70 * i].copy()
        part["note"] = ["=HYPERLINK(\"http://evil\")", "@SUM(1)", "-1.5", "plain"] * 17 + ["x", "y"]
        part.to_csv(d / f"site{i}.csv", index=False)
        ws = SiteWorkspace(d / f"site{i}.ws")
        job = ParticipantRound(r.kit, r.kit_path, site, ws, anchor=r.anchor, site_settings={"seed": i})
        job.confirm_analyst(r.kit.analyst, how="test")
        job.accept_privacy_risk("test: a simulated site accepts its poor verdicts")
        job.load(d / f"site{i}.csv")
        r.bundles.append(job.seal(d / "bundles" / f"site{i}.dcbundle"))
        r.ws.append(ws)
        r.csv.append(d / f"site{i}.csv")
    r.session = AnalystRound(r.kit, r.analyst, AnalystWorkspace(d / "analyst.ws"))
    for site in r.sites:
        r.session.confirm(site.card)
    r.received = [r.session.open_bundle(b.path) for b in r.bundles]
    r.result = r.session.run(r.received)
    r.out = r.session.export(r.result, d / "out")
    return r


# ---- trust on first use at the site ---------------------------------------------------------------------------

def test_site_pins_the_analyst_and_refuses_a_substituted_kit(rnd, tmp_path, capsys):
    pin = rnd.ws[0].pinned_analyst(rnd.kit.project_id)
    assert pin["fingerprint"] == rnd.analyst.card.fingerprint
    impostor = Identity.generate("analyst")
    fake = Kit.from_dict({**rnd.kit.to_dict(), "analyst": impostor.card.to_dict()})
    fake.save(tmp_path / "fake.dckit", impostor)
    fake = Kit.load(tmp_path / "fake.dckit")
    assert fake.project_id == rnd.kit.project_id
    with pytest.raises(VerificationError) as err:
        ParticipantRound(fake, tmp_path / "fake.dckit", rnd.sites[0], rnd.ws[0], anchor=rnd.anchor)
    assert impostor.card.fingerprint in str(err.value) and rnd.analyst.card.fingerprint in str(err.value)
    assert Kit.load(rnd.ws[0].kit_path(rnd.kit.project_id)).analyst.key_id == rnd.analyst.card.key_id
    assert run("kit", "show", rnd.kit_path) == 0
    out = capsys.readouterr().out
    for text in (rnd.kit.project_id, rnd.analyst.card.fingerprint, "x0, x1, x2, x3", "method:      dc"):
        assert text in out


# ---- the analyst confirms every sender, before decryption -----------------------------------------------------

def test_an_unconfirmed_sender_costs_only_its_header(rnd, tmp_path, monkeypatch):
    session = AnalystRound(rnd.kit, rnd.analyst, AnalystWorkspace(tmp_path / "ws"))

    def boom(*args, **kwargs):
        raise AssertionError("an unconfirmed sender's file reached the signature check or decryption")

    with monkeypatch.context() as m:
        m.setattr(env, "_verify_outer", boom)
        m.setattr(env, "_decrypt", boom)
        with pytest.raises(UnconfirmedSender) as err:
            session.open_bundle(rnd.bundles[0].path)
        assert rnd.sites[0].card.fingerprint in str(err.value) and "--confirm" in str(err.value)
        report = session.try_import(rnd.bundles[0].path)
        assert report.status == "unconfirmed" and report.card.key_id == rnd.sites[0].card.key_id
        assert [c.fingerprint for _, c in session.unconfirmed([b.path for b in rnd.bundles])] == \
            [s.card.fingerprint for s in rnd.sites]
    # a second "site0" with another key is just another unconfirmed sender
    other = Identity.generate("site0")
    assert session.confirm(rnd.sites[0].card.fingerprint) == rnd.sites[0].card.fingerprint  # typed fingerprint
    assert session.open_bundle(rnd.bundles[0].path).site == "site0"
    assert other.card.fingerprint not in session.confirmed_fingerprints()
    with pytest.raises(ConfigError):
        session.confirm("not-a-fingerprint")
    assert any(e["event"] == "confirm-site" for e in session.workspace.audit.entries())


# ---- malformed input ends in the product's error -----------------------------------------------------------

@pytest.mark.parametrize("shape", ["(3, ", "(-3,)", "(True,)", f"({2 ** 62}, {2 ** 62})", "('a',)"])
def test_bad_npy_headers_are_refused(tmp_path, shape):
    site, analyst = Identity.generate("s"), Identity.generate("a")
    head = ("{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }").encode()
    head += b" " * (-(len(head) + 11) % 64) + b"\n"
    member = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head + bytes(24)
    seal_members(tmp_path / "b.dcbundle", [("x.npy", member)], site, analyst)
    with pytest.raises(FormatError, match="x.npy"):
        env.open_sealed(tmp_path / "b.dcbundle", analyst, expect_kind="bundle")


def test_a_zip_directory_claiming_millions_of_entries_is_refused_before_parsing(tmp_path):
    site, analyst = Identity.generate("s"), Identity.generate("a")
    seal_members(tmp_path / "ok.dcbundle", [("y.npy", raw_npy("|i1", (3,), b"\1\0\2"))], site, analyst)
    plain = env.zip_members([("y.npy", raw_npy("|i1", (3,), b"\1\0\2"))]).getvalue()
    huge = plain[:-12] + struct.pack("<HL", 0xFFFF - 1, 3_000_000 * 46) + plain[-6:]
    with pytest.raises(FormatError, match="members|directory"):
        env._check_directory_size(memoryview(huge), env.DEFAULT_LIMITS)


def test_deep_json_and_non_ascii_kit_signatures_are_refused(rnd, tmp_path):
    doc = json.loads(rnd.kit_path.read_text())
    (tmp_path / "deep.dckit").write_text('{"format": "dcstudio/kit/v1", "kit": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(FormatError, match="deeper"):
        Kit.load(tmp_path / "deep.dckit")
    (tmp_path / "sig.dckit").write_text(json.dumps({**doc, "signature": "é" * 88}))
    with pytest.raises(FormatError):
        Kit.load(tmp_path / "sig.dckit")
    body = {**doc["kit"], "roster": "everyone"}
    (tmp_path / "roster.dckit").write_text(json.dumps({**doc, "kit": body}))
    with pytest.raises(FormatError, match="roster"):
        Kit.load(tmp_path / "roster.dckit")


@pytest.mark.parametrize("params", [{"seed_rows": [[1.0, 2.0], [3.0]], "k": 3},
                                    {"seed_rows": [[1.0, float("nan")], [3.0, 4.0]], "k": 3},
                                    {"seed_rows": [[1.0, 2.0], [3.0, 4.0]], "k": 0},
                                    {"seed_rows": [[1.0, 2.0], [3.0, 4.0]], "k": 2, "a": -1}])
def test_malformed_anchors_are_refused(tmp_path, params):
    doc = {"format": "dcstudio/anchor/v1", "project_id": "p", "kind": "smote", "rows": 10, "secret": "00" * 32,
           "params": params, "created": ""}
    text = json.dumps(doc).replace("NaN", "1e999")
    (tmp_path / "a.dcanchor").write_text(text)
    with pytest.raises(FormatError):
        AnchorFile.load(tmp_path / "a.dcanchor")


def test_packages_are_checked_against_the_kit(rnd):
    opened = env.open_sealed(rnd.out.packages[0].path, rnd.sites[0], expect_kind="package")
    manifest, arrays = opened.payload.manifest, dict(opened.payload.arrays)
    rows = int(rnd.ws[0].load_export(rnd.kit.project_id, rnd.bundles[0].digest)[0]["rows"])
    check_package(rnd.kit, manifest, arrays, rows)
    with pytest.raises(FormatError, match="zero"):
        check_package(rnd.kit, manifest, {**arrays, "scaler_scale": np.zeros_like(arrays["scaler_scale"])}, rows)
    with pytest.raises(FormatError, match="class"):
        check_package(rnd.kit, {**manifest, "classes": ["a", "=HYPERLINK(1)"]}, arrays, rows)
    bad = {k: v.copy() for k, v in arrays.items()}
    bad[next(k for k, v in bad.items() if v.dtype.kind == "f" and v.size)].flat[0] = np.nan
    with pytest.raises(FormatError, match="non-finite"):
        check_package(rnd.kit, manifest, bad, rows)


def test_csv_cells_that_spreadsheets_would_run_are_escaped(rnd, tmp_path):
    assert [safe_cell(v) for v in ("=1+1", "+A1", "@SUM(1)", "\tx", "\rx", "-1.5", "+3", "ok", 7)] == \
        ["'=1+1", "'+A1", "'@SUM(1)", "'\tx", "'\rx", "-1.5", "+3", "ok", 7]
    res = apply_package(rnd.out.packages[0].path, rnd.sites[0], rnd.csv[0], tmp_path / "r.csv", workspace=rnd.ws[0])
    out = pd.read_csv(res.out_path, dtype=str, keep_default_na=False)
    assert set(out["note"]) == {"'=HYPERLINK(\"http://evil\")", "'@SUM(1)", "-1.5", "plain", "x", "y"}


def _capturing(real, captured: dict):
    def call(*a):
        captured["a"] = a
        return real(*a)
    return call


def test_apply_reads_the_csv_once_and_writes_what_the_whole_file_way_wrote(rnd, tmp_path, monkeypatch):
    """Apply streams the CSV block by block (issue #36): the whole-file reading is never called, and RESULT.csv is
    byte for byte what reading the whole CSV as text, escaping every cell and ``to_csv`` wrote (the CSV with formula
    cells, and a plain copy with CRLF line ends). With blocks of a few rows the package's model is replaced by a
    row-by-row function (BLAS gives a product of a few rows other last bits, hence tall blocks; test_result_csv.py);
    with the real model the file is one block."""
    import core.participant as participant
    from core.data import blocks
    from core.methods.dccfl import DCCFL
    from tests.data.test_result_csv import small_blocks, whole_file_way

    plain = tmp_path / "plain.csv"
    plain.write_bytes(pd.read_csv(rnd.csv[0]).drop(columns="note").to_csv(index=False, lineterminator="\r\n").encode())

    def whole_read(*_a, **_k):
        raise AssertionError("the CSV was read whole")

    def row_by_row(_method, _manifest, _private, X, _apply, **_kw):
        p = 1 / (1 + np.exp(-X[:, 0]))
        return {"prediction": np.where(p > 0.5, "a", "=b").astype(object), "prob_a": p, "prob_b": 1 - p}, None

    for csv, tiny in ((rnd.csv[0], True), (plain, True), (rnd.csv[0], False)):
        with monkeypatch.context() as m:
            if tiny:
                small_blocks(m, 300)
                m.setattr(participant, "promised_columns", row_by_row)
            with monkeypatch.context() as m2:
                m2.setattr(participant, "read_table", whole_read)
                streamed = apply_package(rnd.out.packages[0].path, rnd.sites[0], csv, tmp_path / "s.csv",
                                         workspace=rnd.ws[0])
            assert tiny == (len(list(blocks.BlockReader(csv, rnd.kit.schema, tables=False))) > 3)
            captured: dict = {}
            m.setattr(DCCFL, "apply_per_row", False)  # the whole-file way
            m.setattr(participant, "write_result_csv", _capturing(participant.write_result_csv, captured))
            whole = apply_package(rnd.out.packages[0].path, rnd.sites[0], csv, tmp_path / "w.csv",
                                  workspace=rnd.ws[0])
        _, _, _, _, fmt, out_fmt, ending, columns = captured["a"]
        assert streamed.rows == whole.rows == len(next(iter(columns.values())))
        assert streamed.columns == whole.columns and streamed.choice == whole.choice
        data = (tmp_path / "s.csv").read_bytes()
        assert data == (tmp_path / "w.csv").read_bytes() == whole_file_way(csv, fmt, out_fmt, ending, columns)


# ---- crash-safe order -----------------------------------------------------------------------------------------

def test_a_failed_state_save_leaves_no_bundle_and_stale_parts_are_cleaned(rnd, tmp_path):
    def fail(_sealed):
        raise OSError("disk full")

    with pytest.raises(OSError):
        env.seal(tmp_path / "x.dcbundle", env.Payload({}, {"y": np.arange(3)}), kind="bundle", project_id="p",
                 sender=rnd.sites[0], recipient=rnd.analyst.card, before_publish=fail)
    assert list(tmp_path.iterdir()) == []
    dead = tmp_path / ".x.dcbundle.999999999.abc.part"
    alive = tmp_path / f".y.dcbundle.{os.getpid()}.abc.part"
    dead.write_bytes(b"half")
    alive.write_bytes(b"half")
    assert clean_stale_parts(tmp_path) == 1 and not dead.exists() and alive.exists()


def test_an_interrupted_publish_is_finished_or_undone(rnd, tmp_path):
    out = tmp_path / "out"
    stage = tmp_path / ".out.999999999.staging"
    stage.mkdir()
    (stage / "a.dcpkg").write_bytes(b"x")
    recover_outputs(out)  # incomplete (no summary.json): discarded
    assert not stage.exists() and not out.exists()
    stage.mkdir()
    (stage / "a.dcpkg").write_bytes(b"x")
    (stage / "summary.json").write_text("{}")
    recover_outputs(out)  # complete: published
    assert (out / "summary.json").exists() and not stage.exists()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="other files"):
        rnd.session.export(rnd.result, tmp_path / "other")
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


# ---- audit log ---------------------------------------------------------------------------------------------

def test_audit_head_is_bound_into_each_file_and_edits_block_appends(rnd, tmp_path, capsys):
    heads = [e for e in rnd.ws[0].audit.entries() if e["event"] == "export"]
    assert heads and env.inspect(rnd.bundles[0].path).audit_head != env.NO_AUDIT
    package_head = env.inspect(rnd.out.packages[0].path).audit_head
    assert package_head == json.loads(rnd.out.summary.read_text())["run"]["audit_head"]
    log = AuditLog(tmp_path / "audit.jsonl", rnd.analyst)
    for i in range(3):
        log.append("x", n=i)
    lines = log.path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"n":1', b'"n":5')
    log.path.write_bytes(b"\n".join(lines))
    with pytest.raises(VerificationError, match="line 3"):
        log.append("more")
    assert run("audit", "verify", rnd.ws[0].root) == 0
    assert "chain intact" in capsys.readouterr().out
    assert run("audit", "verify", tmp_path / "audit.jsonl") == 1


# ---- package re-use ---------------------------------------------------------------------------------------

def test_reapplying_warns_and_an_older_package_is_refused_unless_allowed(rnd, tmp_path):
    """Issue #26 finding 6: going back to an older analyst run for the same bundle is refused, naming both
    runs, unless the site says it means it (``allow_older``); nothing is written when refused."""
    first = apply_package(rnd.out.packages[1].path, rnd.sites[1], rnd.csv[1], tmp_path / "1.csv",
                          workspace=rnd.ws[1])
    assert first.warnings == [] or all("already" in w for w in first.warnings)
    again = apply_package(rnd.out.packages[1].path, rnd.sites[1], rnd.csv[1], tmp_path / "2.csv",
                          workspace=rnd.ws[1])
    assert any("already applied" in w for w in again.warnings)
    newer = rnd.session.export(rnd.result, tmp_path / "rerun")
    apply_package(newer.packages[1].path, rnd.sites[1], rnd.csv[1], tmp_path / "3.csv", workspace=rnd.ws[1])
    old_run = read_manifest_of(rnd.out.packages[1].path, rnd.sites[1])["run_id"]
    new_run = read_manifest_of(newer.packages[1].path, rnd.sites[1])["run_id"]
    assert old_run != new_run
    with pytest.raises(ConfigError, match="older") as refused:
        apply_package(rnd.out.packages[1].path, rnd.sites[1], rnd.csv[1], tmp_path / "4.csv", workspace=rnd.ws[1])
    assert old_run in refused.value.message and new_run in refused.value.message
    assert "--allow-older" in refused.value.message and not (tmp_path / "4.csv").exists()
    old = apply_package(rnd.out.packages[1].path, rnd.sites[1], rnd.csv[1], tmp_path / "4.csv",
                        workspace=rnd.ws[1], allow_older=True)
    assert any("older" in w and "on purpose" in w for w in old.warnings)


def read_manifest_of(package, site):
    from core.formats.envelope import open_sealed

    return open_sealed(package, site, expect_kind="package").payload.manifest


# ---- one bad site -----------------------------------------------------------------------------------------

def test_a_site_wildly_out_of_scale_is_flagged(rnd):
    from core.methods import ReceivedBundle

    def copy(b, factor):
        arrays = {k: (v * factor if v.dtype.kind == "f" else v) for k, v in b.arrays.items()}
        return ReceivedBundle(b.site + str(factor), b.fingerprint + str(factor), b.digest, b.envelope_id,
                              b.manifest, arrays, b.card)

    bundles = [copy(rnd.received[0], 1.0), copy(rnd.received[1], 1.0), copy(rnd.received[0], 2.0),
               copy(rnd.received[1], 1e7)]
    flags = scale_flags(bundles)
    assert {f.site for f in flags} == {"site1" + str(1e7)} and {f.array for f in flags} == {"x_tilde", "anchor_tilde"}
    bundles[0].arrays["x_tilde"] = bundles[0].arrays["x_tilde"].copy()
    bundles[0].arrays["x_tilde"][0, 0] = 3e38
    assert "site01.0" in {f.site for f in scale_flags(bundles)}
    assert scale_flags(rnd.received) == []


# ---- permissions and passphrases --------------------------------------------------------------------------

def test_workspaces_are_private_whatever_the_umask(rnd, tmp_path):
    old = os.umask(0)
    try:
        ws = SiteWorkspace(tmp_path / "w")
        job = ParticipantRound(rnd.kit, rnd.kit_path, rnd.sites[0], ws, anchor=rnd.anchor, site_settings={"seed": 0})
        job.confirm_analyst(rnd.kit.analyst, how="test")
        job.accept_privacy_risk("test: a simulated site accepts its poor verdicts")
        job.load(rnd.csv[0])
        sealed = job.seal(tmp_path / "b.dcbundle")
    finally:
        os.umask(old)
    assert (ws.root.stat().st_mode & 0o777) == 0o700
    assert (ws.audit.path.stat().st_mode & 0o777) == 0o600
    folder = ws.export_dir(rnd.kit.project_id, sealed.digest)
    assert (folder.stat().st_mode & 0o777) == 0o700
    assert all((p.stat().st_mode & 0o777) == 0o600 for p in folder.iterdir())


def test_one_passphrase_policy_for_prompt_and_environment(tmp_path, monkeypatch, capsys):
    with pytest.raises(ConfigError, match="8 characters"):
        check_new_passphrase("short")
    with pytest.raises(ConfigError):
        check_new_passphrase("        ")
    check_new_passphrase("long enough")
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "x")
    assert run("keys", "new", "--name", "n", "--out", tmp_path, "--work-factor", "14") == 1
    assert "8 characters" in capsys.readouterr().err and not (tmp_path / "n.dcid").exists()


# ---- the anchor: no real row, encrypted to the participants ---------------------------------------------------

def test_default_anchor_has_no_real_row_and_travels_encrypted(rnd, tmp_path):
    X = read_table(rnd.csv[0], rnd.kit.schema, labels=False).X
    anchor = anchor_for_kit(rnd.kit, kind="smote", rows=50, local_X=X, rng=np.random.default_rng(0))
    seeds = np.asarray(anchor.params["seed_rows"])
    assert anchor.params["seed_source"] == "statistics"
    assert not any(np.isclose(seeds[:, None, :], X[None, :, :]).all(axis=2).any(axis=1))
    assert np.all(seeds >= X.min(0) - 1e-9) and np.all(seeds <= X.max(0) + 1e-9)
    assert statistics_seed(X, 10, np.random.default_rng(1)).shape == (10, X.shape[1])
    path = tmp_path / "a.dcanchor"
    anchor.save(path, [rnd.sites[0].card, rnd.sites[1].card])
    raw = path.read_bytes()
    assert b"secret" not in raw and anchor.secret.hex().encode() not in raw and (path.stat().st_mode & 0o777) == 0o600
    with pytest.raises(ConfigError, match="identity"):
        AnchorFile.load(path)
    with pytest.raises(VerificationError, match="not encrypted to this site"):
        AnchorFile.load(path, identity=rnd.analyst)
    for site in rnd.sites:
        loaded = AnchorFile.load(path, identity=site, expect_project=rnd.kit.project_id)
        assert np.array_equal(loaded.generate(), anchor.generate())
    flipped = bytearray(raw)
    flipped[-5] ^= 1
    (tmp_path / "f.dcanchor").write_bytes(bytes(flipped))
    with pytest.raises(DCError):
        AnchorFile.load(tmp_path / "f.dcanchor", identity=rnd.sites[0])


def test_the_report_and_cli_flag_and_exclude_sites(rnd, tmp_path):
    summary = json.loads(rnd.out.summary.read_text())
    assert summary["scale_flags"] == [] and summary["excluded"] == [] and len(summary["run"]["id"]) == 16
    one = rnd.session.run(rnd.received[:1], excluded=rnd.received[1:])
    out = rnd.session.export(one, tmp_path / "x")
    s = json.loads(out.summary.read_text())
    assert [e["site"] for e in s["excluded"]] == ["site1"] and len(out.packages) == 1
    assert "Sites excluded by the analyst" in out.report.read_text()




@pytest.mark.parametrize("change", [{"n_rows": "70"}, {"n_rows": -1}, {"n_rows": True}, {"kit_digest": 5},
                                    {"n_rows": 69}])
def test_bundle_manifest_fields_are_checked_before_use(rnd, tmp_path, change):
    opened = env.open_sealed(rnd.bundles[0].path, rnd.analyst, expect_kind="bundle")
    arrays = {k: np.array(v) for k, v in opened.payload.arrays.items()}
    env.seal(tmp_path / "b.dcbundle", env.Payload({**opened.payload.manifest, **change}, arrays), kind="bundle",
             project_id=rnd.kit.project_id, sender=rnd.sites[0], recipient=rnd.analyst.card)
    with pytest.raises(FormatError):
        rnd.session.open_bundle(tmp_path / "b.dcbundle")


def test_large_plaintext_is_decrypted_to_a_file_and_capped(rnd):
    path = rnd.bundles[0].path
    in_memory = env.open_sealed(path, rnd.analyst, expect_kind="bundle")
    mapped = env.open_sealed(path, rnd.analyst, expect_kind="bundle", limits=env.Limits(memory_plaintext_bytes=0))
    assert set(mapped.payload.arrays) == set(in_memory.payload.arrays)
    for name, a in in_memory.payload.arrays.items():
        assert np.array_equal(mapped.payload.arrays[name], a)
    with pytest.raises(FormatError, match="plaintext limit"):
        env.open_sealed(path, rnd.analyst, expect_kind="bundle", limits=env.Limits(max_plaintext_bytes=1000))


# ---- private state after a kill (issue #26 finding 5) -------------------------------------------------------

def test_an_export_folder_appears_whole_and_only_dead_staging_folders_are_removed(rnd, tmp_path):
    """The export's private state is staged whole, recorded in the audit log and only then renamed final, so a kill
    leaves no final folder without its line; opening the workspace again removes the staging folder of a killed
    export (never published) and nothing else: no log is read to decide (issue #32 finding 1)."""
    import shutil

    from core.fileio import STAGING_SUFFIX

    ws = rnd.ws[0]
    exports = next((ws.root / "projects").glob("*/exports"))
    kept = sorted(p.name for p in exports.iterdir())
    assert kept and all((exports / k / "state.json").is_file() for k in kept)
    template = exports / kept[0]
    # what older versions left when killed mid-way: the arrays without state.json (kept: never removed unasked)
    half = exports / "0123456789abcdef"
    half.mkdir()
    for npy in template.glob("*.npy"):
        shutil.copy(npy, half / npy.name)
    # a killed export's staging folder (its process is gone)
    dead = _dead_pid()
    staging = exports / f".fedcba9876543210.{dead}{STAGING_SUFFIX}"
    shutil.copytree(template, staging)
    # a live writer's staging folder is left alone
    live = exports / f".fedcba9876543211.{os.getpid()}{STAGING_SUFFIX}"
    shutil.copytree(template, live)
    # a whole folder that no export line of the log names (an earlier version killed before its line): kept
    unexported = exports / "00000000aaaaaaaa"
    shutil.copytree(template, unexported)
    SiteWorkspace(ws.root)
    assert sorted(p.name for p in exports.iterdir()) == sorted(
        [*kept, half.name, unexported.name, live.name])
    shutil.rmtree(half), shutil.rmtree(unexported), shutil.rmtree(live)


def _dead_pid() -> int:
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ---- first use (issue #26 finding 7) ---------------------------------------------------------------------------

def test_a_first_kit_is_refused_until_the_analyst_fingerprint_is_confirmed(rnd, tmp_path):
    """A workspace that has never seen the project seals nothing to the kit's signer until the site confirms the
    fingerprint the analyst read out (typed, scanned or their card); a wrong one is refused naming both; later
    kits of the project need nothing (the key is pinned, with how it was confirmed)."""
    root = tmp_path / "fresh.ws"
    job = ParticipantRound(rnd.kit, rnd.kit_path, rnd.sites[0], root, anchor=rnd.anchor, site_settings={"seed": 0})
    assert job.first_use
    job.load(rnd.csv[0])
    with pytest.raises(ConfigError, match="--analyst-fingerprint") as refused:
        job.seal(tmp_path / "b.dcbundle")
    assert rnd.kit.analyst.fingerprint in refused.value.message
    assert not (tmp_path / "b.dcbundle").exists() and not root.exists()
    with pytest.raises(VerificationError, match="not that of the key"):
        job.confirm_analyst(Identity.generate("impostor").card.fingerprint, how="typed")
    with pytest.raises(ConfigError, match="not a fingerprint"):
        job.confirm_analyst("K8ZA-XT1E", how="typed")
    job.confirm_analyst(" " + rnd.kit.analyst.fingerprint.lower().replace("-", " "), how="typed")
    job.accept_privacy_risk("test: a simulated site accepts its poor verdicts")
    job.seal(tmp_path / "b.dcbundle")
    pin = json.loads(next(root.glob("projects/*/analyst.json")).read_text())["body"]  # signed by the site (§10.1)
    assert pin["fingerprint"] == rnd.kit.analyst.fingerprint and pin["confirmed"] == "typed"
    log = AuditLog(root / "audit.jsonl").entries()
    assert any(e["event"] == "pin-analyst" and e.get("confirmed") == "typed" for e in log)
    again = ParticipantRound(rnd.kit, rnd.kit_path, rnd.sites[0], root, anchor=rnd.anchor, site_settings={"seed": 1})
    assert not again.first_use
    again.load(rnd.csv[0])
    again.accept_privacy_risk("test: a simulated site accepts its poor verdicts")
    assert again.seal(tmp_path / "c.dcbundle").path.exists()

