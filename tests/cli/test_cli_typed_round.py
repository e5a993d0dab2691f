"""A whole CLI round on a table with text columns and missing cells, with the kit's defaults (issue #22):
kit new → anchor new → participant export → analyst run → participant apply."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pandas as pd
import pytest

import core.participant
from core.data.public_stats import rounded_shares
from core.formats.kit import Kit
from tests.support.cli import WF, analyst_of, anchor_to, apply_packages, confirm, run
from tests.support.typedkit import make_typed_sites


def _run_out(*argv) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run(*argv) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def typed_round(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", "correct horse battery staple")
    d = tmp_path_factory.mktemp("typed")
    sites = make_typed_sites(d / "data")
    said = {}
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    said["kit"] = _run_out("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Clinical",
                           "--schema-from", d / "data/sample.csv", "--label", "outcome", "--ignore", "note",
                           "--out", d / "p.dckit")
    said["show"] = _run_out("kit", "show", d / "p.dckit")
    for name in sites:
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
    assert run("anchor", "new", "--kit", d / "p.dckit", "--csv", sites["site0"][0],
               "--out", d / "site0/p.dcanchor", *anchor_to(d, "site0", sites)) == 0
    for name, (train, _) in sites.items():
        said[name] = _run_out("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "site0/p.dcanchor",
                              "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                              "--identity", d / name / f"{name}.dcid", "--csv", train,
                              "--out", d / "bundles" / f"{name}.dcbundle")
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, sites)) == 0
    spy: list = []  # the fill values each apply reads its CSV with (block by block, or the whole file)
    for reader in ("read_table", "BlockReader"):
        real = getattr(core.participant, reader)
        mp.setattr(core.participant, reader,
                   lambda *a, _real=real, **k: (spy.append(k.get("fill_values")), _real(*a, **k))[1])
    apply_packages(d, {name: test for name, (_, test) in sites.items()})
    mp.undo()
    mp.setenv("DCSTUDIO_PASSPHRASE", "correct horse battery staple")
    yield d, sites, said, spy
    mp.undo()


def test_kit_new_and_show_confirm_types_policies_and_left_out_columns(typed_round):
    _, _, said, _ = typed_round
    for text in (said["kit"], said["show"]):
        assert "sex                  binary       F (reference), M" in text
        assert "rx                   categorical  Lev, Lev+5FU, Obs" in text
        assert "nodes                numeric" in text  # two numbers in a 120-row sample: too few to call binary
        assert "impute + indicator" in text and "matrix: 10 encoded column(s) from 5 column(s)" in text
        assert "left out: 'pid': identifier: every value is different" in text
        assert "left out: 'note': left out by the analyst" in text
    assert "column 'age': 15 of 120 cells missing in the sample (12 %)" in said["kit"]
    assert "column 'nodes': only two numbers (0, 1) in the sample's 120 rows" in said["kit"]


def test_export_fills_missing_cells_and_says_how_many(typed_round):
    d, sites, said, _ = typed_round
    for name, (train, _) in sites.items():
        frame = pd.read_csv(train)
        text = said[name]
        assert f"missing cells filled: {int(frame[['age', 'sex', 'creat']].isna().sum().sum())}" in text
        assert f"age {int(frame['age'].isna().sum())} (with " in text and "encoded in the kit's 10 matrix" in text
        states = list((d / name).glob("*.workspace/projects/*/exports/*/state.json"))
        assert len(states) == 1
        fills = json.loads(states[0].read_text())["body"]["fill_values"]  # signed by the site (FORMAT §10.1)
        assert set(fills) == {"age", "sex", "creat"} and fills["sex"] in ("F", "M")
        assert fills["age"] == float(frame["age"].median())


def test_apply_reuses_the_exports_fill_values_and_predicts_every_row(typed_round):
    d, sites, _, spy = typed_round
    assert len(spy) == 3 and all(set(f) == {"age", "sex", "creat"} for f in spy)
    correct = total = 0
    for name, (_, test) in sites.items():
        result = pd.read_csv(d / name / "result.csv")
        truth = pd.read_csv(test)["outcome"]
        assert len(result) == len(truth) and result["prediction"].notna().all()
        correct += int((result["prediction"] == truth).sum())
        total += len(truth)
    assert correct / total > 0.65  # the outcome depends on the text columns: a model that dropped them does worse


def test_apply_predicts_a_level_the_kit_does_not_know_from_the_unseen_bucket(typed_round, capsys, tmp_path):
    """Apply never refuses a file for one row: the row is predicted from the column's unseen bucket, counted and
    said (and recorded in the audit line's warnings)."""
    d, sites, _, _ = typed_round
    frame = pd.read_csv(sites["site1"][1], keep_default_na=False)
    frame.loc[3, "rx"] = "Placebo"
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    capsys.readouterr()
    assert run("participant", "apply", "--package", d / "out/site1.dcpkg", "--identity", d / "site1/site1.dcid",
               "--csv", bad, "--out", tmp_path / "r.csv") == 0
    out = capsys.readouterr().out
    assert ("warning: column 'rx': 1 row holds a value the kit does not know ('Placebo' (1); its levels are Lev, "
            "Lev+5FU, Obs): it goes to the column's unseen bucket (unseen) (none of its levels)") in out
    result = pd.read_csv(tmp_path / "r.csv")
    assert len(result) == len(frame) and result["prediction"].notna().all()


@pytest.fixture(scope="module")
def merged_round(tmp_path_factory):
    """Two sites; the kit merges rx's Lev and Lev+5FU into 'treated' and site1's own spellings of sex."""
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", "correct horse battery staple")
    d = tmp_path_factory.mktemp("merged")
    sites = make_typed_sites(d / "data", sites=2, rows=120,
                             spellings={"site1": {"sex": {"M": "male", "F": "female"}}})
    said = {}
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    said["kit"] = _run_out("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Merged",
                           "--schema-from", d / "data/sample.csv", "--label", "outcome", "--ignore", "note",
                           "--levels", "rx=Obs,treated=Lev|Lev+5FU", "--levels", "sex=F=female,M=male|m",
                           "--out", d / "p.dckit")
    said["show"] = _run_out("kit", "show", d / "p.dckit")
    for name in sites:
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
    assert run("anchor", "new", "--kit", d / "p.dckit", "--csv", sites["site0"][0],
               "--out", d / "site0/p.dcanchor", *anchor_to(d, "site0", sites)) == 0
    for name, (train, _) in sites.items():
        assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "site0/p.dcanchor",
                   "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                   "--identity", d / name / f"{name}.dcid", "--csv", train,
                   "--out", d / "bundles" / f"{name}.dcbundle") == 0
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, sites)) == 0
    apply_packages(d, {name: test for name, (_, test) in sites.items()})
    yield d, sites, said
    mp.undo()


def test_kit_new_merges_raw_values_into_a_level_and_says_so(merged_round):
    d, _, said = merged_round
    for text in (said["kit"], said["show"]):
        assert "rx                   binary       Obs (reference), treated (= Lev, Lev+5FU)" in text
        assert "sex                  binary       F (= female) (reference), M (= male, m)" in text
    rx = next(f for f in Kit.load(d / "p.dckit").schema.features if f.name == "rx")
    assert rx.levels == ["Obs", "treated"] and rx.merged == {"treated": ["Lev", "Lev+5FU"]}
    sample = pd.read_csv(d / "data/sample.csv")
    obs = int((sample["rx"] == "Obs").sum())  # Lev and Lev+5FU count as treated; shares over rounded counts
    assert rx.frequencies[0] == pytest.approx(rounded_shares([obs, len(sample) - obs])[0])


def test_a_site_with_raw_values_exports_and_applies_as_the_kits_levels(merged_round, capsys, tmp_path):
    d, sites, _ = merged_round
    for name, (_, test) in sites.items():
        result = pd.read_csv(d / name / "result.csv")
        assert len(result) == len(pd.read_csv(test)) and result["prediction"].notna().all()
    frame = pd.read_csv(sites["site1"][1], keep_default_na=False)
    assert set(frame["sex"]) <= {"male", "female", "NA"} and "Lev+5FU" in set(frame["rx"])
    frame.loc[2, "sex"] = "M"  # the kit's level itself is read too; a spelling it does not know is bucketed
    frame.loc[4, "sex"] = "Male"
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    capsys.readouterr()
    assert run("participant", "apply", "--package", d / "out/site1.dcpkg", "--identity", d / "site1/site1.dcid",
               "--csv", bad, "--out", tmp_path / "r.csv") == 0
    assert ("column 'sex': 1 row holds a value the kit does not know ('Male' (1); its levels are F (= female), M "
            "(= male, m))") in capsys.readouterr().out


def test_a_small_three_class_table_with_many_missing_cells_runs_a_round_with_kit_defaults(tmp_path, monkeypatch):
    """The issue's second table: a few hundred patients over three sites, ten columns partly missing (up to a
    third of the rows), a text column ``sex``, three outcome classes — a whole round with nothing but defaults."""
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "correct horse battery staple")
    rng = np.random.default_rng(5)

    def table(n: int) -> pd.DataFrame:
        X = rng.normal(size=(n, 10))
        sex = rng.choice(["F", "M"], n)
        score = X[:, 0] + X[:, 1] - X[:, 2] + 0.8 * (sex == "M")
        frame = pd.DataFrame(X.round(3), columns=[f"lab{j}" for j in range(10)])
        for j in range(10):  # up to a third of each column missing
            frame.loc[rng.random(n) < 0.05 + 0.03 * j, f"lab{j}"] = np.nan
        frame["sex"] = sex
        frame["grade"] = np.digitize(score, [-0.7, 0.7]).astype(str)
        frame["grade"] = frame["grade"].map({"0": "mild", "1": "moderate", "2": "severe"})
        return frame

    d = tmp_path
    table(150).to_csv(d / "sample.csv", index=False, na_rep="NA")
    names = ["north", "south", "east"]
    for name in names:
        whole = table(110)
        whole[:80].to_csv(d / f"{name}.csv", index=False, na_rep="NA")
        whole[80:].to_csv(d / f"{name}-new.csv", index=False, na_rep="NA")
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    kit_text = _run_out("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Grades", "--schema-from",
                        d / "sample.csv", "--label", "grade", "--out", d / "p.dckit")
    assert "sex                  binary" in kit_text and "classes mild, moderate, severe" in kit_text
    assert run("anchor", "new", "--kit", d / "p.dckit", "--csv", d / "north.csv",
               "--out", d / "north/p.dcanchor", *anchor_to(d, "north", names)) == 0
    for name in names:
        said = _run_out("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "north/p.dcanchor",
                        "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                        "--identity", d / name / f"{name}.dcid", "--csv", d / f"{name}.csv",
                        "--out", d / "bundles" / f"{name}.dcbundle")
        assert "missing cells filled:" in said
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, names)) == 0
    apply_packages(d, {name: d / f"{name}-new.csv" for name in names})
    for name in names:
        result = pd.read_csv(d / name / "result.csv")
        assert len(result) == 30 and set(result["prediction"]) <= {"mild", "moderate", "severe"}
        assert {"prob_mild", "prob_moderate", "prob_severe"} <= set(result.columns)
