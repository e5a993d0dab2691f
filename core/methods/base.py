"""The one small interface every method plugs into the pipelines through.

A method says three things:
1. what a site computes and ships (``site_compute`` → :class:`SiteExport`), given its rows and X^anc;
2. what the analyst fits on the received bundles (``fit`` → :class:`MethodResult`) and what each site's
   package holds (``package``);
3. what a site does with its package (``apply``), given its kept private state.

The pipelines handle files, keys, workspaces, audit and checks; a new method is one module plus one line
in :mod:`core.methods`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..control import JobControl


@dataclass
class SiteInput:
    """What a site's method sees: its rows in kit column order, labels as class indices, X^anc."""

    X: np.ndarray
    y: np.ndarray | None
    classes: list[str]
    anchor: np.ndarray | None
    ids_hashed: np.ndarray | None = None  # (n, 32) uint8 keyed hashes, when the kit links rows by id
    settings: dict = field(default_factory=dict)  # site-side options (reduction, dimension, noise, seed)
    block: str | None = None  # the feature block these columns are (clustering kits; X and anchor hold only it)


@dataclass
class Disclosure:
    """One array (or manifest value) that leaves the site, described for a person."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    meaning: str


@dataclass
class SiteExport:
    """A site's one-shot contribution: what ships, and what stays in its workspace."""

    arrays: dict[str, np.ndarray]
    manifest: dict
    private_arrays: dict[str, np.ndarray]
    private_meta: dict
    disclosures: list[Disclosure]
    stays: list[str]

    @property
    def shipped_bytes(self) -> int:
        return int(sum(a.nbytes for a in self.arrays.values()))


@dataclass
class ReceivedBundle:
    """A verified, decrypted bundle as the analyst holds it."""

    site: str
    fingerprint: str
    digest: str
    envelope_id: str
    manifest: dict
    arrays: dict[str, np.ndarray]
    card: Any = None  # core.formats.identity.PublicCard (kept untyped to keep this module dependency-free)


@dataclass
class MethodResult:
    """Everything the analyst learned: per-site package contents plus a JSON-able summary."""

    method: str
    packages: list[tuple[dict, dict[str, np.ndarray]]]  # per received bundle: (manifest, arrays)
    summary: dict
    details: dict = field(default_factory=dict)  # arrays for plots/reports (distances, curves, …)


class Method(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    task: ClassVar[str]  # "classification" | "clustering"
    labels_leave: ClassVar[str]  # "rows" | "counts" | "none"
    family: ClassVar[str]  # bundles of the same family are interchangeable (e.g. dc and dccfl)

    def __init__(self, **settings: Any):
        unknown = set(settings) - set(self.default_settings())
        if unknown:
            from ..errors import ConfigError

            raise ConfigError(f"unknown setting(s) for {self.name}: {', '.join(sorted(unknown))}")
        self.settings = {**self.default_settings(), **settings}

    @classmethod
    @abstractmethod
    def default_settings(cls) -> dict: ...

    @abstractmethod
    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport: ...

    @abstractmethod
    def fit(self, bundles: list[ReceivedBundle], classes: list[str],
            control: JobControl | None = None) -> MethodResult: ...

    @abstractmethod
    def apply(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
              X: np.ndarray) -> dict[str, np.ndarray]: ...

    def validate_bundle(self, bundle: ReceivedBundle, n_classes: int) -> None:  # noqa: B027
        """Raise FormatError if a bundle's arrays do not fit this method (shapes, ranges)."""
