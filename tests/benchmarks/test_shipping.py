"""The experiments stay out of the product: not in the wheel, not in the desktop archive, not imported by it."""

import ast
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT_PREFIXES = ("benchmarks", "core.bench", "core.simulation", "core.learn.kfed")


def _is_experiment(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in EXPERIMENT_PREFIXES)


def test_the_wheels_packages_hold_no_experiment():
    from setuptools import find_packages

    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(str(ROOT), include=find["include"], exclude=find.get("exclude", ()))
    assert "core" in packages and "gui" in packages
    assert not [p for p in packages if _is_experiment(p)], packages
    assert not (ROOT / "core" / "bench").exists() and not (ROOT / "core" / "simulation").exists()


def test_the_desktop_archive_leaves_benchmarks_out():
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        import trim
    finally:
        sys.path.remove(str(ROOT / "packaging"))
    assert "benchmarks" in trim.EXCLUDED_MODULES
    spec = (ROOT / "packaging" / "dcstudio.spec").read_text()
    assert 'collect_submodules("core") + collect_submodules("gui")' in spec and "collect_submodules(\"benchmarks\")" \
        not in spec
    for name in ("dcstudio.spec", "build.sh", "dist_check.sh", "finish.py", "trim.py"):
        text = (ROOT / "packaging" / name).read_text()
        assert "core.bench" not in text and "core.simulation" not in text and "core/bench" not in text, name


def test_the_product_imports_nothing_of_the_experiments():
    offenders = []
    for top in ("core", "gui"):
        for path in (ROOT / top).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if _is_experiment(n)]
    assert not offenders, offenders


@pytest.mark.slow
def test_the_built_wheel_has_no_experiment_file(tmp_path):
    """Build the wheel for real (no network, no isolation) from a copy of the tree (a build writes build/ and
    *.egg-info into its source) and read its file list."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                                              "__pycache__", ".*_cache", "docs"))
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                          "-q", "-w", str(tmp_path), str(src)], capture_output=True, text=True, cwd=tmp_path)
    if run.returncode != 0:
        pytest.skip(f"the wheel could not be built here: {run.stderr.strip()[-300:]}")
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("core/") for n in names) and any(n.startswith("gui/") for n in names)
    bad = [n for n in names if n.startswith(("benchmarks/", "core/bench/", "core/simulation/", "tests/"))
           or n.endswith("kfed.py")]
    assert not bad, bad
