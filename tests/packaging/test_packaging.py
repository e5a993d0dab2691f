"""Fast checks of the packaging helpers (the slow end-to-end check is `make dist-check`, not run here)."""

import importlib.util
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import core

ROOT = Path(__file__).resolve().parents[2]


def _load(name):
    # packaging/ is not a package (and its name is taken by the `packaging` distribution): load by path.
    spec = importlib.util.spec_from_file_location(f"dc_packaging_{name}", ROOT / "packaging" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_installed_distribution_gets_a_licence_text():
    lic = _load("licenses")
    missing, checked = [], 0
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name or name.lower() == "dcstudio":  # our own, proprietary
            continue
        checked += 1
        found = lic.distribution_licence(dist)
        if not found["files"] or not any(len(text) > 100 for _, text in found["files"]):
            missing.append(name)
    assert checked >= 10
    assert missing == []


def test_licence_of_a_distribution_without_files_comes_from_its_spdx_ids():
    lic = _load("licenses")
    if not (lic.COMMON_LICENSES / "LGPL-3").is_file():
        pytest.skip("no /usr/share/common-licenses on this system")
    names = [n for n, _ in lic.spdx_texts("LGPL-3.0-only OR GPL-2.0-only OR GPL-3.0-only")]
    assert names == ["GPL-2", "GPL-3", "LGPL-3"]
    assert lic.spdx_texts("LicenseRef-Proprietary") == []


def test_version_string_carries_the_commit_when_built_from_one():
    assert core.version_string("abc1234") == f"{core.__version__} (commit abc1234)"
    if core.__commit__ is None:
        assert core.version_string() == core.__version__


def test_trim_keeps_the_shm_manager_and_drops_torch_test_binaries():
    trim = _load("trim")
    removed = []
    toc = [(p, "/src/" + p, "BINARY") for p in ("torch/bin/torch_shm_manager", "torch/bin/test_api",
                                                  "torch/lib/libtorch_cpu.so", "torch/lib/libtorchbind_test.so")]
    kept = [e[0] for e in trim.filter_toc(toc, removed)]
    assert kept == ["torch/bin/torch_shm_manager", "torch/lib/libtorch_cpu.so"]
    assert [r[0] for r in removed] == ["torch/bin/test_api", "torch/lib/libtorchbind_test.so"]
    assert all(reason for _, reason in trim.REMOVED_FILES) and all(trim.EXCLUDED_MODULES.values())


def test_libraries_only_a_removed_plugin_needed_are_pruned(tmp_path):
    trim = _load("trim")
    graph = {"gtk3.so": ["libgtk-3.so.0"], "libgtk-3.so.0": ["libatk.so.0", "libglib.so.0"],
             "libatk.so.0": ["libglib.so.0"], "qxcb.so": ["libglib.so.0"], "libglib.so.0": []}
    for name in graph:
        (tmp_path / name).write_bytes(b"")
    src = {name: str(tmp_path / name) for name in graph}
    removed = [("PySide6/Qt/plugins/platformthemes/libqgtk3.so", src["gtk3.so"], "rule")]
    binaries = [("PySide6/Qt/plugins/platforms/libqxcb.so", src["qxcb.so"], "BINARY")]
    binaries += [(n, src[n], "BINARY") for n in ("libgtk-3.so.0", "libatk.so.0", "libglib.so.0")]
    kept = trim.prune_orphans(binaries, removed, needed_of=lambda path: graph[Path(path).name])
    assert [e[0] for e in kept] == ["PySide6/Qt/plugins/platforms/libqxcb.so", "libglib.so.0"]
    assert sorted(r[0] for r in removed[1:]) == ["libatk.so.0", "libgtk-3.so.0"]


@pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("gcc") is None, reason="needs Linux and gcc")
def test_launcher_names_the_missing_system_library(tmp_path, monkeypatch):
    launcher = _load("launcher")
    monkeypatch.setitem(launcher.PACKAGES, "libdcfake.so.7", ("libdcfake7", "dcfake-libs"))
    dep, plugin, src = tmp_path / "libdcfake.so.7", tmp_path / "libqfake.so", tmp_path / "x.c"
    src.write_text("int f(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(dep), "-Wl,-soname,libdcfake.so.7", str(src)], check=True)
    src.write_text("int f(void);\nint g(void) { return f(); }\n")  # uses the library, so it stays NEEDED
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plugin), str(src), str(dep), "-Wl,-rpath,$ORIGIN"], check=True)
    dep.rename(tmp_path / "away")
    msg = launcher.display_problem(str(plugin))
    assert "libdcfake.so.7 is missing" in msg and "libdcfake7" in msg and "dcfake-libs" in msg
    (tmp_path / "away").rename(dep)  # (checked second: a library once loaded stays loaded in this process)
    assert launcher.display_problem(str(plugin)) is None
