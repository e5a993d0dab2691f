"""Frozen-app entry point: no arguments opens the desktop app; arguments run the ``dcstudio`` CLI.

Before the desktop app starts on Linux, the Qt platform plugin is loaded once by hand, so that a system library
missing on the target machine gives one readable sentence (and the Debian / Red Hat package that provides it)
instead of Qt's abort.
"""

import os
import re
import sys

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
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
}


def display_problem(plugin):
    """One sentence saying why the Qt platform plugin ``plugin`` (a path) cannot load here, or None if it can."""
    import _ctypes  # the loader itself: PyInstaller's ctypes.CDLL would replace the loader's message with its own

    try:
        _ctypes.dlopen(plugin, os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError as exc:
        text = str(exc)
        found = re.search(r"([\w.+-]+\.so[\w.]*): cannot open shared object file", text)
        if found and found.group(1) != os.path.basename(plugin):
            lib = found.group(1)
            deb, rpm = PACKAGES.get(lib, (None, None))
            how = f" (Debian/Ubuntu package {deb}, Red Hat/Fedora package {rpm})" if deb else ""
            return (
                f"DC Studio cannot open its window: the system library {lib} is missing on this computer{how}. "
                "Ask IT to install it (see INSTALL.txt). The command line, `dcstudio <command>`, works without it."
            )
        return f"DC Studio cannot open its window: Qt's display plugin does not load here ({text})."
    return None


def check_display():
    """None if the desktop app can start, else a readable sentence. Only checks under a frozen build."""
    if not sys.platform.startswith("linux") or not getattr(sys, "frozen", False):
        return None
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform and not platform.startswith("xcb"):
        return None  # offscreen, wayland, ...: Qt reports its own errors
    if not os.environ.get("DISPLAY"):  # the bundle has no native Wayland plugin: Wayland desktops go via XWayland
        return (
            "DC Studio cannot open its window: no X11 display (DISPLAY is not set; on a Wayland desktop, XWayland "
            "must be enabled). Start it from a desktop session, or use the command line: `dcstudio --help`."
        )
    plugin = os.path.join(sys._MEIPASS, "PySide6", "Qt", "plugins", "platforms", "libqxcb.so")
    return display_problem(plugin) if os.path.exists(plugin) else None


if __name__ == "__main__":
    if len(sys.argv) > 1:
        from core.cli import main

        sys.exit(main(sys.argv[1:]))
    problem = check_display()
    if problem:
        print(problem, file=sys.stderr)
        sys.exit(3)
    from gui.app import main as gui_main

    sys.exit(gui_main([]))
