"""Benchmarks: ``dcstudio bench EXPERIMENT``. Each experiment runs the product's own code paths."""

from __future__ import annotations

import json
from collections.abc import Callable

from ..errors import ConfigError
from ..formats.fileio import write_json_atomic


def machine(*libraries: str) -> str:
    """One line naming the CPU, core count, OS, Python, numpy and the given libraries' versions."""
    import importlib
    import os
    import platform
    from pathlib import Path

    import numpy as np

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = "".join(f", {name} {importlib.import_module(name).__version__}" for name in libraries)
    return (f"{cpu}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, numpy {np.__version__}{versions}")


EXPERIMENTS = ("io", "export", "dccfl", "dcclustering", "scale", "small-sites")


def run_benchmark(name: str, args, say: Callable[[str], None]) -> dict:
    if name == "io":
        from .io_throughput import run

        result = run()
    elif name == "export":
        from .export_scale import run_sizes

        result = run_sizes([args.rows] if args.rows else [10_000, 1_000_000])
    elif name == "scale":
        from .scale import run as run_scale

        sites = [int(v) for v in (args.sites or "10,30,100,300,1000").split(",")]
        result = {"points": run_scale(sites, rows=args.rows or 2000, say=say)}
    elif name == "small-sites":
        from .small_sites import run_from_args as run_small

        return run_small(args, say)
    elif name == "dccfl":
        from .dccfl import run_from_args

        return run_from_args(args, say)  # prints the tables; with --json writes JSON, markdown and SVG
    elif name == "dcclustering":
        from .dcclustering import run_from_args as run_dcclustering

        return run_dcclustering(args, say)  # prints the tables; with --json writes JSON and markdown
    else:
        raise ConfigError(f"unknown experiment '{name}'; available: {', '.join(EXPERIMENTS)}")
    say(json.dumps(result, indent=2))
    if args.json:
        write_json_atomic(args.json, result)
    return result
