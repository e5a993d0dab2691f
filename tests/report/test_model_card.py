"""Issue #23, reworked for issue #33 item 11 (TRIPOD+AI / TRIPOD-Cluster): the model card of a package says, in a
clinician's words, when and with what it was made, what it is for and on whom, what the model predicts, from which
columns, the sites and their events, the model the site uses (one set of figures) beside what it was compared with,
every accuracy beside always answering the most common outcome, how much the sites differ, its known limits, and
its settings in an appendix."""

from __future__ import annotations

import copy
import re

from core.methods import get_method
from core.model_card import model_card, model_cards
from tests.report import cards


def _card(kit, summary, site):
    method = get_method(kit.method, {})
    return model_card(kit, method, summary, next(x for x in summary["sites"] if x["site"] == site)).markdown()


def _section(text: str, heading: str) -> str:
    """The body of the card's section ``heading`` (up to the next heading)."""
    return text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def _table(text: str, heading: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in _section(text, heading).splitlines()
            if line.startswith("|") and not line.startswith("|---")]


def test_binary_card_has_date_version_use_population_outcome_columns_and_sites():
    kit, summary = cards.kit(), cards.dccfl_summary()
    summary["run"], summary["software"] = {"created": "2026-03-05T14:07:00Z"}, "9.9.9"
    text = _card(kit, summary, "North")
    about = _section(text, "About this card")
    assert "5 March 2026" in about and "DC Studio 9.9.9" in about and "TRIPOD+AI" in about
    use = _section(text, "Intended use and population")
    assert "risk that 'status' is 'dead'" in use and "support to clinical judgement" in use
    assert "3 site(s) of this round, 344 rows in all, 106 of them with 'dead'" in use
    assert "This site: 120 rows, 40 with 'dead'" in use and "participant apply --validate" in use
    assert "'dead': this is the positive class" in text
    for line in kit.schema.describe_columns():  # types, levels, missing-value handling
        assert line in text
    sites = _section(text, "Sites and events")
    assert "344 rows in all, 106 events" in sites
    assert "cluster 1: 2 site(s) (North, South), 144 rows, 46 events" in sites
    assert ["North (this site)", "120", "40", "1"] in _table(text, "Sites and events")
    assert get_method("dccfl", {}).what_leaves in text
    assert "Warning" not in text


def test_the_model_in_use_has_one_set_of_figures_beside_what_it_was_compared_with():
    kit, summary = cards.kit(), cards.dccfl_summary()
    north = _card(kit, summary, "North")  # sent the shared model: compared with its own
    head, *rows = _table(north, "The model this site uses, and what it was compared with")
    assert head == ["figure", "uses: the shared model as sent",
                    "compared with: this site's own model (cross-validated)"]
    figures = {r[0]: r[1:] for r in rows}
    assert figures["AUC (discrimination)"] == ["0.81 (95 % CI 0.74–0.88)", "0.79"]
    assert figures["calibration slope (1 = ideal)"] == ["0.93", "–"]
    assert figures["accuracy"][1].startswith("0.740 (n = 120, 95 % CI 0.660–0.810)")
    # a keep-your-own site: its own model once, as the model in use; the shared model is what it was compared with
    south = _card(kit, summary, "South")
    head, *rows = _table(south, "The model this site uses, and what it was compared with")
    assert head == ["figure", "uses: this site's own model (cross-validated)",
                    "compared with: the shared model as sent"]
    assert sum("own model" in h for h in head) == 1
    assert "This site uses this site's own model." in south
    # a site that decides on its own rows: the analyst's estimate of its choice, then the shared and its own model
    decided = copy.deepcopy(summary)
    east = next(x for x in decided["sites"] if x["site"] == "East")
    east.update(update={"estimate": "blend", "weight": 0.75, "sentence": "a blend did best on your rows"},
                expected_auc=0.83)
    text = _card(kit, decided, "East")
    head = _table(text, "The model this site uses, and what it was compared with")[0]
    assert head == ["figure", "uses: a blend of the shared and own models, 75% shared (estimate)",
                    "compared with: the shared model as sent", "compared with: this site's own model (cross-validated)"]
    assert "the site decides on its own labelled rows" in text and "on this site's rows" in text
    assert "keep your own model" not in text  # no second, contradicting story about the same package


def test_every_accuracy_stands_beside_always_answering_the_most_common_outcome():
    kit, summary = cards.kit(), cards.dccfl_summary()
    north = next(x for x in summary["sites"] if x["site"] == "North")
    north["metrics"]["accuracy"] = 0.65  # 80 of its 120 rows are 'alive': always 'alive' gets 0.667
    text = _section(_card(kit, summary, "North"), "The model this site uses, and what it was compared with")
    assert "The accuracy of the shared model as sent, 0.650, is below the 0.667 of always answering 'alive'" in text
    assert "read its AUC" in text
    assert "0.740 is above" not in text and "this site's own model (cross-validated), 0.740, is above the 0.667" in text
    accuracy = [r for r in _table(_card(kit, summary, "North"), "The model this site uses, and what it was compared "
                                                                "with") if r[0] == "accuracy"][0]
    assert all("always 'alive': 0.667" in cell for cell in accuracy[1:])


def test_how_much_the_sites_differ_pools_their_aucs_with_a_prediction_interval():
    text = _section(_card(cards.kit(), cards.dccfl_summary(), "North"), "How much the sites differ")
    assert "Pooled over the sites (random effects): 0.81" in text and "95 % prediction interval" in text
    assert "no more than chance" in text  # three equal AUCs: none of their spread is beyond chance
    assert "Cochran's Q" in text  # the statistician's term, after the plain words


def test_settings_are_in_an_appendix_after_the_limits():
    text = _card(cards.kit(), cards.dccfl_summary(), "North")
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings[-1] == "Appendix: method and settings"
    assert headings.index("Known limits") < headings.index("Appendix: method and settings")
    assert text.index("- epochs = 40") > text.index("## Appendix: method and settings")
    assert "Method dccfl" in _section(text, "Appendix: method and settings")


def test_binary_card_limits_small_site_few_events_keep_own_and_never_predicts_minority():
    kit = cards.kit()
    south = _card(kit, cards.dccfl_summary(), "South")
    assert "only 24 rows" in south and "Only 6 events" in south and "'keep your own model'" in south
    north = _card(kit, cards.dccfl_summary(never_site="North"), "North")
    head = north.split("## About this card")[0]
    assert "**Warning:**" in head and "never predicts 'dead'" in head and "sensitivity 0" in head


def test_multiclass_card_has_per_class_recall_and_the_class_never_predicted():
    kit = cards.kit(("low", "mid", "high"))
    text = _card(kit, cards.multiclass_summary(), "Only")
    assert "probability for every class" in text and "positive class" not in text
    assert "| high | 20 | 0.00 | – |" in text
    figures = {r[0]: r[1:] for r in _table(text, "The model this site uses, and what it was compared with")}
    assert figures["macro-AUC (discrimination)"][0] == "0.83"
    assert "always 'low': 0.444" in figures["accuracy"][0]
    assert "never predicted: 'high'" in text.split("## About this card")[0]


def test_card_of_a_method_without_metrics_says_not_measured_and_never_contradicts_its_heterogeneity():
    kit, summary = cards.kit(method="meta-lr"), cards.metalr_summary()
    a, b = _card(kit, summary, "A"), _card(kit, summary, "B")
    assert "not measured by this method" in a and "participant apply --validate" in a and "| AUC" not in a
    differ = _section(a, "How much the sites differ")
    assert "differ between sites more than chance" in differ and "56 % of their spread" in differ
    assert "I² = 56 %" in differ and "p = 0.02" in differ and "may not fit every site" in _section(a, "Known limits")
    assert "'keep your own model'" in b and "only 20 rows" in b and "coefficients differ" in b
    assert get_method("meta-lr", {}).what_leaves in a
    # issue #33: "coefficients differ … I² = 0 %" never again — with none of the spread beyond chance the card says so
    calm = copy.deepcopy(summary)
    calm["heterogeneity"].update(q=2.0, df=4, p_value=0.74, i2=0.0)
    text = _card(kit, calm, "A")
    assert "no more than chance" in text and "differ between sites more than chance" not in text
    assert "may not fit" not in text


def test_cards_follow_the_summary_and_survive_missing_fields():
    kit = cards.kit()
    summary = {"sites": [{"site": "bare"}, "not a site"]}
    (card,) = model_cards(kit, get_method("dccfl", {}), summary)
    text = card.markdown()
    assert "not measured by this method" in text and card.site == "bare"
    assert "Date of the analysis: not recorded" in text
