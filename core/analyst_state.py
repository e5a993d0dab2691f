"""What the analyst has open, as a plain object that the app and tests share (napari's split: no Qt here).

The open :class:`core.analyst.AnalystRound` (``session``), the received bundles, the threshold chosen on the
Clients page and the last :class:`core.analyst.AnalystRun`. Listeners subscribe with :meth:`AnalystState.connect`
to one of :data:`EVENTS`; every setter emits exactly the events whose part changed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from .analyst import AnalystRound, AnalystRun
from .methods import MethodResult, ReceivedBundle

EVENTS = ("session", "bundles", "threshold", "result")


class AnalystState:
    """What the analyst has open. ``connect(event, callback)`` tells a listener when a part of it changed."""

    def __init__(self):
        self.session: AnalystRound | None = None
        self.kit_path: Path | None = None
        self.identity_path: Path | None = None
        self.bundles: list[ReceivedBundle] = []
        self.pending: dict[str, str] = {}  # fingerprint → site name of offered files whose sender is unconfirmed
        self.excluded: set[str] = set()  # sites the analyst leaves out of training (e.g. flagged out of scale)
        self.t_choice: str | float = "auto"  # "auto" or the threshold set on the Clients page
        self.run: AnalystRun | None = None
        self.workspace_lock = threading.Lock()  # import and export never write the workspace at once
        self._listeners: dict[str, list[Callable[[], None]]] = {e: [] for e in EVENTS}

    def connect(self, event: str, callback: Callable[[], None]) -> None:
        self._listeners[event].append(callback)

    def _emit(self, event: str) -> None:
        for callback in self._listeners[event]:
            callback()

    # ---- setters (each emits the events of what changed) ---------------------------------------------------
    def set_session(self, session: AnalystRound | None, kit_path: Path | None, identity_path: Path | None) -> None:
        self.session, self.kit_path, self.identity_path = session, kit_path, identity_path
        self.bundles, self.run = [], None
        self.pending, self.excluded = {}, set()
        if session is not None:
            t = session.kit.settings.get("t", "auto")
            self.t_choice = t if t == "auto" else float(t)
        for event in ("session", "bundles", "result"):
            self._emit(event)

    def add_bundles(self, bundles: list[ReceivedBundle]) -> None:
        known = {b.envelope_id for b in self.bundles}
        new = [b for b in bundles if b.envelope_id not in known]
        if not new:
            return
        self.bundles.extend(new)
        self._emit("bundles")
        if self.run is not None:  # a result no longer covers every imported site
            self.set_run(None)

    def set_pending(self, pending: dict[str, str]) -> None:
        """Senders of offered files that the analyst has not confirmed yet (nothing of theirs was opened)."""
        if pending != self.pending:
            self.pending = dict(pending)
            self._emit("bundles")

    def set_excluded(self, site: str, excluded: bool = True) -> None:
        before = set(self.excluded)
        (self.excluded.add if excluded else self.excluded.discard)(site)
        if self.excluded != before:
            self._emit("bundles")

    @property
    def training_bundles(self) -> list[ReceivedBundle]:
        """The imported bundles minus the sites the analyst excluded."""
        return [b for b in self.bundles if b.site not in self.excluded]

    def unconfirmed_sites(self, bundles: list[ReceivedBundle] | None = None) -> list[str]:
        """Sites not confirmed yet: offered files waiting for confirmation, and any bundle (of ``bundles``,
        default all imported) whose key is no longer confirmed. Training and export wait until it is empty."""
        if self.session is None:
            return []
        fps = self.session.confirmed_fingerprints()
        out = [b.site for b in (self.bundles if bundles is None else bundles) if b.fingerprint not in fps]
        return out + [name for fp, name in sorted(self.pending.items()) if fp not in fps]

    def set_threshold(self, t: str | float) -> None:
        t = t if t == "auto" else round(float(t), 4)
        if t != self.t_choice:
            self.t_choice = t
            self._emit("threshold")

    def set_run(self, run: AnalystRun | None) -> None:
        self.run = run
        self._emit("result")

    @property
    def result(self) -> MethodResult | None:
        return None if self.run is None else self.run.result

    @property
    def result_bundles(self) -> list[ReceivedBundle]:
        return [] if self.run is None else self.run.bundles

    # ---- derived -----------------------------------------------------------------------------------------
    @property
    def kit(self):
        return None if self.session is None else self.session.kit

    @property
    def classes(self) -> list[str]:
        return [] if self.session is None else list(self.session.kit.schema.classes)

    @property
    def task(self) -> str:
        return "" if self.session is None else self.session.kit.task
