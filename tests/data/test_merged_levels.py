"""Merged levels (issue #22): raw values the kit reads as one of its levels ("Lev" and "Lev+5FU" are level
"treated"; "m", "male" are level "M"), in the schema, its text form, inference and the encoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.data.encoding import MISSING, UNKNOWN, LevelCoder, decode, encode_frame, level_shares
from core.data.missing import site_fill_value
from core.data.schema import (
    ColumnChoices,
    FeatureColumn,
    Schema,
    format_level_list,
    infer_schema,
    parse_level_list,
)
from core.data.tabular import read_table
from core.errors import ConfigError, FormatError


def merged_schema() -> Schema:
    return Schema([FeatureColumn("age"),
                   FeatureColumn("sex", type="binary", levels=["M", "F"], merged={"M": ["m", "male"]},
                                 missing="impute"),
                   FeatureColumn("rx", type="categorical", levels=["Obs", "treated"],
                                 merged={"treated": ["Lev", "Lev+5FU"]})],
                  label="y", classes=["no", "yes"])


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------- the schema


def test_merges_round_trip_and_a_kit_without_merges_keeps_its_digest():
    s = merged_schema()
    back = Schema.from_dict(s.to_dict())
    assert back == s and back.digest() == s.digest()
    assert s.to_dict()["features"][2]["merged"] == {"treated": ["Lev", "Lev+5FU"]}
    # merges are part of the kit: a kit that merges differently has another digest
    other = merged_schema()
    other.features[2].merged = {"treated": ["Lev"]}
    assert other.digest() != s.digest()
    # no merges: the field is absent, so the schema (and its digest) is the one written before merges existed
    plain = Schema([FeatureColumn("rx", type="categorical", levels=["Obs", "Lev"])])
    assert plain.to_dict()["features"] == [{"name": "rx", "min": None, "max": None, "type": "categorical",
                                            "levels": ["Obs", "Lev"]}]
    assert plain.digest() == "32a01d16de5239cf13f8a2eb95514421b4372ff3a49f664a5f3c2dede5fead7d"


def test_the_encoded_names_stay_the_kits_levels_and_describe_shows_the_merges():
    s = merged_schema()
    assert s.encoded_names == ["age", "sex=F", "rx=Obs", "rx=treated"]
    text = "\n".join(s.describe_columns())
    assert "M (= m, male) (reference), F" in text and "Obs, treated (= Lev, Lev+5FU)" in text
    assert s.features[2].levels_text == "Obs, treated (= Lev, Lev+5FU)"


def _refusal(feature: dict) -> str:
    d = merged_schema().to_dict()
    d["features"] = [feature]
    with pytest.raises(FormatError) as info:
        Schema.from_dict(d)
    assert "\n" not in info.value.message
    return info.value.message


CAT = {"name": "rx", "type": "categorical", "levels": ["Obs", "treated"]}


@pytest.mark.parametrize("merged, expect", [
    ({"placebo": ["P"]}, "merges values into 'placebo', which is not one of its levels (Obs, treated)"),
    ({"treated": []}, "merges no value into level 'treated'"),
    ({"treated": ["Lev", ""]}, "merges an empty value"),
    ({"treated": [" Lev"]}, "surrounding spaces"),
    ({"treated": ["Lev", "Lev"]}, "merges 'Lev' more than once"),
    ({"treated": ["Lev"], "Obs": ["Lev"]}, "merges 'Lev' more than once"),
    ({"treated": ["Obs"]}, "merges 'Obs' into level 'treated', but 'Obs' is a level of its own"),
    ({"treated": ["treated"]}, "merges level 'treated' into itself"),
    ({}, "empty or ill-typed 'merged'"),
    ({"treated": "Lev"}, "merged values are not an object"),
    ({"treated": [1]}, "merged values are not an object"),
    (["Lev"], "merged values are not an object"),
])
def test_a_wrong_merge_is_refused_with_one_sentence(merged, expect):
    assert expect in _refusal({**CAT, "merged": merged})


def test_merges_only_on_columns_with_levels_and_never_the_same_number_twice():
    assert "numeric but has 'merged'" in _refusal({"name": "a", "merged": {"x": ["y"]}})
    numbers = {"name": "n", "type": "categorical", "levels": ["1", "2"]}
    assert "as the same number as '1'" in _refusal({**numbers, "merged": {"2": ["1.0"]}})
    assert "also sends unknown values to an 'other' level" in _refusal(
        {**CAT, "other": True, "merged": {"treated": ["other"]}})


# ------------------------------------------------------------------------------------------- the text form


def test_the_text_form_parses_merges_and_plain_lists_as_before():
    assert parse_level_list("a, b ,c") == (["a", "b", "c"], {})
    assert parse_level_list("Obs, treated=Lev|Lev+5FU") == (["Obs", "treated"], {"treated": ["Lev", "Lev+5FU"]})
    # the level's own name may be listed among its raw values; empty items are dropped
    assert parse_level_list("M=m|M|male|,F") == (["M", "F"], {"M": ["m", "male"]})
    assert parse_level_list("M=M, F") == (["M", "F"], {})
    assert parse_level_list("") == ([], {})
    for text in ("Obs, =Lev|x", "Obs, treated=", "treated=|"):
        with pytest.raises(ConfigError, match="a merged level is NAME=value"):
            parse_level_list(text)
    levels, merged = parse_level_list("Obs, treated=Lev|Lev+5FU")
    assert format_level_list(levels, merged) == "Obs, treated=Lev|Lev+5FU"


def test_column_choices_take_the_text_form():
    c = ColumnChoices()
    c.set_levels("rx", "Obs, treated=Lev|Lev+5FU")
    assert c.levels == {"rx": ["Obs", "treated"]} and c.merged == {"rx": {"treated": ["Lev", "Lev+5FU"]}}
    c.set_levels("rx", "Obs, Lev")  # merges typed away are gone
    assert c.levels == {"rx": ["Obs", "Lev"]} and c.merged == {}
    c.set_levels("rx", "  ")
    assert c.levels == {} and not c.named()


# ------------------------------------------------------------------------------------------- the encoding


def test_a_merged_raw_value_codes_as_its_level():
    coder = LevelCoder(FeatureColumn("n", type="categorical", levels=["0", "1", "high"],
                                     merged={"high": ["2", "3"]}), ["NA"])
    assert [coder.code(v) for v in ["0", " 2 ", "3.0", "1", "high", "NA", "4"]] == [0, 2, 2, 1, 2, MISSING, UNKNOWN]
    assert not coder.numeric_levels
    binary = LevelCoder(merged_schema().features[1], ["NA"])
    assert binary.codes(["male", "F", "m", "M", None, "f"]).tolist() == [0, 1, 0, 0, MISSING, UNKNOWN]


def test_a_frame_with_raw_values_encodes_fills_and_decodes_as_the_kits_levels():
    s = merged_schema()
    frame = pd.DataFrame({"age": [50, 60, 70, 80], "sex": ["male", "NA", "m", "F"],
                          "rx": ["Lev+5FU", "Obs", "Lev", "treated"]})
    X, filled, used = encode_frame(s, frame)
    assert X.tolist() == [[50, 0, 0, 1], [60, 0, 1, 0], [70, 0, 0, 1], [80, 1, 0, 1]]
    assert filled == {"sex": 1} and used == {"sex": "M"}  # two 'M' rows (male, m) outnumber one 'F'
    assert decode(s, X)["rx"].tolist() == ["treated", "Obs", "treated", "treated"]
    assert level_shares(s, X)["rx"].tolist() == [0.25, 0.75]
    assert site_fill_value(s.features[2], np.array([1, 1, 0])) == "treated"
    X, _, _ = encode_frame(s, frame.assign(rx=["Placebo", "Obs", "Lev", "Obs"]))  # the unseen bucket: no level
    assert X[:, 2:].tolist() == [[0, 0], [1, 0], [0, 1], [1, 0]] and decode(s, X)["rx"][0] == "(unseen)"


def test_a_site_csv_holding_raw_values_reads_as_the_kits_levels(tmp_path):
    s = merged_schema()
    p = write(tmp_path, "y,age,sex,rx\nno,50,male,Lev+5FU\nyes,61,F,Obs\nno,70,m,Lev\nyes,55,NA,Obs\n")
    t = read_table(p, s)
    assert t.X.tolist() == [[50, 0, 0, 1], [61, 1, 1, 0], [70, 0, 0, 1], [55, 0, 1, 0]]
    assert t.fill_values == {"sex": "M"}
    bad = write(tmp_path, "y,age,sex,rx\nno,50,male,Lev+5FU\nyes,61,F,Placebo\n", "bad.csv")
    t = read_table(bad, s)
    assert t.X[:, 2:].tolist() == [[0, 1], [0, 0]] and t.unseen == {"rx": {"Placebo": 1}}
    assert "its levels are Obs, treated (= Lev, Lev+5FU)" in t.notes[0]


# ------------------------------------------------------------------------------------------- inference


def test_inference_with_merges_adds_the_raw_values_counts_to_their_level(tmp_path):
    rows = [("m", "Obs"), ("M", "Lev"), ("male", "Lev+5FU"), ("F", "Obs"), ("F", "Lev"), ("M", "Obs")] * 3
    p = write(tmp_path, "sex,rx,y\n" + "".join(f"{a},{b},{i % 2}\n" for i, (a, b) in enumerate(rows)))
    choices = ColumnChoices()
    choices.set_levels("sex", "M=m|male")
    choices.set_levels("rx", "Obs, treated=Lev|Lev+5FU")
    schema, _ = infer_schema(p, label="y", choices=choices, with_statistics=True, min_group=1)  # exact counts
    sex, rx = schema.features
    # five distinct spellings, two levels: binary once merged; the sample's F follows the analyst's M
    assert (sex.type, sex.levels, sex.merged) == ("binary", ["M", "F"], {"M": ["m", "male"]})
    assert sex.frequencies == pytest.approx([4 / 6, 2 / 6])
    assert (rx.levels, rx.merged) == (["Obs", "treated"], {"treated": ["Lev", "Lev+5FU"]})
    assert rx.frequencies == pytest.approx([0.5, 0.5])
    # a raw value of the sample that is neither a level nor merged is a level of its own, as without merges
    choices.set_levels("rx", "Obs, treated=Lev")
    schema, _ = infer_schema(p, label="y", choices=choices, with_statistics=True)
    assert schema.features[1].levels == ["Obs", "treated", "Lev+5FU"]
    # a merge into a level is the analyst's: a wrong one is core's one sentence
    choices.set_levels("rx", "Obs, Lev, treated=Lev|Lev+5FU")
    with pytest.raises(ConfigError, match="merges 'Lev' into level 'treated', but 'Lev' is a level of its own"):
        infer_schema(p, label="y", choices=choices)


def test_inference_merges_numbers_of_a_coded_column(tmp_path):
    p = write(tmp_path, "stage,y\n" + "".join(f"{i % 4},{i % 2}\n" for i in range(40)))
    choices = ColumnChoices(types={"stage": "ordinal"})
    choices.set_levels("stage", "0, 1, late=2|3.0")
    schema, _ = infer_schema(p, label="y", choices=choices, with_statistics=True)
    stage = schema.features[0]
    assert stage.levels == ["0", "1", "late"] and stage.frequencies == pytest.approx([0.25, 0.25, 0.5])
    t = read_table(write(tmp_path, "stage,y\n3,0\n2.0,1\n0,1\n", "site.csv"), schema)
    assert t.X[:, 0].tolist() == [2, 2, 0]
    with pytest.raises(ConfigError, match="'stage' is numeric, so it has no levels"):
        infer_schema(p, label="y", choices=ColumnChoices(types={"stage": "numeric"}, merged={"stage": {"1": ["2"]}}))
