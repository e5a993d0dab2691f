"""`python -m benchmarks tables` on a tiny lung-shaped table and the table of our own making: every round completes
with kit defaults, no site left out, and the record says what each round said."""

import json

from benchmarks.__main__ import main
from tests.benchmarks.test_bench_clinical import lung_like


def test_tables_record_every_site_exported_and_applied(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DCSTUDIO_BENCH_JOBS", "1")
    lung_like(tmp_path / "clinical_lung.csv")
    out = tmp_path / "tables.json"
    assert main(["tables", "--dataset", "lung", "--dataset", "hospital", "--seeds", "1", "--data-dir", str(tmp_path),
                 "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert set(record["summary"]) == {"lung / sample 200", "lung / sample 30", "hospital / own table"}
    for row in record["summary"].values():
        assert row["left_out"] == 0 and row["exported"] == row["site_rounds"]
        assert row["rows_predicted"] == row["rows_applied"] > 0
    hospital = record["summary"]["hospital / own table"]
    assert hospital["kit_tokens"] == ["NA_NA"] and hospital["unseen_rows"] >= 1 and hospital["export_notes"] >= 2
    md = out.with_suffix(".md").read_text()
    assert md.startswith("# The tables hospitals bring") and "registry, export: column 'chol' has no value" in md
    assert "hospital / own table: 4/4 exported, 0 left out" in capsys.readouterr().out
