import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One BLAS/OpenMP thread per test process (set before numpy or torch is imported; a developer may set more).
# The suite's arrays are small; on a busy 2-core runner multi-threaded BLAS spun against the other jobs and the
# KIP/HFLDD tests took twice as long. Child processes the tests start inherit it.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


@pytest.fixture
def private_settings(tmp_path, monkeypatch):
    """The app's remembered choices (gui.settings) go to a throw-away file, never to the user's real settings.
    GUI test modules use it with ``pytestmark = pytest.mark.usefixtures("private_settings")``."""
    from PySide6.QtCore import QSettings

    from gui import settings as app_settings

    path = str(tmp_path / "settings.ini")
    monkeypatch.setattr(app_settings, "settings", lambda: QSettings(path, QSettings.IniFormat))
