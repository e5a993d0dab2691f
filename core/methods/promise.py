"""The product's promise for every classification method: no site is sent something worse than its own model.

Every classification method's per-site candidates include the site's own model (the logistic regression on its
raw rows, :mod:`core.learn.local_model`, cross-validated at export: ``own_cv``, :mod:`core.learn.own_cv`). Who
can score the candidates on a site's rows is declared once per method, :attr:`Method.own_model_choice`:

- ``"analyst"``: the analyst holds each site's labelled rows in a form it can score on (the DC family's reduced
  rows). It chooses per site and writes ``model`` = own, ``own_kind`` = linear into the package of a site that
  keeps its own model.
- ``"site"`` (the default, for any new method): the analyst cannot score (``hfldd`` holds only distilled rows,
  ``meta-lr`` only coefficients; its analyst may still say "keep your own" after its coefficient test).
  At export the site keeps a seeded, class-stratified share of its rows out of what it computes
  (:func:`split_check_rows`; they and a logistic regression of the other rows stay in its workspace,
  :func:`check_state`); at ``apply`` it scores the package and that model on them and keeps the package only
  when it beats the own model by more than ``MARGIN_SE`` standard errors (:func:`site_choice`).

Either way ``apply`` goes through :func:`promised_columns`, the report's "alone" column is :func:`alone_estimate`
of the bundle's ``own_cv``, and the margin is :func:`core.learn.own_cv.beats_own`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..learn.local_model import fit_local_model, has_local_model, keeps_local_model, local_predict_proba
from ..learn.own_cv import MARGIN_SE, alone_estimate, beats_own, rows_seed
from ..wording import KEPT_OWN_WORDS
from .base import Disclosure

CHECK_SHARE = 0.25  # share of each class's rows a site-scored method keeps out of its export to check the package
CHECK_PREFIX = "check_"  # private arrays: the check rows (check_x, check_y) and the model of the other rows
CHECK_MODEL = tuple(f"{CHECK_PREFIX}{k}" for k in ("local_w", "local_b", "local_mean", "local_scale"))
__all__ = ["CHECK_SHARE", "MARGIN_SE", "alone_estimate", "beats_own", "check_shared_oof", "check_state", "check_words",
           "export_with_check", "own_model_state", "pair_arrays", "paired_choice", "paired_se", "pairs_at_site",
           "promised_columns", "split_check_rows"]


def split_check_rows(y: np.ndarray, share: float = CHECK_SHARE, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(rows exported, rows kept to check the package), both sorted: of each class with n_c ≥ 2 rows,
    round(share · n_c) rows (at least 1, at most n_c − 1) drawn by ``default_rng([seed, c])``; a class with one row
    is exported whole. The split is a function of the rows (``seed`` = :func:`core.learn.own_cv.rows_seed`)."""
    y = np.asarray(y)
    check = []
    for c in np.unique(y):
        rows = np.flatnonzero(y == c)
        if len(rows) < 2:
            continue
        k = min(max(1, int(round(share * len(rows)))), len(rows) - 1)
        check.append(np.random.default_rng([int(seed), int(c)]).choice(rows, k, replace=False))
    held = np.sort(np.concatenate(check)) if check else np.zeros(0, np.int64)
    return np.setdiff1d(np.arange(len(y)), held), held


def check_state(X: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """(rows to export, labels to export, private arrays) of a site-scored method: the check rows and labels
    (``check_x``, ``check_y``) and the logistic regression of the exported rows (``check_local_*``), which the
    package is compared with on them (the same model family as the site's own, fitted without the check rows)."""
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.int64)
    keep, held = split_check_rows(y, seed=rows_seed(X, y))
    model = fit_local_model(X[keep], y[keep], n_classes)
    private = {"check_x": X[held], "check_y": y[held], **{CHECK_PREFIX + k: v for k, v in model.items()}}
    return keep, held, private


def export_with_check(method, site, control=None):
    """``method.site_compute(site)`` keeping the promise at export: a site-scored classification method
    (``own_model_choice`` = site) computes on the rows :func:`check_state` leaves it, and the check rows, the model
    of the other rows, their count (manifest ``rows_kept_at_site``, disclosed) and a plain sentence are added —
    unless the method recomputes its shared model's out-of-fold predictions of every row at the site
    (:func:`pairs_at_site`): then every row is used and paired."""
    check = None
    if method.task == "classification" and method.own_model_choice == "site" and site.y is not None \
            and len(np.unique(site.y)) >= 2 and not pairs_at_site(method, site.settings):
        keep, held, check = check_state(site.X, site.y, len(site.classes))
        site = replace(site, X=site.X[keep], y=site.y[keep],
                       ids_hashed=None if site.ids_hashed is None else site.ids_hashed[keep])
    ex = method.site_compute(site, control)
    if check is not None:
        held_n, total = len(check["check_y"]), len(check["check_y"]) + len(site.y)
        ex.private_arrays.update(check)
        ex.private_meta["check_rows"] = held_n
        ex.manifest["rows_kept_at_site"] = held_n
        ex.disclosures.append(Disclosure(
            "rows_kept_at_site", (1,), "number", "how many of your rows were set aside to check the package (the "
            "count only; the rows stay here)", "one number: how many of your rows stay here to check the analyst's "
            "package"))
        ex.plain += check_words(held_n, total)
        ex.stays.append(f"{held_n} of your rows set aside to check the package against your own model")
    return ex


def pairs_at_site(method, settings: dict | None) -> bool:
    """Whether ``method`` computes its shared model's out-of-fold predictions of all the site's rows at the site
    (``method.shared_oof_at_site``, e.g. meta-lr from the other sites' prior), so that no row need be set aside:
    declared by the method's ``pairs_at_site``, not under a formal privacy option (the shipped estimate is then
    noised, and a refit of the site's rows would not be the procedure behind the package)."""
    return bool(getattr(method, "pairs_at_site", False)) and (settings or {}).get("privacy_epsilon") is None


def pair_arrays(X: np.ndarray, own, scale: np.ndarray | None) -> dict[str, np.ndarray]:
    """The private arrays a :func:`pairs_at_site` method keeps to recompute its shared model at ``apply``: the rows
    the own model's out-of-fold predictions rest on (``pair_x``, float64, in ``own_oof_rows`` order; at most
    :data:`core.learn.own_cv.MAX_ROWS`), their labels (``pair_y``) and the kit's public scale (``pair_scale``)."""
    out = {"pair_x": np.asarray(X, np.float64)[own.rows], "pair_y": own.y.astype(np.int64)}
    if scale is not None:
        out["pair_scale"] = np.asarray(scale, np.float64)
    return out


def own_model_state(method, X: np.ndarray, y: np.ndarray, n_classes: int, *, scale: np.ndarray | None = None,
                    settings: dict | None = None) -> tuple[dict | None, dict[str, np.ndarray]]:
    """What a site keeps of its own model at export (never shipped): the model (:mod:`core.learn.local_model`), its
    out-of-fold probabilities (:func:`core.learn.own_cv.own_out_of_fold`: the site's half of the paired comparison)
    and, for a :func:`pairs_at_site` method, the rows its shared model is refitted on (:func:`pair_arrays`); and
    that model's cross-validated scores (the ``own_cv`` a bundle may carry; None with fewer than two classes)."""
    from ..learn.own_cv import own_oof_arrays, own_out_of_fold

    private = dict(fit_local_model(X, y, n_classes))
    own = own_out_of_fold(X, y, n_classes)
    if own is None:
        return None, private
    private.update(own_oof_arrays(own))
    if pairs_at_site(method, settings):
        private.update(pair_arrays(X, own, scale))
    return own.scores, private


def check_words(held: int, total: int) -> str:
    """The export's plain sentence about the check rows."""
    return (f" {held} of your {total:,} rows are set aside at your site (never sent, not used for what is sent): "
            "when the analyst's package arrives, it is tried on them against a model of your other rows, and you "
            "keep your own model unless the package is clearly better.")


def paired_se(right_a: np.ndarray, right_b: np.ndarray) -> float:
    """Standard error of the difference of two accuracies on the same n rows: √(b + c − (b − c)²/n) / n, where
    b (c) counts the rows only the first (second) gets right."""
    n = max(len(right_a), 1)
    b = float(np.sum(right_a & ~right_b))
    c = float(np.sum(~right_a & right_b))
    return math.sqrt(max(b + c - (b - c) ** 2 / n, 0.0)) / n


# ------------------------------------------------------------------------------ the paired comparison (issue #37)
SHARED_OOF = ("shared_oof", "shared_oof_rows")  # a package's out-of-fold probabilities of the shared model


def check_shared_oof(arrays: dict[str, np.ndarray], rows: int, n_classes: int) -> None:
    """FORMAT §7.4: ``shared_oof_rows`` (int64, strictly increasing, each in [0, rows)) and ``shared_oof``
    (float32, one row of K probabilities in [0, 1] per listed row) come together or not at all."""
    from ..errors import FormatError

    present = [k for k in SHARED_OOF if k in arrays]
    if not present:
        return
    if len(present) == 1:
        raise FormatError(f"the package carries '{present[0]}' without its partner")
    P, r = arrays["shared_oof"], arrays["shared_oof_rows"]
    if r.dtype.str != "<i8" or r.ndim != 1 or not 0 < len(r) <= max(int(rows), 0):
        raise FormatError(f"the package's 'shared_oof_rows' must be up to {rows} whole numbers (int64)")
    if np.any(np.diff(r) <= 0) or r[0] < 0 or r[-1] >= rows:
        raise FormatError(f"the package's 'shared_oof_rows' must increase and lie within this site's {rows} rows")
    if P.dtype.str != "<f4" or P.shape != (len(r), int(n_classes)):
        raise FormatError(f"the package's 'shared_oof' must be float32 of shape ({len(r)}, {n_classes})")
    if not np.all(np.isfinite(P)) or P.min() < 0.0 or P.max() > 1.0:
        raise FormatError("the package's 'shared_oof' must hold probabilities between 0 and 1")


def shared_out_of_fold(method, manifest: dict, arrays: dict, private: dict, n_classes: int
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows of the site's table, n × K probabilities): the shared model's out-of-fold predictions of this site's
    rows — the analyst's (``shared_oof`` by received row, mapped back through the kept row order ``permutation``:
    received row j is table row permutation[j]), or the method's own computation at the site
    (``method.shared_oof_at_site``) — sorted by row; None when neither is there."""
    if all(k in arrays for k in SHARED_OOF) and "permutation" in private:
        perm = np.asarray(private["permutation"], np.int64)
        received = np.asarray(arrays["shared_oof_rows"], np.int64)
        if received.size == 0 or received.max() >= len(perm):
            return None
        table = perm[received]
        order = np.argsort(table)
        return table[order], np.asarray(arrays["shared_oof"], np.float64)[order]
    hook = getattr(method, "shared_oof_at_site", None)
    return hook(manifest, arrays, private) if hook is not None else None


def paired_choice(method, manifest: dict, arrays: dict, private: dict, classes: list[str], metric: str | None,
                  apply: Callable[[np.ndarray], dict[str, np.ndarray]]) -> dict | None:
    """The site's update (:func:`core.learn.site_update.choose_update`) on its own labelled rows, paired row by row:
    its own model's kept out-of-fold probabilities (``own_oof``, :mod:`core.learn.own_cv`) against the shared
    model's (:func:`shared_out_of_fold`); for a site-scored method without those, the package and the model of the
    other rows on the rows the site set aside at export (both unbiased there). None when the workspace keeps
    neither (an export made before issue #37)."""
    from ..learn.own_cv import read_own_oof
    from ..learn.site_update import choose_update

    K = len(classes)
    own = read_own_oof(private, K)
    shared = shared_out_of_fold(method, manifest, arrays, private, K) if own is not None else None
    if own is not None and shared is not None:
        rows_own, P_own, y = own
        _, a, b = np.intersect1d(rows_own, shared[0], return_indices=True)
        if len(a) >= 4:
            return {**choose_update(y[a], P_own[a], shared[1][b], K, metric=metric, classes=classes),
                    "paired_on": "all"}
    if method.own_model_choice == "site" and all(k in private for k in ("check_x", "check_y", *CHECK_MODEL)) \
            and len(private["check_y"]):
        y = np.asarray(private["check_y"], np.int64)
        P_own = local_predict_proba({k[len(CHECK_PREFIX):]: private[k] for k in CHECK_MODEL}, private["check_x"])
        P_sh = proba_of(apply(np.asarray(private["check_x"], np.float64)), classes)
        return {**choose_update(y, P_own, P_sh, K, metric=metric, classes=classes), "paired_on": "set-aside"}
    return None


def used_model(kind: str) -> str:
    """The choice's ``model`` word: own, package (the shared model as sent) or updated (recalibrated or blended)."""
    return {"own": "own", "shared": "package"}.get(kind, "updated")


def class_columns(classes: list[str], proba: np.ndarray) -> dict[str, np.ndarray]:
    """``prediction`` and ``prob_<class>`` of class probabilities."""
    out = {"prediction": np.asarray(classes, dtype=object)[np.asarray(proba).argmax(axis=1)]}
    for k, c in enumerate(classes):
        out[f"prob_{c}"] = np.asarray(proba)[:, k]
    return out


def proba_of(columns: dict, classes: list[str]) -> np.ndarray:
    """The n × K probabilities a package's columns give (``prob_<class>``), else the one-hot of ``prediction``."""
    if all(f"prob_{c}" in columns for c in classes):
        return np.column_stack([np.asarray(columns[f"prob_{c}"], np.float64) for c in classes])
    pred = np.asarray(columns["prediction"], dtype=object)
    return np.column_stack([(pred == c).astype(np.float64) for c in classes])


def promised_columns(method, manifest: dict, private: dict[str, np.ndarray], X: np.ndarray,
                     apply: Callable[[np.ndarray], dict[str, np.ndarray]], *, arrays: dict | None = None,
                     metric: str | None = "auto", choice: dict | None = None
                     ) -> tuple[dict[str, np.ndarray], dict | None]:
    """The result columns of a package on the rows X, keeping the promise, and the choice made (None for a
    clustering package): ``apply(rows)`` is the method's own apply, ``arrays`` the package's arrays. The site
    chooses on its own rows (:func:`paired_choice`): its own model, the shared model as sent, or an update of it
    (:mod:`core.learn.site_update`), and the result is that model's. Without what the paired comparison needs (an
    export made before it, or a package the analyst asked to be used as sent), a package that says "keep your own"
    is applied with the site's own model, and otherwise the package as sent. ``choice``: a choice this function
    returned for other rows of the same file (a site's choice rests on its kept rows, not on X): made once."""
    from ..learn.site_update import apply_update

    classes = [str(c) for c in manifest.get("classes", [])]
    if method.task != "classification" or len(classes) < 2:
        return apply(X), None
    paired = manifest.get("update") is not None or method.own_model_choice == "site"
    if choice is None or choice.get("by") != "site":
        choice = paired_choice(method, manifest, arrays or {}, private, classes, metric, apply) if paired else None
    if choice is not None:
        own = private if has_local_model(private) else (
            {k[len(CHECK_PREFIX):]: private[k] for k in CHECK_MODEL} if all(k in private for k in CHECK_MODEL)
            else None)
        kind = choice["kind"]
        if kind == "shared" or own is not None:
            out = {"model": used_model(kind), "by": "site", **choice}
            if kind == "shared":
                return apply(X), out
            P_own = local_predict_proba(own, X)
            P_sh = proba_of(apply(X), classes) if kind != "own" else None
            return class_columns(classes, apply_update(choice, P_own, P_sh)), out
    if keeps_local_model(manifest, private):
        return (class_columns(classes, local_predict_proba(private, X)),
                {"model": "own", "by": "analyst", "reason": KEPT_OWN_WORDS})
    return apply(X), {"model": "package", "by": method.own_model_choice,
                      "reason": "the analyst found the package better than your own model on your rows"
                      if method.own_model_choice == "analyst" else "no rows were set aside to check it"}
