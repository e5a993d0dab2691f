"""The project schema: strict dict form, a stable digest, natural class order, inference from a sample."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest

from core.data.schema import FeatureColumn, Schema, infer_schema, natural_sorted
from core.data.tabular import read_table
from core.errors import ConfigError, DataError, FormatError

SCHEMA = Schema(
    features=[FeatureColumn("age", 0, 120.5), FeatureColumn("bmi"), FeatureColumn("年齢", min=-1.5)],
    label="outcome",
    classes=["2", "10", "yes"],
    id_column="pid",
)


def write(tmp_path: Path, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / "sample.csv"
    path.write_bytes(text.encode(encoding))
    return path


# ------------------------------------------------------------------------------------- dict form, digest


def test_round_trip():
    d = SCHEMA.to_dict()
    again = Schema.from_dict(json.loads(json.dumps(d)))
    assert again == Schema.from_dict(d)
    assert again.to_dict() == d
    assert again.feature_names == ["age", "bmi", "年齢"]
    assert again.features[0].min == 0.0 and isinstance(again.features[0].min, float)
    assert again.digest() == SCHEMA.digest()


def test_digest_is_sha256_of_the_canonical_json():
    canonical = (
        '{"classes":["2","10","yes"],"features":[{"max":120.5,"min":0.0,"name":"age"},'
        '{"max":null,"min":null,"name":"bmi"},{"max":null,"min":-1.5,"name":"年齢"}],'
        '"id_column":"pid","label":"outcome"}'
    )
    assert SCHEMA.digest() == hashlib.sha256(canonical.encode()).hexdigest()
    # an int range and a float range are the same schema
    same = Schema([FeatureColumn("age", 0.0, 120.5), FeatureColumn("bmi"), FeatureColumn("年齢", -1.5)],
                  "outcome", ["2", "10", "yes"], "pid")
    assert same.digest() == SCHEMA.digest()


def test_digest_changes_with_order_and_content():
    d = SCHEMA.to_dict()
    reordered = copy.deepcopy(d)
    reordered["features"].reverse()
    assert Schema.from_dict(reordered).digest() != SCHEMA.digest()
    reclassed = copy.deepcopy(d)
    reclassed["classes"] = ["10", "2", "yes"]
    assert Schema.from_dict(reclassed).digest() != SCHEMA.digest()


def test_missing_range_keys_are_allowed():
    d = SCHEMA.to_dict()
    del d["features"][1]["min"], d["features"][1]["max"]
    assert Schema.from_dict(d) == SCHEMA


def _broken(edit):
    d = copy.deepcopy(SCHEMA.to_dict())
    edit(d)
    return d


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda d: d.pop("classes"), "lacks the field 'classes'"),
        (lambda d: d.pop("id_column"), "lacks the field 'id_column'"),
        (lambda d: d.update(extra=1), "unknown field 'extra'"),
        (lambda d: d.update(features="age"), "'features' is not a list"),
        (lambda d: d["features"][0].pop("name"), "lacks the field 'name'"),
        (lambda d: d["features"][0].update(unit="kg"), "unknown field 'unit'"),
        (lambda d: d["features"][0].update(name=3), "name"),
        (lambda d: d["features"][0].update(name=" age"), "surrounding spaces"),
        (lambda d: d["features"][0].update(min="0"), "not a finite number"),
        (lambda d: d["features"][0].update(min=True), "not a finite number"),
        (lambda d: d["features"][0].update(min=200), "greater than max"),
        (lambda d: d["features"][1].update(name="age"), "'age' more than once"),
        (lambda d: d.update(label="bmi"), "'bmi' more than once"),
        (lambda d: d.update(id_column="outcome"), "'outcome' more than once"),
        (lambda d: d.update(classes=["a", "a"]), "more than once"),
        (lambda d: d.update(classes=["a", 1]), "not a list of strings"),
        (lambda d: d.update(classes=[]), "lists no classes"),
        (lambda d: d.update(label=None), "names no label column"),
        (lambda d: d.update(features=[]), "no feature columns"),
        (lambda d: d.update(label=5), "label"),
    ],
)
def test_from_dict_is_strict(edit, words):
    with pytest.raises(FormatError) as info:
        Schema.from_dict(_broken(edit))
    assert words in str(info.value)


def test_from_dict_needs_an_object():
    with pytest.raises(FormatError):
        Schema.from_dict([])


# ------------------------------------------------------------------------------------------ class order


def test_natural_order():
    assert natural_sorted(["10", "2", "1", "2"]) == ["1", "2", "10"]
    assert natural_sorted(["1.5", "-3", "1e1", "0"]) == ["-3", "0", "1.5", "1e1"]
    assert natural_sorted(["stage10", "Stage2", "stage1"]) == ["stage1", "Stage2", "stage10"]
    assert natural_sorted(["b", "10", "a", "9"]) == ["9", "10", "a", "b"]  # numbers first
    assert natural_sorted(["normal", "Élevé", "faible"]) == ["Élevé", "faible", "normal"]


# ------------------------------------------------------------------------------------------- inference


def test_infer_leaves_out_a_text_column_with_a_note(tmp_path):
    rows = ["pid,age,name,bmi,outcome", "1,30,Ann,22.5,10", "2,41,Bo,27,2", "3,55,Cy,,10", "4,60,Di,30,9"]
    p = write(tmp_path, "\n".join(rows) + "\n")
    schema, notes = infer_schema(p, label="outcome", id_column="pid")
    assert schema.feature_names == ["age", "bmi"]
    assert schema.classes == ["2", "9", "10"]
    assert schema.id_column == "pid" and schema.features[0].min is None
    assert any("column 'name' was left out (identifier: every value is different)" in n for n in notes)
    assert [(c.name, c.reason) for c in schema.ignored] == [("name", "identifier: every value is different")]
    assert any("'bmi': 1 of 4 cells missing in the sample (25 %)" in n for n in notes)
    # the inferred schema reads its own sample (ids on; the kit imputes the gap with this site's median)
    t = read_table(p, schema, ids=True)
    assert t.y.tolist() == [2, 0, 2, 1] and t.ids.tolist() == ["1", "2", "3", "4"]
    assert t.filled == {"bmi": 1} and t.fill_values == {"bmi": 27.0} and t.X[2].tolist() == [55, 27, 1]


def test_infer_with_ranges(tmp_path):
    p = write(tmp_path, "a;b;y\n1,5;-2;x\n3;4,25;y\n")
    schema, notes = infer_schema(p, label="y", with_ranges=True)
    # rounded outward to a grid of ≥ 5 % of the width (never a real row's exact max: b's is 4.25)
    assert [(f.name, f.min, f.max) for f in schema.features] == [("a", 1.5, 3.0), ("b", -2.0, 4.5)]
    assert notes == []


def test_infer_for_clustering_and_in_other_encodings(tmp_path):
    p = write(tmp_path, "年齢,体重,検査結果\n45,60.5,陽性\n38,72,陰性\n", encoding="shift_jis")
    schema, _ = infer_schema(p, label=None)
    assert schema.feature_names == ["年齢", "体重"] and schema.label is None and schema.classes == []
    p = write(tmp_path, "Température,Catégorie\n37.5,élevé\n36.1,normal\n", encoding="cp1252")
    schema, _ = infer_schema(p, label="Catégorie")
    assert schema.feature_names == ["Température"] and schema.classes == ["élevé", "normal"]


def test_infer_unknown_label_or_id_names_the_columns(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,22,yes\n")
    with pytest.raises(DataError) as info:
        infer_schema(p, label="Outcome")
    assert "'Outcome'" in str(info.value) and "'age', 'bmi', 'outcome'" in str(info.value)
    with pytest.raises(DataError, match="no id column 'pid'"):
        infer_schema(p, label="outcome", id_column="pid")
    with pytest.raises(ConfigError):
        infer_schema(p, label="age", id_column="age")


def test_infer_notes_and_errors(tmp_path):
    p = write(tmp_path, "a,,b,empty,a,c,y\n1,2,x,,5,1,k\n2,3,y,,6,2,k\n")
    schema, notes = infer_schema(p, label="y")
    assert schema.feature_names == ["c"] and schema.classes == ["k"]
    text = " | ".join(notes)
    assert "column 2 has no name" in text and "'empty' has no values" in text
    assert "'a' appears 2 times in the header and was left out" in text and "only one class" in text
    p = write(tmp_path, "name,y\nAnn,k\n")
    with pytest.raises(DataError, match="no usable feature columns"):
        infer_schema(p, label="y")
    p = write(tmp_path, "a,y\n1,NA\n")
    with pytest.raises(DataError, match="label column 'y' has no values"):
        infer_schema(p, label="y")


def test_infer_inf_is_not_numeric(tmp_path):
    p = write(tmp_path, "a,b,y\n1,inf,k\n2,3,j\n")
    schema, notes = infer_schema(p, label="y")
    assert schema.feature_names == ["a"] and "'b' was left out" in notes[0]
