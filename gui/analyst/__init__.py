"""The analyst's workspace window: project → bundles → clients → models → (data clustering) → export.

Every page is a thin view over one :class:`core.analyst.AnalystRound` held by
:class:`gui.analyst.window.AnalystState`; long actions run in :class:`gui.jobs.Job`.
"""
