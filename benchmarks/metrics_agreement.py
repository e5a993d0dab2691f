"""Issue #23's first target: every per-site figure the product prints agrees with scikit-learn on the same predictions.

Input: a run's summary (``sites[i]["metrics"]``), the fit's ``details["oof"]`` (per site, in the summary's site order,
``(rows, y, P)``: the out-of-fold predictions the figures were computed on) and, optionally, the report's HTML.

Each figure is recomputed here independently of ``core.learn.clinical_metrics``:

* binary (p = P[:, 1], called positive when p ≥ the summary's threshold): TN, FP, FN, TP from sklearn's
  ``confusion_matrix``; sensitivity, specificity, PPV, NPV as their ratios; ``accuracy_score``,
  ``balanced_accuracy_score``, ``brier_score_loss``, ``roc_auc_score``; the DeLong interval from the structural
  components V₁₀(x) = (#{non-events < x} + ½#{= x})/n counted by binary search (not from ranks); the calibration
  intercept as the root of Σ (yᵢ − expit(α + logit pᵢ)) by Newton's method, the slope by sklearn's logistic
  regression with its L-BFGS solver at a tight tolerance (the product uses its Newton solver);
* multi-class: ``accuracy_score``, ``balanced_accuracy_score``, macro one-vs-rest ``roc_auc_score``, per-class
  support / recall / precision from ``confusion_matrix``, the matrix itself, the classes never predicted.

A summary figure agrees when |summary − sklearn| ≤ 1e-9 (both undefined — null / NaN — also agrees); the
calibration slope, an iterative fit in both, to 1e-6. A report figure agrees when the report prints exactly the
sklearn value formatted as the report formats it (two decimals, the Brier score and a card's accuracy three) — or
that value moved by 1e-9, which can round the other way at a tie — in the per-site table "What each site is sent"
and in each model card's column of the shared model as sent (before the baseline an accuracy cell adds after ";").
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from html.parser import HTMLParser

import numpy as np

TOLERANCE = 1e-9
FIT_TOLERANCE = 1e-6  # the calibration slope: an iterative maximum-likelihood fit on both sides
Z95 = 1.959963984540054
LOGIT_EPS = 1e-12


@dataclass
class Agreement:
    """How many figures were compared and which disagreed (one line each: site, figure, printed, sklearn)."""

    checked: int = 0
    mismatches: list[str] = field(default_factory=list)

    def add(self, other: Agreement) -> Agreement:
        return Agreement(self.checked + other.checked, self.mismatches + other.mismatches)

    def line(self) -> str:
        return f"figures checked: {self.checked}, mismatches: {len(self.mismatches)}"

    def to_dict(self) -> dict:
        return {"checked": self.checked, "mismatches": len(self.mismatches), "first": self.mismatches[:10]}


# ------------------------------------------------------------------------------------------------ sklearn side
def _ratio(num: int, den: int) -> float:
    return num / den if den else math.nan


def _delong_interval(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    pos, neg = np.sort(p[y == 1]), np.sort(p[y == 0])
    m, n = len(pos), len(neg)
    if m < 2 or n < 2:
        return math.nan, math.nan
    v10 = (np.searchsorted(neg, pos, "left") + np.searchsorted(neg, pos, "right")) / (2.0 * n)
    v01 = 1.0 - (np.searchsorted(pos, neg, "left") + np.searchsorted(pos, neg, "right")) / (2.0 * m)
    auc = float(v10.mean())
    se = math.sqrt(max(float(np.var(v10, ddof=1) / m + np.var(v01, ddof=1) / n), 0.0))
    return max(0.0, auc - Z95 * se), min(1.0, auc + Z95 * se)


def _calibration(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    from scipy.special import expit, logit
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(y)) < 2:
        return math.nan, math.nan
    lp = logit(np.clip(p, LOGIT_EPS, 1.0 - LOGIT_EPS))
    alpha = float(logit(np.clip(y.mean(), 1e-6, 1 - 1e-6)) - lp.mean())
    for _ in range(200):
        q = expit(alpha + lp)
        step = float(np.sum(y - q)) / max(float(np.sum(q * (1 - q))), 1e-300)
        alpha += step
        if abs(step) < 1e-14:
            break
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = LogisticRegression(penalty=None, solver="lbfgs", tol=1e-12, max_iter=10000).fit(lp[:, None], y)
    return alpha, float(fit.coef_[0, 0])


def binary_reference(y: np.ndarray, p: np.ndarray, threshold: float) -> dict:
    """The binary figures (module docstring), flat: name → number (NaN when undefined)."""
    from sklearn.metrics import (
        accuracy_score,
        balanced_accuracy_score,
        brier_score_loss,
        confusion_matrix,
        roc_auc_score,
    )

    y = np.asarray(y, np.int64)
    p = np.asarray(p, np.float64)
    pred = (p >= threshold).astype(np.int64)
    (tn, fp), (fn, tp) = confusion_matrix(y, pred, labels=[0, 1]).tolist()
    two = 0 < int(y.sum()) < len(y)
    low, high = _delong_interval(y, p)
    intercept, slope = _calibration(y, p)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        balanced = float(balanced_accuracy_score(y, pred))
    minority = 1 if int(y.sum()) <= len(y) - int(y.sum()) else 0
    return {"rows": len(y), "events": int(y.sum()), "auc": float(roc_auc_score(y, p)) if two else math.nan,
            "auc_low": low, "auc_high": high, "sensitivity": _ratio(tp, tp + fn), "specificity": _ratio(tn, tn + fp),
            "ppv": _ratio(tp, tp + fp), "npv": _ratio(tn, tn + fn), "accuracy": float(accuracy_score(y, pred)),
            "balanced_accuracy": balanced, "brier": float(brier_score_loss(y, p, pos_label=1)),
            "calibration_intercept": intercept, "calibration_slope": slope,
            "confusion.tn": tn, "confusion.fp": fp, "confusion.fn": fn, "confusion.tp": tp,
            "never_predicts_minority": float(bool(np.any(y == minority) and not np.any(pred == minority)))}


def multiclass_reference(y: np.ndarray, P: np.ndarray, classes: list[str]) -> dict:
    """The multi-class figures (module docstring), flat: name → number (NaN when undefined)."""
    from sklearn.metrics import accuracy_score, balanced_accuracy_score, confusion_matrix, roc_auc_score

    y = np.asarray(y, np.int64)
    P = np.asarray(P, np.float64)
    K = len(classes)
    pred = P.argmax(axis=1)
    cm = confusion_matrix(y, pred, labels=list(range(K)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        balanced = float(balanced_accuracy_score(y, pred))
    support, called = cm.sum(axis=1), cm.sum(axis=0)
    macro = (float(roc_auc_score(y, P / P.sum(axis=1, keepdims=True), multi_class="ovr", average="macro",
                                 labels=list(range(K)))) if np.all(support > 0) else math.nan)
    out = {"rows": len(y), "accuracy": float(accuracy_score(y, pred)), "balanced_accuracy": balanced,
           "macro_auc": macro}
    for k, c in enumerate(classes):
        out[f"{c}.support"] = int(support[k])
        out[f"{c}.recall"] = _ratio(int(cm[k, k]), int(support[k]))
        out[f"{c}.precision"] = _ratio(int(cm[k, k]), int(called[k]))
        out[f"{c}.never_predicted"] = float(bool(support[k] > 0 and called[k] == 0))
        for j, d in enumerate(classes):
            out[f"confusion.{c}.{d}"] = int(cm[k, j])
    return out


def reported_figures(m: dict, classes: list[str]) -> dict:
    """A summary ``metrics`` entry flattened like the references (null → NaN)."""
    def num(v) -> float:
        return math.nan if v is None else float(v)

    if m.get("task") == "binary":
        out = {k: num(m.get(k)) for k in ("rows", "events", "auc", "auc_low", "auc_high", "sensitivity",
                                          "specificity", "ppv", "npv", "accuracy", "balanced_accuracy", "brier",
                                          "calibration_intercept", "calibration_slope")}
        (tn, fp), (fn, tp) = m["confusion"]
        out.update({"confusion.tn": tn, "confusion.fp": fp, "confusion.fn": fn, "confusion.tp": tp,
                    "never_predicts_minority": float(bool(m.get("never_predicts_minority")))})
        return out
    out = {k: num(m.get(k)) for k in ("rows", "accuracy", "balanced_accuracy", "macro_auc")}
    never = set(m.get("never_predicted") or [])
    for c in m.get("per_class", []):
        name = str(c["class"])
        out.update({f"{name}.support": num(c.get("support")), f"{name}.recall": num(c.get("recall")),
                    f"{name}.precision": num(c.get("precision")), f"{name}.never_predicted": float(name in never)})
    for c, row in zip(classes, m.get("confusion", []), strict=False):
        for d, v in zip(classes, row, strict=False):
            out[f"confusion.{c}.{d}"] = v
    return out


def reference_for(m: dict, y: np.ndarray, P: np.ndarray, classes: list[str]) -> dict:
    """scikit-learn's figures for the site whose summary ``metrics`` is ``m`` (its task and threshold)."""
    if m.get("task") == "binary":
        return binary_reference(y, np.asarray(P)[:, 1], float(m.get("threshold", 0.5)))
    return multiclass_reference(y, P, classes)


def _agree(a: float, b: float, tol: float) -> bool:
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol


def check_summary(summary: dict, oof: list, classes: list[str]) -> tuple[Agreement, dict[str, dict]]:
    """Compare every per-site figure of ``summary`` with scikit-learn on ``oof``; also return the references by
    site name (for :func:`check_report`). A site with metrics but no predictions is itself a mismatch."""
    out, refs = Agreement(), {}
    sites = [x for x in summary.get("sites", []) if isinstance(x, dict)]
    for x, o in zip(sites, list(oof) + [None] * (len(sites) - len(oof)), strict=True):
        m = x.get("metrics")
        if not isinstance(m, dict):
            continue
        name = str(x.get("site"))
        if o is None:
            out.mismatches.append(f"{name}: metrics without the predictions they came from")
            continue
        _, y, P = o
        ref = reference_for(m, np.asarray(y), np.asarray(P, np.float64), classes)
        refs[name] = ref
        got = reported_figures(m, classes)
        for key, want in ref.items():
            out.checked += 1
            tol = FIT_TOLERANCE if key == "calibration_slope" else TOLERANCE
            if key not in got or not _agree(got[key], want, tol):
                out.mismatches.append(f"{name}: {key} = {got.get(key)} in the summary, {want} by scikit-learn")
    return out, refs


# ------------------------------------------------------------------------------------------------- the report
class _Tables(HTMLParser):
    """The report's tables with the last h2/h3 heading above each: [(h2, h3, [[cell, ...], ...])]."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[tuple[str, str, list[list[str]]]] = []
        self.h2 = self.h3 = ""
        self._text: list[str] | None = None
        self._tag = ""
        self._rows: list[list[str]] | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3", "td", "th"):
            self._text, self._tag = [], tag
        elif tag == "table":
            self._rows = []
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])

    def handle_endtag(self, tag):
        if tag == self._tag and self._text is not None:
            text = "".join(self._text).strip()
            if tag == "h2":
                self.h2, self.h3 = text, ""
            elif tag == "h3":
                self.h3 = text
            elif self._rows:
                self._rows[-1].append(text)
            self._text = None
        elif tag == "table" and self._rows is not None:
            self.tables.append((self.h2, self.h3, self._rows))
            self._rows = None

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)


def _fmt(v: float, digits: int = 2) -> str:
    return "–" if v is None or math.isnan(float(v)) else f"{float(v):.{digits}f}"


SITE_TABLE_BINARY = {"AUC [95 % CI]": lambda r: f"{_fmt(r['auc'])} [{_fmt(r['auc_low'])}–{_fmt(r['auc_high'])}]",
                     "sensitivity": lambda r: _fmt(r["sensitivity"]), "specificity": lambda r: _fmt(r["specificity"]),
                     "PPV": lambda r: _fmt(r["ppv"]), "NPV": lambda r: _fmt(r["npv"]),
                     "Brier": lambda r: _fmt(r["brier"], 3),
                     "calibration slope": lambda r: _fmt(r["calibration_slope"]),
                     "calibration intercept": lambda r: _fmt(r["calibration_intercept"]),
                     "rows": lambda r: f"{int(r['rows']):,}", "events": lambda r: f"{int(r['events']):,}"}
SITE_TABLE_MULTI = {"rows": lambda r: f"{int(r['rows']):,}", "macro-AUC": lambda r: _fmt(r["macro_auc"]),
                    "balanced accuracy": lambda r: _fmt(r["balanced_accuracy"])}
CARD_BINARY = {"AUC (discrimination)": lambda r: f"{_fmt(r['auc'])} (95 % CI {_fmt(r['auc_low'])}–"
                                                 f"{_fmt(r['auc_high'])})",
               "sensitivity": lambda r: _fmt(r["sensitivity"]), "specificity": lambda r: _fmt(r["specificity"]),
               "positive predictive value": lambda r: _fmt(r["ppv"]),
               "negative predictive value": lambda r: _fmt(r["npv"]),
               # three decimals: the card sets an accuracy beside its majority-class baseline (issue #33)
               "accuracy": lambda r: _fmt(r["accuracy"], 3),
               "balanced accuracy": lambda r: _fmt(r["balanced_accuracy"]),
               "Brier score (0 = perfect)": lambda r: _fmt(r["brier"], 3),
               "calibration slope (1 = ideal)": lambda r: _fmt(r["calibration_slope"]),
               "calibration intercept (0 = ideal)": lambda r: _fmt(r["calibration_intercept"])}
CARD_PREFIX = "Model card — package for "


def _within_tolerance(ref: dict) -> list[dict]:
    """``ref`` and ``ref`` with every fractional figure moved by ±TOLERANCE: a figure that agrees to 1e-9 may still
    round the other way at a tie (0.075 printed as 0.08 or 0.07), and either print agrees."""
    def moved(d: float) -> dict:
        return {k: v + d if isinstance(v, float) and math.isfinite(v) and not v.is_integer() else v
                for k, v in ref.items()}

    return [ref, moved(TOLERANCE), moved(-TOLERANCE)]


def _check_cells(out: Agreement, where: str, printed: str, shown, ref: dict) -> None:
    """One printed cell against ``shown(ref)`` (the report's formatting of scikit-learn's figures)."""
    out.checked += 1
    wants = [shown(r) for r in _within_tolerance(ref)]
    if printed not in wants:
        out.mismatches.append(f"{where}: the report prints {printed!r}, scikit-learn gives {wants[0]!r}")


def check_report(html: str, refs: dict[str, dict], classes: list[str]) -> Agreement:
    """Compare every per-site figure the report prints (the per-site table and each model card's table) with
    scikit-learn's, formatted as the report formats it. A site of ``refs`` missing from the per-site table is a
    mismatch."""
    parser = _Tables()
    parser.feed(html)
    out = Agreement()
    seen: set[str] = set()
    for h2, h3, rows in parser.tables:
        if not rows:
            continue
        head, body = rows[0], rows[1:]
        if h2.startswith("What each site is sent") and head and head[0] == "site":
            for row in body:
                ref = refs.get(row[0])
                if ref is None:
                    continue
                seen.add(row[0])
                binary = "events" in ref
                cols = dict(SITE_TABLE_BINARY if binary else SITE_TABLE_MULTI)
                if not binary:
                    cols.update({f"recall {c}": (lambda r, c=c: _fmt(r[f"{c}.recall"])) for c in classes})
                for j, col in enumerate(head):
                    if col in cols and j < len(row):
                        _check_cells(out, f"{row[0]} / {col}", row[j], cols[col], ref)
        elif h3.startswith(CARD_PREFIX) and (head[:1] == ["figure"] or head[:2] == ["class", "rows"]):
            site = h3[len(CARD_PREFIX):].rsplit(" (", 1)[0]
            ref = refs.get(site)
            # the card's column of the shared model as sent (the figures of ``metrics``), whether the site uses it or
            # it is what the site's model was compared with (issue #33: one column per model)
            col = next((j for j, h in enumerate(head) if h == "model sent" or h.endswith("the shared model as sent")),
                       None) if head[0] == "figure" else 1
            if ref is None or col is None:
                continue
            for row in body:
                if head[0] == "figure" and row[0] in CARD_BINARY and col < len(row):
                    printed = row[col].split(";")[0]  # an accuracy is followed by the majority-class baseline
                    _check_cells(out, f"{site} card / {row[0]}", printed, CARD_BINARY[row[0]], ref)
                elif head[0] == "class" and f"{row[0]}.support" in ref:
                    c = row[0]
                    shown = [lambda r, c=c: str(int(r[f"{c}.support"])), lambda r, c=c: _fmt(r[f"{c}.recall"]),
                             lambda r, c=c: _fmt(r[f"{c}.precision"])]
                    for j, show in enumerate(shown, start=1):
                        _check_cells(out, f"{site} card / {c} / {head[j]}", row[j], show, ref)
    for site in sorted(set(refs) - seen):
        out.mismatches.append(f"{site}: no row in the report's per-site table")
    return out


def check_run(summary: dict, oof: list, classes: list[str], report_html: str | None = None) -> Agreement:
    """:func:`check_summary`, then :func:`check_report` when the report's HTML is given."""
    agreement, refs = check_summary(summary, oof, classes)
    if report_html is not None:
        agreement = agreement.add(check_report(report_html, refs, classes))
    return agreement
