"""Can the desktop app open a window here? On Linux, Qt's X11 plugin (``libqxcb.so``) needs system libraries that
a fresh machine may lack (``libxcb-cursor0``, ``libxcb-icccm4``, …); Qt then aborts naming one of them, not always
the one missing. So before the app starts, the plugin is loaded once by hand and every library the loader cannot
find is named with the Debian/Ubuntu and Red Hat/Fedora package that provides it, and one ``apt-get`` line.

One piece for both starts: ``dcstudio gui`` / ``dcstudio-gui`` in a venv (:func:`check_display` finds PySide6's
plugin without importing Qt) and the release archive's launcher (``packaging/launcher.py``, the bundled plugin).
No Qt is imported here (``core`` never imports Qt).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# soname -> (Debian/Ubuntu package, RHEL/Fedora package), for the libraries Qt's xcb plugin may find missing.
PACKAGES = {
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libGLX.so.0": ("libglx0", "libglvnd-glx"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-xinerama.so.0": ("libxcb-xinerama0", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
}

# Every Debian/Ubuntu package above: what README.md and INSTALL.txt tell IT to install once.
APT_LINE = "sudo apt-get install " + " ".join(sorted({deb for deb, _ in PACKAGES.values()}))

_NOT_FOUND = re.compile(r"([\w.+-]+\.so[\w.]*): cannot open shared object file")
_LDD_MISSING = re.compile(r"^\s*([\w.+-]+\.so[\w.]*) => not found", re.MULTILINE)


def _load_error(plugin: str | os.PathLike) -> str | None:
    """The loader's message when the library at ``plugin`` does not load, else None."""
    import _ctypes  # the loader itself: PyInstaller's ctypes.CDLL would replace the loader's message with its own

    try:
        _ctypes.dlopen(os.fspath(plugin), os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as exc:
        return str(exc)
    return None


def missing_libraries(plugin: str | os.PathLike, error: str) -> list[str]:
    """The system libraries the plugin cannot load for want of, from the loader's ``error``: the one it names, then
    every other one ``ldd`` names (the loader stops at the first; installing them one by one wastes IT's visits)."""
    found = _NOT_FOUND.search(error)
    if not found or found.group(1) == os.path.basename(plugin):
        return []
    named = [found.group(1)]
    ldd = shutil.which("ldd")
    if ldd:
        try:
            out = subprocess.run([ldd, os.fspath(plugin)], capture_output=True, text=True, timeout=20).stdout
            named += [lib for lib in _LDD_MISSING.findall(out) if lib not in named]
        except (OSError, subprocess.SubprocessError):
            pass
    return named


def display_problem(plugin: str | os.PathLike) -> str | None:
    """One sentence saying why the Qt platform plugin ``plugin`` (a path) cannot load here, or None if it can: every
    missing system library with its Debian/Ubuntu and Red Hat/Fedora package, and the apt-get line."""
    error = _load_error(plugin)
    if error is None:
        return None
    missing = missing_libraries(plugin, error)
    if not missing:
        return f"DC Studio cannot open its window: Qt's display plugin does not load here ({error})."
    one = len(missing) == 1
    debs = list(dict.fromkeys(PACKAGES[lib][0] for lib in missing if lib in PACKAGES))
    rpms = list(dict.fromkeys(PACKAGES[lib][1] for lib in missing if lib in PACKAGES))
    what = f"the system librar{'y' if one else 'ies'} {', '.join(missing)} {'is' if one else 'are'} missing"
    how = (f" (Debian/Ubuntu package{'' if len(debs) == 1 else 's'} {' '.join(debs)}, Red Hat/Fedora "
           f"package{'' if len(rpms) == 1 else 's'} {' '.join(rpms)})" if debs else "")
    apt = f" On Debian/Ubuntu: sudo apt-get install {' '.join(debs)}." if debs else ""
    return (f"DC Studio cannot open its window: {what} on this computer{how}. Ask IT to install "
            f"{'it' if one else 'them'} (see INSTALL.txt or README.md).{apt} The command line, `dcstudio <command>`, "
            "works without it.")


def qt_xcb_plugin() -> Path | None:
    """Where Qt's X11 platform plugin is: inside the frozen archive, or in the installed PySide6 (found without
    importing it); None when there is none."""
    if getattr(sys, "frozen", False):
        base = Path(getattr(sys, "_MEIPASS", ""), "PySide6")
    else:
        spec = importlib.util.find_spec("PySide6")
        if spec is None or not spec.submodule_search_locations:
            return None
        base = Path(next(iter(spec.submodule_search_locations)))
    plugin = base / "Qt" / "plugins" / "platforms" / "libqxcb.so"
    return plugin if plugin.exists() else None


def check_display() -> str | None:
    """None if the desktop app can open a window here, else one readable sentence (Linux with X11 only: elsewhere,
    or with another Qt platform such as offscreen, Qt reports its own errors)."""
    if not sys.platform.startswith("linux"):
        return None
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform and not platform.startswith("xcb"):
        return None  # offscreen, wayland, ...
    if not os.environ.get("DISPLAY"):
        if os.environ.get("WAYLAND_DISPLAY") and not getattr(sys, "frozen", False):
            return None  # a venv's PySide6 has its own Wayland plugin
        return ("DC Studio cannot open its window: no X11 display (DISPLAY is not set; on a Wayland desktop, "
                "XWayland must be enabled). Start it from a desktop session, or use the command line: "
                "`dcstudio --help`.")
    plugin = qt_xcb_plugin()
    return display_problem(plugin) if plugin is not None else None


__all__ = ["APT_LINE", "PACKAGES", "check_display", "display_problem", "missing_libraries", "qt_xcb_plugin"]
