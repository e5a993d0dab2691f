"""Count how far a parameter walks through core: ``python docs/tools/walks.py [ROOT]`` (issue #34).

Two walks, each traced on a real round run in-process through the command line (``core.cli.main``) on
scikit-learn's breast-cancer rows (two sites of 200 rows, a 160-row sample; identities at scrypt work factor 14):

* **privacy_epsilon**: ``participant export --privacy-epsilon 0.731`` at one site (the other exports without it),
  then ``analyst run``: from the flag to the noise drawn at the site and the formal-privacy block of the summary;
* **missing policy**: ``kit new --missing 'mean radius=impute+indicator'``, the site's export (its CSV has empty
  cells in that column), ``analyst run`` and ``participant apply`` on a CSV with empty cells: from the choice to
  the cells filled at export and again at apply.

Every module of core is imported first, so only calls count. The walk is every call path from the command's entry
to a line of core that handles the parameter by name (a *use*: a line whose source names it — ``epsilon``; a
column's ``.missing`` or ``.indicator``, or those keys — while it runs), traced with ``sys.settrace``. **Hops** are
the walk's distinct caller → callee edges; **returns** the walk's distinct callee → caller edges along which a
function hands the parameter back (its return value holds ε, or the policy's column, choice or kit entry, within
three levels of dicts, lists and dataclasses); **files** the core files the walk crosses. Run it with ROOT on
another checkout (e.g. main) to count the walks there: the same scenario, only the code differs (``-v`` lists the
edges). Nothing is written outside a temporary folder.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import pkgutil
import re
import sys
import tempfile
from pathlib import Path

EPS = 0.731
COLUMN = "mean radius"
CHOICE = "impute+indicator"
MARKERS = {"privacy_epsilon": re.compile(r"epsilon", re.I),
           "missing policy": re.compile(r"\.(missing|indicator)\b|[\"'](missing|indicator)[\"']")}
NOT_USES = ("_ColumnStats",)  # the sample's count of missing cells is not the policy


def carries(value, walk: str, depth: int = 3) -> bool:
    """Whether a value holds the parameter within ``depth`` levels of dicts, lists, tuples and dataclasses."""
    if walk == "privacy_epsilon":
        if isinstance(value, float) and value == EPS:
            return True
    else:
        if value == CHOICE if isinstance(value, str) else False:
            return True
        if getattr(value, "name", None) == COLUMN and hasattr(value, "missing") and hasattr(value, "indicator"):
            return True
        if isinstance(value, dict) and value.get("name") == COLUMN and "missing" in value:
            return True
    if depth == 0:
        return False
    if isinstance(value, dict):
        items = list(value.values())[:200]
    elif isinstance(value, list | tuple):
        items = list(value[:200])
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [getattr(value, f.name, None) for f in dataclasses.fields(value)]
    else:
        return False
    return any(carries(v, walk, depth - 1) for v in items)


class Tracer:
    """Records, for one walk, the call paths to every use and the returns that carry the parameter."""

    def __init__(self, root: Path, walk: str):
        self.core = str(root / "core") + os.sep
        self.root = root
        self.walk = walk
        self.marker = MARKERS[walk]
        self.lines: dict[str, set[int]] = {}
        self.edges: set[tuple[str, str]] = set()
        self.returns: set[tuple[str, str]] = set()
        self.uses: set[str] = set()

    def _is_core(self, code) -> bool:
        return code.co_filename.startswith(self.core)

    def _name(self, code) -> str:
        return f"{Path(code.co_filename).relative_to(self.root).as_posix()}:{code.co_qualname}"

    def _marked(self, code) -> set[int]:
        found = self.lines.get(code.co_filename)
        if found is None:
            text = Path(code.co_filename).read_text(encoding="utf-8").splitlines()
            found = {i + 1 for i, line in enumerate(text) if self.marker.search(line.split("#")[0])}
            self.lines[code.co_filename] = found
        return found

    def _stack(self, frame) -> list[str]:
        out = []
        while frame is not None:
            code = frame.f_code
            if self._is_core(code) and not code.co_name.startswith("<"):
                out.append(self._name(code))
            frame = frame.f_back
        return out[::-1]

    def global_trace(self, frame, event, arg):
        if event != "call" or not self._is_core(frame.f_code):
            return None
        return self.local_trace

    def local_trace(self, frame, event, arg):
        code = frame.f_code
        if event == "line" and frame.f_lineno in self._marked(code) \
                and not code.co_qualname.startswith(NOT_USES):
            stack = self._stack(frame)
            self.uses.add(stack[-1] if stack else self._name(code))
            self.edges.update(zip(stack, stack[1:], strict=False))
        elif event == "return" and not code.co_name.startswith("<") and carries(arg, self.walk):
            caller = frame.f_back
            while caller is not None and (not self._is_core(caller.f_code) or caller.f_code.co_name.startswith("<")):
                caller = caller.f_back
            if caller is not None:
                self.returns.add((self._name(code), self._name(caller.f_code)))
        return self.local_trace

    def run(self, call):
        sys.settrace(self.global_trace)
        try:
            return call()
        finally:
            sys.settrace(None)

    def counts(self) -> dict:
        nodes = {n for edge in self.edges for n in edge} | self.uses
        back = {(a, b) for a, b in self.returns if a in nodes and b in nodes}
        return {"files": len({n.split(":")[0] for n in nodes}), "hops": len(self.edges), "returns": len(back),
                "functions": len(nodes), "edges": sorted(self.edges), "return_edges": sorted(back)}


def _data(d: Path) -> dict[str, Path]:
    import numpy as np
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.frame.rename(columns={"target": "label"})
    frame["label"] = np.where(frame["label"] == 1, "benign", "malignant")
    rng = np.random.default_rng(0)
    rows = rng.permutation(len(frame))
    parts = {"sample": rows[:160], "s1": rows[160:360], "s2": rows[360:560]}
    out = {}
    for name, idx in parts.items():
        part = frame.iloc[idx].copy()
        part[COLUMN] = part[COLUMN].astype(object)
        part.loc[part.index[::7], COLUMN] = ""  # empty cells in the policy's column
        out[name] = d / f"{name}.csv"
        part.to_csv(out[name], index=False)
    return out


def trace_walks(root: Path) -> dict[str, dict]:
    """Both walks' counts on the checkout at ``root`` (its ``core`` is imported)."""
    sys.path.insert(0, str(root))
    os.environ["DCSTUDIO_PASSPHRASE"] = "walks pass phrase"
    import core
    from core.cli import main

    if Path(core.__file__).resolve().parents[1] != root:
        raise SystemExit(f"walks: imported core from {core.__file__}, not from {root}")
    for module in pkgutil.walk_packages(core.__path__, "core."):  # imported before tracing: no class body is a use
        importlib.import_module(module.name)

    def run(*argv) -> None:
        code = main([str(a) for a in argv])
        if code != 0:
            raise SystemExit(f"walks: `dcstudio {' '.join(map(str, argv))}` failed ({code})")

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        csv = _data(d)
        wf = ["--work-factor", "14"]
        for who in ("analyst", "s1", "s2"):
            run("keys", "new", "--name", who, "--out", d / who, *wf)
        ids = {who: d / who / f"{who}.dcid" for who in ("analyst", "s1", "s2")}
        policy = Tracer(root, "missing policy")
        policy.run(lambda: run("kit", "new", "--identity", ids["analyst"], "--name", "walks", "--schema-from",
                               csv["sample"], "--label", "label", "--missing", f"{COLUMN}={CHOICE}",
                               "--out", d / "p.dckit"))
        run("anchor", "new", "--kit", d / "p.dckit", "--seed-csv", csv["sample"], "--plain", "--out",
            d / "p.dcanchor")
        from core.formats.kit import Kit  # noqa: E402 - the checkout's, imported after its path

        fingerprint = Kit.load(d / "p.dckit").analyst.fingerprint
        epsilon = Tracer(root, "privacy_epsilon")

        def export(site: str, *extra: str) -> None:
            run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "p.dcanchor", "--identity", ids[site],
                "--csv", csv[site], "--analyst-fingerprint", fingerprint, "--accept-poor-privacy",
                "--workspace", d / f"ws-{site}", "--out", d / "bundles" / f"{site}.dcbundle", *extra)

        epsilon.run(lambda: export("s1", "--privacy-epsilon", str(EPS)))
        policy.run(lambda: export("s2"))
        for i, tracer in enumerate((epsilon, policy)):  # each in its own analyst workspace and output folder
            tracer.run(lambda i=i: run("analyst", "run", "--kit", d / "p.dckit", "--identity", ids["analyst"],
                                       "--bundles", d / "bundles", "--confirm", d / "s1" / "s1.dcpub",
                                       d / "s2" / "s2.dcpub", "--workspace", d / f"ws-analyst{i}", "--out",
                                       d / f"out{i}"))
        policy.run(lambda: run("participant", "apply", "--package", d / "out1" / "s2.dcpkg", "--identity", ids["s2"],
                               "--workspace", d / "ws-s2", "--csv", csv["s2"], "--out", d / "RESULT.csv"))
        out["privacy_epsilon"], out["missing policy"] = epsilon.counts(), policy.counts()
    return out


if __name__ == "__main__":
    where = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]).resolve()
    for walk, c in trace_walks(where).items():
        print(f"{walk}: {c['files']} files, {c['hops']} hops, {c['returns']} returns ({c['functions']} functions)")
        if "-v" in sys.argv:
            print("  hops:", *(f"{a} -> {b}" for a, b in c["edges"]), sep="\n    ")
            print("  returns:", *(f"{a} -> {b}" for a, b in c["return_edges"]), sep="\n    ")
