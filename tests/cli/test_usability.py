"""Issue #11 ("for the people who click"), the core and CLI side: results written in the site's own CSV format,
help for every option, plain sentences, refusals that protect files, phases in the progress text, cluster
numbering from 1, and the report's fingerprints and heatmap."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.cli import build_parser
from core.control import JobControl
from core.fileio import portable_name, safe_name
from core.methods import FitContext
from core.wording import leaves_sentence
from tests.support import HANG_S
from tests.support.cli import WF, analyst_of, refused, run
from tests.support.roundkit import make_sites

PASS = "correct horse battery staple"
ROOT = Path(__file__).resolve().parents[2]
FRENCH = {"encoding": "cp1252", "sep": ";", "decimal": ","}


def _frenchify(path: Path, out: Path) -> None:
    """The file as a French-locale spreadsheet saves it: cp1252, ';', decimal comma, an accented column name."""
    frame = pd.read_csv(path).rename(columns={"x0": "cholestérol"})
    frame.to_csv(out, index=False, **FRENCH)


@pytest.fixture(scope="module")
def french_round(tmp_path_factory):
    """Two sites (one French-locale CSV), one analyst run with a fixed threshold (no threshold search)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", PASS)
    d = tmp_path_factory.mktemp("french")
    sites = make_sites(d / "data", rows=120)
    for f in (d / "data").glob("*.csv"):
        _frenchify(f, f)  # every file of the project has the accented column; site0's stays French
    for name in ("site1",):
        for f in sites[name]:
            pd.read_csv(f, **FRENCH).to_csv(f, index=False)  # the other site uses UTF-8 and commas
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Étude cardiologie",
               "--schema-from", d / "data/site1-train.csv", "--label", "label", "--set", "t=1",
               "--set", "epochs=5", "--set", "seed=2", "--out", d / "p.dckit") == 0
    assert run("anchor", "new", "--kit", d / "p.dckit", "--seed-csv", d / "data/site1-train.csv",
               "--seed-rows", "30", "--plain", "--out", d / "p.dcanchor") == 0
    names = {"site0": "Hôpital du Val-d'Oise", "site1": "Klinikum Süd"}
    for key, name in names.items():
        assert run("keys", "new", "--name", name, "--out", d / "ids", *WF) == 0
        assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "p.dcanchor",
                   "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                   "--identity", d / "ids" / f"{safe_name(name)}.dcid", "--csv", sites[key][0],
                   "--out", d / "bundles" / f"{safe_name(name)}.dcbundle", "--seed", "1") == 0
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", "--confirm",
               *[d / "ids" / f"{safe_name(n)}.dcpub" for n in names.values()]) == 0
    yield d, sites, names
    mp.undo()


# ---- 1. RESULT.csv in the site's own format ------------------------------------------------------------------
def test_result_csv_round_trips_in_the_inputs_own_format(french_round, capsys):
    d, sites, names = french_round
    ident = d / "ids" / f"{safe_name(names['site0'])}.dcid"
    pkg = d / "out" / f"{portable_name(names['site0'])}.dcpkg"  # FORMAT §11: [A-Za-z0-9_.-]
    test_csv = sites["site0"][1]
    capsys.readouterr()
    assert run("participant", "apply", "--package", pkg, "--identity", ident, "--csv", test_csv,
               "--out", d / "RESULT.csv") == 0
    out = capsys.readouterr().out
    assert "Windows-1252, separated by semicolons, decimal comma" in out and "(like the input)" in out
    raw = (d / "RESULT.csv").read_bytes()
    raw.decode("cp1252")
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")  # really cp1252: "é" is one byte
    back = pd.read_csv(d / "RESULT.csv", **FRENCH)
    original = pd.read_csv(test_csv, **FRENCH)
    assert "cholestérol" in back.columns and len(back) == len(original)
    np.testing.assert_allclose(back["cholestérol"], original["cholestérol"])  # values unchanged, still read
    probs = [c for c in back.columns if c.startswith("prob_")]
    assert probs and all(back[c].dtype.kind == "f" for c in probs)  # "0,87" read back as numbers
    np.testing.assert_allclose(back[probs].sum(axis=1), 1, atol=1e-5)
    assert b'"' not in raw.splitlines()[1]  # no quoted "56,0" cells
    # overridable
    assert run("participant", "apply", "--package", pkg, "--identity", ident, "--csv", test_csv,
               "--out", d / "RESULT-utf8.csv", "--out-encoding", "utf-8", "--out-delimiter", ",",
               "--out-decimal", ".") == 0
    again = pd.read_csv(d / "RESULT-utf8.csv")
    assert "cholestérol" in again.columns
    np.testing.assert_allclose(again[probs].to_numpy(), back[probs].to_numpy())


# ---- 8. files are protected ------------------------------------------------------------------------------------
def test_apply_never_overwrites_its_input(french_round, capsys):
    d, sites, names = french_round
    test_csv = sites["site0"][1]
    before = test_csv.read_bytes()
    refused(capsys, "participant", "apply", "--package", d / "out" / f"{safe_name(names['site0'])}.dcpkg",
            "--identity", d / "ids" / f"{safe_name(names['site0'])}.dcid", "--csv", test_csv,
            "--out", test_csv, expect="overwrite the CSV")
    assert test_csv.read_bytes() == before


def test_reexport_needs_force_and_a_failed_export_leaves_no_workspace(french_round, capsys, tmp_path):
    d, sites, names = french_round
    ident = d / "ids" / f"{safe_name(names['site1'])}.dcid"
    bundle = d / "bundles" / f"{safe_name(names['site1'])}.dcbundle"
    before = bundle.read_bytes()
    args = ["participant", "export", "--kit", d / "p.dckit", "--anchor", d / "p.dcanchor", "--identity", ident,
            "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
            "--csv", sites["site1"][0], "--out", bundle]
    refused(capsys, *args, expect="--force")
    assert bundle.read_bytes() == before
    ws = tmp_path / "fresh-ws"
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    refused(capsys, "participant", "export", "--kit", d / "p.dckit", "--anchor", d / "p.dcanchor",
            "--identity", ident, "--csv", bad, "--out", tmp_path / "x.dcbundle", "--workspace", ws,
            expect="has no column")
    assert not ws.exists() and not (tmp_path / "x.dcbundle").exists()


def test_file_names_keep_letters():
    assert safe_name("Hôpital du Val-d'Oise") == "Hôpital du Val-d'Oise"
    assert safe_name('a/b:c*?"<>|') == "a_b_c_"
    assert safe_name("CON") == "CON_" and safe_name(" . ") == "site"


def test_bundle_file_names_and_anchor_rows(french_round):
    d, _, names = french_round
    assert (d / "bundles" / "Hôpital du Val-d'Oise.dcbundle").exists()
    from core.formats.anchor import AnchorFile

    anchor = AnchorFile.load(d / "p.dcanchor")
    seeds = len(anchor.params["seed_rows"])  # extended SMOTE draws as many rows from every seed row
    assert anchor.rows == 1000 and anchor.generated_rows == len(anchor.generate()) == seeds * -(-1000 // seeds)
    summary = json.loads((d / "out/summary.json").read_text())
    assert all(s["site"] in names.values() for s in summary["sites"])


# ---- 7. the CLI -----------------------------------------------------------------------------------------------
def test_bare_dcstudio_prints_help(capsys):
    assert run() == 0
    out = capsys.readouterr().out
    assert "usage: dcstudio" in out and "DCSTUDIO_PASSPHRASE" in out and "participant" in out
    assert run("participant") == 0 and "export" in capsys.readouterr().out


def _parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_option_has_help():
    missing = [f"{p.prog} {a.dest}" for p in _parsers(build_parser()) for a in p._actions
               if not isinstance(a, argparse._SubParsersAction) and not a.help]
    assert not missing, missing


def test_passphrase_variable_is_documented():
    assert "DCSTUDIO_PASSPHRASE" in (ROOT / "README.md").read_text()


def test_run_and_export_say_what_they_did(french_round, capsys, tmp_path):
    d, sites, names = french_round
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", tmp_path / "out2") == 0
    out = capsys.readouterr().out
    for name in names.values():
        assert any(line.strip().startswith(f"{name}:") and "rows, cluster 1" in line for line in out.splitlines())
    ident = d / "ids" / f"{safe_name(names['site0'])}.dcid"
    assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "p.dcanchor",
               "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy", "--identity",
               ident, "--csv", sites["site0"][0], "--out", tmp_path / "b.dcbundle") == 0
    out = capsys.readouterr().out
    assert "Windows-1252, separated by semicolons, decimal comma (detected" in out
    assert "A compressed copy of your" in out


def test_refusals_speak_plainly(french_round, capsys, tmp_path):
    d, sites, names = french_round
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "x.dcbundle").write_bytes(b"")
    refused(capsys, "analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
            "--bundles", empty, "--out", tmp_path / "o", "--workspace", tmp_path / "ws", expect="empty (0 bytes)")
    ident = d / "ids" / f"{safe_name(names['site0'])}.dcid"
    refused(capsys, "participant", "export", "--kit", d / "p.dckit", "--identity", ident, "--csv", sites["site0"][0],
            "--out", tmp_path / "n.dcbundle", expect="--anchor")
    # a column named with other case/accents: "did you mean"
    frame = pd.read_csv(sites["site0"][0], **FRENCH).rename(columns={"cholestérol": "Cholesterol"})
    frame.to_csv(tmp_path / "case.csv", index=False, **FRENCH)
    err = refused(capsys, "participant", "export", "--kit", d / "p.dckit", "--anchor", d / "p.dcanchor",
                  "--identity", ident, "--csv", tmp_path / "case.csv", "--out", tmp_path / "c.dcbundle",
                  expect="did you mean 'Cholesterol'")
    assert "'cholestérol'" in err


def test_wrong_project_is_named(french_round, capsys, tmp_path):
    d, sites, names = french_round
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Other study",
               "--schema-from", d / "data/site1-train.csv", "--label", "label", "--out", tmp_path / "o.dckit") == 0
    refused(capsys, "analyst", "import", "--kit", tmp_path / "o.dckit", "--identity", d / "analyst/analyst.dcid",
            "--bundle", d / "bundles" / f"{safe_name(names['site1'])}.dcbundle", "--workspace", tmp_path / "ws",
            expect="not to project 'Other study' (id ")
    ident = d / "ids" / f"{safe_name(names['site0'])}.dcid"
    refused(capsys, "participant", "export", "--kit", tmp_path / "o.dckit", "--anchor", d / "p.dcanchor",
            "--identity", ident, "--csv", sites["site0"][0], "--out", tmp_path / "w.dcbundle",
            expect="not to project 'Other study'")


# ---- 3. plain words ---------------------------------------------------------------------------------------------
def test_leaves_sentence_is_plain():
    assert leaves_sentence(4537, 16, 15) == ("A compressed copy of your 4,537 rows: 15 numbers per row instead of "
                                             "16; no names, no original values.")
    assert "secret" not in leaves_sentence(10, 3, 3) and "each a weighted mix" in leaves_sentence(10, 3, 3)
    assert "the class of each row" in leaves_sentence(10, 3, 2, labels="rows")


# ---- 4. progress: phases, one monotone bar ---------------------------------------------------------------------
def test_job_control_phases_and_monotone_fraction():
    seen = []
    c = JobControl(lambda f, t: seen.append((f, t)))
    c.phase("choosing")
    s = c.sub(0.0, 0.5)
    s.phase("3 models")
    s.step(0.5, "epoch 1 of 2")
    s.step(0.2, "late")  # never backwards
    c.phase("final")
    c.sub(0.5, 1.0).step(0.5, "epoch 1 of 2")
    assert seen == [(0.25, "choosing: 3 models: epoch 1 of 2"), (0.25, "choosing: 3 models: late"),
                    (0.75, "final: epoch 1 of 2")]


def test_dccfl_training_reports_its_phases():
    import tempfile

    from benchmarks.simulation.projects import build_project
    from core.methods import get_method

    with tempfile.TemporaryDirectory() as tmp:
        p = build_project(Path(tmp) / "p", n_sites=3, rows=80, epochs=3)
        from core.analyst import AnalystRound
        from core.formats.envelope import read_header
        from core.formats.identity import Identity
        from core.formats.kit import Kit
        from core.formats.workspace import AnalystWorkspace

        kit = Kit.load(p.kit)
        session = AnalystRound(kit, Identity.load(p.identity, p.passphrase), AnalystWorkspace(Path(tmp) / "ws"))
        for b in p.bundles:
            session.confirm(read_header(b).sender)
        ids = [r.envelope_id for r in session.import_bundles(p.bundles)]
        seen = []
        m = get_method("dccfl", {**kit.settings, "t": "auto", "t_grid": [0.2, 0.6, 1.0], "epochs": 3,
                                 "own_model": False, "site_intercepts": False})  # every site gets a group MLP:
        # its epochs are reported
        m.fit(session.received(ids), FitContext(list(kit.schema.classes),
                                               control=JobControl(lambda f, t: seen.append((f, t)))))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    texts = [t for _, t in seen]
    choosing = [t for t in texts if t.startswith("step 1 of 2, choosing the threshold")]
    final = [t for t in texts if t.startswith("step 2 of 2, training the final model")]
    assert choosing and final and texts.index(choosing[-1]) < texts.index(final[0])
    assert any(t.endswith("epoch 3 of 3") for t in final)


# ---- 6. the report ----------------------------------------------------------------------------------------------
def test_report_heatmap_names_sites_and_shows_values():
    from core.report import heatmap_svg

    svg = heatmap_svg(np.array([[0, 0.25], [0.25, 0]]), ["Hôpital A", "Klinikum B"])
    assert "1 · Hôpital A" in svg and "2 · Klinikum B" in svg and ">0.25<" in svg


def test_summary_and_report_number_clusters_from_1(french_round):
    d, _, _ = french_round
    summary = json.loads((d / "out/summary.json").read_text())
    assert {s["cluster"] for s in summary["sites"]} == {1}  # t = 1: one cluster, called 1
    report = (d / "out/report.html").read_text()
    assert "Clusters are numbered from 1" in report
    assert 'style="white-space:nowrap"><code style="white-space:nowrap' in report  # fingerprints never wrap


# ---- 9. the first window ----------------------------------------------------------------------------------------
def test_start_window_module_loads_no_heavy_library():
    code = ("import sys, gui.app; heavy = [m for m in ('numpy', 'pandas', 'sklearn', 'pyqtgraph', 'torch') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"})
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_site_export_path_loads_no_scipy_sklearn_or_torch():
    """A site's export imports numpy, pandas and the product only (scipy alone costs ~0.3–1 s per export)."""
    code = ("import sys, core.participant, core.methods; heavy = [m for m in ('scipy', 'sklearn', 'torch') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_first_export_asks_for_the_analyst_fingerprint(french_round, capsys, tmp_path):
    """Issue #26 finding 7: the first kit of a project in a workspace is refused until the analyst's fingerprint is
    confirmed (--analyst-fingerprint: as read out, or their card); a wrong one names both keys."""
    d, sites, names = french_round
    ident = d / "ids" / f"{safe_name(names['site0'])}.dcid"
    args = ("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "p.dcanchor", "--identity", ident,
            "--csv", sites["site0"][0], "--workspace", tmp_path / "ws", "--accept-poor-privacy")
    refused(capsys, *args, "--out", tmp_path / "a.dcbundle", expect="--analyst-fingerprint")
    assert not (tmp_path / "a.dcbundle").exists() and not (tmp_path / "ws").exists()
    refused(capsys, *args, "--out", tmp_path / "a.dcbundle", "--analyst-fingerprint", "AAAA-BBBB-CCCC-DDDD",
            expect="not that of the key")
    assert run(*args, "--out", tmp_path / "a.dcbundle", "--analyst-fingerprint", d / "analyst/analyst.dcpub") == 0
    assert "confirmed (card analyst.dcpub)" in capsys.readouterr().out
    assert run(*args, "--out", tmp_path / "b.dcbundle") == 0  # the key is pinned now
