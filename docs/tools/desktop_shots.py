"""Whole-screen screenshots of a real window system (run it under Xvfb): the start window, the export wizard
and the analyst window as they open on a 1366×768 screen, and whether each fits the screen.

    xvfb-run -a -s "-screen 0 1366x768x24" env QT_QPA_PLATFORM=xcb \
        python docs/tools/desktop_shots.py docs/screenshots/xvfb
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(out_dir: Path) -> dict:
    from PySide6.QtCore import QSettings
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QApplication

    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp()
    QSettings.setPath(QSettings.NativeFormat, QSettings.UserScope, tmp)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, tmp)
    app = QApplication(["dcstudio-gui"])
    from gui import settings as app_settings
    from gui.app import StartWindow
    from gui.screen import window_fits

    app.setOrganizationName(app_settings.ORG)
    app.setApplicationName(app_settings.APP)
    screen = QGuiApplication.primaryScreen()
    record = {"screen": [screen.geometry().width(), screen.geometry().height()], "windows": {}}

    def settle(seconds: float = 0.4) -> None:
        end = time.time() + seconds
        while time.time() < end:
            app.processEvents()
            time.sleep(0.01)

    def shot(name: str, window) -> None:
        settle()
        screen.grabWindow(0).save(str(out_dir / f"desktop-{name}.png"))
        record["windows"][name] = {"size": [window.width(), window.height()], "fits": window_fits(window)}

    t0 = time.perf_counter()
    start = StartWindow()
    start.show()
    app.processEvents()
    record["start_window_shown_s"] = round(time.perf_counter() - t0, 3)
    start.remember.setChecked(False)
    shot("1-start", start)
    for n, (role, name) in enumerate((("participant", "wizard"), ("analyst", "analyst")), start=2):
        (start.participant if role == "participant" else start.analyst).setChecked(True)
        t1 = time.perf_counter()
        start.child = None
        opening = start.open_role(defer=True)
        app.processEvents()
        record[f"{name}_opening_shown_s"] = round(time.perf_counter() - t1, 3)
        while start.child is None:
            app.processEvents()
            time.sleep(0.005)
        record[f"{name}_window_shown_s"] = round(time.perf_counter() - t1, 3)
        del opening
        shot(f"{n}-{name}", start.child)
        start.child.close()
    (out_dir / "desktop.json").write_text(json.dumps(record, indent=2))
    return record


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots/xvfb")), indent=2))
