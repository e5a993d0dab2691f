"""Benchmarks: ``python -m benchmarks EXPERIMENT``. Each experiment runs the product's own code paths.

This package sits beside the product (``core``, ``gui``), never inside it: it is neither in the wheel nor in the
desktop archive, and ``core`` imports nothing from it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from core.api import ConfigError, write_json_atomic


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


# name → (module under benchmarks, one line for --help). Each module has ``run_from_args(args, say) -> dict``.
REGISTRY: dict[str, tuple[str, str]] = {
    "io": ("io_throughput", "seal/open throughput of the sealed envelope (MB/s)"),
    "export": ("export_scale", "a site's export of a large CSV, beside a bare pandas read (--rows)"),
    "apply": ("apply_scale", "a site's apply of a package to a large CSV, beside a bare pandas read (--rows)"),
    "report-size": ("report_size", "the analyst's HTML report at 100 to 10,000 sites: bytes and seconds (--sites)"),
    "dccfl": ("dccfl", "DC-CFL paper Tables 2-3 and Figure 2 through the product's code"),
    "dcclustering": ("dcclustering", "DC-Clustering paper Tables 2, 4, 6 with oracle bounds and baselines"),
    "fuzz": ("fuzz", "mutated bundles, packages, kits, cards and anchors: only the product's errors escape"),
    "kill": ("kill", "SIGKILL during export, audit new, kit new, analyst import, analyst run and apply: nothing "
             "partial under a final name, no export lost, no orphan"),
    "import-scale": ("import_scale", "the analyst's import of 100 to 3,000 small bundles: time per bundle, first "
                     "and last tenth (--sites)"),
    "gold": ("gold", "GOLD paper Tables III-IV on re-implemented Non-ICD partitions, with k-FED and ablations"),
    "gold-server": ("gold_server", "GOLD's analyst step (k-means vs MCPL + REMC) on small non-IID sites, beside "
                    "DC-Clustering, k-FED and pooled k-means"),
    "scale": ("scale", "the analyst's dccfl fit and report at 100 to 10,000 sites × 300 rows × 16 columns, label skew "
                       "(--sites, --rows, --classes)"),
    "small-sites": ("small_sites", "label-skewed sites of 20-500 rows: each site's package vs its own-rows model"),
    "near-copies": ("near_copies", "distillation mode: how close real rows lie to each other, and the accuracy cost "
                    "of keeping distilled rows away from them"),
    "feddag": ("feddag", "FedDAG in one round on tabular stand-ins: Distribution I, concept shift, B.10 recovery"),
    "hfldd": ("hfldd", "distillation mode (distribution matching / KIP in the reduced space) vs random real rows, "
              "DC-CFL, FedAvg/FedProx"),
    "wide-sites": ("wide_sites", "64-column digits at sites of 25-60 rows: the per-site dimension rule, DC/DC-CFL "
                   "packages vs own LR, DC-Clustering ARI"),
    "dimension-rule": ("dimension_rule", "m̃ = m vs m − 1 on small clinical and UCI tables: DC/DC-CFL packages vs each "
                       "site's own logistic regression"),
    "meta-lr": ("metalr_clinical", "meta-analysed logistic regression on the clinical tables vs each site's own LR "
                "and a pooled LR"),
    "clinical": ("clinical", "whole product rounds on real clinical tables (text, missing cells): package vs each "
                 "site's own and the pooled models"),
    "summary-stats": ("summary_stats", "one round from each site's fit (one-step, random effects) vs the pooled "
                      "logistic regression with site intercepts, on the clinical tables"),
    "privacy": ("privacy", "privacy–utility curve: colluding-site reconstruction, membership AUC and accuracy as the "
                "dimension, the noise and ε vary (DC-CFL/DC, distillation, GOLD)"),
    "privacy-round": ("privacy_round", "issue #35 on three sites with the default kit (dry bean, flchain, colon): "
                      "privacy.json against independent eigen and posterior-mean attacks, and the private settings "
                      "that keep a colluding site's rebuild under 5 % of rows, with their cost"),
    "units": ("units_check", "the site's units check on the clinical tables and DC-CFL's label-skewed clients: false "
              "alarms, columns given as x·2.54 + 10 caught"),
    "tables": ("tables", "rounds with kit defaults on the clinical tables and a table with an empty column, a rare "
               "level, a source's missing code and a French 0/1 column: no site left out"),
}
EXPERIMENTS = {name: text for name, (_, text) in REGISTRY.items()}


def run_benchmark(name: str, args, say: Callable[[str], None]) -> dict:
    """Run one registered experiment; it prints its tables and, with ``--json``, writes its record."""
    import importlib

    if name not in REGISTRY:
        raise ConfigError(f"unknown experiment '{name}'; available: {', '.join(REGISTRY)}")
    module = importlib.import_module(f"{__name__}.{REGISTRY[name][0]}")
    return module.run_from_args(args, say)


class one_thread:
    """Context: torch and the BLAS/OpenMP pools at one thread each (benchmark workers run side by side on tiny
    matrices, and a record's numbers were measured so). BLAS goes through :func:`core.parallel.one_blas_thread`."""

    def __enter__(self) -> None:
        import torch

        from core.api.research import one_blas_thread

        self._torch = torch.get_num_threads()
        torch.set_num_threads(1)
        self._limits = one_blas_thread()

    def __exit__(self, *exc: object) -> None:
        import torch

        self._limits.restore_original_limits()
        torch.set_num_threads(self._torch)


def worker_count() -> int:
    """Worker processes for a benchmark: ``DCSTUDIO_BENCH_JOBS``, else up to two."""
    import os

    return int(os.environ.get("DCSTUDIO_BENCH_JOBS", min(2, os.cpu_count() or 1)))


def bench_command(name: str, args) -> str:
    """The ``python -m benchmarks`` command line a record states (data sets, seeds, folder, JSON path, --quick)."""
    parts = [f"python -m benchmarks {name}", *(f"--dataset {d}" for d in (args.dataset or [])), f"--seeds {args.seeds}"]
    if args.data_dir:
        parts.append(f"--data-dir {args.data_dir}")
    if args.json:
        parts.append(f"--json {args.json}")
    if args.quick:
        parts.append("--quick")
    return " ".join(parts)


def print_and_record(result: dict, args, say: Callable[[str], None]) -> dict:
    """For experiments whose record is one JSON object: print it, and write it with ``--json``."""
    say(json.dumps(result, indent=2))
    if args.json:
        write_json_atomic(args.json, result)
    return result
