"""Scripts behind particular records in docs/results/ (one-off comparisons and reruns). Run them from the
repository root, e.g. ``python -m benchmarks.records.hfldd.time_site``; each docstring gives its arguments."""
