"""``python -m benchmarks import-scale`` at a tiny size: every bundle imported, each pass timed per bundle."""

from __future__ import annotations

from benchmarks.import_scale import run


def test_import_scale_imports_every_bundle_and_times_both_passes():
    result = run([5])
    (row,) = result["rows"]
    assert row["sites"] == 5 and row["cpu_seconds"] > 0 and row["peak_rss_mib"] > 0
    for key in ("verify_ms_first_tenth", "verify_cpu_ms_last_tenth", "record_ms_last_tenth",
                "record_cpu_ms_first_tenth"):
        assert row[key] >= 0
