"""The model card of one site's package: what the model predicts, for whom, from what, how well, and its limits.

Written for the site's clinicians beside each package (``<site>.model_card.md``) and shown in the analyst's
report, in the order of TRIPOD+AI (Collins et al. 2024: title and date, intended use and population, predictors,
participants and events, performance, limitations) and TRIPOD-Cluster (Debray et al. 2023: the centres, their
participants and events, and the heterogeneity of performance across them). Everything on it comes from the kit
(schema, classes, method, settings), the method's declarations (``what_leaves``) and the run's summary
(``run.created``, ``software``; the site's entry: ``metrics``, ``own_model``, ``expected``, ``update``, ``model``
…, see docs/FORMAT.md); a figure the method does not measure is said to be "not measured by this method".

The model the site uses gets one set of figures (issue #33 item 11): the shared model as sent (``metrics``), the
site's own model (``own_model``) or the analyst's estimate of an update the site chooses (``expected``), each in
one column, beside the models it was compared with; every accuracy stands beside the majority-class baseline (the
share of always answering the site's most common outcome). The sites' heterogeneity is the random-effects pooling
of their AUCs (:mod:`core.learn.heterogeneity`) or, for a meta-analysis, the test of its coefficients. Settings
go to an appendix.

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
from datetime import datetime

from . import __version__
from .data.missing import HELP as MISSING_HELP
from .formats.kit import Kit
from .learn.heterogeneity import differ_terms, differ_words, pool_aucs
from .learn.intervals import WEAK_ROWS, WEAK_WIDTH, describe
from .learn.site_update import UPDATE_WORDS
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
    if facts is None:
        facts = _round_facts(kit, summary)
    sections = [_about(kit, method, summary), _intended(kit, site, facts), _predicts(kit, metrics), _columns(kit),
                _trained_on(kit, summary, site, facts), *_performance(kit, summary, site, metrics),
                *_site_choice(site), facts["between"],
                Section("Known limits", bullets=[text for text, _ in limits] or ["None found by the checks above."]),
                Section("What left each site", [method.what_leaves or "(the method does not say)"]
                        + (["Each site also sent a few numbers about its own model: its cross-validated accuracy and "
                            "AUC, with their row counts."] if _own(site).get("source") == "site" else [])),
                *_formal(summary, site), _appendix(method, summary)]
    title = f"Model card — package for {name} ({kit.name})"
    return ModelCard(name, title, warnings, sections)


def _date(summary: dict) -> str:
    created = (summary.get("run") or {}).get("created") if isinstance(summary.get("run"), dict) else None
    try:
        when = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    except ValueError:
        return "not recorded"
    return f"{when.day} {when:%B %Y} ({when:%H:%M} UTC)"


def _about(kit: Kit, method: Method, summary: dict) -> Section:
    """TRIPOD+AI items 1–2: what this is, when and with which software it was made."""
    plain = getattr(method, "plain_title", "") or method.title
    return Section("About this card", [
        "A prediction model's card, for the clinicians of the site it was sent to. It follows the reporting "
        "guidelines TRIPOD+AI and TRIPOD-Cluster (a model developed on data from several centres)."],
        bullets=[f"Date of the analysis: {_date(summary)}",
                 f"Software: DC Studio {summary.get('software') or __version__}",
                 f"Project: {kit.name}",
                 f"Method: {plain} ({method.name}); its settings are in the appendix at the end"])


def _majority(kit: Kit, counts) -> tuple[float, str] | None:
    """(share, class) of always answering the most common class of ``counts`` (rows per class of the kit)."""
    if not isinstance(counts, list) or not counts or not all(isinstance(c, int) for c in counts) or sum(counts) <= 0:
        return None
    k = max(range(len(counts)), key=lambda j: counts[j])
    name = str(kit.schema.classes[k]) if k < len(kit.schema.classes) else str(k)
    return counts[k] / sum(counts), name


def _intended(kit: Kit, site: dict, facts: dict) -> Section:
    """TRIPOD+AI items 3 and 5–6: what the model is for, and the people it was developed on."""
    schema = kit.schema
    if kit.task != "classification":
        use = ("To put each row of this site in one group of similar rows, found with the other sites' rows. There "
               "is no outcome: the groups describe, they do not predict.")
    elif len(schema.classes) == 2:
        use = (f"To estimate, for each patient of this site, the risk that {_quoted(schema.label)} is "
               f"{_quoted(schema.classes[1])}, from the columns listed below, as a support to clinical judgement, "
               "never as its replacement.")
    else:
        use = (f"To estimate, for each patient of this site, the probability of each value of "
               f"{_quoted(schema.label)}, from the columns listed below, as a support to clinical judgement, never as "
               "its replacement.")
    positive = _positive(kit, None)
    who = f"Population: the patients of the {facts['sites']} site(s) of this round, {facts['rows']:,} rows in all"
    who += f", {facts['events']:,} of them with {_quoted(positive)}." if facts["all_events"] and positive else "."
    here = int(site.get("rows", 0) or 0)
    ev = _events(site, kit)
    who += f" This site: {here:,} rows" + (f", {ev:,} with {_quoted(positive)}" if ev is not None else "") + "."
    return Section("Intended use and population", [
        use, who, "Every site kept its own rows; the model has not been checked on patients outside these sites. "
        "Before relying on it for other patients (another hospital, another period, another case mix), check it on "
        "labelled rows: dcstudio participant apply --validate."])


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
        text.append("The analyst's estimate of that choice, " + _site_words(str(update["sentence"])) + ".")
    return [Section("How this site chooses", text)]


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
SITES_TABLED = 50  # a card's table of sites lists at most this many rows (this site always; then "N more")


def _round_facts(kit: Kit, summary: dict) -> dict:
    """The round's totals, each cluster's members, rows and events, each site's row of the sites table and the
    sites' spread (:func:`_between_sites`), computed once for every card (not once per card: 10,000 sites)."""
    sites = [x for x in summary.get("sites", []) if isinstance(x, dict)]
    clusters: dict = {}
    for x in sites:
        c = clusters.setdefault(x.get("cluster"), {"names": [], "rows": 0, "events": 0, "all_events": True})
        c["names"].append(str(x.get("site")))
        c["rows"] += int(x.get("rows", 0) or 0)
        e = _events(x, kit)
        c["all_events"] &= e is not None
        c["events"] += e or 0
    grouped = int(summary.get("n_clusters", 1) or 1) > 1 and any(isinstance(x.get("cluster"), int) for x in sites)
    table = [[str(x.get("site")),
              f"{int(x.get('rows', 0) or 0):,}" + (f" + {int(x['rows_kept_at_site']):,} kept to check"
                                                    if x.get("rows_kept_at_site") else ""),
              _counts_text(kit, x), *([str(x.get("cluster", "–"))] if grouped else [])] for x in sites]
    return {"sites": len(sites), "rows": sum(c["rows"] for c in clusters.values()),
            "events": sum(c["events"] for c in clusters.values()),
            "all_events": bool(sites) and all(c["all_events"] for c in clusters.values()), "clusters": clusters,
            "grouped": grouped, "table": table, "index": {id(x): i for i, x in enumerate(sites)},
            "between": _between_sites(kit, summary)}


def _counts_text(kit: Kit, x: dict) -> str:
    counts = x.get("label_counts")
    if not isinstance(counts, list) or not counts:
        return "–"
    if len(kit.schema.classes) == 2 and len(counts) == 2:
        return f"{int(counts[1]):,}"
    return ", ".join(f"{kit.schema.classes[k] if k < len(kit.schema.classes) else k} {int(c):,}"
                     for k, c in enumerate(counts))


def _sites_table(kit: Kit, site: dict, facts: dict) -> tuple[list[str], list[list[str]]]:
    """TRIPOD-Cluster's table of centres: each site's rows and events, this site marked; past
    :data:`SITES_TABLED` rows, this site and the first others, then one row counting the rest."""
    head = ["site", "rows", f"events ({_positive(kit, None)})" if len(kit.schema.classes) == 2 else "rows per class"]
    head += ["group"] if facts["grouped"] else []
    here = facts["index"].get(id(site))
    shown = list(range(len(facts["table"])))
    if len(shown) > SITES_TABLED:
        shown = sorted({*shown[:SITES_TABLED - 1], *([here] if here is not None else [])})
    rows = [[row[0] + " (this site)" if i == here else row[0], *row[1:]]
            for i, row in ((i, facts["table"][i]) for i in shown)]
    if len(shown) < len(facts["table"]):
        rows.append([f"… and {len(facts['table']) - len(shown):,} more site(s)", "", "", *([""] if facts["grouped"]
                                                                                          else [])])
    return head, rows


def _trained_on(kit: Kit, summary: dict, site: dict, facts: dict) -> Section:
    """TRIPOD-Cluster: the centres, their participants and events; this site's group."""
    ev = (f", {facts['events']} events ({_quoted(_positive(kit, None))})" if facts["all_events"] else "")
    text = [f"The round had {facts['sites']} site(s), {facts['rows']:,} rows in all{ev}."]
    if "sites_combined" in summary:
        text.append(f"{summary['sites_combined']} site(s) went into the combined model.")
    cluster = site.get("cluster")
    if site.get("model") == "own" and site.get("own_kind") and not isinstance(site.get("update"), dict):
        text.append("This site's package keeps a model of its own rows only, instead of the shared one (see "
                    "Known limits).")
    elif isinstance(cluster, int) and int(summary.get("n_clusters", 1) or 1) > 1 and cluster in facts["clusters"]:
        c = facts["clusters"][cluster]
        names = c["names"]
        shown = ", ".join(names[:MEMBERS_NAMED]) + (f" and {len(names) - MEMBERS_NAMED:,} more"
                                                     if len(names) > MEMBERS_NAMED else "")
        text.append(f"This site's model was trained on cluster {cluster}: {len(names)} site(s) ({shown}), "
                    f"{c['rows']:,} rows" + (f", {c['events']} events" if c["all_events"] else "") + ".")
    return Section("Sites and events", text, table=_sites_table(kit, site, facts)
                   if kit.task == "classification" and facts["sites"] else None)


# ---- the model this site uses -----------------------------------------------------------------------------------
def _choice(site: dict) -> str:
    """What this site uses: its choice on its own rows (the analyst's estimate) when it decides, else what the
    package says — "own", "shared", or an update ("intercept", "recalibrated", "blend")."""
    update = site.get("update")
    if isinstance(update, dict) and update.get("estimate") in UPDATE_WORDS:
        return str(update["estimate"])
    return "own" if site.get("model") == "own" else "shared"


def _model_words(kind: str, site: dict) -> str:
    if kind == "own":
        return "this site's own model"
    if kind == "shared":
        return "the shared model as sent"
    words = _site_words(UPDATE_WORDS[kind])
    weight = (site.get("update") or {}).get("weight")
    return words + (f" ({float(weight):.0%} shared)" if kind == "blend" and isinstance(weight, int | float) else "")


SHORT_WORDS = {"own": "this site's own model", "shared": "the shared model as sent",
               "intercept": "the shared model, this site's baseline", "recalibrated": "the shared model, recalibrated",
               "blend": "a blend of the shared and own models"}


def _short(kind: str, site: dict) -> str:
    """A table header's few words for a model (:func:`_model_words` says it in full)."""
    weight = (site.get("update") or {}).get("weight")
    return SHORT_WORDS[kind] + (f", {float(weight):.0%} shared" if kind == "blend" and isinstance(weight, int | float)
                                else "")


def _site_words(text: str) -> str:
    """A sentence written to the site ("your own model") as the card says it ("this site's own model")."""
    for said, card in (("your site's", "this site's"), ("your own", "this site's own"), ("at your site", "at the site"),
                       ("you use", "the site uses"), ("your ", "this site's ")):
        text = text.replace(said, card)
    return text


def _accuracy_cell(acc: float | None, base: tuple[float, str] | None, full: str = "") -> str:
    if acc is None:
        return "–"
    text = full or f"{acc:.3f}"
    return text + (f"; always {_quoted(base[1])}: {base[0]:.3f}" if base else "")


def _below_baseline(what: str, acc: float | None, base: tuple[float, str] | None) -> str:
    if acc is None or base is None:
        return ""
    share, cls = base
    if acc <= share + 1e-9:
        return (f"The accuracy of {what}, {acc:.3f}, is {'below' if acc < share - 5e-4 else 'no better than'} the "
                f"{share:.3f} of always answering {_quoted(cls)}: on accuracy alone it is no better than always "
                "giving the most common answer; read its AUC and, for a yes/no outcome, its sensitivity instead.")
    return f"The accuracy of {what}, {acc:.3f}, is above the {share:.3f} of always answering {_quoted(cls)}."


def _figures(kind: str, site: dict, m: dict | None, binary: bool, base) -> tuple[str, dict[str, str], float | None]:
    """(column header, figure → cell, accuracy) of one model: the shared model as sent from ``metrics``, the site's
    own from ``own_model``, an update from the analyst's estimate (``expected``, ``expected_auc``)."""
    own, expected = _own(site), site.get("expected") if isinstance(site.get("expected"), dict) else {}
    if kind == "shared":
        if m is None:
            return _short(kind, site), {}, None
        acc = _number(m.get("accuracy"))
        cells = {"accuracy": _accuracy_cell(acc, base), "balanced accuracy": _num(m.get("balanced_accuracy"))}
        if binary:
            cells.update({"AUC (discrimination)": f"{_num(m.get('auc'))} (95 % CI {_num(m.get('auc_low'))}–"
                                                  f"{_num(m.get('auc_high'))})",
                          "sensitivity": _num(m.get("sensitivity")), "specificity": _num(m.get("specificity")),
                          "positive predictive value": _num(m.get("ppv")),
                          "negative predictive value": _num(m.get("npv")),
                          "Brier score (0 = perfect)": _num(m.get("brier"), 3),
                          "calibration slope (1 = ideal)": _num(m.get("calibration_slope")),
                          "calibration intercept (0 = ideal)": _num(m.get("calibration_intercept"))})
        else:
            cells["macro-AUC (discrimination)"] = _num(m.get("macro_auc"))
        return _short(kind, site), cells, acc
    if kind == "own":
        if not own:
            return _short(kind, site), {}, None
        acc = _number(own.get("accuracy"))
        cells = {"accuracy": _accuracy_cell(acc, base, _accuracy(own)),
                 "balanced accuracy": _num(own.get("balanced_accuracy")),
                 ("AUC (discrimination)" if binary else "macro-AUC (discrimination)"): _num(own.get("auc"))}
        return _short(kind, site) + " (cross-validated)", cells, acc
    if not expected:
        return _short(kind, site), {}, None
    acc = _number(expected.get("accuracy"))
    cells = {"accuracy": _accuracy_cell(acc, base, _accuracy(expected)),
             ("AUC (discrimination)" if binary else "macro-AUC (discrimination)"): _num(site.get("expected_auc"))}
    return _short(kind, site) + " (estimate)", cells, acc


FIGURE_ORDER = ("AUC (discrimination)", "macro-AUC (discrimination)", "sensitivity", "specificity",
                "positive predictive value", "negative predictive value", "accuracy", "balanced accuracy",
                "Brier score (0 = perfect)", "calibration slope (1 = ideal)", "calibration intercept (0 = ideal)")


def _performance(kit: Kit, summary: dict, site: dict, m: dict | None) -> list[Section]:
    """One column for the model the site uses and one for each model it was compared with (each model once), every
    accuracy beside the share of always answering the site's most common outcome."""
    heading = "The model this site uses, and what it was compared with"
    if kit.task != "classification":
        return [Section(heading, ["Discrimination and calibration: not measured by this method (no outcome)."])]
    binary = len(kit.schema.classes) == 2
    base = _majority(kit, site.get("label_counts"))
    if base is None and m is not None and isinstance(m.get("confusion"), list):
        base = _majority(kit, [int(sum(row)) for row in m["confusion"]])
    kind = _choice(site)
    compared = {"shared": ["own"], "own": ["shared"]}.get(kind, ["shared", "own"])
    models = [_figures(k, site, m, binary, base) for k in [kind, *compared]]
    in_use, others = models[0], [x for x in models[1:] if x[1]]
    decides = isinstance(site.get("update"), dict)
    text = [f"This site uses {_model_words(kind, site)}"
            + (" — the analyst's estimate: the site decides on its own labelled rows when it applies the package "
               "(below, How this site chooses)." if decides else ".")]
    if m is not None:
        scored = m.get("scored") or "out-of-fold predictions on the rows it sent"
        text.append(f"The shared model's figures are measured on {m.get('rows')} rows"
                    + (f" with {m.get('events')} events" if binary else "") + f": {scored}."
                    + (f" Sensitivity, specificity, PPV and NPV count a risk of {_num(m.get('threshold', 0.5))} or "
                       f"more as {_quoted(_positive(kit, m))}." if binary else ""))
    else:
        text.append("Discrimination and calibration of the shared model: not measured by this method"
                    + (f" ({summary['not_scored']})" if summary.get("not_scored") else "") + ".")
    if _own(site):
        text.append(f"How this site's own model was measured: "
                    f"{_site_words(_own(site).get('what') or 'from the rows it sent')}.")
    if base is not None:
        text.append(f"Beside every accuracy: the share of this site's rows a model would get right by always "
                    f"answering the most common outcome, {_quoted(base[1])} ({base[0]:.3f}).")
    columns = [x for x in [in_use, *others] if x[1]]
    table = None
    if columns:
        figures = [f for f in FIGURE_ORDER if any(f in c[1] for c in columns)]
        table = (["figure", *[("uses: " if c is in_use else "compared with: ") + c[0] for c in columns]],
                 [[f, *[c[1].get(f, "–") for c in columns]] for f in figures])
    else:
        text.append("No figure of the model this site uses was measured here: the site measures it on its own "
                    "labelled rows (dcstudio participant apply --validate).")
    text += [x for x in (_below_baseline(c[0], c[2], base) for c in columns) if x]
    if binary or m is None:
        return [Section(heading, text, table=table)]
    per_class = [[str(c.get("class")), str(c.get("support")), _num(c.get("recall")), _num(c.get("precision"))]
                 for c in m.get("per_class", []) if isinstance(c, dict)]
    return [Section(heading, text, table=table),
            Section("Per class, the shared model as sent", table=(["class", "rows", "recall", "precision"], per_class))]


# ---- how much the sites differ ---------------------------------------------------------------------------------
def _between_sites(kit: Kit, summary: dict) -> Section:
    """TRIPOD-Cluster: the spread of the models' performance across sites (the sites' AUCs pooled by random
    effects, with the prediction interval of a new site), or a meta-analysis's test of its coefficients."""
    heading = "How much the sites differ"
    sites = [x for x in summary.get("sites", []) if isinstance(x, dict)]
    h = summary.get("heterogeneity")
    if isinstance(h, dict):
        what = "the sites' slopes" if h.get("of") == "slopes" else "the sites' coefficients"
        what = what.replace("the sites' ", "the ")
        return Section(heading, [differ_words(h.get("i2"), h.get("p_value"), h.get("df"), what)
                                 + f" ({differ_terms(h.get('q'), h.get('df'), h.get('p_value'), h.get('i2'))})",
                                 "The combined model's performance at each site is not measured by this method."])
    aucs = [(x, x["metrics"]) for x in sites if isinstance(x.get("metrics"), dict)
            and all(_number(x["metrics"].get(k)) is not None for k in ("auc", "auc_low", "auc_high"))]
    if len(aucs) >= 2:
        pooled = pool_aucs([(m["auc"], m["auc_low"], m["auc_high"]) for _, m in aucs])
        rows = [[str(x.get("site")), str(m.get("rows")), str(m.get("events")),
                 f"{_num(m['auc'])} ({_num(m['auc_low'])}–{_num(m['auc_high'])})"] for x, m in aucs]
        text = [f"The AUC of the shared model at each of {len(aucs)} sites (out-of-fold, on the rows each sent)."]
        if pooled is not None:
            pi = (f" A new site like these would see an AUC between {pooled.pi_low:.2f} and {pooled.pi_high:.2f} "
                  "(95 % prediction interval)." if pooled.pi_low is not None else "")
            text.append(f"Pooled over the sites (random effects): {pooled.estimate:.2f} (95 % CI {pooled.low:.2f}–"
                        f"{pooled.high:.2f}).{pi} "
                        + differ_words(pooled.i2, pooled.p_value, pooled.df, "the AUCs")
                        + f" ({differ_terms(pooled.q, pooled.df, pooled.p_value, pooled.i2)})")
        return Section(heading, text, table=(["site", "rows", "events", "AUC (95 % CI)"], rows))
    multi = [(x, x["metrics"]) for x in sites if isinstance(x.get("metrics"), dict)
             and _number(x["metrics"].get("macro_auc")) is not None]
    if len(multi) >= 2:
        values = [float(m["macro_auc"]) for _, m in multi]
        return Section(heading, [f"The macro-AUC of the shared model ranges from {min(values):.2f} to "
                                 f"{max(values):.2f} across {len(multi)} sites (no interval per site, so the spread "
                                 "is not tested)."],
                       table=(["site", "rows", "macro-AUC"], [[str(x.get("site")), str(m.get("rows")),
                                                                 _num(m["macro_auc"])] for x, m in multi]))
    return Section(heading, ["How much the sites differ in performance: not measured by this method"
                             + (" (one site only)" if len(aucs) + len(multi) == 1 else "") + "."])


def _accuracy(e: dict) -> str:
    return describe(e) if e.get("accuracy") is not None and {"rows", "low", "high"} <= e.keys() else "–"


def _appendix(method: Method, summary: dict) -> Section:
    settings = summary.get("settings") if isinstance(summary.get("settings"), dict) else method.settings
    bullets = [f"{k} = {json.dumps(v) if not isinstance(v, str) else v}" for k, v in sorted(settings.items())]
    text = [f"Method {method.name} — {method.title.rstrip('.')}."]
    if summary.get("t") is not None and "n_clusters" in summary:
        text.append(f"Sites grouped at threshold t = {summary['t']:g} into {summary['n_clusters']} cluster(s)"
                    + (" (t chosen automatically)." if summary.get("t_auto") else "."))
    sel = summary.get("selection")
    if isinstance(sel, dict) and sel.get("what"):
        text.append(f"Model choice: {sel['what']}.")
    text.append("Every setting of the run:")
    return Section("Appendix: method and settings", text, bullets=bullets)


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
            out.append((f"At the threshold {_num(m.get('threshold', 0.5))} the shared model never predicts "
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
            p = _number(h.get("p_value"))
            what = "the slopes" if h.get("of") == "slopes" else "the coefficients"
            out.append((differ_words(h.get("i2"), p, h.get("df"), what)
                        + (" One combined model may not fit every site." if p is not None and p < 0.05 else ""), False))
        else:
            out.append(("Only one site was combined: heterogeneity between sites could not be measured.", False))
    decides = isinstance(site.get("update"), dict)
    if site.get("model") == "own" and site.get("own_kind") == "linear" and not decides:
        out.append(("This package says 'keep your own model': applying it uses the model the site fitted on its "
                    "own rows at export, so the other sites' data do not change its predictions.", False))
    elif site.get("model") == "own" and not decides:
        out.append(("This site's model was trained on its own rows only (no other site's rows changed it).", False))
    if site.get("note"):
        out.append((f"Note from the analysis: {site['note']}.", False))
    for flag in summary.get("scale_flags", []) or []:
        if isinstance(flag, dict) and flag.get("site") == site.get("site"):
            out.append((f"This site's data were flagged as out of scale ({flag.get('reason')}).", True))
    return out
