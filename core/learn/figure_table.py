"""The clinical figures of one or two models on the same labelled rows, as a table of plain words.

Each row is (figure, one cell per model, what it was counted on): the CLI prints it aligned, the site's results
window shows it as a table. The inputs are :func:`core.learn.clinical_metrics.metrics_for` dicts.
"""

from __future__ import annotations

import math


def _num(v, digits: int = 3) -> str:
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.{digits}f}"


def _frac(v, num: int, den: int) -> str:
    return f"{_num(v)} ({num}/{den})"


def _binary_rows(models: list[dict], classes: list[str]) -> list[list[str]]:
    neg, pos = classes
    m0 = models[0]
    rows, events = m0["rows"], m0["events"]
    out = [["AUC (95 % DeLong interval)"]
           + [f"{_num(m['auc'])} ({_num(m['auc_low'])}–{_num(m['auc_high'])})" for m in models]
           + [f"{rows} rows, {events} '{pos}'"]]
    for name, cell, counted in (
            ("sensitivity", lambda c: _frac_cell(c, 1, 1, "row"), f"the {events} '{pos}' rows"),
            ("specificity", lambda c: _frac_cell(c, 0, 0, "row"), f"the {rows - events} '{neg}' rows"),
            ("PPV", lambda c: _frac_cell(c, 1, 1, "col"), f"rows called '{pos}'"),
            ("NPV", lambda c: _frac_cell(c, 0, 0, "col"), f"rows called '{neg}'")):
        out.append([f"{name} at threshold {m0['threshold']:.2f}"]
                   + [_frac(m[name.lower()], *cell(m["confusion"])) for m in models] + [counted])
    out.append(["Brier score (0 = perfect)"] + [_num(m["brier"]) for m in models] + [f"{rows} rows"])
    out.append(["calibration slope (1 = ideal)"] + [_num(m["calibration_slope"], 2) for m in models]
               + [f"{rows} rows, {events} '{pos}'"])
    out.append(["calibration intercept (0 = ideal)"] + [_num(m["calibration_intercept"], 2) for m in models]
               + [f"{rows} rows, {events} '{pos}'"])
    return out


def _frac_cell(confusion: list[list[int]], true: int, called: int, along: str) -> tuple[int, int]:
    """(numerator, denominator) of a rate from the 2 × 2 confusion matrix (rows = true, columns = called):
    along the true class's row (sensitivity, specificity) or the called class's column (PPV, NPV)."""
    hit = confusion[true][called]
    den = sum(confusion[true]) if along == "row" else confusion[0][called] + confusion[1][called]
    return hit, den


def _multiclass_rows(models: list[dict], classes: list[str]) -> list[list[str]]:
    m0 = models[0]
    out = [["macro-AUC (one class against the rest)"] + [_num(m["macro_auc"]) for m in models]
           + [f"{m0['rows']} rows"],
           ["balanced accuracy"] + [_num(m["balanced_accuracy"]) for m in models] + [f"{m0['rows']} rows"]]
    for k, c in enumerate(classes):
        support = m0["per_class"][k]["support"]
        out.append([f"recall of '{c}'"] + [_frac(m["per_class"][k]["recall"], m["confusion"][k][k], support)
                                           for m in models] + [f"the {support} '{c}' rows"])
    for k, c in enumerate(classes):
        out.append([f"precision of '{c}'"]
                   + [_frac(m["per_class"][k]["precision"], m["confusion"][k][k],
                            sum(row[k] for row in m["confusion"])) for m in models]
                   + [f"rows called '{c}'"])
    return out


def figure_rows(models: list[dict], classes: list[str]) -> list[list[str]]:
    """[figure, value per model…, counted on] for binary or multi-class figures of the same rows."""
    if not models:
        return []
    return (_binary_rows if models[0]["task"] == "binary" else _multiclass_rows)(models, classes)


def confusion_lines(m: dict, classes: list[str]) -> list[str]:
    """The confusion matrix as aligned text lines (rows = true class, columns = predicted class)."""
    width = max([len(c) for c in classes] + [len(str(v)) for row in m["confusion"] for v in row] + [4]) + 2
    head = " " * width + "".join(c.rjust(width) for c in classes)
    return [head] + [c.rjust(width) + "".join(str(v).rjust(width) for v in row)
                     for c, row in zip(classes, m["confusion"], strict=True)]
