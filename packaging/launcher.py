"""Frozen-app entry point: no arguments opens the desktop app; arguments run the ``dcstudio`` CLI."""

import sys

if __name__ == "__main__":
    if len(sys.argv) > 1:
        from core.cli import main

        sys.exit(main(sys.argv[1:]))
    from gui.app import main as gui_main

    sys.exit(gui_main([]))
