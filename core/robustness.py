"""One bad site must not silently spoil everyone's model: flag sites whose shipped arrays are out of scale.

A site's reduced rows X̃ᵢ and anchor image X̃ᵢᵃⁿᶜ come from a centred/standardised map followed by PCA, so
their root-mean-square size is of the same order at every honest site. For each array we take
``s_i = RMS(finite entries)`` and the median ``m`` over the sites, and flag site *i* when
``|log10(s_i / m)| > log10(FACTOR)`` (default 100×), or when the array holds non-finite values or
magnitudes beyond ``MAX_ABS``. With two sites the median is their midpoint, so both are flagged when
they differ by more than FACTOR² — the analyst decides which one to exclude. Informative: nothing is
dropped unless the analyst excludes a site.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FACTOR = 100.0
MAX_ABS = 1e12
ARRAYS = ("x_tilde", "anchor_tilde")


@dataclass
class ScaleFlag:
    site: str
    fingerprint: str
    array: str
    rms: float
    median: float
    reason: str

    def to_dict(self) -> dict:
        return {"site": self.site, "fingerprint": self.fingerprint, "array": self.array,
                "rms": self.rms, "median": self.median, "reason": self.reason}


def _rms(a: np.ndarray) -> tuple[float, bool]:
    """(RMS of the finite entries, whether every entry is finite and ≤ MAX_ABS)."""
    x = np.asarray(a, dtype=np.float64).ravel()
    finite = np.isfinite(x)
    ok = bool(finite.all()) and (x.size == 0 or float(np.abs(x).max()) <= MAX_ABS)
    x = x[finite]
    return (float(np.sqrt(np.mean(x * x))) if x.size else 0.0), ok


def scale_flags(bundles, factor: float = FACTOR) -> list[ScaleFlag]:
    """Flags for every (site, array) that is out of scale relative to the other sites (see module doc)."""
    flags: list[ScaleFlag] = []
    for name in ARRAYS:
        have = [b for b in bundles if name in b.arrays]
        if not have:
            continue
        stats = [_rms(b.arrays[name]) for b in have]
        positive = [s for s, ok in stats if ok and s > 0]
        median = float(np.median(positive)) if positive else 0.0
        for b, (s, ok) in zip(have, stats, strict=True):
            reason = ""
            if not ok:
                reason = f"holds non-finite values or magnitudes above {MAX_ABS:g}"
            elif len(have) > 1 and median > 0 and (s <= 0 or abs(np.log10(s / median)) > np.log10(factor)):
                ratio = s / median
                reason = (f"is {ratio:.3g}× the median size over the sites" if ratio >= 1
                          else f"is 1/{1 / max(ratio, 1e-300):.3g} of the median size over the sites")
            if reason:
                flags.append(ScaleFlag(b.site, b.fingerprint, name, s, median, reason))
    return flags


def describe(flag: ScaleFlag) -> str:
    return f"{flag.site} ({flag.fingerprint}): {flag.array} {flag.reason}"
