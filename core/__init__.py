"""DC Studio core: everything that is not a widget. Never imports Qt."""

__version__ = "0.1.0"
