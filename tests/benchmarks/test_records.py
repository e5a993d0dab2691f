"""The record scripts (benchmarks/records/, behind particular docs/results records) still find what they import."""

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "benchmarks" / "records").rglob("*.py") if p.name != "__init__.py")


def test_every_record_script_imports_names_that_exist():
    assert len(SCRIPTS) >= 5
    for path in SCRIPTS:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("core", "benchmarks"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{path.relative_to(ROOT)}: {node.module}.{alias.name}"
                    assert not alias.name.startswith("_"), f"{path.relative_to(ROOT)} reaches into {alias.name}"


def test_the_docs_name_the_scripts_where_they_are():
    for path in (ROOT / "docs" / "results").rglob("*.md"):
        text = path.read_text()
        assert "docs/tools/dccfl_product_rerun" not in text and "python docs/results/" not in text, path
    assert not list((ROOT / "docs" / "results").rglob("*.py"))
