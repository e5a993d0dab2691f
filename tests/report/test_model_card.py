"""Issue #23: the model card of a package says, in a clinician's words, what the model predicts, from which
columns, how well it does at that site beside the site's own model, and its known limits."""

from __future__ import annotations

from core.methods import get_method
from core.model_card import model_card, model_cards
from tests.report import cards


def _card(kit, summary, site):
    method = get_method(kit.method, {})
    return model_card(kit, method, summary, next(x for x in summary["sites"] if x["site"] == site)).markdown()


def test_binary_card_has_the_outcome_columns_figures_own_model_and_method():
    kit, summary = cards.kit(), cards.dccfl_summary()
    text = _card(kit, summary, "North")
    assert "'status'" in text and "risk" in text and "'dead': this is the positive class" in text
    for line in kit.schema.describe_columns():  # types, levels, missing-value handling
        assert line in text
    assert "344 rows in all, 106 events" in text  # trained on: all sites
    assert "cluster 1: 2 site(s) (North, South), 144 rows, 46 events" in text
    assert "| AUC (discrimination) | 0.81 (95 % CI 0.74–0.88) | 0.79 |" in text
    assert "Measured on 120 rows with 40 events" in text and "| calibration slope (1 = ideal) | 0.93 |" in text
    assert "0.740 (n = 120, 95 % CI 0.660–0.810)" in text  # the site's own model beside it
    assert "Method dccfl" in text and "- epochs = 40" in text
    assert get_method("dccfl", {}).what_leaves in text
    assert "Warning" not in text


def test_binary_card_limits_small_site_few_events_keep_own_and_never_predicts_minority():
    kit = cards.kit()
    south = _card(kit, cards.dccfl_summary(), "South")
    assert "only 24 rows" in south and "Only 6 events" in south and "'keep your own model'" in south
    north = _card(kit, cards.dccfl_summary(never_site="North"), "North")
    head = north.split("## What the model predicts")[0]
    assert "**Warning:**" in head and "never predicts 'dead'" in head and "sensitivity 0" in head


def test_multiclass_card_has_per_class_recall_and_the_class_never_predicted():
    kit = cards.kit(("low", "mid", "high"))
    text = _card(kit, cards.multiclass_summary(), "Only")
    assert "probability for every class" in text and "positive class" not in text
    assert "| high | 20 | 0.00 | – |" in text and "macro-AUC 0.83" in text
    assert "never predicted: 'high'" in text.split("## What the model predicts")[0]


def test_card_of_a_method_without_metrics_says_not_measured_and_heterogeneity():
    kit, summary = cards.kit(method="meta-lr"), cards.metalr_summary()
    a, b = _card(kit, summary, "A"), _card(kit, summary, "B")
    assert "not measured by this method" in a and "participant apply --validate" in a and "| AUC" not in a
    assert "I² = 56 %" in a and "p = 0.020" in a and "may not fit every site" in a
    assert "'keep your own model'" in b and "only 20 rows" in b and "coefficients differ" in b
    assert get_method("meta-lr", {}).what_leaves in a


def test_cards_follow_the_summary_and_survive_missing_fields():
    kit = cards.kit()
    summary = {"sites": [{"site": "bare"}, "not a site"]}
    (card,) = model_cards(kit, get_method("dccfl", {}), summary)
    assert "not measured by this method" in card.markdown() and card.site == "bare"
