"""Benchmarks: ``dcstudio bench EXPERIMENT``. Each experiment runs the product's own code paths."""

from __future__ import annotations

import json
from collections.abc import Callable

from ..errors import ConfigError
from ..fileio import write_json_atomic


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


EXPERIMENTS = ("io", "export", "dccfl", "dcclustering", "feddag")


def run_benchmark(name: str, args, say: Callable[[str], None]) -> dict:
    if name == "io":
        from .io_throughput import run

        result = run()
    elif name == "export":
        from .export_scale import run

        result = run(rows=args.rows or 1_000_000)
    elif name == "dccfl":
        from .dccfl import run_from_args

        return run_from_args(args, say)  # prints the tables; with --json writes JSON, markdown and SVG
    elif name == "dcclustering":
        from .dcclustering import run_from_args as run_dcclustering

        return run_dcclustering(args, say)  # prints the tables; with --json writes JSON and markdown
    elif name == "feddag":
        from .feddag import run_from_args as run_feddag

        return run_feddag(args, say)  # prints the tables; with --json writes JSON and markdown
    else:
        raise ConfigError(f"unknown experiment '{name}'; available: {', '.join(EXPERIMENTS)}")
    say(json.dumps(result, indent=2))
    if args.json:
        write_json_atomic(args.json, result)
    return result
