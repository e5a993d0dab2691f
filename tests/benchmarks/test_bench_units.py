"""`python -m benchmarks units` on a tiny lung-shaped table: no false alarm at its natural sites, and every site
caught when its numeric columns are given as x·2.54 + 10, class by class and on the whole sample."""

from benchmarks.__main__ import main
from tests.benchmarks.test_bench_clinical import lung_like


def test_units_check_record_on_a_tiny_table(tmp_path, capsys):
    lung_like(tmp_path / "clinical_lung.csv")
    out = tmp_path / "units.json"
    assert main(["units", "--dataset", "lung", "--data-dir", str(tmp_path), "--json", str(out)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| lung")]
    assert len(rows) == 2  # with labels (class by class), then without (the whole sample)
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == "4" and cells[4] == "0" and cells[5] == "4"  # 4 sites, no false alarm, all 4 caught
    assert out.with_suffix(".md").read_text().startswith("# The site's units check")
