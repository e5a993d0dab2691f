"""Benchmarks: ``dcstudio bench EXPERIMENT``. Each experiment runs the product's own code paths."""

from __future__ import annotations

import json
from collections.abc import Callable

from ..errors import ConfigError
from ..fileio import write_json_atomic

EXPERIMENTS = ("io", "export")


def run_benchmark(name: str, args, say: Callable[[str], None]) -> dict:
    if name == "io":
        from .io_throughput import run

        result = run()
    elif name == "export":
        from .export_scale import run

        result = run(rows=args.rows or 1_000_000)
    else:
        raise ConfigError(f"unknown experiment '{name}'; available: {', '.join(EXPERIMENTS)}")
    say(json.dumps(result, indent=2))
    if args.json:
        write_json_atomic(args.json, result)
    return result
