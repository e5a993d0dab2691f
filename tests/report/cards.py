"""Small kits and hand-built summaries in the shapes the methods write (tests/report)."""

from __future__ import annotations

from core.data.schema import FeatureColumn, Schema
from core.formats.identity import Identity
from core.formats.kit import Kit


def kit(classes=("alive", "dead"), method="dccfl") -> Kit:
    schema = Schema([FeatureColumn("age", 18, 95),
                     FeatureColumn("sex", type="binary", levels=["F", "M"], missing="impute"),
                     FeatureColumn("stage", type="ordinal", levels=["I", "II", "III"], missing="impute",
                                   indicator=True)],
                    label="status", classes=list(classes))
    return Kit(name="Ward study", task="classification", schema=schema, method=method,
               analyst=Identity.generate("analyst").card)


def binary_metrics(rows=120, events=40, never=False) -> dict:
    return {"task": "binary", "rows": rows, "events": events, "auc": 0.812, "auc_low": 0.74, "auc_high": 0.88,
            "threshold": 0.5, "sensitivity": 0.0 if never else 0.7, "specificity": 1.0 if never else 0.85,
            "ppv": None if never else 0.7, "npv": 0.67, "accuracy": 0.667, "balanced_accuracy": 0.5,
            "brier": 0.181, "calibration_intercept": 0.05, "calibration_slope": 0.93,
            "confusion": [[80, 0], [40, 0]] if never else [[68, 12], [12, 28]],
            "never_predicts_minority": never, "scored": "its cluster's model, cross-validated on the rows it sent"}


def own(acc=0.74, rows=120, auc=0.79) -> dict:
    return {"accuracy": acc, "rows": rows, "low": acc - 0.08, "high": acc + 0.07, "weak": False, "source": "site",
            "what": f"your own model, cross-validated at your site on {rows} rows", "auc": auc,
            "balanced_accuracy": 0.7}


def dccfl_summary(never_site: str | None = None) -> dict:
    sites = []
    for i, (name, rows, events) in enumerate([("North", 120, 40), ("South", 24, 6), ("East", 200, 60)]):
        sites.append({"site": name, "fingerprint": f"FP{i}", "rows": rows, "cluster": 1 + (i == 2), "model": "cluster",
                      "label_counts": [rows - events, events],
                      "expected": {"accuracy": 0.8, "rows": rows, "low": 0.7, "high": 0.87, "weak": rows < 30},
                      "own_model": own(rows=rows),
                      "metrics": binary_metrics(rows, events, never=name == never_site)})
    sites[1].update(model="own", own_kind="linear")
    return {"method": "dccfl", "task": "classification", "t": 0.3, "t_auto": True, "n_clusters": 2,
            "selection": {"what": "mean over sites of the CV accuracy of what each is sent"},
            "sites": sites, "settings": {"epochs": 40, "t": "auto"}}


def multiclass_summary() -> dict:
    m = {"task": "multiclass", "rows": 90, "accuracy": 0.7, "balanced_accuracy": 0.6, "macro_auc": 0.83,
         "per_class": [{"class": "low", "support": 40, "recall": 0.9, "precision": 0.7},
                       {"class": "mid", "support": 30, "recall": 0.6, "precision": 0.7},
                       {"class": "high", "support": 20, "recall": 0.0, "precision": None}],
         "confusion": [[36, 4, 0], [12, 18, 0], [8, 12, 0]], "never_predicted": ["high"]}
    return {"method": "dccfl", "task": "classification", "n_clusters": 1,
            "sites": [{"site": "Only", "fingerprint": "FP0", "rows": 90, "cluster": 1, "model": "cluster",
                       "label_counts": [40, 30, 20], "own_model": own(0.6, 90, 0.75), "metrics": m}],
            "settings": {"epochs": 40}}


def metalr_summary() -> dict:
    return {"method": "meta-lr", "task": "classification", "sites_combined": 2,
            "heterogeneity": {"q": 9.1, "df": 4, "p_value": 0.02, "i2": 0.56, "of": "slopes"},
            "not_scored": "the analyst cannot score the combined model on any site's rows (no row leaves)",
            "sites": [{"site": "A", "fingerprint": "FA", "rows": 300, "combined": "yes"},
                      {"site": "B", "fingerprint": "FB", "rows": 20, "combined": "yes", "model": "own",
                       "own_kind": "linear", "note": "its coefficients differ from the combined ones"}],
            "settings": {"intercepts": "own"}}
