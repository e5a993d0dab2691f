"""The decision threshold a ward chooses for a binary outcome, given or picked on its own labelled rows.

A row is called positive when its risk p ≥ T. Sensitivity(T) = #{events with p ≥ T}/events never increases with T;
specificity(T) = #{non-events with p < T}/non-events never decreases. Only the distinct risks (and one value just
above the largest) give different decisions, so the rules search those:

* for a sensitivity S: the largest T with sensitivity(T) ≥ S (the fewest positives that still find S of the events);
* for a specificity S: the smallest T with specificity(T) ≥ S (the most positives that still clear S of the
  non-events).
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError

DEFAULT_THRESHOLD = 0.5


def check_threshold(t: float) -> float:
    """A threshold the user typed: a number strictly between 0 and 1, else one sentence."""
    try:
        v = float(t)
    except (TypeError, ValueError):
        raise ConfigError(f"the threshold must be a number between 0 and 1, got {t!r}") from None
    if not 0.0 < v < 1.0:
        raise ConfigError(f"the threshold must lie strictly between 0 and 1, got {v:g}")
    return v


def check_target(name: str, s: float) -> float:
    """A sensitivity or specificity to reach: a number in (0, 1], else one sentence."""
    try:
        v = float(s)
    except (TypeError, ValueError):
        raise ConfigError(f"the {name} to reach must be a number between 0 and 1, got {s!r}") from None
    if not 0.0 < v <= 1.0:
        raise ConfigError(f"the {name} to reach must lie between 0 (excluded) and 1, got {v:g}")
    return v


def rates_at(y: np.ndarray, p: np.ndarray, thresholds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sensitivity, specificity) at each threshold (rows with p ≥ T called positive); NaN for an absent class."""
    y = np.asarray(y).astype(bool)
    p = np.asarray(p, np.float64)
    t = np.atleast_1d(np.asarray(thresholds, np.float64))
    pos, neg = np.sort(p[y]), np.sort(p[~y])
    with np.errstate(invalid="ignore", divide="ignore"):
        sens = (len(pos) - np.searchsorted(pos, t, side="left")) / (len(pos) if len(pos) else np.nan)
        spec = np.searchsorted(neg, t, side="left") / (len(neg) if len(neg) else np.nan)
    return sens, spec


def threshold_for(y: np.ndarray, p: np.ndarray, sensitivity: float | None = None,
                  specificity: float | None = None) -> float:
    """The threshold of the module docstring's rule for exactly one of ``sensitivity`` / ``specificity``, on
    labels y ∈ {0, 1} and risks p of the same rows."""
    if (sensitivity is None) == (specificity is None):
        raise ConfigError("choose the threshold by a sensitivity or by a specificity, not both")
    y = np.asarray(y, np.int64).ravel()
    p = np.asarray(p, np.float64).ravel()
    if y.shape != p.shape:
        raise ConfigError("the labels and the risks are for different rows")
    name, target = ("sensitivity", sensitivity) if sensitivity is not None else ("specificity", specificity)
    target = check_target(name, target)
    needed = "events (rows of the positive class)" if name == "sensitivity" else "rows of the negative class"
    if not np.any(y == (1 if name == "sensitivity" else 0)):
        raise ConfigError(f"a threshold for a {name} needs labelled {needed}, and there are none")
    candidates = np.unique(p)
    candidates = np.append(candidates, np.nextafter(candidates[-1], np.inf))
    sens, spec = rates_at(y, p, candidates)
    if name == "sensitivity":
        return float(candidates[np.flatnonzero(sens >= target - 1e-12).max()])
    return float(candidates[np.flatnonzero(spec >= target - 1e-12).min()])
