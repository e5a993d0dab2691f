"""Typed columns end to end in core.data: inference from a sample, the analyst's choices, and reading a site's
CSV into the encoded matrix (unknown levels, ``other``, missing cells per policy, fill values reused)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.data import tabular
from core.data.schema import ColumnChoices, FeatureColumn, Schema, infer_schema
from core.data.tabular import CsvOptions, read_table
from core.errors import ConfigError, DataError
from tests.support.typedkit import clinical_frame


def write(tmp_path: Path, text: str, name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def sample_csv(tmp_path: Path) -> Path:
    """24 rows: an unnamed row number, a text id, sex F/M, a 3-level text column, a 0/1 column, a numeric column
    with NA cells, a free-text column, and the label."""
    rx = ["Obs", "Lev", "Lev+5FU"]
    lines = [',pid,sex,rx,nodes,creat,comment,y']
    for i in range(24):
        creat = "NA" if i % 6 == 0 else f"{0.5 + 0.1 * (i % 7):.1f}"
        sex = "" if i == 5 else "FM"[i % 2]
        nodes = i % 2 if i % 5 else 1
        lines.append(f'{i + 1},P{i:03d},{sex},{rx[i % 3]},{nodes},{creat},"note {i % 15}",{"ab"[i % 2]}')
    return write(tmp_path, "\n".join(lines) + "\n", "sample.csv")


# ------------------------------------------------------------------------------------------- inference


def test_inference_types_every_column_and_says_why_a_column_is_left_out(tmp_path):
    schema, notes = infer_schema(sample_csv(tmp_path), label="y", with_ranges=True)
    kinds = {f.name: (f.type, f.levels, f.missing, f.indicator) for f in schema.features}
    assert kinds == {"sex": ("binary", ["F", "M"], "impute", True),
                     "rx": ("categorical", ["Lev", "Lev+5FU", "Obs"], "impute", False),
                     "nodes": ("numeric", None, "impute", False),  # two numbers in 24 rows: too few for binary
                     "creat": ("numeric", None, "impute", True)}
    assert [(c.name, c.reason) for c in schema.ignored] == [
        ("", "column 1 has no name"), ("pid", "identifier: every value is different"),
        ("comment", "free text: 15 distinct values")]
    text = " | ".join(notes)
    assert "column 'creat': 4 of 24 cells missing in the sample (17 %): sites fill them with their own median " \
           "and add a 'was missing' column" in text
    assert "column 'sex': 1 of 24 cells missing" in text and "most frequent level" in text
    assert "column 'comment' was left out (free text: 15 distinct values)" in text
    creat = schema.features[3]
    present = [0.5 + 0.1 * (i % 7) for i in range(24) if i % 6]
    # the missing share over counts rounded to groups of 10 rows: 4 of 24 reads as 10 of 30
    assert (creat.min, creat.max, creat.missing_share) == (0.5, 1.1, pytest.approx(1 / 3))
    assert creat.mean == pytest.approx(np.mean(present)) and creat.std == pytest.approx(np.std(present, ddof=1))
    assert schema.features[1].frequencies == pytest.approx([1 / 3] * 3)
    assert schema.encoded_names == ["sex=M", "sex (missing)", "rx=Lev", "rx=Lev+5FU", "rx=Obs", "nodes", "creat",
                                    "creat (missing)"]
    # where 24 rows are too few to trust a type or levels, the note says so and how many rows would settle it
    assert "column 'nodes': only two numbers (0, 1) in the sample's 24 rows, too few to call it binary" in text
    assert "give --type nodes=binary; about 299 rows would settle it" in text
    assert "column 'sex': two levels (F, M) in the sample's 23 rows, too few to trust" in text


def test_a_row_number_column_with_a_name_is_an_identifier_but_a_short_one_is_not(tmp_path):
    rows = "\n".join(f"{2 * i + 1},{i % 3 * 1.5},{'ab'[i % 2]}" for i in range(1, 13))  # a subset's row names
    schema, _ = infer_schema(write(tmp_path, "n,x,y\n" + rows + "\n"), label="y")
    assert schema.feature_names == ["x"] and schema.ignored[0].reason.startswith("identifier")
    schema, _ = infer_schema(write(tmp_path, "n,x,y\n1,2,a\n2,5,b\n3,1,a\n"), label="y")
    assert schema.feature_names == ["n", "x"]
    shuffled = "\n".join(f"{(7 * i) % 13 + 40},{i % 3 * 1.5},{'ab'[i % 2]}" for i in range(1, 13))  # distinct ages
    schema, _ = infer_schema(write(tmp_path, "age,x,y\n" + shuffled + "\n"), label="y")
    assert schema.feature_names == ["age", "x"]


def test_the_analysts_choices_override_detection(tmp_path):
    p = sample_csv(tmp_path)
    choices = ColumnChoices(ignore={"nodes"}, types={"creat": "numeric", "comment": "categorical"},
                            levels={"sex": ["M"], "rx": ["Obs", "Lev"]}, missing={"sex": "refuse",
                                                                                "creat": "impute"},
                            other={"rx"})
    schema, notes = infer_schema(p, label="y", choices=choices)
    f = {c.name: c for c in schema.features}
    assert f["sex"].levels == ["M", "F"] and f["sex"].missing == "refuse" and not f["sex"].indicator
    assert f["rx"].levels == ["Obs", "Lev", "Lev+5FU"] and not f["rx"].other  # the unseen bucket is the default
    assert any(n.startswith("column 'rx': --other is no longer needed") for n in notes)
    assert f["creat"].missing == "impute" and not f["creat"].indicator
    assert f["comment"].type == "categorical" and len(f["comment"].levels) == 15
    assert ("nodes", "left out by the analyst") in [(c.name, c.reason) for c in schema.ignored]
    assert "column 'nodes' was left out by the analyst" in notes
    with pytest.raises(ConfigError, match="'rx' cannot be numeric: the sample has 'Obs' in it"):
        infer_schema(p, label="y", choices=ColumnChoices(types={"rx": "numeric"}))
    with pytest.raises(ConfigError, match="no column 'sexe'"):
        infer_schema(p, label="y", choices=ColumnChoices(ignore={"sexe"}))
    with pytest.raises(ConfigError, match="binary but has 3 level"):
        infer_schema(p, label="y", choices=ColumnChoices(levels={"sex": ["F", "M", "X"]}))
    assert not infer_schema(p, label="y", choices=ColumnChoices(other={"sex"}))[0].features[0].other
    with pytest.raises(ConfigError, match="label or id column"):
        infer_schema(p, label="y", choices=ColumnChoices(ignore={"y"}))


# ------------------------------------------------------------------------------------------- reading

TYPED = Schema([FeatureColumn("age", missing="impute", indicator=True),
                FeatureColumn("sex", type="binary", levels=["F", "M"], missing="impute"),
                FeatureColumn("rx", type="categorical", levels=["Obs", "Lev", "Lev+5FU"]),
                FeatureColumn("nodes", type="binary", levels=["0", "1"])],
               label="y", classes=["no", "yes"])


def test_a_site_csv_reads_into_the_encoded_matrix_with_its_own_fill_values(tmp_path):
    p = write(tmp_path, "y,nodes,rx,sex,age,extra\nno,1,Lev,F,50,z\nyes,0, Obs ,NA,,z\nno,1,Lev+5FU,M,70,z\n"
                        "yes,0,Lev,M,61,z\n")
    t = read_table(p, TYPED)
    assert TYPED.encoded_names == ["age", "age (missing)", "sex=M", "rx=Obs", "rx=Lev", "rx=Lev+5FU", "nodes=1"]
    assert t.X.tolist() == [[50, 0, 0, 0, 1, 0, 1], [61, 1, 1, 1, 0, 0, 0], [70, 0, 1, 0, 0, 1, 1],
                            [61, 0, 1, 0, 1, 0, 0]]
    assert t.filled == {"age": 1, "sex": 1} and t.fill_values == {"age": 61.0, "sex": "M"} and t.n_imputed == 2
    assert t.y.tolist() == [0, 1, 0, 1]
    # apply reuses the export's fill values: the same cells get the same numbers whatever this file holds
    again = read_table(p, TYPED, fill_values={"age": 55.5, "sex": "F"})
    assert again.X[1, :3].tolist() == [55.5, 1, 0] and again.fill_values == {"age": 55.5, "sex": "F"}
    with pytest.raises(DataError, match="fill value 'X' of column 'sex' is not one of its levels"):
        read_table(p, TYPED, fill_values={"sex": "X"})


def test_an_unknown_level_goes_to_the_unseen_bucket_counted_and_said(tmp_path):
    """A value the kit does not know never stops the reading: a categorical row of zeros, a binary 0.5; the values
    and their rows are counted and said in one sentence per column."""
    p = write(tmp_path, "age,sex,rx,nodes,y\n50,F,Obs,1,no\n51,M,Placebo,0,no\n52,X,Obs,2,no\n53,F,Placebo,1,no\n")
    t = read_table(p, TYPED)
    assert t.X[:, 2:].tolist() == [[0, 1, 0, 0, 1], [1, 0, 0, 0, 0], [0.5, 1, 0, 0, 0.5], [0, 0, 0, 0, 1]]
    assert t.unseen == {"sex": {"X": 1}, "rx": {"Placebo": 2}, "nodes": {"2": 1}}
    assert t.notes[1] == ("column 'rx': 2 rows hold a value the kit does not know ('Placebo' (2); its levels are Obs, "
                          "Lev, Lev+5FU): they go to the column's unseen bucket (unseen) (none of its levels)")
    assert "read halfway between its two levels" in t.notes[0]


def test_other_takes_an_unknown_level(tmp_path):
    schema = Schema([FeatureColumn("rx", type="categorical", levels=["Obs", "Lev"], other=True)])
    t = read_table(write(tmp_path, "rx\nObs\nLev+5FU\nLev\n"), schema)
    assert schema.encoded_names == ["rx=Obs", "rx=Lev", "rx=other"]
    assert t.X.tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]


def test_missing_cells_per_policy(tmp_path):
    p = write(tmp_path, "age,sex,rx,nodes,y\n50,F,Obs,1,no\n51,M,,0,no\n52,M,Lev,,no\n")
    with pytest.raises(DataError) as info:
        read_table(p, TYPED)
    assert info.value.message == ("line 3, column 'rx' is empty, and 1 other cell is missing too (in columns 'rx', "
                                  "'nodes'); fix the file (the kit refuses missing values in this column)")
    # the legacy mean imputation is for refusing numeric columns only: typed ones still refuse
    with pytest.raises(DataError, match="column 'rx' is empty"):
        read_table(p, TYPED, options=CsvOptions(impute="mean"))
    lenient = Schema([FeatureColumn(f.name, type=f.type, levels=f.levels, missing="impute",
                                    indicator=f.name == "nodes") for f in TYPED.features], label="y",
                     classes=["no", "yes"])
    t = read_table(p, lenient)
    assert t.filled == {"rx": 1, "nodes": 1} and t.fill_values == {"rx": "Obs", "nodes": "0"}
    assert lenient.encoded_names[-2:] == ["nodes=1", "nodes (missing)"] and t.X[:, -1].tolist() == [0, 0, 1]
    empty = write(tmp_path, "age,sex,rx,nodes,y\n50,F,Obs,,no\n51,M,Obs,,no\n")
    with pytest.raises(DataError, match="column 'nodes' has no value in any row of this file, and the kit "
                                        "publishes no sample value"):
        read_table(empty, lenient)


def test_legacy_all_numeric_kits_read_as_before(tmp_path):
    schema = Schema([FeatureColumn("a"), FeatureColumn("b")])
    p = write(tmp_path, "a,b\n1,2\n3,\n")
    with pytest.raises(DataError) as info:
        read_table(p, schema)
    assert info.value.message == ("line 3, column 'b' is empty; fix the file or fill missing values with your own "
                                  "column's mean (CLI: --impute; in the app: 'Older kits: fill missing values with "
                                  "the mean of my own column')")
    t = read_table(p, schema, options=CsvOptions(impute="mean"))
    assert t.X.tolist() == [[1, 2], [3, 2]] and t.filled == {"b": 1} and t.fill_values == {"b": 2.0}


@pytest.mark.parametrize("whole", [True, False])
def test_chunked_and_whole_readings_agree_on_typed_columns(tmp_path, monkeypatch, whole):
    frame = clinical_frame(900, seed=4)
    p = tmp_path / "big.csv"
    frame.to_csv(p, index=False, na_rep="NA")
    schema, _ = infer_schema(p, label="outcome")
    reference = read_table(p, schema)
    monkeypatch.setattr(tabular, "_CHUNK_CELLS", 700)
    if not whole:
        monkeypatch.setattr(tabular, "_WHOLE_READ_MAX_BYTES", -1)
    t = read_table(p, schema)
    assert np.array_equal(t.X, reference.X) and t.filled == reference.filled and t.X.shape == (900, schema.width)
    rows = frame["sex"].isna().to_numpy()
    sex_missing = schema.encoded_names.index("sex (missing)")
    assert np.array_equal(t.X[:, sex_missing], rows.astype(float))
