"""The site's measured disclosure score (issue #24) and the formal noise, one layer between the methods and the
building blocks, no Qt: :mod:`.release` (what a method releases, declared on the seam), :mod:`.attacks` (each attack
on plain arrays), :mod:`.assessment` (which attacks apply to a release, and their verdicts), :mod:`.levers` (each
lever a site can pull, measured), :mod:`.mechanism` and :mod:`.protective` (the formal (ε, δ) noise), :mod:`.ledger`
and :mod:`.formal_summary`. The limits a kit states and its threat model are part of the kit's format
(:mod:`core.formats.thresholds`, :mod:`core.formats.threat`). Import from the submodules."""
