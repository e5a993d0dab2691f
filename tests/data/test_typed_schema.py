"""Typed columns in the kit: the schema's fields, its strict dict form, and the encoding's matrix columns."""

from __future__ import annotations

import pytest

from core.data.schema import FeatureBlock, FeatureColumn, IgnoredColumn, Schema
from core.errors import FormatError


def typed_schema() -> Schema:
    return Schema([FeatureColumn("age", 20.0, 90.0, mean=60.0, std=10.0, missing="impute", indicator=True),
                   FeatureColumn("sex", type="binary", levels=["F", "M"], missing="impute",
                                 frequencies=[0.4, 0.6], missing_share=0.1),
                   FeatureColumn("rx", type="categorical", levels=["Obs", "Lev", "Lev+5FU"], other=True),
                   FeatureColumn("grade", type="ordinal", levels=["low", "mid", "high"])],
                  label="y", classes=["no", "yes"],
                  ignored=[IgnoredColumn("pid", "identifier: every value is different")])


def test_encoded_names_follow_the_rule_column_by_column():
    s = typed_schema()
    assert s.encoded_names == ["age", "age (missing)", "sex=M", "rx=Obs", "rx=Lev", "rx=Lev+5FU", "rx=other", "grade"]
    assert s.width == 8 and not s.all_numeric
    ordinal_other = FeatureColumn("g", type="ordinal", levels=["a", "b"], other=True, missing="impute",
                                  indicator=True)
    assert ordinal_other.encoded_names == ["g", "g=other", "g (missing)"]


def test_typed_schema_round_trips_and_an_all_numeric_digest_is_unchanged():
    s = typed_schema()
    back = Schema.from_dict(s.to_dict())
    assert back == s and back.digest() == s.digest()
    # an all-numeric schema writes exactly today's fields (so kits made before typed columns keep their digest)
    plain = Schema([FeatureColumn("a", 0.0, 1.0), FeatureColumn("b")], label="y", classes=["0", "1"])
    assert plain.to_dict() == {"features": [{"name": "a", "min": 0.0, "max": 1.0},
                                            {"name": "b", "min": None, "max": None}],
                               "label": "y", "classes": ["0", "1"], "id_column": None}
    assert "ignored" in s.to_dict() and "ignored" not in plain.to_dict()


def _bad(feature: dict) -> str:
    d = typed_schema().to_dict()
    d["features"] = [feature]
    with pytest.raises(FormatError) as info:
        Schema.from_dict(d)
    return info.value.message


@pytest.mark.parametrize("feature, expect", [
    ({"name": "a", "type": "text"}, "unknown type 'text'"),
    ({"name": "a", "type": "binary", "levels": ["x"]}, "exactly two"),
    ({"name": "a", "type": "binary", "levels": ["x", "y", "z"]}, "exactly two"),
    ({"name": "a", "type": "categorical", "levels": ["x", "x", "y"]}, "level 'x' more than once"),
    ({"name": "a", "type": "categorical", "levels": ["x", ""]}, "empty level"),
    ({"name": "a", "type": "categorical", "levels": ["x", " y"]}, "surrounding spaces"),
    ({"name": "a", "type": "categorical", "levels": ["x", "y"], "frequencies": [1.0]}, "1 frequencies for 2"),
    ({"name": "a", "type": "categorical", "levels": ["x", "y"], "frequencies": [0.5, 0.6]}, "add up to 1"),
    ({"name": "a", "other": True}, "numeric but has 'other'"),
    ({"name": "a", "levels": ["x", "y"]}, "numeric but has 'levels'"),
    ({"name": "a", "type": "categorical"}, "lists no levels"),
    ({"name": "a", "type": "binary", "levels": ["x", "y"], "other": True}, "cannot send unknown values"),
    ({"name": "a", "type": "categorical", "levels": ["x", "other"], "other": True}, "level named 'other'"),
    ({"name": "a", "missing": "drop"}, "unknown missing-value policy 'drop'"),
    ({"name": "a", "indicator": True}, "indicator but refuses"),
    ({"name": "a", "indicator": 1}, "'indicator' is not true or false"),
    ({"name": "a", "missing_share": 1.5, "missing": "impute"}, "missing share outside"),
    ({"name": "a", "std": -1.0}, "negative std"),
    ({"name": "a", "type": "binary", "levels": ["x", "y"], "min": 0.0}, "numeric range"),
    ({"name": "a", "colour": "red"}, "unknown field 'colour'"),
])
def test_malformed_typed_columns_are_refused_with_one_sentence(feature, expect):
    msg = _bad(feature)
    assert expect in msg and "\n" not in msg


def test_an_encoded_name_clash_and_a_column_both_used_and_ignored_are_refused():
    with pytest.raises(FormatError, match="matrix column 'sex=M' twice"):
        Schema([FeatureColumn("sex", type="binary", levels=["F", "M"]), FeatureColumn("sex=M")]).validate()
    with pytest.raises(FormatError, match="both uses and ignores column 'age'"):
        Schema([FeatureColumn("age")], ignored=[IgnoredColumn("age", "left out by the analyst")]).validate()


def test_block_indices_are_encoded_positions():
    s = Schema([FeatureColumn("a"), FeatureColumn("rx", type="categorical", levels=["x", "y", "z"]),
                FeatureColumn("b"), FeatureColumn("c", missing="impute", indicator=True)],
               blocks=[FeatureBlock("one", ["a", "rx"]), FeatureBlock("two", ["b", "c"])])
    s.validate()
    assert s.block_indices("one") == [0, 1, 2, 3] and s.block_indices("two") == [4, 5, 6]
    assert s.block_schema("two").encoded_names == ["b", "c", "c (missing)"]


def test_describe_columns_lists_types_levels_policies_and_what_is_left_out():
    text = "\n".join(typed_schema().describe_columns())
    assert "sex" in text and "F (reference), M" in text and "Obs, Lev, Lev+5FU (+ other)" in text
    assert "low < mid < high" in text and "impute + indicator" in text and "range 20 to 90" in text
    assert "matrix: 8 encoded column(s) from 4 column(s)" in text
    assert "left out: 'pid': identifier: every value is different" in text
