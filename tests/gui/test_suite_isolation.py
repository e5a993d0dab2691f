"""The suite's processes keep to themselves (issue #36: `make test` runs its files in parallel workers)."""

from __future__ import annotations

import os
from pathlib import Path


def test_the_apps_remembered_choices_go_to_this_test_processes_own_config_folder():
    """A test that forgets the ``private_settings`` fixture still never writes the developer's ~/.config, nor a
    settings file another worker writes at the same time (tests/conftest.py sets XDG_CONFIG_HOME per process)."""
    from gui import settings

    own = Path(os.environ["XDG_CONFIG_HOME"])
    assert own.name.startswith("dcstudio-test-config-") and own.is_dir()
    assert Path(settings.settings().fileName()).is_relative_to(own)
    assert not Path(settings.settings().fileName()).is_relative_to(Path.home() / ".config")
