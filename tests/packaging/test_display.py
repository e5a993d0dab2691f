"""`dcstudio gui` and the release launcher share one check (core/display.py): a Qt plugin that cannot load names
every missing system library with its packages and the apt-get line; the README carries that line."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core import display

needs_gcc = pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("gcc") is None,
                               reason="needs Linux and gcc")


def _plugin_needing(tmp_path: Path, *sonames: str) -> Path:
    """A shared library that needs the libraries ``sonames`` (built here, then moved away)."""
    src = tmp_path / "x.c"
    for k, soname in enumerate(sonames):
        src.write_text(f"int f{k}(void) {{ return {k}; }}\n")
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / soname), f"-Wl,-soname,{soname}", str(src)],
                       check=True)
    src.write_text("".join(f"int f{k}(void);\n" for k in range(len(sonames)))
                   + "int g(void) { return " + " + ".join(f"f{k}()" for k in range(len(sonames))) + "; }\n")
    plugin = tmp_path / "libqfake.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plugin), str(src), *[str(tmp_path / s) for s in sonames],
                    "-Wl,-rpath,$ORIGIN"], check=True)
    for soname in sonames:
        (tmp_path / soname).rename(tmp_path / f"{soname}.away")
    return plugin


@needs_gcc
def test_every_missing_library_is_named_with_its_packages_and_the_apt_line(tmp_path, monkeypatch):
    monkeypatch.setitem(display.PACKAGES, "libdcone.so.1", ("libdcone1", "dcone-libs"))
    monkeypatch.setitem(display.PACKAGES, "libdctwo.so.4", ("libdctwo4", "dctwo-libs"))
    plugin = _plugin_needing(tmp_path, "libdcone.so.1", "libdctwo.so.4")
    msg = display.display_problem(plugin)
    if shutil.which("ldd"):  # the loader names the first; ldd every one
        assert "the system libraries libdcone.so.1, libdctwo.so.4 are missing" in msg
        assert "sudo apt-get install libdcone1 libdctwo4" in msg and "dcone-libs dctwo-libs" in msg
    else:
        assert "libdcone.so.1 is missing" in msg and "sudo apt-get install libdcone1" in msg
    assert "`dcstudio <command>`, works without it" in msg


def test_no_check_under_another_qt_platform_and_a_sentence_without_a_display(monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert display.check_display() is None
    monkeypatch.delenv("QT_QPA_PLATFORM")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert display.check_display().startswith("DC Studio cannot open its window: no X11 display")


def test_the_venv_app_says_the_problem_instead_of_starting_qt(monkeypatch, capsys):
    """`dcstudio gui` (the installed `dcstudio-gui`, gui.app.main) checks before Qt starts, as the launcher does."""
    import gui.app

    class NoQt:
        """Stands for QApplication: none yet, and making one means Qt started before the check."""

        @staticmethod
        def instance():
            return None

        def __init__(self, *args):
            raise AssertionError("Qt was started before the display check")

    import core.api

    missing = lambda: "DC Studio cannot open its window: the system library libxcb-icccm.so.4 is missing"  # noqa: E731
    monkeypatch.setattr(core.api, "check_display", missing)  # the app calls core through its public API
    monkeypatch.setattr(gui.app, "QApplication", NoQt)
    assert gui.app.main([]) == 3
    assert "libxcb-icccm.so.4 is missing" in capsys.readouterr().err


def test_the_plugin_of_the_installed_pyside6_is_found_without_importing_qt():
    plugin = display.qt_xcb_plugin()
    assert plugin is None or plugin.name == "libqxcb.so" and plugin.exists()


def test_the_readme_lists_the_apt_line():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    assert display.APT_LINE in readme
