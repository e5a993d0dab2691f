"""RESULT.csv written block by block (core/result_csv.py, core/data/blocks.py): byte for byte what the whole-file way
wrote (the CSV read as text, the result columns set, every cell escaped, ``to_csv``), for awkward files and any
block size; and a block's rows read against the schema exactly as ``read_table`` reads them."""

from __future__ import annotations

import io
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.tabular_synth import write_synthetic_csv
from core.data import blocks as blocks_mod
from core.data.blocks import BlockReader, NotStreamable
from core.data.schema import FeatureColumn, Schema
from core.data.tabular import CsvFormat, CsvOptions, detect_format, read_table
from core.errors import ConfigError
from core.fileio import safe_cell
from core.participant import _line_ending, result_format, write_result_csv
from core.result_csv import ResultWriter, guard_formulas

NUM = Schema([FeatureColumn("a"), FeatureColumn("b")], label="label", classes=["no", "yes"])


def whole_file_way(csv, fmt: CsvFormat, out_fmt: CsvFormat, ending: str, columns: dict) -> bytes:
    """What apply wrote before it streamed: the whole CSV as text, the columns set, every cell escaped."""
    original = pd.read_csv(csv, sep=fmt.delimiter, encoding=fmt.encoding, dtype=str, keep_default_na=False)
    for name, values in columns.items():
        original[name] = values
    original.columns = [safe_cell(str(c)) for c in original.columns]
    original = original.map(safe_cell)
    text = original.to_csv(index=False, sep=out_fmt.delimiter, decimal=out_fmt.decimal, lineterminator=ending)
    return text.encode(out_fmt.encoding)


def result_columns(n: int, seed: int = 0, classes=("no", "yes")) -> dict:
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    z = rng.normal(size=n) * 1e-5
    z[::7] = np.nan
    return {"prediction": np.asarray(classes, dtype=object)[(p > 0.5).astype(int)],
            "prob_no": 1 - p, "prob_yes": p.astype(np.float32), "z1": z}


def small_blocks(monkeypatch, block_bytes: int, min_rows: int = 1) -> None:
    monkeypatch.setattr(blocks_mod, "BLOCK_BYTES", block_bytes)
    monkeypatch.setattr(blocks_mod, "MIN_ROWS", min_rows)
    monkeypatch.setattr(blocks_mod, "MIN_CELLS", 0)


def written(tmp_path, csv, columns, schema=NUM, options=None, out_options=None, block_bytes=None, monkeypatch=None):
    if block_bytes is not None:
        small_blocks(monkeypatch, block_bytes)
    fmt = detect_format(csv, options)
    out_fmt = result_format(fmt, out_options)
    out = tmp_path / "RESULT.csv"
    write_result_csv(csv, out, schema, options, fmt, out_fmt, _line_ending(csv), columns)
    return out.read_bytes(), whole_file_way(csv, fmt, out_fmt, _line_ending(csv), columns)


PLAIN = "a,b,label\n" + "".join(f"{i * 0.5 - 7},{-i},{'yes' if i % 3 else 'no'}\n" for i in range(40))
CASES = {
    "plain": (PLAIN, "utf-8"),
    "crlf": (PLAIN.replace("\n", "\r\n"), "utf-8"),
    "no final line end": (PLAIN.rstrip("\n"), "utf-8"),
    "formulas in a text column": ("a,b,label,note\n" + "".join(
        f"{i},{-i},no,{v}\n" for i, v in enumerate(["=1+1", "@SUM(A1)", "+A1", "-x", "-1.5", "+3", "ok", " =x",
                                                    "\t7", "-", "=", "%s", "-1e 5"] * 3)), "utf-8"),
    "spaces inside numbers": ("a,b,label\n" + "".join(f"{v},1,no\n" for v in
                                                      ["-1e 5", " -2", "-3 ", "+4E\t2", "5", "-6"] * 4), "utf-8"),
    "quoted cells": ('a,b,label,note\n1,2,no,"a,b"\n3,4,yes,"line\nbreak"\n5,6,no,"say ""hi"""\n'
                     + "".join(f"{i},{i},no,plain\n" for i in range(20)) + '7,8,"yes",x\n', "utf-8"),
    "blank and space-only lines": ("a,b,label\n1,2,no\n\n3,4,yes\n   \n5,6,no\n\n" + PLAIN.split("\n", 1)[1],
                                   "utf-8"),
    "short rows and a trailing delimiter": ("a,b,label,extra\n" + "".join(
        f"{i},{i},no" + ("" if i % 4 == 0 else ",x" if i % 4 == 1 else "," if i % 4 == 2 else ",-y") + "\n"
        for i in range(30)), "utf-8"),
    "French": ("a;b;label;remarque\n" + "".join(f"{i},5;-{i},25;no;été {i}\n" for i in range(30)), "cp1252"),
    "BOM": ("\ufeff" + PLAIN, "utf-8"),
    "repeated and result names": ("a,b,label,note,note,prediction\n" + "".join(
        f"{i},{i},no,n,=m,old\n" for i in range(25)), "utf-8"),
    "tabs and spaces": (PLAIN.replace(",", "\t").replace("no", "no answer"), "utf-8"),
    "percent signs": ("a,b,label,note\n" + "".join(f"{i},{i},no,{i}%\n" for i in range(20)), "utf-8"),
}


@pytest.mark.parametrize("block_bytes", [1, 40, None])
@pytest.mark.parametrize("case", list(CASES))
def test_block_by_block_is_byte_for_byte_the_whole_file_way(tmp_path, monkeypatch, case, block_bytes):
    text, encoding = CASES[case]
    csv = tmp_path / "in.csv"
    csv.write_bytes(text.encode(encoding))
    options = CsvOptions(missing_tokens=("", "NA"))
    n = len(pd.read_csv(csv, sep=detect_format(csv).delimiter, encoding=detect_format(csv).encoding, dtype=str,
                        keep_default_na=False))
    got, want = written(tmp_path, csv, result_columns(n), options=options, block_bytes=block_bytes,
                        monkeypatch=monkeypatch)
    assert got == want


def test_output_format_changes_and_awkward_result_cells(tmp_path, monkeypatch):
    csv = tmp_path / "in.csv"
    csv.write_bytes(CASES["French"][0].encode("cp1252"))
    cols = result_columns(30, classes=("=no", "a;b"))
    for out in (CsvOptions(encoding="utf-8", delimiter=",", decimal="."), CsvOptions(decimal="."), None):
        got, want = written(tmp_path, csv, cols, out_options=out, block_bytes=64, monkeypatch=monkeypatch)
        assert got == want
    with pytest.raises(ConfigError, match="cannot store"):
        written(tmp_path, csv, {"prediction": np.array(["日本"] * 30, dtype=object)}, block_bytes=64,
                monkeypatch=monkeypatch)


def test_plain_blocks_are_copied_and_the_rest_written_the_exact_way(tmp_path, monkeypatch):
    """The records of a plain block are copied unchanged; a block with a quote or an escaped cell is read as text."""
    csv = tmp_path / "in.csv"
    rows = [f"{i},{-i}.5,no,plain" for i in range(60)]
    rows[15] = '15,-15.5,no,"quoted, cell"'
    rows[50] = "50,-50.5,no,=HYPERLINK(1)"
    csv.write_text("a,b,label,note\n" + "\n".join(rows) + "\n")
    small_blocks(monkeypatch, 200)
    fmt = detect_format(csv)
    reader = BlockReader(csv, NUM, tables=False)
    buf = io.BytesIO()
    writer = ResultWriter(buf, reader.header_raw, fmt, fmt, "\n", markers=reader.markers)
    cols = result_columns(60)
    for block in reader:
        writer.write(block, {k: v[block.start:block.start + block.rows] for k, v in cols.items()})
    writer.close()
    assert writer.blocks_passed >= 3 and writer.blocks_exact == 2
    assert buf.getvalue() == whole_file_way(csv, fmt, fmt, "\n", cols)


@pytest.mark.parametrize("kind", ["numbers", "typed and missing"])
def test_blocks_read_the_rows_as_read_table_does(tmp_path, monkeypatch, kind):
    csv = tmp_path / "s.csv"
    if kind == "numbers":
        schema = write_synthetic_csv(csv, 3000, 5, 3, seed=4)
        fills = None
    else:
        rng = np.random.default_rng(4)
        frame = pd.DataFrame({"x": rng.normal(size=900).round(3), "colour": rng.choice(["red", " blue", "green"], 900),
                              "label": rng.choice(["no", "yes"], 900)})
        frame.loc[::37, "x"] = np.nan
        frame.loc[5::41, "colour"] = ""
        frame.to_csv(csv, index=False)
        schema = Schema([FeatureColumn("x", missing="impute", indicator=True),
                         FeatureColumn("colour", type="categorical", levels=["red", "blue", "green"],
                                       missing="impute")], label="label", classes=["no", "yes"])
        fills = {"x": 0.25, "colour": "green"}
        with pytest.raises(NotStreamable, match="no fill value"):
            list(BlockReader(csv, schema, fill_values={"x": 0.25}))
    whole = read_table(csv, schema, labels=False, fill_values=fills)
    small_blocks(monkeypatch, 997)
    parts = list(BlockReader(csv, schema, fill_values=fills))
    assert len(parts) > 10 and [p.start for p in parts] == list(np.cumsum([0] + [p.rows for p in parts[:-1]]))
    X = np.concatenate([p.table.X for p in parts])
    assert X.tobytes() == whole.X.tobytes()


def test_blocks_are_tall_and_the_last_short_one_joins_the_one_before(tmp_path, monkeypatch):
    """Blocks of at least MIN_ROWS rows (a method's matrix products then take, row for row, the BLAS kernel a product
    over the whole file takes); the few rows left at the end join the last block."""
    csv = tmp_path / "t.csv"
    csv.write_text("a,b,label\n" + "".join(f"{i},{i % 7},no\n" for i in range(350)))
    small_blocks(monkeypatch, 64, min_rows=100)
    rows = [b.rows for b in BlockReader(csv, NUM, tables=False)]
    assert sum(rows) == 350 and len(rows) == 3 and min(rows) >= 100 and rows[-1] > 100 + 30
    monkeypatch.setattr(blocks_mod, "MIN_ROWS", 1 << 17)
    monkeypatch.setattr(blocks_mod, "MIN_CELLS", 1 << 20)
    assert BlockReader(csv, NUM).min_rows == 1 << 19  # a two-column matrix: 2**20 / 2 rows
    assert [b.rows for b in BlockReader(csv, NUM)] == [350]


def test_files_that_cannot_be_cut_are_left_to_the_whole_file_way(tmp_path):
    csv = tmp_path / "u16.csv"
    csv.write_text(PLAIN, encoding="utf-16")
    with pytest.raises(NotStreamable):
        BlockReader(csv, NUM)
    quoted = tmp_path / "q.csv"
    quoted.write_text('"a","b","label"\n1,2,no\n')
    with pytest.raises(NotStreamable):
        BlockReader(quoted, NUM)
    for path in (csv, quoted):  # written the whole-file way, still byte for byte
        got, want = written(tmp_path, path, result_columns(40 if path == csv else 1))
        assert got == want


def test_a_cell_pandas_reads_as_a_number_is_one_pythons_float_reads_unless_it_holds_a_space():
    """Why a number cell needs no escaping check (core/result_csv.py): of random cells starting with + or −,
    those pandas' C parser reads as numbers and Python's ``float`` refuses all hold a space or a tab."""
    rng = random.Random(36)
    alphabet = "-+0123456789.,eE \tx_iInNfad"
    for decimal, sep in ((".", ","), (",", ";")):
        cells = []
        while len(cells) < 3000:
            s = rng.choice("-+") + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
            if sep not in s:
                cells.append(s)
        data = sep.join(f"c{i}" for i in range(len(cells))) + "\n" + sep.join(cells) + "\n"
        frame = pd.read_csv(io.StringIO(data), sep=sep, decimal=decimal, keep_default_na=False,
                            na_values={i: [""] for i in range(len(cells))}, index_col=False)
        for i, cell in enumerate(cells):
            if frame.iloc[:, i].dtype.kind in "iuf" and not np.isnan(frame.iloc[0, i]):
                try:
                    float(cell.replace(",", ".", 1))
                except ValueError:
                    assert " " in cell or "\t" in cell, cell


def test_guard_formulas_writes_what_safe_cell_on_every_cell_writes():
    frame = pd.DataFrame({"a": ["=1", "-1.5", "x", None, "@y"], "b": [1.0, -2.0, np.nan, 3.0, 4.0],
                          "c": np.array(["+A", "+3", "\tq", "ok", "-"], dtype=object),
                          "d": np.array([0.1, 0.2, 0.3, 0.4, 0.5], dtype=np.float32)})
    assert guard_formulas(frame).to_csv() == frame.map(safe_cell).to_csv()


def test_result_cells_are_put_in_before_each_line_end_in_order():
    from core.result_csv import _interleave

    text = np.frombuffer(b"a,1\nbb,22\r\n\nccc,3\n", np.uint8)
    at = np.array([3, 9, 11, 17])  # before each line end (the CR of a CRLF, an empty record)
    inserted = np.frombuffer(b",x,yy,zzz,,w", np.uint8)
    lengths = np.array([4, 4, 0, 4])
    out = _interleave(text, at, inserted, lengths).tobytes()
    assert out == b"a,1,x,y\nbb,22y,zz\r\n\nccc,3z,,w\n"
    assert _interleave(text, at[:0], inserted[:0], lengths[:0]).tobytes() == text.tobytes()


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=30, max_size=30),
       st.lists(st.floats(min_value=0, max_value=1), min_size=30, max_size=30))
def test_any_float_result_cells_are_written_as_to_csv_writes_them(tmp_path_factory, monkeypatch, values, probs):
    """The numpy float text (core/float_text.py) of a pass-through block is to_csv's, for any double (subnormal,
    huge, negative, NaN written empty) and for probabilities rounded to six significant digits as apply rounds them."""
    from core.fileio import significant

    tmp = tmp_path_factory.mktemp("floats")
    csv = tmp / "in.csv"
    csv.write_text("a,b,label\n" + "".join(f"{i},{-i}.25,no\n" for i in range(30)))
    with np.errstate(over="ignore"):  # a double beyond float32's range is inf there
        x32 = np.array(values).astype(np.float32)
    columns = {"prediction": np.array(["no", "yes"] * 15, dtype=object), "x": np.array(values),
               "prob_yes": significant(np.array(probs)), "x32": x32}
    got, want = written(tmp, csv, columns, block_bytes=64, monkeypatch=monkeypatch)
    assert got == want
