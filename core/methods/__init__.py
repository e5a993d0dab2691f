"""Method registry: a new method is one module plus one line in ``_BUILT_IN`` (or a :func:`register` call)."""

from __future__ import annotations

from ..errors import ConfigError
from ..privacy.release import COEFFICIENTS, DISTILLED_ROWS, PROTOTYPES, REDUCED_ROWS, SUMMARIES, Release
from .base import (
    ClientDistances,
    Disclosure,
    FitContext,
    Method,
    MethodResult,
    ReceivedBundle,
    SiteExport,
    SiteInput,
)
from .dccfl import DC, DCCFL
from .dcclustering import DCClustering
from .feddag import FedDAG
from .gold import Gold
from .hfldd import HFLDD
from .metalr import MetaLR

_BUILT_IN: tuple[type[Method], ...] = (DCCFL, DC, HFLDD, FedDAG, DCClustering, Gold, MetaLR)
METHODS: dict[str, type[Method]] = {m.name: m for m in _BUILT_IN}


def register(cls: type[Method]) -> type[Method]:
    """Add a method to the registry (usable as a class decorator); its name must be new."""
    if cls.name in METHODS and METHODS[cls.name] is not cls:
        raise ConfigError(f"a method named '{cls.name}' is already registered")
    METHODS[cls.name] = cls
    return cls


def unregister(name: str) -> None:
    METHODS.pop(name, None)


def method_class(name: str) -> type[Method]:
    try:
        return METHODS[name]
    except KeyError as exc:
        raise ConfigError(f"unknown method '{name}'; available: {', '.join(METHODS)}") from exc


def get_method(name: str, settings: dict | None = None) -> Method:
    return method_class(name)(**(settings or {}))


def methods_for(task: str) -> list[type[Method]]:
    """The registered methods for a task, the default first."""
    return [m for m in METHODS.values() if m.task == task]


def default_method(task: str) -> str:
    found = methods_for(task)
    if not found:
        raise ConfigError(f"no method is available for the task '{task}'")
    return found[0].name


__all__ = ["COEFFICIENTS", "DISTILLED_ROWS", "METHODS", "PROTOTYPES", "REDUCED_ROWS", "SUMMARIES", "ClientDistances",
           "Disclosure", "FitContext", "Method", "MethodResult", "ReceivedBundle", "Release", "SiteExport", "SiteInput",
           "default_method", "get_method", "method_class", "methods_for", "register", "unregister"]
