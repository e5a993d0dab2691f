"""DC Studio core: everything that is not a widget. Never imports Qt."""

__version__ = "0.1.0"
try:  # written by packaging/build.sh into the frozen build only
    from ._build_info import __commit__
except ImportError:
    __commit__ = None


def version_string(commit=None):
    """``0.1.0`` or, for a build made from a known commit, ``0.1.0 (commit abc1234)``."""
    commit = commit or __commit__
    return f"{__version__} (commit {commit})" if commit else __version__
