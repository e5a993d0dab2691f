"""The analyst side never reads the anchor: no import path, and a whole analyst run works without it."""

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from core.cli import main
from tests.support import HANG_S
from tests.support.cli import analyst_of
from tests.support.roundkit import make_sites

ROOT = Path(__file__).resolve().parents[2]

BLOCKED_RUN = textwrap.dedent("""
    import sys, importlib.abc
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "core.formats.anchor":
                raise ImportError("analyst code tried to import core.formats.anchor")
    sys.meta_path.insert(0, Block())
    from core.cli import main
    code = main(sys.argv[1:])
    assert "core.formats.anchor" not in sys.modules
    sys.exit(code)
""")


@pytest.mark.slow
def test_analyst_run_works_with_the_anchor_module_unimportable(tmp_path, monkeypatch):
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "pass phrase 1")
    sites = make_sites(tmp_path / "data", rows=80)
    wf = ["--work-factor", "14"]
    assert main(["keys", "new", "--name", "analyst", "--out", str(tmp_path), *wf]) == 0
    assert main(["kit", "new", "--identity", str(tmp_path / "analyst.dcid"), "--name", "P", "--schema-from",
                 str(tmp_path / "data/sample.csv"), "--label", "label", "--method", "dc", "--set", "epochs=5",
                 "--out", str(tmp_path / "p.dckit")]) == 0
    names = list(sites)[:2]
    for name in names:
        assert main(["keys", "new", "--name", name, "--out", str(tmp_path / name), *wf]) == 0
    assert main(["anchor", "new", "--kit", str(tmp_path / "p.dckit"), "--seed-csv", str(tmp_path / "data/seed.csv"),
                 "--out", str(tmp_path / "lead/p.dcanchor"),
                 "--identity", str(tmp_path / names[0] / f"{names[0]}.dcid"),
                 "--to", str(tmp_path / names[1] / f"{names[1]}.dcpub")]) == 0
    for name, (train, _) in list(sites.items())[:2]:
        assert main(["participant", "export", "--kit", str(tmp_path / "p.dckit"),
                     "--analyst-fingerprint", analyst_of(tmp_path / "p.dckit"), "--accept-poor-privacy", "--anchor",
                     str(tmp_path / "lead/p.dcanchor"), "--identity", str(tmp_path / name / f"{name}.dcid"),
                     "--csv", str(train), "--out", str(tmp_path / "bundles" / f"{name}.dcbundle")]) == 0
    args = ["analyst", "run", "--kit", str(tmp_path / "p.dckit"), "--identity", str(tmp_path / "analyst.dcid"),
            "--bundles", str(tmp_path / "bundles"), "--out", str(tmp_path / "out"),
            "--confirm", *[str(tmp_path / n / f"{n}.dcpub") for n in names]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", BLOCKED_RUN, *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=HANG_S)
    assert out.returncode == 0, out.stderr
    assert len(json.loads((tmp_path / "out/summary.json").read_text())["packages"]) == 2


def _imports(path: Path, module: str) -> set[str]:
    """Every module a file imports, at top level or inside functions, as absolute names."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # "from pkg import module"
    return found


def _import_graph() -> dict[str, set[str]]:
    graph = {}
    for top in ("core", "gui"):
        for path in (ROOT / top).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            graph[module] = _imports(path, module)
    for module in list(graph):  # importing a.b.c runs a/__init__ and a/b/__init__ too
        parents = {".".join(module.split(".")[:k]) for k in range(1, module.count(".") + 1)}
        graph[module] |= parents
    return graph


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m in seen or m not in graph:
            continue
        seen.add(m)
        todo.extend(graph[m])
    return seen


ANCHOR = "core.formats.anchor"


def test_no_analyst_side_module_can_reach_the_anchor_module():
    """An import contract over every module, new ones included: nothing the analyst runs imports the anchor
    module, even lazily inside a function. The site side (participant, its wizard pages, its public API), the CLI
    that hosts both roles, the demo, the benchmarks and the simulations (which play every role) are the only
    modules allowed to."""
    graph = _import_graph()
    analyst_side = [m for m in graph if m in ("core.analyst", "core.report", "core.methods", "core.api",
                                              "core.api.common", "core.api.analyst")
                    or m.startswith(("core.methods.", "core.learn.", "gui.analyst."))]
    assert "core.analyst" in analyst_side and "gui.analyst.window" in analyst_side
    for module in analyst_side:
        assert ANCHOR not in _closure(graph, module), f"{module} can reach {ANCHOR}"
    allowed = ("core.participant", "core.cli", "core.demo", "core.formats", "gui.participant", "gui.app",
               "core.api.participant", "core.api.research")
    importers = sorted(m for m, deps in graph.items() if ANCHOR in deps and m != ANCHOR)
    assert importers and all(m.startswith(allowed) for m in importers), importers
