import atexit
import os
import shutil
import tempfile

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Each test process (one per pytest-xdist worker) gets its own, fresh config folder: whatever a test (or a child
# process it starts) saves with QSettings lands there, never in the developer's ~/.config and never in a file
# another worker is writing at the same time.
_CONFIG_HOME = tempfile.mkdtemp(prefix="dcstudio-test-config-")
os.environ["XDG_CONFIG_HOME"] = _CONFIG_HOME
atexit.register(shutil.rmtree, _CONFIG_HOME, True)
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


def pytest_collection_modifyitems(config, items):
    """Test files holding a test marked ``slow`` run first, every file's tests in their own order. Under
    pytest-xdist (``make test``) each file goes whole to one worker, in this order, so that a long file taken last
    does not leave the other worker idle at the end."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
