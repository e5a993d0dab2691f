"""Issue #33: the tables hospitals bring, one case per test on small embedded data — a column a site never records,
a level the kit's sample lacks, a source's own missing-value code, a kit typed from a small sample, a French 0/1
column, label skew against the units check, ordinal text, and RESULT.csv's probabilities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.data.encoding import encode_frame
from core.data.harmony import unit_warnings
from core.data.missing import fill_for
from core.data.schema import ColumnChoices, FeatureColumn, Schema, infer_schema
from core.data.tabular import MISSING_TOKENS, CsvFormat, CsvOptions, read_table
from core.errors import DataError
from core.fileio import significant
from core.formats.anchor import anchor_for_kit
from core.formats.identity import Identity
from core.kit_builder import build_kit, column_choices
from core.participant import rounded_probabilities, write_result_csv


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def sample(n: int, seed: int = 0, **extra) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.normal(60, 10, n).round(), "chol": rng.normal(210, 30, n).round(),
                          "stage": rng.choice(["I", "II", "III"], n), "y": rng.choice(["no", "yes"], n)})
    for k, v in extra.items():
        frame[k] = v
    return frame


# ---- 1. a column a site never records ------------------------------------------------------------------------
def test_a_column_with_no_value_at_a_site_is_filled_with_the_kits_value_and_its_indicator(tmp_path):
    s = sample(120)
    s.loc[:9, "chol"] = None  # the sample misses some: the kit gives chol an indicator
    s.loc[:4, "stage"] = None
    schema, _ = infer_schema(write(tmp_path, s.to_csv(index=False), "sample.csv"), label="y", with_statistics=True)
    chol, stage = schema.features[1], schema.features[2]
    site = sample(40, seed=1)
    site["chol"], site["stage"] = None, None  # a registry that records neither
    t = read_table(write(tmp_path, site.to_csv(index=False)), schema)
    at = schema.encoded_positions()
    assert np.all(t.X[:, at["chol"][0]] == pytest.approx(chol.mean)) and np.all(t.X[:, at["chol"][1]] == 1)
    kit_level = chol and stage.levels[int(np.argmax(stage.frequencies))]
    assert t.fill_values == {"chol": pytest.approx(chol.mean), "stage": kit_level}
    assert t.notes == [f"column 'chol' has no value in any row of this file: filled with the kit's sample value "
                       f"{chol.mean:.6g} and marked in its 'chol (missing)' column",
                       f"column 'stage' has no value in any row of this file: filled with the kit's most frequent "
                       f"level {kit_level!r} and marked in its 'stage (missing)' column"]
    # apply reuses the export's fill values, so the kit's value travels with the site's rows
    again = read_table(write(tmp_path, site.to_csv(index=False), "new.csv"), schema, fill_values=t.fill_values)
    assert np.array_equal(again.X, t.X) and again.notes == []


def test_every_column_nothing_can_fill_is_named_in_one_sentence_with_one_remedy(tmp_path):
    schema = Schema([FeatureColumn("age", missing="impute"), FeatureColumn("chol", missing="impute"),
                     FeatureColumn("ldl", missing="impute"),
                     FeatureColumn("stage", type="categorical", levels=["I", "II"], missing="impute")])
    p = write(tmp_path, "age,chol,ldl,stage\n50,,,\n60,,,\n")  # a kit made without statistics
    with pytest.raises(DataError) as info:
        read_table(p, schema)
    assert info.value.message == (
        "columns 'chol', 'ldl', 'stage' have no value in any row of this file, and the kit publishes no sample value "
        "to fill them with; ask the analyst for a kit that publishes the sample's statistics (kit new --statistics, "
        "the default) or that leaves them out (kit new --ignore chol,ldl,stage)")
    # the in-memory encoder follows the same rule (one rule, two readers)
    with pytest.raises(DataError, match="columns 'chol', 'ldl', 'stage' have no value in any row"):
        encode_frame(schema, pd.DataFrame({"age": [50], "chol": [None], "ldl": [None], "stage": [None]}))
    assert fill_for(FeatureColumn("chol", mean=200.0), np.array([np.nan])).source == "kit"


# ---- 2. a level the kit's sample lacks -----------------------------------------------------------------------
def test_a_rare_level_goes_to_the_unseen_bucket_at_export_anchor_and_apply(tmp_path):
    schema, _ = infer_schema(write(tmp_path, sample(200).to_csv(index=False), "sample.csv"), label="y",
                             with_statistics=True)
    site = sample(300, seed=2)
    site.loc[[3, 50, 51, 200, 201, 202, 299], "stage"] = "IV"  # 7 rows: the kit's sample never saw it
    p = write(tmp_path, site.to_csv(index=False))
    t = read_table(p, schema)
    assert t.unseen == {"stage": {"IV": 7}}
    assert "column 'stage': 7 rows hold a value the kit does not know" in t.notes[0]
    assert t.X[3, schema.encoded_positions()["stage"]].tolist() == [0, 0, 0]  # none of the kit's levels
    assert unit_warnings(schema, t.X, t.y, t.unseen) == []  # 2 % of the rows: a rare level, not another coding
    kit, _ = build_kit(name="rare", schema=schema, analyst=Identity.generate("a").card)
    anchor = anchor_for_kit(kit, local_X=read_table(p, schema, labels=False).X, rng=np.random.default_rng(0))
    assert anchor.generate().shape[1] == schema.width  # the lead site's anchor is not stopped by a level


def test_a_whole_column_in_another_coding_is_named_before_export(tmp_path):
    schema, _ = infer_schema(write(tmp_path, sample(200).to_csv(index=False), "sample.csv"), label="y",
                             with_statistics=True)
    site = sample(60, seed=3)
    site["stage"] = site["stage"].map({"I": "1", "II": "2", "III": "3"})  # stage coded 1/2/3 at this site
    t = read_table(write(tmp_path, site.to_csv(index=False)), schema)
    [warning] = unit_warnings(schema, t.X, t.y, t.unseen)
    assert warning.startswith("column 'stage' does not look like the kit's: 60 of its 60 rows hold values the kit "
                              "does not know")
    assert "is it in another coding?" in warning


def test_other_and_levels_work_when_the_data_have_a_level_named_other(tmp_path):
    s = sample(200)
    s.loc[::7, "stage"] = "other"
    p = write(tmp_path, s.to_csv(index=False), "sample.csv")
    schema, notes = infer_schema(p, label="y", choices=column_choices(other=["stage"]))
    stage = schema.features[2]
    assert stage.levels == ["I", "II", "III", "other"] and not stage.other
    assert any("--other is no longer needed" in n for n in notes)
    choices = column_choices(levels=["stage=I,II,III,Other=other"], other=["stage"])  # renamed, with --other too
    renamed = infer_schema(p, label="y", choices=choices)[0].features[2]
    assert renamed.levels == ["I", "II", "III", "Other"] and renamed.merged == {"Other": ["other"]}


def test_the_unseen_bucket_cannot_be_a_level(tmp_path):
    from core.errors import FormatError

    with pytest.raises(FormatError, match="a level named '\\(unseen\\)', the name of the unseen bucket"):
        Schema([FeatureColumn("x", type="categorical", levels=["a", "(unseen)"])]).validate()


# ---- 3. a source's own missing-value code --------------------------------------------------------------------
def test_a_source_missing_code_is_named_at_kit_new_and_carried_by_the_kit(tmp_path):
    s = sample(200)
    s["chol"] = s["chol"].astype(object)
    s.loc[::9, "chol"] = "NA_NA"
    p = write(tmp_path, s.to_csv(index=False), "sample.csv")
    schema, notes = infer_schema(p, label="y", with_statistics=True)
    assert any(n.startswith("column 'chol' holds numbers but for 'NA_NA' (23 rows): if 'NA_NA' means a missing value, "
                            "make the kit with --missing-token 'NA_NA'") for n in notes)
    fixed, _ = infer_schema(p, label="y", with_statistics=True,
                            options=CsvOptions(missing_tokens=(*MISSING_TOKENS, "NA_NA")))
    assert fixed.missing_tokens == ["NA_NA"] and fixed.features[1].type == "numeric"
    assert Schema.from_dict(fixed.to_dict()).missing_tokens == ["NA_NA"]
    site = sample(30, seed=4)
    site["chol"] = site["chol"].astype(object)
    site.loc[[2, 5], "chol"] = "na_na"  # the site's own file, read with nothing but the kit
    t = read_table(write(tmp_path, site.to_csv(index=False)), fixed)
    assert t.filled == {"chol": 2}


def test_a_refusal_names_the_code_it_saw_and_the_option_that_accepts_it(tmp_path):
    schema = Schema([FeatureColumn("age", missing="impute"), FeatureColumn("chol", missing="impute")])
    p = write(tmp_path, "age,chol\n50,200\n60,NA_NA\n")
    with pytest.raises(DataError) as info:
        read_table(p, schema)
    assert info.value.message.endswith("line 3, column 'chol': 'NA_NA' is not a number; if it means a missing value, "
                                       "add it to the missing-value markers (CLI: --missing-token 'NA_NA'; in the "
                                       "app: 'Also treat as missing')")
    french = write(tmp_path, "age;chol\n50;200,5\n60;N.A.\n", "fr.csv")  # not a number with a point: a code
    with pytest.raises(DataError, match="'N.A.' is not a number; if it means a missing value"):
        read_table(french, schema)
    typed = Schema([FeatureColumn("smoking", type="categorical", levels=["no", "yes", "former"])])
    t = read_table(write(tmp_path, "smoking\nno\nNA_NA\nyes\n", "t.csv"), typed)
    assert "if 'NA_NA' means a missing value, add it to the missing-value markers (CLI: --missing-token 'NA_NA'" \
        in t.notes[0]


# ---- 4. a kit typed from a small sample ----------------------------------------------------------------------
def test_kit_new_warns_where_a_small_sample_cannot_settle_a_type_or_levels(tmp_path):
    rng = np.random.default_rng(5)
    s = sample(30, flag=rng.integers(0, 2, 30), sex=rng.choice(["F", "M"], 30),
               grade=rng.choice([1, 2, 3], 30))
    s.loc[0, "stage"] = "IIIb"  # a level seen on one row
    schema, notes = infer_schema(write(tmp_path, s.to_csv(index=False), "sample.csv"), label="y")
    kinds = {f.name: f.type for f in schema.features}
    assert kinds["flag"] == "numeric" and kinds["sex"] == "binary" and kinds["grade"] == "numeric"
    said = {n.split(":")[0]: n for n in notes if "would settle it" in n}
    assert set(said) == {"column 'flag'", "column 'sex'", "column 'stage'", "column 'grade'"}
    assert "only two numbers (0, 1) in the sample's 30 rows, too few to call it binary (a third value held by 1 % of " \
           "patients is missed by 74% of samples this size)" in said["column 'flag'"]
    assert "level 'IIIb' appears on one row of the sample's 30" in said["column 'stage'"]
    assert "only 3 whole numbers (1, 2, 3) in the sample's 30 rows" in said["column 'grade'"]
    assert all(n.endswith("about 299 rows would settle it") for n in said.values())
    # the lead site holds -1.0 in that 0/1 column: a number, so its anchor is made as ever
    site = sample(40, seed=6, flag=-1.0, sex="F", grade=2)
    X = read_table(write(tmp_path, site.to_csv(index=False)), schema, labels=False).X
    kit, _ = build_kit(name="small", schema=schema, analyst=Identity.generate("a").card)
    assert anchor_for_kit(kit, local_X=X, rng=np.random.default_rng(0)).generate().shape[1] == schema.width


def test_a_binary_column_written_1_0_in_a_decimal_comma_file_is_read_as_its_levels(tmp_path):
    """The French round trip: numbers compare as numbers whatever their written form."""
    schema = Schema([FeatureColumn("age", missing="impute"),
                     FeatureColumn("smoker", type="binary", levels=["0", "1"], missing="impute")])
    p = write(tmp_path, "age;smoker\n50,5;1,0\n61;0,0\n70;01\n55;1\n", "fr.csv")
    t = read_table(p, schema)
    assert t.format.decimal == "," and t.unseen == {}
    assert t.X.tolist() == [[50.5, 1], [61, 0], [70, 1], [55, 1]]


# ---- 5. label skew is not a unit -----------------------------------------------------------------------------
def test_a_site_holding_mostly_one_class_passes_and_a_unit_change_is_still_named(tmp_path):
    rng = np.random.default_rng(7)

    def rows(n, share_yes, scale=1.0):
        y = rng.random(n) < share_yes
        return pd.DataFrame({"marker": (np.where(y, 160, 100) + rng.normal(0, 12, n)) * scale,
                             "y": np.where(y, "yes", "no")})

    schema, _ = infer_schema(write(tmp_path, rows(200, 0.2).to_csv(index=False), "sample.csv"), label="y",
                             with_statistics=True)  # a sample of mostly 'no', a site of mostly 'yes' (label skew)
    f = schema.features[0]
    assert f.class_mean == [pytest.approx(100, abs=4), pytest.approx(160, abs=4)] and f.class_std[0] < 20
    skewed = read_table(write(tmp_path, rows(80, 0.95).to_csv(index=False), "skewed.csv"), schema)
    assert unit_warnings(schema, skewed.X) != []  # against the whole sample, label skew looks like a shift
    assert unit_warnings(schema, skewed.X, skewed.y) == []  # class by class, it does not
    inches = read_table(write(tmp_path, rows(80, 0.95, 1 / 2.54).to_csv(index=False), "inches.csv"), schema)
    [w] = unit_warnings(schema, inches.X, inches.y)
    assert w.startswith("column 'marker' does not look like the kit's") and "weighted to this site's classes" in w


def test_a_column_holding_only_the_kits_two_values_has_no_unit(tmp_path):
    rng = np.random.default_rng(8)
    s = pd.DataFrame({"flag": (rng.random(200) < 0.05).astype(int), "age": rng.normal(60, 9, 200),
                      "y": rng.choice(["no", "yes"], 200)})
    schema, _ = infer_schema(write(tmp_path, s.to_csv(index=False), "sample.csv"), label="y", with_statistics=True)
    flag = schema.features[0]
    assert (flag.type, flag.min, flag.max) == ("numeric", 0.0, 1.0)  # its coding is published as its range
    site = pd.DataFrame({"flag": (rng.random(80) < 0.4).astype(int), "age": rng.normal(60, 9, 80),
                         "y": rng.choice(["no", "yes"], 80)})  # many more 1s here: not a unit
    t = read_table(write(tmp_path, site.to_csv(index=False)), schema)
    assert unit_warnings(schema, t.X, t.y) == []
    site["flag"] = site["flag"] + 1  # coded 1/2: named
    t = read_table(write(tmp_path, site.to_csv(index=False), "coded.csv"), schema)
    assert [w.split(":")[0] for w in unit_warnings(schema, t.X, t.y)] == ["column 'flag' does not look like the kit's"]


# ---- 6. ordinal text ----------------------------------------------------------------------------------------
def test_ordinal_text_is_ordered_by_the_numbers_it_holds_and_by_the_analyst(tmp_path):
    s = sample(60, educ=np.resize(["MT 12 yrs", "LT 8 yrs", "8-12 yrs"], 60))
    p = write(tmp_path, s.to_csv(index=False), "sample.csv")
    schema, _ = infer_schema(p, label="y", choices=ColumnChoices(types={"educ": "ordinal"}))
    educ = schema.features[-1]
    assert educ.levels == ["LT 8 yrs", "8-12 yrs", "MT 12 yrs"]
    t = read_table(write(tmp_path, "age,chol,stage,educ\n50,200,I,MT 12 yrs\n60,190,II,LT 8 yrs\n"), schema,
                   labels=False)
    assert t.X[:, -1].tolist() == [2, 0]
    mine = infer_schema(p, label="y", choices=column_choices(types=["educ=ordinal"],
                                                             levels=["educ=MT 12 yrs,8-12 yrs"]))[0]
    assert mine.features[-1].levels == ["MT 12 yrs", "8-12 yrs", "LT 8 yrs"]  # the analyst's order first


# ---- 8. RESULT.csv ------------------------------------------------------------------------------------------
def test_result_probabilities_are_rounded_to_six_significant_digits_before_anything_uses_them(tmp_path):
    columns = {"prediction": np.array(["yes", "no"], dtype=object),
               "prob_yes": np.array([0.123456789012, 1 / 3]), "prob_no": np.array([0.876543210988, 2 / 3]),
               "z1": np.array([0.123456789012, np.nan])}
    out = rounded_probabilities(columns)
    assert out["prob_yes"].tolist() == [0.123457, 0.333333] and out["prob_no"].tolist() == [0.876543, 0.666667]
    assert out["z1"][0] == 0.123456789012 and out["prediction"] is columns["prediction"]  # only probabilities
    assert significant([1.23456789e-7, 0.0, 9.9999996e-1, 1.234567e-20, np.inf]).tolist() == [
        1.23457e-07, 0.0, 1.0, 1.23457e-20, np.inf]
    # written in the file's own decimal mark, as they are rounded (an input cell is never rewritten)
    csv = write(tmp_path, "id;x;y\n0.123456789;1,5;a\n0.2;2,5;b\n")
    schema = infer_schema(csv, label="y", options=CsvOptions(delimiter=";", decimal=","))[0]
    fmt = CsvFormat("utf-8", ";", ",")
    write_result_csv(csv, tmp_path / "r.csv", schema, CsvOptions(delimiter=";", decimal=","), fmt, fmt, "\n",
                     {"prob_yes": np.array([out["prob_yes"][0], 0.5]), "prob_no": np.array([1.23457e-07, 0.5])})
    assert (tmp_path / "r.csv").read_text().splitlines()[1] == "0.123456789;1,5;a;0,123457;1,23457e-07"
