"""Issue #23: the report flags a model that never predicts the minority class at the top, draws several curves
on one legible figure, and carries every package's model card."""

from __future__ import annotations

import numpy as np

from core.methods import MethodResult, get_method
from core.methods.views import Curve, Heatmap
from core.report import lines_svg, minority_flags, render_report, render_view
from tests.report import cards


def _report(summary, kit=None):
    kit = kit or cards.kit()
    method = get_method(kit.method, {})
    return render_report(kit, method, MethodResult(kit.method, [], summary, {}), summary)


def test_report_flags_never_predicts_minority_before_any_table():
    html = _report(cards.dccfl_summary(never_site="North"))
    flag = html.index("never predict the minority class")
    assert flag < html.index("<table") and flag < html.index("Model cards")
    assert "North: the model sent never predicts" in html and "sensitivity 0" in html
    assert "its accuracy of 0.67 is what always answering the common outcome gives" in html
    assert "never predict the minority class" not in _report(cards.dccfl_summary())
    assert minority_flags(cards.multiclass_summary()) == [
        "Only: the model sent never predicts high although this site has such rows (recall 0 for them, whatever "
        "the accuracy)."]


def test_report_holds_one_card_per_site():
    html = _report(cards.dccfl_summary())
    assert html.count('<section class="card">') == 3 and "Model card — package for East" in html


def test_several_series_share_one_figure_with_a_legend():
    x = [0.0, 0.5, 1.0]
    svg = render_view(Curve("ROC", x, {"North": [0, 0.8, 1], "South": [0, 0.6, 1], "chance": x}))
    assert svg.count("<figure>") == 1 and svg.count("<polyline") == 3
    assert ">North</text>" in svg and ">chance</text>" in svg and 'stroke-dasharray="5 4"' in svg
    assert "<text" not in lines_svg(x, {"only": [1, 2, 3]}).split("<line")[0]  # no legend for one line


def test_confusion_heatmap_names_its_columns():
    svg = render_view(Heatmap("Confusion", np.array([[0.9, 0.1], [0.4, 0.6]]), ["true a", "true b"],
                              ["predicted a", "predicted b"]))
    assert "1 = predicted a, 2 = predicted b" in svg and "true a – predicted b" in svg
