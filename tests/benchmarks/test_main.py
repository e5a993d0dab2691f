"""``python -m benchmarks``: the command that replaced ``dcstudio bench`` (its options, help and errors)."""

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import EXPERIMENTS, REGISTRY
from benchmarks.__main__ import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_its_experiments():
    out = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert "usage: python -m benchmarks" in out and "experiments:" in out
    for name, text in EXPERIMENTS.items():
        assert f"  {name}" in out and text.split(":")[0][:30] in out
    for option in ("--dataset", "--seeds", "--data-dir", "--json", "--rows", "--quick", "--cases", "--seed",
                   "--kills", "--sites"):
        assert option in out


def test_every_experiment_names_a_module_with_run_from_args():
    import importlib

    for name, (module, _) in REGISTRY.items():
        assert callable(importlib.import_module(f"benchmarks.{module}").run_from_args), name


def test_the_old_options_and_defaults():
    args = build_parser().parse_args(["gold", "--dataset", "EC", "--dataset", "US"])
    assert (args.experiment, args.dataset, args.seeds, args.seed, args.quick) == ("gold", ["EC", "US"], 10, 0, False)


def test_an_error_is_one_line_and_exit_1(capsys):
    # a data set the gold experiment does not know: the experiment's ConfigError, not a traceback
    assert main(["gold", "--dataset", "NOPE"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m benchmarks: error: ") and err.count("\n") == 1


def test_an_unknown_experiment_is_refused():
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["nope"])
    assert exc.value.code == 2
