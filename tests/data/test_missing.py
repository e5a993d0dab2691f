"""The missing-value rule and its one vocabulary: a choice, the kit's two fields and the words people read are
translated in one place, and the formal option fills with the same kit values as a site with no value of its own."""

from __future__ import annotations

import numpy as np
import pytest

from core.data.missing import (
    CHOICES,
    WORDS,
    Filling,
    choice_of,
    default_choice,
    fill_for,
    kit_fill_value,
    public_fills,
    set_choice,
    words_of,
)
from core.data.schema import ColumnChoices, FeatureColumn, Schema, infer_schema
from core.errors import ConfigError, DataError


@pytest.mark.parametrize("choice", CHOICES)
def test_a_choice_round_trips_through_the_kits_two_fields_and_reads_in_one_set_of_words(choice):
    f = FeatureColumn("x")
    set_choice(f, choice)
    assert choice_of(f) == choice and words_of(f) == WORDS[choice]
    assert f.describe().rstrip().endswith(WORDS[choice])  # kit new / kit show say the same words
    assert (f.missing, f.indicator) == {"refuse": ("refuse", False), "impute": ("impute", False),
                                        "impute+indicator": ("impute", True)}[choice]


def test_an_unknown_choice_is_one_sentence_naming_the_column_and_the_choices():
    with pytest.raises(ConfigError, match="'age'.*refuse, impute, impute\\+indicator"):
        set_choice(FeatureColumn("age"), "drop")


def test_the_default_imputes_with_an_indicator_only_where_the_sample_had_missing_cells():
    assert default_choice(0) == "impute" and default_choice(3) == "impute+indicator"


def test_kit_new_stores_the_choice_given_and_the_default_otherwise(tmp_path):
    csv = tmp_path / "s.csv"
    csv.write_text("a,b,y\n1.5,,0\n" + "".join(f"{(i * 7) % 11}.5,{(i * 5) % 13}.25,{i % 2}\n" for i in range(1, 29)))
    schema, notes = infer_schema(csv, label="y", choices=ColumnChoices(missing={"a": "refuse"}))
    a, b = schema.features
    assert choice_of(a) == "refuse" and choice_of(b) == "impute+indicator"
    assert any("column 'b': 1 of 29 cells missing" in n and "sites fill them with their own median" in n
               for n in notes)


def test_a_typed_column_without_published_shares_has_no_kit_value_for_a_site_nor_for_the_formal_option():
    # issue #34: the formal option used to fill such a column with its first level, a site without any value of
    # it was refused; one rule now: nothing public can fill it, in both cases
    sex = FeatureColumn("sex", type="binary", levels=["F", "M"], missing="impute")
    age = FeatureColumn("age", mean=50.0, missing="impute")
    assert kit_fill_value(sex) is None
    assert fill_for(sex, np.array([-1, -1])) is None
    fills, lacking = public_fills(Schema([age, sex]).features)
    assert fills == {"age": 50.0} and lacking == ["sex"]
    sex.frequencies = [0.3, 0.7]
    assert public_fills([sex]) == ({"sex": "M"}, []) and fill_for(sex, np.array([-1])).value == "M"


def test_filling_names_every_column_nothing_can_fill_in_one_sentence_in_kit_order():
    a, b = FeatureColumn("a", missing="impute"), FeatureColumn("b", missing="impute")
    filling = Filling()
    filling.column(b, np.array([np.nan]), np.array([True]))
    filling.column(a, np.array([np.nan]), np.array([True]))
    with pytest.raises(DataError, match="columns 'a', 'b' have no value"):
        filling.finish(["a", "b"])


def test_filling_reports_the_cells_the_value_and_the_kits_note_and_fills_in_place():
    a = FeatureColumn("a", missing="impute", indicator=True, mean=7.0)
    b = FeatureColumn("b", missing="impute")
    va, vb = np.array([np.nan, np.nan]), np.array([1.0, np.nan, 3.0])
    filling = Filling(given={"b": 10.0})
    filling.column(a, va, np.isnan(va))
    filling.column(b, vb, np.isnan(vb))
    filled, used, notes = filling.finish(["a", "b"])
    assert filled == {"a": 2, "b": 1} and used == {"a": 7.0, "b": 10.0}
    assert va.tolist() == [7.0, 7.0] and vb.tolist() == [1.0, 10.0, 3.0]
    assert notes == ["column 'a' has no value in any row of this file: filled with the kit's sample value 7 and "
                     "marked in its 'a (missing)' column"]
