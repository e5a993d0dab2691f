"""`python -m benchmarks report-size`: the report of many sites, measured on a summary in DC-CFL's shape."""

from benchmarks import report_size


def test_report_size_bench_renders_a_large_round_without_cells_or_cards():
    point = report_size.one(120)
    assert point["sites"] == 120 and point["bytes"] > 0 and point["seconds"] >= 0
    assert point["images"] == 1 and point["cards"] == 0 and point["svg_rects"] < 200  # past the cell and card limits
