"""The model card of one site's package: what the model predicts, from what, how well, and its limits.

Written for the site's clinicians beside each package (``<site>.model_card.md``) and shown in the analyst's
report. Everything on it comes from the kit (schema, classes, method, settings), the method's declarations
(``what_leaves``) and the run's summary entry of that site (``metrics``, ``own_model``, ``expected``, ``model``
…, see docs/FORMAT.md); a figure the method does not measure is said to be "not measured by this method".

Limits named on the card (the rule for each): a site under :data:`~core.learn.intervals.WEAK_ROWS` rows; fewer
than :data:`FEW_EVENTS` events or non-events; an AUC interval wider than :data:`~core.learn.intervals.WEAK_WIDTH`
or an accuracy estimate flagged weak; a binary model that never predicts the minority class at its threshold
(sensitivity 0 for it), or a class never predicted; the sites' heterogeneity when the method measures it
(meta-analysis: Cochran's Q and I²); a package that defers to the site's own model.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from .data.missing import HELP as MISSING_HELP
from .formats.kit import Kit
from .learn.intervals import WEAK_ROWS, WEAK_WIDTH, describe
from .methods import Method
from .safe_text import MAX_LINE, shown

FEW_EVENTS = 10  # fewer events (or non-events) than this: the AUC and sensitivity rest on too few rows
CARD_SUFFIX = ".model_card.md"

MISSING_WORDS = "Missing values: " + MISSING_HELP


@dataclass
class Section:
    """A heading with plain sentences, bullet points, an optional table (header, rows) and preformatted lines."""

    heading: str
    paragraphs: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    table: tuple[list[str], list[list[str]]] | None = None
    code: list[str] = field(default_factory=list)


@dataclass
class ModelCard:
    """One package's card: ``warnings`` are the limits a reader must see first (also listed under "Known
    limits"); ``sections`` in reading order."""

    site: str
    title: str
    warnings: list[str]
    sections: list[Section]

    def markdown(self) -> str:
        """The card as Markdown (numbers already rounded). Every text it holds — its own sentences and what they
        quote: site, project, column and class names, notes — is escaped (:func:`markdown_text`), so what a site
        named itself shows as text in a Markdown previewer, never as HTML, a link or formatting."""
        out = [f"# {markdown_text(self.title)}", ""]
        for w in self.warnings:
            out += [f"> **Warning:** {markdown_text(w)}", ""]
        for s in self.sections:
            out += [f"## {markdown_text(s.heading)}", ""]
            for p in s.paragraphs:
                out += [markdown_text(p), ""]
            if s.bullets:
                out += [f"- {markdown_text(b)}" for b in s.bullets] + [""]
            if s.table:
                head, rows = s.table
                out.append("| " + " | ".join(markdown_text(c) for c in head) + " |")
                out.append("|" + "---|" * len(head))
                out += ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in rows]
                out.append("")
            if s.code:
                lines = [shown(line) for line in s.code]
                fence = "`" * max(3, 1 + max((len(run) for line in lines for run in re.findall("`+", line)), default=0))
                out += [fence, *lines, fence, ""]
        return "\n".join(out).rstrip() + "\n"


_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")


def markdown_text(text) -> str:
    """Text as Markdown shows it literally: through the one sanitiser (:func:`core.safe_text.shown`: no control or
    bidi character, no line break), then HTML's ``& < >`` as entities (no raw HTML, no autolink) and Markdown's
    ``\\ ` * _ [ ] | ~`` escaped by a backslash (no emphasis, code, link, image, table cell or strike)."""
    text = shown(text, MAX_LINE)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", text)


def _num(v, digits: int = 2) -> str:
    """A figure, or "–" when it is undefined (None / NaN in the summary)."""
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(float(v)):
        return "–"
    return f"{float(v):.{digits}f}"


def _number(v) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(float(v)) else None


def _quoted(v) -> str:
    return f"'{v}'"


# ---------------------------------------------------------------------------------------------------- the card
def model_cards(kit: Kit, method: Method, summary: dict) -> list[ModelCard]:
    """One card per site of the summary, in the summary's order (the round's totals counted once for all)."""
    facts = _round_facts(kit, summary)
    return [model_card(kit, method, summary, x, facts) for x in summary.get("sites", []) if isinstance(x, dict)]


def card_for(cards: list[ModelCard], summary: dict, site: str, fingerprint: str) -> ModelCard | None:
    """The card of the site with this fingerprint (or, for summaries without fingerprints, this name)."""
    for card, x in zip(cards, [x for x in summary.get("sites", []) if isinstance(x, dict)], strict=False):
        if x.get("fingerprint") == fingerprint or (not x.get("fingerprint") and x.get("site") == site):
            return card
    return None


def model_card(kit: Kit, method: Method, summary: dict, site: dict, facts: dict | None = None) -> ModelCard:
    """The card of the package sent to the site whose summary entry is ``site`` (module docstring); ``facts``: the
    round's totals (:func:`_round_facts`), computed here when not given."""
    name = str(site.get("site", "site"))
    metrics = site.get("metrics") if isinstance(site.get("metrics"), dict) else None
    limits = _limits(kit, summary, site, metrics)
    warnings = [text for text, urgent in limits if urgent]
    sections = [_predicts(kit, metrics), _columns(kit),
                _trained_on(kit, summary, site, facts if facts is not None else _round_facts(kit, summary)),
                _performance(kit, summary, site, metrics), *_site_choice(site), _method(method, summary),
                Section("What left each site", [method.what_leaves or "(the method does not say)"]
                        + (["Each site also sent a few numbers about its own model: its cross-validated accuracy and "
                            "AUC, with their row counts."] if _own(site).get("source") == "site" else [])),
                *_formal(summary, site),
                Section("Known limits", bullets=[text for text, _ in limits] or ["None found by the checks above."])]
    title = f"Model card — package for {name} ({kit.name})"
    return ModelCard(name, title, warnings, sections)


def _site_choice(site: dict) -> list[Section]:
    """How the site chooses the model it uses (issue #37), with the analyst's estimate of that choice."""
    update = site.get("update")
    if not isinstance(update, dict):
        return []
    text = ["The package carries the shared model and, for each of this site's rows, that model's prediction from "
            "a model that never saw the row. The site pairs them with its own model's predictions of the same rows "
            "and, on its own labelled rows, uses its own model, the shared model as sent, the shared model with its "
            "baseline risk (and slope) re-estimated, or a blend of the two: the shared model unless another is "
            "clearly better there, never one that is clearly worse than its own (one-sided 5 %). "
            "`participant apply` says which it uses and why."]
    if update.get("sentence"):
        text.append("The analyst's estimate of that choice, " + str(update["sentence"]) + ".")
    return [Section("Which model this site uses", text)]


def _formal(summary: dict, site: dict) -> list[Section]:
    """The formal (ε, δ) option, when a site of the run used it: this site's budget and what the figures rest on."""
    from .privacy.formal_summary import site_lines

    lines = site_lines(summary.get("formal_privacy"), str(site.get("fingerprint", "")))
    return [Section("Formal privacy", lines)] if lines else []


def _own(site: dict) -> dict:
    own = site.get("own_model")
    return own if isinstance(own, dict) else {}


def _positive(kit: Kit, metrics: dict | None) -> str:
    return str(kit.schema.classes[1]) if len(kit.schema.classes) == 2 else ""


def _predicts(kit: Kit, metrics: dict | None) -> Section:
    schema = kit.schema
    if kit.task != "classification":
        return Section("What the model predicts", ["It assigns each row to one group (cluster) of similar rows; there "
                                                   "is no outcome to predict, so no discrimination or calibration."])
    classes = [str(c) for c in schema.classes]
    text = [f"The outcome in column {_quoted(schema.label)}, one of {', '.join(map(_quoted, classes))}."]
    if len(classes) == 2:
        thr = (metrics or {}).get("threshold", 0.5)
        text.append(f"For each patient it gives the risk (a probability from 0 to 1) that the outcome is "
                    f"{_quoted(classes[1])}: this is the positive class, and a row with {_quoted(classes[1])} counts "
                    f"as an event. A risk of {_num(thr)} or more is read as {_quoted(classes[1])} in the figures "
                    f"below; {_quoted(classes[0])} is the reference class.")
    else:
        text.append("For each patient it gives a probability for every class; the predicted class is the most "
                    "probable one.")
    return Section("What the model predicts", text)


def _columns(kit: Kit) -> Section:
    schema = kit.schema
    return Section("From which columns",
                   [f"{len(schema.features)} column(s) of the site's table, encoded the same way at every site "
                    f"({schema.width} model input(s)): types, levels (the first binary level is the reference) and "
                    "what happens to a missing cell.", MISSING_WORDS], code=schema.describe_columns())


def _events(site: dict, kit: Kit) -> int | None:
    counts = site.get("label_counts")
    if len(kit.schema.classes) == 2 and isinstance(counts, list) and len(counts) == 2:
        return int(counts[1])
    return None


MEMBERS_NAMED = 20  # a card names at most this many of its cluster's sites (then "and N more")


def _round_facts(kit: Kit, summary: dict) -> dict:
    """The round's totals and each cluster's members, rows and events, counted once (not once per card)."""
    sites = [x for x in summary.get("sites", []) if isinstance(x, dict)]
    clusters: dict = {}
    for x in sites:
        c = clusters.setdefault(x.get("cluster"), {"names": [], "rows": 0, "events": 0, "all_events": True})
        c["names"].append(str(x.get("site")))
        c["rows"] += int(x.get("rows", 0) or 0)
        e = _events(x, kit)
        c["all_events"] &= e is not None
        c["events"] += e or 0
    return {"sites": len(sites), "rows": sum(c["rows"] for c in clusters.values()),
            "events": sum(c["events"] for c in clusters.values()),
            "all_events": bool(sites) and all(c["all_events"] for c in clusters.values()), "clusters": clusters}


def _trained_on(kit: Kit, summary: dict, site: dict, facts: dict) -> Section:
    ev = (f", {facts['events']} events ({_quoted(_positive(kit, None))})" if facts["all_events"] else "")
    text = [f"The round had {facts['sites']} site(s), {facts['rows']:,} rows in all{ev}."]
    if "sites_combined" in summary:
        text.append(f"{summary['sites_combined']} site(s) went into the combined model.")
    cluster = site.get("cluster")
    if site.get("model") == "own" and site.get("own_kind"):
        text.append("This site's package keeps a model of its own rows only, instead of the shared one (see "
                    "Known limits).")
    elif isinstance(cluster, int) and int(summary.get("n_clusters", 1) or 1) > 1 and cluster in facts["clusters"]:
        c = facts["clusters"][cluster]
        names = c["names"]
        shown = ", ".join(names[:MEMBERS_NAMED]) + (f" and {len(names) - MEMBERS_NAMED:,} more"
                                                     if len(names) > MEMBERS_NAMED else "")
        text.append(f"This site's model was trained on cluster {cluster}: {len(names)} site(s) ({shown}), "
                    f"{c['rows']:,} rows" + (f", {c['events']} events" if c["all_events"] else "") + ".")
    return Section("Trained on", text)


def _binary_rows(m: dict, own: dict, expected: dict) -> list[list[str]]:
    auc = f"{_num(m.get('auc'))} (95 % CI {_num(m.get('auc_low'))}–{_num(m.get('auc_high'))})"
    return [
        ["AUC (discrimination)", auc, _num(own.get("auc"))],
        ["sensitivity", _num(m.get("sensitivity")), "–"],
        ["specificity", _num(m.get("specificity")), "–"],
        ["positive predictive value", _num(m.get("ppv")), "–"],
        ["negative predictive value", _num(m.get("npv")), "–"],
        ["accuracy", _num(m.get("accuracy")), _accuracy(own)],
        ["balanced accuracy", _num(m.get("balanced_accuracy")), _num(own.get("balanced_accuracy"))],
        ["Brier score (0 = perfect)", _num(m.get("brier"), 3), "–"],
        ["calibration slope (1 = ideal)", _num(m.get("calibration_slope")), "–"],
        ["calibration intercept (0 = ideal)", _num(m.get("calibration_intercept")), "–"],
    ]


def _accuracy(e: dict) -> str:
    return describe(e) if e.get("accuracy") is not None and {"rows", "low", "high"} <= e.keys() else "–"


def _performance(kit: Kit, summary: dict, site: dict, m: dict | None) -> Section:
    own = _own(site)
    expected = site.get("expected") if isinstance(site.get("expected"), dict) else {}
    heading = "How well it does at this site"
    own_words = own.get("what") or "the site's own model"
    if m is None:
        text = ["Discrimination and calibration: not measured by this method."]
        if summary.get("not_scored"):
            text.append(f"Why: {summary['not_scored']}.")
        if expected:
            text.append(f"Expected accuracy of the model sent: {_accuracy(expected)}.")
        if own:
            text.append(f"The site's own model ({own_words}): accuracy {_accuracy(own)}"
                        + (f", AUC {_num(own.get('auc'))}" if _number(own.get("auc")) is not None else "") + ".")
        text.append("The site can measure both on its own labelled rows: dcstudio participant apply --validate.")
        return Section(heading, text)
    scored = m.get("scored") or "out-of-fold predictions on the rows it sent"
    if m.get("task") == "binary":
        thr = _num(m.get("threshold", 0.5))
        text = [f"Measured on {m.get('rows')} rows with {m.get('events')} events: {scored}. "
                f"Sensitivity, specificity, PPV and NPV count a risk of {thr} or more as {_quoted(_positive(kit, m))}.",
                f"Beside it: the site's own model ({own_words})." if own else "The site's own model: not reported."]
        return Section(heading, text, table=(["figure", "model sent", "site's own model"],
                                             _binary_rows(m, own, expected)))
    text = [f"Measured on {m.get('rows')} rows ({scored}): accuracy {_num(m.get('accuracy'))}, "
            f"balanced accuracy {_num(m.get('balanced_accuracy'))}, macro-AUC {_num(m.get('macro_auc'))}.",
            (f"The site's own model ({own_words}): accuracy {_accuracy(own)}"
             + (f", AUC {_num(own.get('auc'))}" if _number(own.get("auc")) is not None else "") + ".")
            if own else "The site's own model: not reported."]
    rows = [[str(c.get("class")), str(c.get("support")), _num(c.get("recall")), _num(c.get("precision"))]
            for c in m.get("per_class", []) if isinstance(c, dict)]
    return Section(heading, text, table=(["class", "rows", "recall", "precision"], rows))


def _method(method: Method, summary: dict) -> Section:
    settings = summary.get("settings") if isinstance(summary.get("settings"), dict) else method.settings
    bullets = [f"{k} = {json.dumps(v) if not isinstance(v, str) else v}" for k, v in sorted(settings.items())]
    text = [f"Method {method.name} — {method.title.rstrip('.')}."]
    if summary.get("t") is not None and "n_clusters" in summary:
        text.append(f"Sites grouped at threshold t = {summary['t']:g} into {summary['n_clusters']} cluster(s)"
                    + (" (t chosen automatically)." if summary.get("t_auto") else "."))
    sel = summary.get("selection")
    if isinstance(sel, dict) and sel.get("what"):
        text.append(f"Model choice: {sel['what']}.")
    return Section("Method and settings", text, bullets=bullets)


def _limits(kit: Kit, summary: dict, site: dict, m: dict | None) -> list[tuple[str, bool]]:
    """(sentence, shown first) per known limit of this site's package."""
    out: list[tuple[str, bool]] = []
    rows = int(site.get("rows", 0) or 0)
    if rows < WEAK_ROWS:
        out.append((f"This site sent only {rows} rows: every figure on this card is a rough estimate.", False))
    if m and m.get("task") == "binary":
        events, n = int(m.get("events", 0) or 0), int(m.get("rows", 0) or 0)
        if min(events, n - events) < FEW_EVENTS:
            out.append((f"Only {events} events and {n - events} non-events here: the AUC and sensitivity rest on "
                        "too few patients to mean much.", False))
        low, high = _number(m.get("auc_low")), _number(m.get("auc_high"))
        if low is not None and high is not None and high - low > WEAK_WIDTH:
            out.append((f"The AUC's 95 % interval is wide ({low:.2f}–{high:.2f}): a weak estimate.", False))
        if m.get("never_predicts_minority"):
            classes = [str(c) for c in kit.schema.classes]
            minority = classes[1] if events <= n - events else classes[0]
            out.append((f"At the threshold {_num(m.get('threshold', 0.5))} the model never predicts "
                        f"{_quoted(minority)}, the less common outcome here (sensitivity 0 for it): its accuracy "
                        "only reflects how common the other outcome is. Do not use its yes/no answers as they are.",
                        True))
    if m and m.get("never_predicted"):
        out.append((f"Classes present here but never predicted: {', '.join(map(_quoted, m['never_predicted']))} "
                    "(recall 0 for them, whatever the accuracy).", True))
    expected = site.get("expected")
    if isinstance(expected, dict) and expected.get("weak") and rows >= WEAK_ROWS:
        out.append((f"The expected accuracy is a weak estimate ({_accuracy(expected)}).", False))
    h = summary.get("heterogeneity")
    if isinstance(h, dict):
        if h.get("df"):
            i2, p = _number(h.get("i2")), _number(h.get("p_value"))
            out.append((f"The sites' coefficients ({h.get('of', 'all coefficients')}) differ between sites: "
                        f"I² = {_num(100 * i2 if i2 is not None else None, 0)} %, Cochran's Q p = {_num(p, 3)}"
                        + (" — one combined model may not fit every site." if p is not None and p < 0.05 else
                           " (no clear sign that one combined model does not fit).") , False))
        else:
            out.append(("Only one site was combined: heterogeneity between sites could not be measured.", False))
    if site.get("model") == "own" and site.get("own_kind") == "linear":
        out.append(("This package says 'keep your own model': applying it uses the model the site fitted on its "
                    "own rows at export, so the other sites' data do not change its predictions.", False))
    elif site.get("model") == "own":
        out.append(("This site's model was trained on its own rows only (no other site's rows changed it).", False))
    if site.get("note"):
        out.append((f"Note from the analysis: {site['note']}.", False))
    for flag in summary.get("scale_flags", []) or []:
        if isinstance(flag, dict) and flag.get("site") == site.get("site"):
            out.append((f"This site's data were flagged as out of scale ({flag.get('reason')}).", True))
    return out
