"""Reports and model cards escape everything they quote (issue #32, finding 7): a site names itself with HTML, a
Markdown link or terminal escapes, and the card a clinician previews, and the analyst's report, show that as text."""

from __future__ import annotations

import copy
import re

from core.methods import get_method
from core.model_card import markdown_text, model_card
from core.report import card_html, render_report
from core.safe_text import is_safe
from tests.report import cards

EVIL = ("<img src=x onerror=alert(1)>", "[click here](javascript:alert(1))", "**URGENT** `rm -rf`",
        "site\x1b[2J\x1b]8;;http://evil\x07name", "abc\u202etxt.exe", "a | b")


def _summary_with(name: str) -> dict:
    summary = copy.deepcopy(cards.dccfl_summary())
    for x in summary["sites"]:
        if x["site"] == "North":
            x["site"] = name
            x["note"] = f"sent by {name}"
    return summary


def test_a_model_card_shows_a_sites_chosen_name_as_text_never_as_html_a_link_or_formatting():
    kit = cards.kit()
    method = get_method(kit.method, {})
    for name in EVIL:
        summary = _summary_with(name)
        site = next(x for x in summary["sites"] if x["site"] == name)
        text = model_card(kit, method, summary, site).markdown()
        assert is_safe(text), repr(name)
        for raw in ("<img", "\x1b", "\u202e", "**URGENT**"):
            assert raw not in text, (name, raw)
        quoted = markdown_text(name)
        assert quoted in text  # the name is there, every character Markdown or HTML would act on escaped
        assert re.search(r"(?<!\\)[`*_\[\]|~<>]", quoted) is None, quoted
    assert markdown_text("<b>a_b</b> [x](y)") == "&lt;b&gt;a\\_b&lt;/b&gt; \\[x\\](y)"


def test_the_report_escapes_every_quoted_name_and_its_control_characters():
    kit = cards.kit()
    method = get_method(kit.method, {})
    for name in EVIL:
        summary = _summary_with(name)
        summary["refused"] = [{"file": "x.dcbundle", "site": name, "fingerprint": "F", "reason": f"no: {name}"}]
        site = next(x for x in summary["sites"] if x["site"] == name)
        html = card_html(model_card(kit, method, summary, site))
        assert is_safe(html) and "<img" not in html
        result = type("R", (), {"summary": summary, "details": {}, "method": kit.method, "packages": []})()
        page = render_report(kit, method, result, summary)
        assert is_safe(page) and "<img" not in page and "Files left out of this run" in page
