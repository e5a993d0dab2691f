"""The site's measured disclosure score (issue #24), no Qt: :mod:`.thresholds` (the limits a kit states and a
site tightens), :mod:`.attacks` (each attack on plain arrays), :mod:`.assessment` (which attacks apply to what a
method ships, and their verdicts) and :mod:`.mechanism` (the formal (ε, δ) noise of the DC family's rows).
Import from the submodules (the kit reads :mod:`.thresholds` without loading the methods)."""
