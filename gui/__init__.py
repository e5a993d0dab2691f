"""DC Studio desktop app: thin PySide6 views over ``core`` objects; long jobs run in workers."""
