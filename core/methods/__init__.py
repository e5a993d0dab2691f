"""Method registry: a new method is one module plus one line here."""

from __future__ import annotations

from ..errors import ConfigError
from .base import Method, MethodResult, ReceivedBundle, SiteExport, SiteInput
from .dccfl import DC, DCCFL
from .dcclustering import DCClustering

METHODS: dict[str, type[Method]] = {m.name: m for m in (DC, DCCFL, DCClustering)}


def get_method(name: str, settings: dict | None = None) -> Method:
    try:
        cls = METHODS[name]
    except KeyError:
        raise ConfigError(f"unknown method '{name}'; available: {', '.join(METHODS)}") from None
    return cls(**(settings or {}))


__all__ = ["METHODS", "Method", "MethodResult", "ReceivedBundle", "SiteExport", "SiteInput", "get_method"]
