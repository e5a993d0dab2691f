"""Frozen-app entry point: no arguments opens the desktop app; arguments run the ``dcstudio`` CLI.

Before the desktop app starts on Linux, the Qt platform plugin is loaded once by hand (:mod:`core.display`), so that
a system library missing on the target machine gives one readable sentence (every missing library, the Debian / Red
Hat package that provides it and the apt-get line) instead of Qt's abort.
"""

import sys

# The check is core's (core/display.py), shared with `dcstudio gui` in a venv; names kept here for the build's tests.
from core.display import PACKAGES, check_display, display_problem  # noqa: F401

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
