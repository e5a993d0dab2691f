"""Missing-value markers match whatever their case and the spaces around them (issue #27 point 2), in numeric and
typed columns, in the fast and the chunked reading; a cell that is not a number says how to mark it missing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.data import tabular
from core.data.schema import FeatureColumn, Schema
from core.data.tabular import CsvOptions, read_table
from core.errors import DataError

SCHEMA = Schema([FeatureColumn("cholestérol", missing="impute"),
                 FeatureColumn("sexe", type="binary", levels=["F", "M"], missing="impute")],
                label="issue", classes=["non", "oui"])


def french(tmp_path: Path, cells: list[str], name: str = "site.csv") -> Path:
    """A French-locale spreadsheet's CSV: cp1252, ';' between cells, decimal comma."""
    lines = ["cholestérol;sexe;issue", *[f"{c};{s};{y}" for c, s, y in cells]]
    path = tmp_path / name
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode("cp1252"))
    return path


CELLS = [("5,2", "F", "non"), (" n/a ", "M", "oui"), ("NA", "n/a", "non"), ("N/A", " na ", "oui"), ("6,1", "F", "non"),
         ("null", "M", "oui")]


@pytest.mark.parametrize("whole", [True, False])
def test_markers_match_regardless_of_case_and_spaces(tmp_path, monkeypatch, whole):
    if not whole:
        monkeypatch.setattr(tabular, "_WHOLE_READ_MAX_BYTES", 0)
        monkeypatch.setattr(tabular, "_CHUNK_CELLS", 6)
    t = read_table(french(tmp_path, CELLS), SCHEMA)
    assert t.format.encoding.lower() in ("cp1252", "windows-1252") and t.format.decimal == ","
    assert t.filled == {"cholestérol": 4, "sexe": 2}
    assert np.isfinite(t.X).all() and t.X.shape == (6, 2)


def test_a_cell_that_is_not_a_number_says_how_to_mark_it_missing(tmp_path):
    path = french(tmp_path, [*CELLS, ("inconnu", "F", "non")])
    with pytest.raises(DataError) as info:
        read_table(path, SCHEMA)
    message = info.value.message
    assert "line 8, column 'cholestérol': 'inconnu' is not a number" in message
    assert "--missing-token 'inconnu'" in message and "Also treat as missing" in message
    t = read_table(path, SCHEMA, options=CsvOptions(missing_tokens=(*tabular.MISSING_TOKENS, " INCONNU ")))
    assert t.filled["cholestérol"] == 5


def test_the_cli_takes_extra_missing_markers():
    from core.cli import build_parser, csv_options

    args = build_parser().parse_args(["participant", "export", "--kit", "k", "--identity", "i", "--csv", "c",
                                      "--out", "o", "--missing-token", "inconnu", "--missing-token", "-"])
    assert csv_options(args).missing_tokens[-2:] == ("inconnu", "-")
