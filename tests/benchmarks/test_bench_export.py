"""`python -m benchmarks export`: the bare read, the whole export and the format's floor, measured side by side."""

from benchmarks import export_scale


def test_export_bench_measures_read_export_and_floor(tmp_path):
    res = export_scale.run(rows=3000, features=6, repeats=1, folder=tmp_path)
    assert res["rows"] == 3000 and res["repeats"] == 1
    for key in ("read_seconds", "export_seconds", "floor_seconds"):
        assert len(res[key]) == 1 and 0 < res[key][0] < 60
    assert abs(res["ratio_of_medians"] - res["export_seconds_median"] / res["read_seconds_median"]) < 0.1
    assert res["floor_ratio_of_medians"] > 0
    assert list(tmp_path.iterdir()) == []  # its files are removed
