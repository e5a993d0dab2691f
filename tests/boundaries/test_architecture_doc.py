"""docs/architecture.md stays true: its tree of core/, gui/ and tests/ lists exactly the folders and modules there
are (issue #34: it listed a test folder that did not exist, left out five that did, and said every method is a
package)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def documented_tree(text: str) -> dict[str, set[str]]:
    """Folder → the entries listed under it, from the fenced block of the "The tree" section (two spaces a level;
    a folder ends with "/")."""
    section = text.split("## The tree", 1)[1]
    block = re.search(r"```text\n(.*?)```", section, re.S).group(1)
    listed: dict[str, set[str]] = {}
    stack: list[str] = []
    for line in block.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        name = line.split()[0]
        stack = stack[:depth]
        parent = "/".join(stack)
        if parent:
            listed.setdefault(parent, set()).add(name)
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
            listed.setdefault("/".join(stack), set())
    return listed


def actual_entries(folder: Path) -> set[str]:
    """A folder's modules and packages (tests: its folders), as the tree lists them."""
    out = set()
    for p in folder.iterdir():
        if p.name.startswith((".", "__pycache__")):
            continue
        if p.is_file() and p.suffix == ".py":
            out.add(p.name)
        elif p.is_dir() and ((p / "__init__.py").exists() or folder.name == "tests"):
            out.add(p.name + "/")
    return out


def test_the_documented_tree_is_the_tree():
    listed = documented_tree(DOC.read_text(encoding="utf-8"))
    assert {"core", "gui", "tests"} <= set(listed)
    wrong = []
    for folder, names in sorted(listed.items()):
        if not names:  # a folder listed without its entries (a method's package): only that it exists is checked
            if not (ROOT / folder).is_dir():
                wrong.append(f"{folder}/ is listed but does not exist")
            continue
        have = actual_entries(ROOT / folder)
        for name in sorted(names - have):
            wrong.append(f"{folder}/{name} is listed but is not there")
        for name in sorted(have - names):
            wrong.append(f"{folder}/{name} is there but not listed")
    assert not wrong, "docs/architecture.md's tree is out of date:\n" + "\n".join(wrong)


def test_every_method_is_listed_where_its_code_is():
    """A method is a package or a module: the tree says which, as the registry's classes are defined."""
    from core.methods import METHODS

    listed = documented_tree(DOC.read_text(encoding="utf-8"))["core/methods"]
    for cls in METHODS.values():
        parts = cls.__module__.split(".")
        entry = parts[2] + ("/" if len(parts) > 3 else ".py")
        assert entry in listed, f"{cls.name}: {entry} is not in the tree's core/methods/"


def test_the_checker_sees_a_missing_and_an_extra_entry(tmp_path):
    text = "## The tree\n```text\ncore/\n  a.py  x\n  b/  y\n```\n"
    assert documented_tree(text) == {"core": {"a.py", "b/"}, "core/b": set()}
