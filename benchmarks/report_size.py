"""The analyst's HTML report at many sites: its size and the time to write it (issue #36).

``python -m benchmarks report-size [--sites 100,1000,10000]``: for each count, a DC-CFL summary of that many sites in
the shape the method writes (per-site rows, label counts, cluster, the model sent and its expected accuracy, the
site's own model, binary clinical figures), the total-variation distances between the sites' label mixes and the
tree of them (core.learn.client_clustering), rendered by :func:`core.report.render_report` in this process.
Reported: bytes, seconds, and what the report holds that could grow with the square of the sites (SVG cells, cards).
Target: a report of 10,000 sites under 20 MB.
"""

from __future__ import annotations

import os
import resource
import time

import numpy as np


def summary_of(n: int, seed: int = 0) -> tuple[dict, dict]:
    """A DC-CFL summary of ``n`` sites and its details (distances and tree of the sites' label mixes)."""
    from core.api.research import LabelDistributionClustering

    rng = np.random.default_rng([seed, n])
    counts = rng.integers(1, 80, size=(n, 2))
    clus = LabelDistributionClustering().fit(counts)
    sites = []
    for i, (neg, pos) in enumerate(counts.tolist()):
        rows = neg + pos
        acc = float(rng.uniform(0.6, 0.9))
        metrics = {"task": "binary", "rows": rows, "events": pos, "auc": 0.8, "auc_low": 0.7, "auc_high": 0.9,
                   "threshold": 0.5, "sensitivity": 0.7, "specificity": 0.8, "ppv": 0.6, "npv": 0.85,
                   "accuracy": acc, "balanced_accuracy": 0.75, "brier": 0.17, "calibration_intercept": 0.0,
                   "calibration_slope": 1.0, "confusion": [[neg // 2, neg - neg // 2], [pos // 3, pos - pos // 3]],
                   "never_predicts_minority": False, "scored": "its cluster's model, cross-validated"}
        sites.append({"site": f"site-{i:05d}", "fingerprint": f"FP{i:05d}-XXXX-XXXX-XXXX", "rows": rows,
                      "cluster": 1 + i % 12, "model": "cluster", "label_counts": [neg, pos],
                      "expected": {"accuracy": acc, "rows": rows, "low": acc - 0.08, "high": acc + 0.06,
                                   "weak": rows < 30},
                      "own_model": {"accuracy": acc - 0.02, "rows": rows, "low": acc - 0.1, "high": acc + 0.05,
                                    "weak": False, "source": "site", "auc": 0.78, "balanced_accuracy": 0.7,
                                    "what": f"your own model, cross-validated at your site on {rows} rows"},
                      "metrics": metrics})
    summary = {"method": "dccfl", "task": "classification", "t": 0.3, "t_auto": True, "n_clusters": 12,
               "selection": {"what": "mean over sites of the CV accuracy of what each is sent"}, "sites": sites,
               "settings": {"epochs": 40, "t": "auto"}}
    return summary, {"linkage": clus.linkage_, "distances": clus.distances_}


def one(n: int) -> dict:
    from core.api import Identity
    from core.api.analyst import render_report
    from core.api.common import FeatureColumn, Kit, MethodResult, Schema, get_method

    kit = Kit(name="report size", task="classification",
              schema=Schema([FeatureColumn("age", 18, 95)], label="status", classes=["alive", "dead"]),
              method="dccfl", analyst=Identity.generate("analyst").card)
    summary, details = summary_of(n)
    t0 = time.perf_counter()
    html = render_report(kit, get_method("dccfl"), MethodResult("dccfl", [], summary, details), summary)
    seconds = time.perf_counter() - t0
    return {"sites": n, "bytes": len(html.encode("utf-8")), "seconds": round(seconds, 2),
            "svg_rects": html.count("<rect"), "cards": html.count('<section class="card">'),
            "images": html.count("data:image/png;base64,"),
            "peak_rss_mb_so_far": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def run_from_args(args, say) -> dict:
    from benchmarks import machine, print_and_record

    counts = [int(x) for x in (args.sites or "100,1000,10000").split(",")]
    points = [one(n) for n in counts]
    return print_and_record({"points": points, "machine": machine(),
                             "load_avg_1_5_15": [round(v, 2) for v in os.getloadavg()]}, args, say)
