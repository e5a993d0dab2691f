"""The levers a site can pull when a disclosure finding is poor, each measured before anything leaves (issue #24).

For a :class:`~core.participant.ParticipantRound` that has read its CSV, every lever value is tried on a seeded
subsample of the site's rows (at most ``MAX_ROWS``, so each option stays well under a second):

1. the method's own site computation runs again with the changed setting (:meth:`Method.site_compute`);
2. the disclosure check runs again on what that would ship (:func:`core.privacy.assessment.assess_export`);
3. what it costs *at the site*: the site's own learner, cross-validated
   (:func:`core.learn.own_cv.cross_validate_own`), on the rows that would leave (reduced, noised, in their
   shuffled order with their labels) against the same on the site's raw rows: what a site's own model loses
   when it can only see what the analyst sees. For two classes the cost is in AUC, raw AUC − AUC on the rows
   that would leave (``auc_cost``; accuracy hides a lost minority class: on a 69 %-"died" site a lever can
   keep the accuracy while the AUC falls from 0.64 to 0.58, issue #35); for more classes in accuracy points,
   100 × (raw accuracy − accuracy) (``cost_points``, also kept for two classes). A negative cost is a gain and
   is said so (:func:`effect_words`). With m̃ = m and no noise the map is invertible and the cost is about 0
   (the L2 penalty sees rescaled columns, so not exactly 0).

Levers (those the method declares as site settings): a lower dimension (``dimension``: "numbers per row"),
noise (``noise``, × each reduced column's spread), both at once (milder each), the formal DP option
(``privacy_epsilon``: ε of the Gaussian mechanism, with the kit's δ). Two more are information only, since
the signed kit fixes them: fewer or coarser columns, and the distilled mode (synthetic rows instead of reduced
real rows).

:func:`cheapest_lever` picks the option that reaches a stated :class:`LeverTarget` (e.g. the colluding
site's reconstruction error ≥ 50 % of the columns' spread) at the smallest cost — never one whose rows no longer
predict a two-class outcome (AUC ≤ :data:`USELESS_AUC`): such a lever protects by teaching nothing, so it is
never shown as "OK" nor recommended.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..control import JobControl, ensure
from ..errors import ConfigError, DCError
from ..learn.own_cv import cross_validate_own
from ..learn.reduction import resolved_dimension
from .release import DISTILLED_ROWS, Release

MAX_ROWS = 2000  # rows each option is measured on (a seeded subsample of the site's rows)
SUBSAMPLE_SEED = (0, 24)
NOISE_VALUES = (0.25, 0.5, 1.0, 2.0)
EPSILON_VALUES = (8.0, 4.0, 2.0, 1.0, 0.5)
EPSILON_SETTING = "privacy_epsilon"
LEVER_SETTINGS = ("dimension", "noise", EPSILON_SETTING)
COMBINED = "dimension+noise"
USELESS_AUC = 0.55  # two classes: an AUC at or below this on what would leave is a model that has learnt nothing
SMALL_COST_POINTS = 2.0  # a lever costing more (accuracy points, or 0.02 AUC) is no small price: say so
SUMMARY_PATH = ("A summary method ships no rows: meta-lr sends a model fitted on your rows (its coefficients and "
                "their covariance), not a copy of them — ask the analyst whether a meta-lr kit fits the project.")

LEVER_WORDS = {
    "dimension": ("Fewer numbers per row", "a lower dimension m̃ of the private reduction"),
    "noise": ("More noise", "Gaussian noise on the reduced rows, σ = value × each reduced column's standard "
                            "deviation (no formal guarantee)"),
    COMBINED: ("Fewer numbers per row and noise", "a lower dimension m̃ and Gaussian noise together"),
    EPSILON_SETTING: ("Formal noise with a guarantee", "(ε, δ)-differential privacy: per-row clipping and the "
                                                      "Gaussian mechanism on the reduced rows"),
    "columns": ("Fewer or coarser columns", "dropping or binning columns (generalisation) in the kit's schema"),
    "distilled": ("Distilled mode", "dataset distillation: synthetic rows are shipped instead of reduced real rows"),
}


@dataclass
class LeverTarget:
    """A stated target: the finding of ``attack`` (optionally of one ``adversary``) must have its number
    ``number`` ≥ ``at_least`` and/or ≤ ``at_most``; with no ``attack``, every finding's verdict must be ok."""

    attack: str = ""
    number: str = ""
    at_least: float | None = None
    at_most: float | None = None
    adversary: str = ""
    ignore: tuple[str, ...] = ()  # with no ``attack``: findings (``attack/adversary``) left out of "every"

    def reached(self, findings: list[dict]) -> bool:
        """Whether a findings summary (:attr:`LeverOption.findings`) meets this target."""
        if not self.attack:  # every finding the kit's threat model counts (out-of-scope ones are shown only)
            return bool(findings) and all(f["verdict"] != "poor" for f in findings
                                          if finding_key(f) not in self.ignore and f.get("in_scope", True))
        hits = [f for f in findings if f["attack"] == self.attack and (not self.adversary
                                                                      or f["adversary"] == self.adversary)]
        values = [f["numbers"].get(self.number) for f in hits]
        values = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
        if not values:
            return False
        ok = True
        if self.at_least is not None:
            ok &= min(values) >= self.at_least
        if self.at_most is not None:
            ok &= max(values) <= self.at_most
        return bool(ok)

    def describe(self) -> str:
        bounds = []
        if self.at_least is not None:
            bounds.append(f"≥ {self.at_least:g}")
        if self.at_most is not None:
            bounds.append(f"≤ {self.at_most:g}")
        who = f" ({self.adversary})" if self.adversary else ""
        return f"{self.attack}{who}: {self.number} {' and '.join(bounds)}" if self.attack else "every finding ok"


@dataclass
class LeverOption:
    """One lever value, measured: the setting changes, the findings they give, and the accuracy they cost.

    ``changes`` : the site settings to set ({} for the current settings and for information-only levers).
    ``findings`` : per finding ``{attack, adversary, verdict, numbers, sentence}`` (the disclosure check's).
    ``accuracy`` / ``auc`` : the site's own learner cross-validated on the rows that would leave (AUC: two
        classes); ``raw_accuracy`` / ``raw_auc`` the same on the raw rows; ``cost_points`` =
        100 × (raw − this accuracy); :attr:`auc_cost` = raw − this AUC. None when not measured (no labels, no
        per-row array, information only).
    ``rows`` : the rows measured; ``seconds`` the time it took; ``note`` one plain sentence for information-only
        levers or a lever that could not be measured.
    """

    lever: str
    value: object
    label: str
    changes: dict
    findings: list[dict] = field(default_factory=list)
    accuracy: float | None = None
    auc: float | None = None
    raw_accuracy: float | None = None
    raw_auc: float | None = None
    cost_points: float | None = None
    rows: int = 0
    seconds: float = 0.0
    note: str = ""
    formal: str = ""  # the DP option's guarantee in words: "(ε, δ) = (1, 1e-05): a formal guarantee: …"

    @property
    def applicable(self) -> bool:
        """Whether "Use this" can apply it here (the kit fixes the information-only levers)."""
        return bool(self.changes)

    @property
    def auc_cost(self) -> float | None:
        """Raw AUC − AUC on the rows that would leave (two classes; None otherwise or when not measured)."""
        return None if self.auc is None or self.raw_auc is None else round(self.raw_auc - self.auc, 4)

    @property
    def cost(self) -> float | None:
        """What the options are ranked by: :attr:`auc_cost` for two classes, else ``cost_points``."""
        return self.auc_cost if self.auc_cost is not None else self.cost_points

    @property
    def useless(self) -> bool:
        """Two classes and AUC ≤ USELESS_AUC on what would leave: never "OK", never recommended."""
        return self.auc is not None and self.auc <= USELESS_AUC

    def effect(self) -> str:
        """What the lever does to the site's own model, as a loss or a gain in plain words (:func:`effect_words`)."""
        return effect_words(self)

    @property
    def verdicts(self) -> dict[str, str]:
        return {finding_key(f): f["verdict"] for f in self.findings}

    @property
    def poor(self) -> int:
        """The poor findings the kit's threat model counts."""
        return sum(f["verdict"] == "poor" and f.get("in_scope", True) for f in self.findings)

    def to_dict(self) -> dict:
        return {"lever": self.lever, "value": self.value, "label": self.label, "changes": dict(self.changes),
                "findings": self.findings, "accuracy": self.accuracy, "auc": self.auc,
                "raw_accuracy": self.raw_accuracy, "raw_auc": self.raw_auc, "cost_points": self.cost_points,
                "auc_cost": self.auc_cost, "useless": self.useless, "effect": self.effect(),
                "rows": self.rows, "seconds": round(self.seconds, 3), "note": self.note, "formal": self.formal}


@dataclass
class Levers:
    """Every option measured for one round: ``current`` (the settings as they are) and ``options``."""

    current: LeverOption
    options: list[LeverOption]
    rows: int
    total_rows: int
    poor_now: tuple[str, ...] | None = None  # the checks poor in the round's own assessment (all its rows)

    def cheapest(self, target: LeverTarget | None = None) -> LeverOption | None:
        """The cheapest option reaching ``target``; by default the one that passes every check some lever can
        pass (a check poor under every lever, see :meth:`stubborn`, does not hold the others back)."""
        return cheapest_lever(self.options, target or LeverTarget(ignore=tuple(self.stubborn())))

    def stubborn(self, *, shown: bool = False) -> list[str]:
        """The checks (``attack/adversary``) still poor under every lever that was measured: no setting here
        changes them (e.g. a guess from the columns' averages, which do not depend on what is shipped).
        ``shown``: only those the round's own assessment (all rows) finds poor too, the ones worth naming."""
        measured = [o for o in self.options if o.applicable and o.findings]
        if not measured:
            return []
        return [finding_key(f) for f in self.current.findings
                if f["verdict"] == "poor" and f.get("in_scope", True)
                and all(o.verdicts.get(finding_key(f)) == "poor" for o in measured)
                and (not shown or self.poor_now is None or finding_key(f) in self.poor_now)]

    def advice(self) -> str:
        """One plain sentence when no lever passes every counted check at a small cost (≤ 2 points of accuracy,
        or ≤ 0.02 AUC): what that means and the summary path; "" when one does."""
        best = self.cheapest()
        if best is None:
            return ("No lever tried here passes every check the kit counts while your rows still predict the "
                    "outcome. " + SUMMARY_PATH)
        small = (best.auc_cost <= SMALL_COST_POINTS / 100 if best.auc_cost is not None
                 else best.cost_points is None or best.cost_points <= SMALL_COST_POINTS)
        if small:
            return ""
        return (f"The cheapest lever that passes costs more than {SMALL_COST_POINTS:g} points: {best.effect()}. "
                + SUMMARY_PATH)

    def lines(self) -> list[str]:
        """The levers table as text (``participant assess --levers``): one line per option, the cheapest that
        passes every check marked ``*``, then what the marks mean."""
        raw, raw_auc = self.current.raw_accuracy, self.current.raw_auc
        now = "not measured" if raw is None else f"accuracy {raw:.3f}" + (
            f", AUC {raw_auc:.3f}" if raw_auc is not None else "")
        out = [f"levers, each tried on {self.rows:,} of your {self.total_rows:,} rows (your own model on the raw "
               f"rows: {now}):"]
        best = self.cheapest()
        rows = [("", "lever", "checks still poor", "your model on what would leave", "effect on your model")]
        for o in [self.current, *self.options]:
            if not o.applicable and o is not self.current:
                rows.append(("", o.label, o.note.split(":")[0], "ask the analyst", "—"))
                continue
            acc = "—" if o.accuracy is None else f"accuracy {o.accuracy:.3f}" + (
                f", AUC {o.auc:.3f}" if o.auc is not None else "")
            poor = str(o.poor) + (f" + learns nothing (AUC ≤ {USELESS_AUC:.2f})" if o.useless else "")
            rows.append(("*" if o is best else "", o.label, poor, acc, o.effect()))
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        out += ["  " + "  ".join(r[c].ljust(widths[c]) for c in range(5)).rstrip() for r in rows]
        stubborn = self.stubborn(shown=True)
        if stubborn:
            out.append("  still poor under every lever: " + ", ".join(s.split("/")[0] for s in stubborn)
                       + " (no setting here changes it: ask the analyst about the kit's columns or limits)")
        if best is not None:
            out.append("  * the cheapest lever that passes every other check" if self.stubborn() else
                       "  * the cheapest lever that passes every check")
        if self.advice():
            out.append("  " + self.advice())
        formal = [o for o in self.options if o.formal]
        if formal:
            out.append(f"  formal noise, e.g. {formal[-1].formal}")
        out.append("  ranked by " + ("AUC (two classes: accuracy hides a lost minority class)" if raw_auc is not None
                                     else "accuracy") + ", your own model cross-validated on your raw rows and on "
                   "the rows that would leave; a lever whose rows predict at AUC ≤ "
                   f"{USELESS_AUC:.2f} is never recommended")
        return out

    def to_dict(self) -> dict:
        return {"rows": self.rows, "total_rows": self.total_rows, "current": self.current.to_dict(),
                "options": [o.to_dict() for o in self.options]}


def finding_key(f: dict) -> str:
    return f"{f['attack']}/{f['adversary']}"


def summarise(assessment) -> list[dict]:
    """The findings of a :class:`~core.privacy.assessment.PrivacyAssessment`, as plain dicts."""
    out = []
    for f in assessment.findings:
        out.append({"attack": str(f.attack), "adversary": str(f.adversary), "verdict": str(f.verdict),
                    "numbers": dict(f.numbers), "rows": int(f.rows), "sentence": str(f.sentence),
                    "in_scope": bool(getattr(f, "in_scope", True)), "strongest": str(getattr(f, "strongest", ""))})
    return out


def effect_words(o: LeverOption) -> str:
    """The lever's effect on the site's own model, read as a loss or a gain: "AUC −0.06 (0.64 → 0.58)",
    "AUC +0.02 (0.64 → 0.66), a gain", "loses 3.0 points of accuracy", "gains 3.0 points of accuracy"."""
    if o.auc is not None and o.raw_auc is not None:
        d = o.auc - o.raw_auc
        if abs(d) < 0.005:
            return f"AUC unchanged ({o.auc:.2f})"
        gain = ", a gain" if d > 0 else ""
        return f"AUC {'+' if d > 0 else '−'}{abs(d):.2f} ({o.raw_auc:.2f} → {o.auc:.2f}){gain}"
    if o.cost_points is None:
        return "—"
    if abs(o.cost_points) < 0.05:
        return "accuracy unchanged"
    return (f"loses {o.cost_points:.1f} points of accuracy" if o.cost_points > 0
            else f"gains {-o.cost_points:.1f} points of accuracy")


def cheapest_lever(options: list[LeverOption], target: LeverTarget | None = None) -> LeverOption | None:
    """The applicable option that reaches ``target`` (default: every finding ok) at the smallest cost
    (:attr:`LeverOption.cost`: AUC for two classes, else accuracy; an unmeasured cost ranks last), never one whose
    rows predict a two-class outcome at AUC ≤ USELESS_AUC; among equal costs the first listed (the mildest)."""
    reaching = [o for o in options if o.applicable and not o.useless and (target or LeverTarget()).reached(o.findings)]
    if not reaching:
        return None
    return min(reaching, key=lambda o: (math.inf if o.cost is None else o.cost))


def lever_values(spec_by_name: dict, settings: dict, m: int) -> list[tuple[str, object]]:
    """The lever values to try for a site with ``m`` columns and the current ``settings``: each stricter than
    now and inside the setting's declared range."""
    out: list[tuple[str, object]] = []
    if "dimension" in spec_by_name:
        now = resolved_dimension(settings.get("dimension"), m)  # the numbers per row the export keeps
        dims = sorted({max(1, round(now * f)) for f in (0.75, 0.5, 0.25)} | {max(1, now - 1)}, reverse=True)
        out += [("dimension", d) for d in dims if d < now]
    if "noise" in spec_by_name:
        spec = spec_by_name["noise"]
        now = float(settings.get("noise") or 0.0)
        out += [("noise", v) for v in NOISE_VALUES if v > now and (spec.high is None or v <= spec.high)]
    if EPSILON_SETTING in spec_by_name:
        spec = spec_by_name[EPSILON_SETTING]
        now = settings.get(EPSILON_SETTING)
        out += [(EPSILON_SETTING, e) for e in EPSILON_VALUES
                if (now is None or e < float(now)) and (spec.low is None or e >= spec.low)
                and (spec.high is None or e <= spec.high)]
    return out


def combined_values(values: list[tuple[str, object]]) -> list[dict]:
    """Both dials at once, milder each (a lower dimension and noise can together reach a target more cheaply
    than either pushed alone): the two middle dimensions tried × noise 0.5 and 1."""
    dims = [v for k, v in values if k == "dimension"]
    noises = [v for k, v in values if k == "noise" and v in (0.5, 1.0)]
    middle = dims[1:3] if len(dims) > 2 else dims[-1:]
    return [{"dimension": d, "noise": s} for d in middle for s in noises]


def option_label(lever: str, value, settings: dict, m: int) -> str:
    if lever == COMBINED:
        return (f"Keep {value['dimension']} numbers per row and add noise of {value['noise']:g} × each number's "
                "spread")
    if lever == "dimension":
        now = resolved_dimension(settings.get("dimension"), m)  # the numbers per row the export keeps
        return f"Keep {value} numbers per row (now {now})"
    if lever == "noise":
        return f"Add noise of {value:g} × each number's spread"
    if lever == EPSILON_SETTING:
        return f"Formal noise: (ε, δ) = ({value:g}, {delta_text(settings.get('privacy_delta'))})"
    return LEVER_WORDS[lever][0]


def delta_text(delta: float | None) -> str:
    return "min(1e-5, 1/rows²)" if delta is None else f"{delta:.0e}"


def formal_words(epsilon: float, delta: float | None) -> str:
    """The DP option in words: "(ε, δ) = (1, 1e-05): a formal guarantee: …"."""
    d = delta_text(delta)
    return (f"(ε, δ) = ({epsilon:g}, {d}): a formal guarantee: whether or not any one patient's row is in your "
            f"file changes the chance of anything the analyst can compute from it by at most a factor of "
            f"e^{epsilon:g} ≈ {math.exp(epsilon):.3g}, except with probability {d}")


def subsample(n: int, cap: int = MAX_ROWS) -> np.ndarray:
    """The seeded, sorted subsample of row indices every option is measured on (all rows when n ≤ cap)."""
    if n <= cap:
        return np.arange(n)
    return np.sort(np.random.default_rng(list(SUBSAMPLE_SEED)).choice(n, cap, replace=False))


def round_site_input(job, rows: np.ndarray):
    """What the round's method saw in :meth:`ParticipantRound.compute` (a :class:`core.methods.base.SiteInput`), for
    the rows ``rows`` only."""
    site = getattr(job, "_site_input", None)
    if site is None or job.export_ is None:
        raise ConfigError("compute the export first (load a CSV, then compute)")
    return replace(site, X=site.X[rows], y=None if site.y is None else site.y[rows],
                   ids_hashed=None if site.ids_hashed is None else site.ids_hashed[rows])


def shipped_rows(ex, y: np.ndarray | None, release: Release) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows that would leave when the method releases one image per row (``release.per_row``), with their labels
    in the same shuffled order; None otherwise."""
    X = ex.arrays.get(release.rows) if release.per_row else None
    perm = ex.private_arrays.get("permutation")
    if X is None or y is None or perm is None or len(perm) != len(X):
        return None
    return np.asarray(X, np.float64), np.asarray(y)[np.asarray(perm)]


def _scores(X: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[float | None, float | None]:
    cv = cross_validate_own(X, y, n_classes)
    if cv is None:
        return None, None
    return cv["accuracy"], (cv["auc"] if n_classes == 2 else None)


def _points(raw: float | None, new: float | None) -> float | None:
    return None if raw is None or new is None else round(100.0 * (raw - new), 2)


def measure_levers(job, *, thresholds=None, cap: int = MAX_ROWS, values: list[tuple[str, object]] | None = None,
                   control: JobControl | None = None) -> Levers:
    """Every lever option for a round that has read its CSV (``job``: a :class:`ParticipantRound`), measured on
    a seeded subsample of at most ``cap`` rows (module docstring). ``values``: the (setting, value) pairs to try
    (default :func:`lever_values`)."""
    from .assessment import assess_export

    control = ensure(control)
    t = job.table
    keep = subsample(t.n_rows, cap)
    site = round_site_input(job, keep)
    m = site.X.shape[1]
    specs = {s.name: s for s in job.method.site_settings_spec()}
    settings = dict(job.site_settings)
    if "seed" in specs and settings.get("seed") is None:
        settings["seed"] = 0  # every option sees the same reduction and shuffle: only the lever differs
    pairs = combined_values(values if values is not None else lever_values(specs, job.site_settings, m))
    values = lever_values(specs, job.site_settings, m) if values is None else values
    K = len(job.kit.schema.classes) if job.kit.task == "classification" else 0
    labelled = K >= 2 and site.y is not None and len(np.unique(site.y)) >= 2
    raw_acc, raw_auc = _scores(site.X, site.y, K) if labelled else (None, None)

    def measure(lever: str, value, changes: dict, step: JobControl) -> LeverOption:
        start = time.perf_counter()
        label = option_label(lever, value, job.site_settings, m) if changes else "Your settings now"
        try:
            trial = replace(site, settings=job.method.check_site_settings({**settings, **changes}))
            ex = job.method.site_compute(trial, step.sub(0.0, 0.3))
        except DCError as exc:  # e.g. formal noise on a kit without public statistics: shown, not offered
            if not changes:
                raise
            return LeverOption(lever, None, LEVER_WORDS[lever][0], {}, rows=len(keep),
                               note=f"not possible here: {exc}")
        assessment = assess_export(trial, ex, job.method, thresholds, control=step.sub(0.3, 0.8),
                                   threat=job.kit.threat)
        opt = LeverOption(lever, value, label, changes, summarise(assessment), raw_accuracy=raw_acc,
                          raw_auc=raw_auc, rows=len(keep))
        rows = shipped_rows(ex, site.y, job.method.discloses) if labelled else None
        if rows is not None:
            opt.accuracy, opt.auc = _scores(rows[0], rows[1], K)
            opt.cost_points = _points(raw_acc, opt.accuracy)
        elif labelled:
            opt.note = "no per-row copy leaves with this method: its accuracy cost is not measured here"
        else:
            opt.note = "no classes at this site: the accuracy cost is not measured"
        if lever == EPSILON_SETTING:
            dp = ex.manifest.get("privacy") if isinstance(ex.manifest.get("privacy"), dict) else {}
            opt.formal = formal_words(float(value), dp.get("delta"))
            opt.label = f"Formal noise: (ε, δ) = ({value:g}, {delta_text(dp.get('delta'))})"
            if "y" in ex.arrays:
                opt.note = ("the classes that leave are randomised too; this estimate scores the noised rows with "
                            "your true classes, so it leaves that part of the cost out")
        opt.seconds = time.perf_counter() - start
        step.step(1.0, opt.label)
        return opt

    n_steps = len(values) + len(pairs) + 1
    current = measure("current", None, {}, control.sub(0.0, 1.0 / n_steps))
    options = []
    impossible: set[str] = set()
    for i, (name, value) in enumerate(values, start=1):
        if name in impossible:  # one row says why a lever cannot be used here
            continue
        options.append(measure(name, value, {name: value}, control.sub(i / n_steps, (i + 1) / n_steps)))
        if not options[-1].applicable:
            impossible.add(name)
    full = getattr(job, "assessment_", None)  # a check near its limit can differ between the two samples
    poor_now = None if full is None else tuple(finding_key(f) for f in summarise(full) if f["verdict"] == "poor")
    out = Levers(current, options, len(keep), int(t.n_rows), poor_now)
    if out.cheapest() is None:  # no single lever passes: both dials at once, milder each
        for i, changes in enumerate(pairs, start=len(values) + 1):
            if not impossible & set(changes):
                options.append(measure(COMBINED, changes, changes, control.sub(i / n_steps, (i + 1) / n_steps)))
    options += information_levers(job)
    control.step(1.0, "levers measured")
    return out


def information_levers(job) -> list[LeverOption]:
    """The levers the signed kit fixes: shown with what they would do, never applied here."""
    out = [LeverOption("columns", None, LEVER_WORDS["columns"][0], {},
                       note="the kit fixes the columns: ask the analyst for a kit that drops identifying columns or "
                            "groups values into bands (e.g. age in 5-year bands); fewer columns leave less to "
                            "reconstruct")]
    if job.method.discloses.kind != DISTILLED_ROWS:
        out.append(LeverOption("distilled", None, LEVER_WORDS["distilled"][0], {},
                               note="the kit fixes the method: ask the analyst for a distilled-mode kit (HFLDD), "
                                    "which ships a small set of synthetic rows instead of a copy of every row"))
    return out
