"""Remembered choices (QSettings): this computer's role, recent files and folders."""

from __future__ import annotations

from PySide6.QtCore import QSettings

ORG, APP = "DC Studio", "DC Studio"
MAX_RECENT = 8


def settings() -> QSettings:
    return QSettings(ORG, APP)


def role() -> str:
    return str(settings().value("role", "") or "")


def set_role(value: str) -> None:
    settings().setValue("role", value)


def recent(kind: str) -> list[str]:
    """Recent paths of one kind ("projects", "identities", "csv", "folders", …), newest first."""
    value = settings().value(f"recent/{kind}", [])
    if isinstance(value, str):
        value = [value]
    return [str(v) for v in (value or [])]


def remember(kind: str, path: str) -> None:
    items = [path] + [p for p in recent(kind) if p != path]
    settings().setValue(f"recent/{kind}", items[:MAX_RECENT])
