import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture
def private_settings(tmp_path, monkeypatch):
    """The app's remembered choices (gui.settings) go to a throw-away file, never to the user's real settings.
    GUI test modules use it with ``pytestmark = pytest.mark.usefixtures("private_settings")``."""
    from PySide6.QtCore import QSettings

    from gui import settings as app_settings

    path = str(tmp_path / "settings.ini")
    monkeypatch.setattr(app_settings, "settings", lambda: QSettings(path, QSettings.IniFormat))
