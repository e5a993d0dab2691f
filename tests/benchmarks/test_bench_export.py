"""`python -m benchmarks export` and `apply`: the CLI as a site runs it beside a bare read, measured by the kernel."""

import sys

import pytest

from benchmarks import apply_scale, export_scale
from benchmarks.child_usage import bare_read, measured


@pytest.mark.parametrize("table", ["numeric", "text"])
def test_export_bench_pairs_the_cli_export_with_the_bare_read(tmp_path, table):
    res = export_scale.run_table(table, 1500, repeats=1, folder=tmp_path, site_work_factor=14)
    assert res["rows"] == 1500 and res["repeats"] == 1 and res["bundle_mb"] > 0
    for key in ("read", "export"):
        assert len(res[key]) == 1 and res[key][0]["cpu_seconds"] > 0 and res[key][0]["peak_rss_mb"] > 0
    assert res["cpu_ratios"] == [round(res["export"][0]["cpu_seconds"] / res["read"][0]["cpu_seconds"], 2)]
    assert any(line.startswith("leaves") for line in res["export_said"])  # the export itself ran and said so
    assert list(tmp_path.iterdir()) == []  # its files are removed


def test_apply_bench_pairs_the_cli_apply_with_the_bare_read(tmp_path):
    res = apply_scale.run(rows=1200, features=5, repeats=1, folder=tmp_path, site_work_factor=14, site_rows=80,
                          sites=2)
    assert res["rows"] == 1200 and res["result_mb"] >= res["csv_mb"] > 0
    assert res["model_used"] == "package"  # the measured site holds one class: it has no own model
    assert res["cpu_ratios"] == [round(res["apply"][0]["cpu_seconds"] / res["read"][0]["cpu_seconds"], 2)]
    assert list(tmp_path.iterdir()) == []


def test_a_child_is_measured_alone_and_a_failure_names_the_command(tmp_path):
    small = tmp_path / "s.csv"
    small.write_text("a,b\n1,2\n")
    used = measured(bare_read(small))
    assert used["returncode"] == 0 and used["peak_rss_mb"] < 1000  # not the parent's memory
    with pytest.raises(RuntimeError, match="exited with 3"):
        measured([sys.executable, "-S", "-c", "raise SystemExit(3)"])


def test_a_measured_command_reads_the_products_bytecode_as_an_installed_product_does(tmp_path, monkeypatch):
    from benchmarks.child_usage import _ROOT, installed

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # as on the development machine
    env = installed(tmp_path)
    compiled = tmp_path / "pycache" / _ROOT.relative_to(_ROOT.anchor) / "core"
    assert any(p.name.startswith("fileio.") and p.suffix == ".pyc" for p in compiled.iterdir())
    out = tmp_path / "where.txt"
    probe = f"import core.fileio, pathlib; pathlib.Path({str(out)!r}).write_text(core.fileio.__cached__)"
    measured([sys.executable, "-c", probe], env=env)
    assert out.read_text().startswith(str(tmp_path / "pycache"))  # the module came from the compiled cache
