"""CSV ingestion: formats, matching columns by name, and one clear sentence for every bad file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks import tabular_synth
from benchmarks.tabular_synth import write_synthetic_csv
from core.control import JobControl
from core.data import tabular
from core.data.schema import FeatureColumn, Schema
from core.data.tabular import CsvOptions, detect_format, preview, read_table
from core.errors import Cancelled, ConfigError, DataError

SCHEMA = Schema([FeatureColumn("age"), FeatureColumn("bmi")], label="outcome", classes=["no", "yes"])


def write(tmp_path: Path, text: str, encoding: str = "utf-8", name: str = "data.csv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


def error_of(path: Path, schema: Schema = SCHEMA, **kwargs) -> str:
    with pytest.raises(DataError) as info:
        read_table(path, schema, **kwargs)
    message = str(info.value)
    assert message.startswith(str(path)), message  # names the file
    assert "\n" not in message
    return message


# ------------------------------------------------------------------------------------------- encodings


def test_utf8(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,22.5,yes\n41,27,no\n")
    t = read_table(p, SCHEMA)
    assert t.format == tabular.CsvFormat("utf-8", ",", ".")
    assert t.X.dtype == np.float64 and t.X.shape == (2, 2) and t.X.flags.c_contiguous
    np.testing.assert_array_equal(t.X, [[30, 22.5], [41, 27]])
    assert t.y.dtype == np.int64 and t.y.tolist() == [1, 0]
    assert t.ids is None and t.n_imputed == 0 and t.n_rows == 2 and t.source == p


def test_utf8_with_bom(tmp_path):
    p = write(tmp_path, "\ufeffage,bmi,outcome\n30,22.5,yes\n", encoding="utf-8")
    t = read_table(p, SCHEMA)
    assert t.format.encoding == "utf-8-sig"
    assert t.X.tolist() == [[30, 22.5]]
    # a BOM left in the header (encoding forced to plain UTF-8) is stripped from the name too
    t = read_table(p, SCHEMA, options=CsvOptions(encoding="utf-8"))
    assert t.X.tolist() == [[30, 22.5]]


def test_cp1252_accents_in_headers_and_labels(tmp_path):
    schema = Schema([FeatureColumn("Température"), FeatureColumn("Âge")], label="Résultat",
                    classes=["élevé", "faible"])
    p = write(tmp_path, "Température;Âge;Résultat\n37,5;61;élevé\n36,9;45;faible\n", encoding="cp1252")
    t = read_table(p, schema)
    assert t.format == tabular.CsvFormat("cp1252", ";", ",")
    np.testing.assert_allclose(t.X, [[37.5, 61], [36.9, 45]])
    assert t.y.tolist() == [0, 1]


def test_cp1252_plain_comma_file(tmp_path):
    schema = Schema([FeatureColumn("Température")], label="Catégorie", classes=["à risque", "normal"])
    p = write(tmp_path, "Température,Catégorie\n37.5,normal\n39.1,à risque\n", encoding="cp1252")
    t = read_table(p, schema)
    assert t.format.encoding == "cp1252"
    assert t.y.tolist() == [1, 0]


def test_shift_jis_japanese_headers_and_labels(tmp_path):
    schema = Schema([FeatureColumn("年齢"), FeatureColumn("体重")], label="検査結果",
                    classes=["陰性", "陽性"])
    p = write(tmp_path, "年齢,体重,検査結果\n45,60.5,陽性\n38,72,陰性\n52,58.25,陽性\n", encoding="shift_jis")
    t = read_table(p, schema)
    assert t.format.encoding == "shift_jis"
    np.testing.assert_allclose(t.X, [[45, 60.5], [38, 72], [52, 58.25]])
    assert t.y.tolist() == [1, 0, 1]


def test_cp932_only_characters_are_read(tmp_path):
    # "①" and "㎎" exist only in Windows' Shift_JIS (cp932)
    schema = Schema([FeatureColumn("投与量㎎")], label="群", classes=["①", "②"])
    p = write(tmp_path, "投与量㎎,群\n5,①\n10,②\n", encoding="cp932")
    t = read_table(p, schema)
    assert t.format.encoding == "cp932"
    assert t.y.tolist() == [0, 1]


def test_utf16_with_bom(tmp_path):
    p = write(tmp_path, "age\tbmi\toutcome\n30\t22.5\tyes\n", encoding="utf-16")
    t = read_table(p, SCHEMA)
    assert t.format.encoding == "utf-16" and t.format.delimiter == "\t"
    assert t.X.tolist() == [[30, 22.5]]


def test_encoding_option_overrides_detection(tmp_path):
    p = write(tmp_path, "Température,outcome\n1,yes\n", encoding="cp1252")
    assert detect_format(p, CsvOptions(encoding="latin-1")).encoding == "latin-1"
    with pytest.raises(ConfigError):
        detect_format(p, CsvOptions(encoding="no-such-codec"))


def test_multibyte_character_cut_by_the_sample_is_not_mistaken(tmp_path):
    """The detection sample ends in the middle of a character: still UTF-8 / Shift_JIS."""
    for encoding, char in (("utf-8", "é"), ("shift_jis", "陽")):
        head = "値,w\n"
        filler = "1,a\n" * ((tabular.SAMPLE_BYTES - 100) // 4)
        pad = tabular.SAMPLE_BYTES - len(head.encode(encoding)) - len(filler) - 2  # straddle the boundary
        text = head + filler + "1" * pad + "," + char + "\n" + "2,b\n"
        data = text.encode(encoding)
        cut = data.index(char.encode(encoding))
        assert cut < tabular.SAMPLE_BYTES < cut + len(char.encode(encoding))
        p = tmp_path / f"cut-{encoding}.csv"
        p.write_bytes(data)
        assert detect_format(p).encoding == encoding


def test_non_utf8_byte_after_the_first_megabyte_redetects(tmp_path):
    schema = Schema([FeatureColumn("v")], label="w", classes=["a", "é"])
    text = "v,w\n" + "1,a\n" * (tabular.SAMPLE_BYTES // 4 + 10) + "2,é\n"
    p = write(tmp_path, text, encoding="cp1252")
    assert detect_format(p).encoding == "utf-8"  # the start alone is plain ASCII
    t = read_table(p, schema)
    assert t.format.encoding == "cp1252"
    assert t.y[-1] == 1 and t.n_rows == tabular.SAMPLE_BYTES // 4 + 11


# ---------------------------------------------------------------------------------- delimiters, decimals


@pytest.mark.parametrize("sep", [",", ";", "\t"])
def test_delimiters_are_detected(tmp_path, sep):
    p = write(tmp_path, sep.join(["age", "bmi", "outcome"]) + "\n" + sep.join(["30", "22.5", "yes"]) + "\n")
    t = read_table(p, SCHEMA)
    assert t.format.delimiter == sep and t.format.decimal == "."
    assert t.X.tolist() == [[30, 22.5]]


@pytest.mark.parametrize("sep", [";", "\t"])
def test_decimal_comma(tmp_path, sep):
    rows = ["age;bmi;outcome", "30;22,5;yes", "41,5;27,25;no", '"50";"1,5e2";yes']
    p = write(tmp_path, "\n".join(r.replace(";", sep) for r in rows) + "\n")
    fmt = detect_format(p)
    assert fmt.delimiter == sep and fmt.decimal == ","
    t = read_table(p, SCHEMA)
    np.testing.assert_allclose(t.X, [[30, 22.5], [41.5, 27.25], [50, 150]])
    assert "decimal comma" in fmt.describe()


def test_decimal_comma_rejects_a_point(tmp_path):
    p = write(tmp_path, "age;bmi;outcome\n30;22,5;yes\n41;27,5;no\n42;1.5;no\n")
    msg = error_of(p)
    assert "line 4" in msg and "'bmi'" in msg and "'1.5'" in msg


def test_quoted_values_with_delimiters_do_not_confuse_detection(tmp_path):
    p = write(tmp_path, 'name,age,bmi,outcome\n"Smith, J",30,22.5,yes\n"Doe; K",40,20,no\n')
    t = read_table(p, SCHEMA)
    assert t.format.delimiter == "," and t.X.tolist() == [[30, 22.5], [40, 20]]


def test_options_override_and_are_checked(tmp_path):
    p = write(tmp_path, "age|bmi|outcome\n30|22,5|yes\n")
    t = read_table(p, SCHEMA, options=CsvOptions(delimiter="|", decimal=","))
    assert t.X.tolist() == [[30, 22.5]]
    for bad in (CsvOptions(decimal=";"), CsvOptions(delimiter=",", decimal=","), CsvOptions(impute="median"),
                CsvOptions(delimiter="ab")):
        with pytest.raises(ConfigError):
            read_table(p, SCHEMA, options=bad)


# ----------------------------------------------------------------------------------------------- columns


def test_columns_in_another_order_and_extra_columns(tmp_path):
    p = write(tmp_path, " outcome ,note,bmi,id,  age\nyes,hello,22.5,7,30\nno,,27,8,41\n")
    t = read_table(p, SCHEMA)
    np.testing.assert_array_equal(t.X, [[30, 22.5], [41, 27]])  # schema order, not file order
    assert t.y.tolist() == [1, 0]


def test_missing_columns_are_all_named(tmp_path):
    schema = Schema([FeatureColumn("age"), FeatureColumn("bmi"), FeatureColumn("hr")], label="outcome",
                    classes=["no", "yes"])
    p = write(tmp_path, "age,weight,outcome\n30,70,yes\n")
    msg = error_of(p, schema)
    assert "'bmi'" in msg and "'hr'" in msg and "'weight'" in msg


def test_missing_label_column_is_named_unless_labels_are_off(tmp_path):
    p = write(tmp_path, "age,bmi\n30,22\n")
    assert "'outcome'" in error_of(p)
    t = read_table(p, SCHEMA, labels=False)
    assert t.y is None and t.X.tolist() == [[30, 22]]


def test_a_needed_column_twice_in_the_header(tmp_path):
    p = write(tmp_path, "age,bmi,age,outcome\n30,22,31,yes\n")
    assert "'age' appears more than once" in error_of(p)


def test_row_with_too_many_fields(tmp_path):
    # the decimal comma in a comma-separated file would shift every later column
    p = write(tmp_path, "age,bmi,outcome\n30,22.5,yes\n40,22,5,no\n")
    msg = error_of(p)
    assert "line 3 has 4 fields but the header has 3" in msg
    p = write(tmp_path, "age,bmi,outcome\n30,22,5,yes\n")  # first data row: pandas would only warn
    assert "line 2 has 4 fields" in error_of(p)


def test_row_with_too_many_fields_when_some_columns_are_skipped(tmp_path):
    p = write(tmp_path, 'age,bmi,note,outcome\n30,22.5,"a, b",yes\n40,22,x,y,no\n')
    assert "line 3 has 5 fields but the header has 4" in error_of(p)


def test_unclosed_quote(tmp_path):
    p = write(tmp_path, 'age,bmi,outcome\n30,22.5,yes\n40,"22,no\n50,1,yes\n')
    assert "line 3 opens a quoted value that is never closed" in error_of(p)


# ---------------------------------------------------------------------------------------- bad values


def test_text_in_a_numeric_column(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,22.5,yes\n31,22.5,yes\n40,abc,no\n41,xyz,no\n")
    msg = error_of(p)
    assert msg.endswith("line 4, column 'bmi': 'abc' is not a number; if it means a missing value, add it to the "
                        "missing-value markers (CLI: --missing-token 'abc'; in the app: 'Also treat as missing')")


def test_first_bad_cell_in_file_order(tmp_path):
    p = write(tmp_path, "bmi,age,outcome\n22,30,yes\n1_000,x,no\n")
    assert "line 3, column 'bmi': '1_000' is not a number" in error_of(p)


def test_line_numbers_count_blank_lines_and_multiline_quotes(tmp_path, monkeypatch):
    monkeypatch.setattr(tabular, "_CHUNK_CELLS", 10)  # many chunks: the bad cell is far from the first
    rows = ["age,note,bmi,outcome", "", '30,"two', 'lines",22,yes', ""]
    rows += [f"{i},n,{i},no" for i in range(3000)]
    rows += ["5,n,oops,no", "6,n,7,yes"]
    p = write(tmp_path, "\n".join(rows) + "\n")
    line = len(rows) - 1
    assert f"line {line}, column 'bmi': 'oops' is not a number" in error_of(p)


def test_infinite_value(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,22,yes\n30,1e999,no\n")
    assert "line 3, column 'bmi': '1e999' is not a finite number" in error_of(p)


def test_missing_value_is_an_error_by_default(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,22,yes\n31,NA,no\n,24,yes\n33,,no\n")
    msg = error_of(p)
    assert "line 3, column 'bmi'" in msg and "'NA'" in msg
    assert "2 other cells are missing" in msg and "(in columns 'age', 'bmi')" in msg and "--impute" in msg


def test_missing_value_forms(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,22,yes\n31,   ,no\n")  # blank after stripping
    msg = error_of(p)
    assert "line 3, column 'bmi' is empty" in msg and "other" not in msg
    p = write(tmp_path, "age,bmi,outcome\n30,22,yes\n31\n")  # short row
    assert "line 3, column 'bmi' is missing (the row ends before it)" in error_of(p, labels=False)


def test_spaces_around_numbers_and_labels_are_ignored(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n 30 , 22.5 , yes \n31,24,no\n")
    t = read_table(p, SCHEMA)
    np.testing.assert_allclose(t.X, [[30, 22.5], [31, 24]])
    assert t.y.tolist() == [SCHEMA.classes.index("yes"), SCHEMA.classes.index("no")]


def test_mean_imputation(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,20,yes\n31, NA ,no\n,24,yes\n35,null,no\n")
    t = read_table(p, SCHEMA, options=CsvOptions(impute="mean"))
    assert t.n_imputed == 3
    np.testing.assert_allclose(t.X, [[30, 20], [31, 22], [32, 24], [35, 22]])


def test_custom_missing_tokens(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,20,yes\n31,-999,no\n")
    t = read_table(p, SCHEMA, options=CsvOptions(missing_tokens=("-999",), impute="mean"))
    assert t.X[1, 1] == 20 and t.n_imputed == 1
    p = write(tmp_path, "age,bmi,outcome\n30,20,yes\n31,NA,no\n")
    assert "'NA' is not a number" in error_of(p, options=CsvOptions(missing_tokens=("",)))


def test_imputation_of_an_entirely_missing_column(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,,yes\n31,NA,no\n")
    msg = error_of(p, options=CsvOptions(impute="mean"))  # a legacy kit publishes nothing to fill it with
    assert "column 'bmi' has no value in any row of this file" in msg and "kit new --ignore bmi" in msg


# ------------------------------------------------------------------------------------------------ labels


def test_unknown_labels_are_listed_with_the_expected_classes(tmp_path):
    labels = ["yes", "maybe", "Yes", "no", "maybe", "Yes"] + list("abcdefghij")
    body = "".join(f"{i},{i},{lab}\n" for i, lab in enumerate(labels))
    p = write(tmp_path, "age,bmi,outcome\n" + body)
    msg = error_of(p)
    assert "'maybe'" in msg and "'Yes'" in msg and "and 2 more" in msg
    assert "on 14 rows" in msg and "'no', 'yes'" in msg


def test_missing_label(tmp_path):
    p = write(tmp_path, "age,bmi,outcome\n30,22,yes\n31,23,NA\n")
    assert "line 3: the label column 'outcome' is empty" in error_of(p)


def test_labels_are_stripped_and_numeric_labels_match_by_value(tmp_path):
    schema = Schema([FeatureColumn("a")], label="grade", classes=["1", "2", "10"])
    p = write(tmp_path, "a,grade\n1, 10 \n2,2.0\n3,1\n")
    assert read_table(p, schema).y.tolist() == [2, 1, 0]


# ---------------------------------------------------------------------------------------------------- ids


def test_ids(tmp_path):
    schema = Schema([FeatureColumn("age"), FeatureColumn("bmi")], id_column="pid")
    p = write(tmp_path, "pid,age,bmi\n A-1 ,30,22\n007,31,23\n")
    t = read_table(p, schema, ids=True)
    assert t.ids.tolist() == ["A-1", "007"] and t.ids.dtype.kind == "U"
    assert t.y is None
    p = write(tmp_path, "pid,age,bmi\nA-1,30,22\n  ,31,23\n")
    assert "line 3: the id column 'pid' is empty" in error_of(p, schema, ids=True)
    with pytest.raises(ConfigError):
        read_table(p, SCHEMA, ids=True)


# ---------------------------------------------------------------------------------------- whole files


def test_empty_and_header_only_files(tmp_path):
    assert "is empty" in error_of(write(tmp_path, ""))
    assert "no data rows" in error_of(write(tmp_path, "age,bmi,outcome\n\n"))
    with pytest.raises(DataError, match="not found"):
        read_table(tmp_path / "nope.csv", SCHEMA)


def test_preview(tmp_path):
    p = write(tmp_path, "\ufeff age ;bmi;outcome\n30;22,5;yes\n31\n", encoding="utf-8")
    df, fmt = preview(p, nrows=5)
    assert list(df.columns) == ["age", "bmi", "outcome"]
    assert df.values.tolist() == [["30", "22,5", "yes"], ["31", "", ""]]
    assert fmt == tabular.CsvFormat("utf-8-sig", ";", ",")


def test_progress_and_cancel(tmp_path):
    p = tmp_path / "s.csv"
    schema = write_synthetic_csv(p, 300, 3, 2, seed=1)
    seen = []
    read_table(p, schema, control=JobControl(lambda f, t: seen.append(f)))
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)
    control = JobControl()
    control.cancel()
    with pytest.raises(Cancelled):
        read_table(p, schema, control=control)


# ----------------------------------------------------------------------------------------- synthetic data


def test_synthetic_csv_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(tabular, "_CHUNK_CELLS", 500)
    monkeypatch.setattr(tabular_synth, "_BLOCK_ROWS", 700)
    p = tmp_path / "synth.csv"
    schema = write_synthetic_csv(p, 2500, 4, 12, seed=3, with_ids=True)
    assert schema.classes[:3] == ["0", "1", "2"] and schema.classes[-1] == "11"
    t = read_table(p, schema, ids=True)
    assert t.X.shape == (2500, 4) and np.isfinite(t.X).all()
    assert set(t.y.tolist()) == set(range(12))
    assert t.ids[0] == "r000000000" and len(set(t.ids.tolist())) == 2500
    longer = tmp_path / "longer.csv"
    write_synthetic_csv(longer, 3000, 4, 12, seed=3, with_ids=True)
    assert longer.read_bytes().startswith(p.read_bytes())  # a longer file extends a shorter one
    write_synthetic_csv(longer, 2500, 4, 12, seed=4, with_ids=True)
    assert longer.read_bytes() != p.read_bytes()


def test_synthetic_csv_european_format_with_missing_values(tmp_path):
    p = tmp_path / "eu.csv"
    schema = write_synthetic_csv(p, 400, 3, 0, seed=4, delimiter=";", decimal=",", encoding="cp1252",
                                 missing_rate=0.1)
    assert schema.label is None
    with pytest.raises(DataError, match="--impute"):
        read_table(p, schema)
    t = read_table(p, schema, options=CsvOptions(impute="mean"))
    assert t.format == tabular.CsvFormat("utf-8", ";", ",")  # ASCII content reads as UTF-8
    assert 60 < t.n_imputed < 200 and np.isfinite(t.X).all() and t.y is None


@pytest.mark.parametrize(
    "newline, blank_every, quoted", [("\n", 0, False), ("\r\n", 7, False), ("\n", 5, True)]
)
def test_text_reading_of_refused_chunks(tmp_path, monkeypatch, newline, blank_every, quoted):
    """Cells pandas refuses ("NA " with a trailing space) in two chunks far apart: those chunks are read as
    text (from their byte offset, or to the end of a file with quotes) and the result equals a clean read.
    A bad cell after them is still reported with its own line."""
    monkeypatch.setattr(tabular, "_CHUNK_CELLS", 800)  # chunks of 800 rows (100 when read as text)
    rng = np.random.default_rng(5)
    n = 3000
    X = np.round(rng.normal(size=(n, 3)) * 100, 3)
    y = rng.integers(0, 3, n)
    rows = X.tolist()
    q = '"' if quoted else ""
    data = [f"{q}p{i}{q},{a!r},{b!r},{c!r},{'xyz'[y[i]]}" for i, (a, b, c) in enumerate(rows)]
    data[222] = data[222].replace(f",{rows[222][1]!r},", ",NA ,")
    data[2222] = data[2222].replace(f",{rows[2222][2]!r},", ",null  ,")
    lines = ["pid,a,b,c,label"]
    line_of = {}
    for i, d in enumerate(data):
        if blank_every and i % blank_every == 0:
            lines.append("")
        lines.append(d)
        line_of[i] = len(lines)
    p = write(tmp_path, newline.join(lines) + newline)
    schema = Schema([FeatureColumn("c"), FeatureColumn("a"), FeatureColumn("b")], label="label",
                    classes=["x", "y", "z"], id_column="pid")
    with pytest.raises(DataError, match=f"line {line_of[222]}, column 'b' has the missing-value marker 'NA'"):
        read_table(p, schema)
    offsets = []
    real_skip_lines = tabular._skip_lines

    def spy(*args, **kwargs):
        offsets.append(real_skip_lines(*args, **kwargs))
        return offsets[-1]

    monkeypatch.setattr(tabular, "_skip_lines", spy)
    t = read_table(p, schema, ids=True, options=CsvOptions(impute="mean"))
    assert len(offsets) == (0 if quoted else 5)  # header, then start and end of each refused chunk
    expected = X[:, [2, 0, 1]].copy()
    expected[222, 2] = np.mean(np.delete(X[:, 1], 222))
    expected[2222, 0] = np.mean(np.delete(X[:, 2], 2222))
    np.testing.assert_allclose(t.X, expected, rtol=0, atol=1e-9)
    assert t.y.tolist() == y.tolist() and t.ids.tolist() == [f"p{i}" for i in range(n)] and t.n_imputed == 2
    data[2900] = data[2900].replace(f",{rows[2900][0]!r},", ",12a,")
    lines[line_of[2900] - 1] = data[2900]
    p = write(tmp_path, newline.join(lines) + newline)
    with pytest.raises(DataError, match=f"line {line_of[2900]}, column 'a': '12a' is not a number"):
        read_table(p, schema, options=CsvOptions(impute="mean"))


@pytest.mark.parametrize("kind", ["ids and labels", "missing values", "integers and spaces"])
def test_whole_file_reading_equals_the_chunked_reading(tmp_path, monkeypatch, kind):
    """A UTF-8 file whose every column is used is read in one pandas call (parsed on all cores) and copied
    into the matrix on two threads; the result is bit for bit the chunked reading's."""
    p = tmp_path / "w.csv"
    options = CsvOptions()
    ids = False
    if kind == "ids and labels":
        schema = write_synthetic_csv(p, 3000, 4, 5, seed=2, with_ids=True)
        ids = True
    elif kind == "missing values":
        schema = write_synthetic_csv(p, 3000, 4, 3, seed=2, missing_rate=0.05)
        options = CsvOptions(impute="mean")
    else:
        rng = np.random.default_rng(2)
        lines = ["age,bmi,outcome"] + [f" {a} ,{b},{'yes' if a % 2 else 'no'} " for a, b in
                                       zip(rng.integers(0, 99, 3000), rng.integers(10, 40, 3000), strict=True)]
        p.write_text("\n".join(lines) + "\n")
        schema = SCHEMA
    monkeypatch.setattr(tabular, "_CHUNK_CELLS", 700)  # both readings check (and sum) the same row blocks
    copies = []
    real = tabular._rows_from_columns
    monkeypatch.setattr(tabular, "_rows_from_columns", lambda cols, out: (copies.append(out.shape), real(cols, out)))
    whole = read_table(p, schema, ids=ids, options=options)
    assert copies == [whole.X.shape]  # the whole-file path ran
    monkeypatch.setattr(tabular, "_WHOLE_READ_MAX_BYTES", -1)
    chunked = read_table(p, schema, ids=ids, options=options)
    assert len(copies) == 1
    assert whole.X.tobytes() == chunked.X.tobytes() and whole.X.flags["C_CONTIGUOUS"]
    assert np.array_equal(whole.y, chunked.y) and whole.n_imputed == chunked.n_imputed
    assert (whole.ids is None and chunked.ids is None) or np.array_equal(whole.ids, chunked.ids)
    if kind == "missing values":
        assert whole.n_imputed > 0
