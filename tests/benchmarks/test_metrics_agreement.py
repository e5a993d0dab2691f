"""benchmarks/metrics_agreement.py: a DC-CFL fit's per-site figures agree with scikit-learn, in the summary and in
the report's rendering; a figure changed in either is caught."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from benchmarks.metrics_agreement import check_report, check_run, check_summary
from core.methods.base import FitContext, ReceivedBundle, SiteInput
from core.methods.dccfl import DCCFL
from core.report import render_view


def _fit(K: int):
    rng = np.random.default_rng(K)
    m, classes = 5, [f"c{k}" for k in range(K)]
    means = rng.standard_normal((K, m)) * 0.4
    anchor = rng.uniform(-4, 4, size=(150, m))
    bundles = []
    for i in range(4):
        y = (rng.random(60) < 0.25 + 0.1 * i).astype(np.int64) if K == 2 else rng.integers(0, K, 60)
        X = means[y] + rng.standard_normal((60, m))
        exp = DCCFL().site_compute(SiteInput(X, y, classes, anchor, settings={"seed": [K, i], "dimension": m}))
        bundles.append(ReceivedBundle(site=f"ward {i}", fingerprint="", digest="", envelope_id="",
                                      manifest=exp.manifest, arrays=exp.arrays))
    method = DCCFL(epochs=8)
    result = method.fit(bundles, FitContext(classes))
    return result, classes, "".join(render_view(v) for v in method.views(result))


@pytest.fixture(scope="module", params=[2, 3], ids=["binary", "three-class"])
def fitted(request):
    return _fit(request.param)


def test_every_figure_agrees(fitted):
    result, classes, html = fitted
    agreement = check_run(result.summary, result.details["oof"], classes, html)
    assert agreement.mismatches == []
    per_site = 19 if len(classes) == 2 else 4 + 4 * len(classes) + len(classes) ** 2
    assert agreement.checked > 4 * per_site  # the summary's figures and the report's table cells
    assert agreement.line().endswith("mismatches: 0")


def test_a_changed_summary_figure_is_caught(fitted):
    result, classes, _ = fitted
    summary = copy.deepcopy(result.summary)
    m = summary["sites"][2]["metrics"]
    key = "auc" if m["task"] == "binary" else "balanced_accuracy"
    m[key] += 1e-6
    agreement, _ = check_summary(summary, result.details["oof"], classes)
    (line,) = agreement.mismatches
    assert summary["sites"][2]["site"] in line and key in line


def test_a_changed_report_cell_and_a_missing_site_are_caught(fitted):
    result, classes, html = fitted
    _, refs = check_summary(result.summary, result.details["oof"], classes)
    row = html.index("<td>ward 1</td>", html.index("What each site is sent"))
    cell = html.index("<td>", html.index("<td>", row + 5) + 4)  # the third cell of ward 1's row: a figure
    end = html.index("</td>", cell)
    forged = html[:cell] + "<td>0.99" + html[end:]
    bad = check_report(forged, refs, classes)
    assert len(bad.mismatches) == 1 and "ward 1" in bad.mismatches[0]
    missing = check_report(html.replace("<td>ward 3</td>", "<td>ward 9</td>"), refs, classes)
    assert any("ward 3: no row" in x for x in missing.mismatches)


def test_predictions_missing_for_a_site_with_figures_is_a_mismatch(fitted):
    result, classes, _ = fitted
    oof = list(result.details["oof"])
    oof[0] = None
    agreement, _ = check_summary(result.summary, oof, classes)
    name = result.summary["sites"][0]["site"]
    assert agreement.mismatches == [f"{name}: metrics without the predictions they came from"]
