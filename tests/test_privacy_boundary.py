"""The analyst side never reads the anchor: no import path, and a whole analyst run works without it."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from core.cli import main
from tests.roundkit import make_sites

ROOT = Path(__file__).resolve().parents[1]

BLOCKED_RUN = textwrap.dedent("""
    import sys, importlib.abc
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name == "core.anchor":
                raise ImportError("analyst code tried to import core.anchor")
    sys.meta_path.insert(0, Block())
    from core.cli import main
    code = main(sys.argv[1:])
    assert "core.anchor" not in sys.modules
    sys.exit(code)
""")


def test_analyst_run_works_with_the_anchor_module_unimportable(tmp_path, monkeypatch):
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "pass phrase 1")
    sites = make_sites(tmp_path / "data", rows=80)
    wf = ["--work-factor", "14"]
    assert main(["keys", "new", "--name", "analyst", "--out", str(tmp_path), *wf]) == 0
    assert main(["kit", "new", "--identity", str(tmp_path / "analyst.dcid"), "--name", "P", "--schema-from",
                 str(tmp_path / "data/sample.csv"), "--label", "label", "--method", "dc", "--set", "epochs=5",
                 "--out", str(tmp_path / "p.dckit")]) == 0
    assert main(["anchor", "new", "--kit", str(tmp_path / "p.dckit"), "--seed-csv", str(tmp_path / "data/seed.csv"),
                 "--out", str(tmp_path / "lead/p.dcanchor")]) == 0
    for name, (train, _) in list(sites.items())[:2]:
        assert main(["keys", "new", "--name", name, "--out", str(tmp_path / name), *wf]) == 0
        assert main(["participant", "export", "--kit", str(tmp_path / "p.dckit"), "--anchor",
                     str(tmp_path / "lead/p.dcanchor"), "--identity", str(tmp_path / name / f"{name}.dcid"),
                     "--csv", str(train), "--out", str(tmp_path / "bundles" / f"{name}.dcbundle")]) == 0
    args = ["analyst", "run", "--kit", str(tmp_path / "p.dckit"), "--identity", str(tmp_path / "analyst.dcid"),
            "--bundles", str(tmp_path / "bundles"), "--out", str(tmp_path / "out")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", BLOCKED_RUN, *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert len(json.loads((tmp_path / "out/summary.json").read_text())["packages"]) == 2


def test_analyst_modules_do_not_mention_anchor_files():
    """No analyst-side module opens a .dcanchor or calls AnchorFile."""
    for mod in ("analyst.py", "report.py", "workspace.py", "methods/dccfl.py", "methods/base.py"):
        text = (ROOT / "core" / mod).read_text()
        assert "AnchorFile" not in text and "dcanchor" not in text, mod
