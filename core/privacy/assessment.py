"""The measured disclosure score of one export, run at the site on its own rows before anything leaves.

:func:`assess_export` simulates, for what the method ships, the attacks of :mod:`core.privacy.attacks` with
what each adversary would hold, and judges each against :class:`~core.formats.thresholds.PrivacyThresholds`;
the kit's :class:`~core.formats.threat.ThreatModel` says which adversaries count against the export.
Which attacks apply follows from what the method declares it releases (``method.discloses``,
:mod:`core.privacy.release`): one image of every row beside the anchor's image (the DC family), distilled rows,
prototypes with their group sizes (GOLD's micro-cluster centroids), or a model's coefficients (membership by the
model's loss). A release of one image per row is measured on the export itself, which the assessment reuses as
it is; only a joint release is simulated again, on half the rows (:mod:`core.privacy.release` says why). Row sets
are subsampled to ``max_rows`` (seeded), so the cost does not grow with the table. Nothing here is written into
a bundle.

Each reconstruction finding is the strongest of several attacks (issue #35): the analyst alone tries the column
means, moment matching, the eigenvector attack and the ICA attack with a public sample; the colluding site tries
least squares through the anchor pairs and, when the export is noised, the posterior means under a Gaussian and
under an empirical prior of its own rows. What the public sample and the colluder's own rows are is stood in for
by :func:`reference_split`: rows of the site's own, never the rows attacked.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..control import JobControl, ensure
from ..errors import DCError
from ..formats.threat import ThreatModel
from ..formats.thresholds import PrivacyThresholds
from ..parallel import one_blas_thread
from . import attacks as A
from .mechanism import NOT_COVERED, describe
from .release import COEFFICIENTS, DISTILLED_ROWS, PROTOTYPES, REDUCED_ROWS, Release, Releasing

MAX_ROWS = 2000  # rows the reconstruction attacks are measured on (seeded subsample of the shipped rows)
MEMBERSHIP_SHARE = 2  # the membership test uses max_rows // 2 rows: half members, half hold-out
MIN_SPLIT_ROWS = 20  # fewer rows: no membership simulation
BEATS_MEAN_GUESS = 0.9  # a rebuild's error counts as poor only below 90 % of the column-mean guess's
REFERENCE_STREAM = 35  # the seed stream of :func:`reference_split` (issue #35), apart from the assessment's own
MIN_REFERENCE_ROWS = 10  # fewer stand-in rows: the sample-based attacks are not tried

ANALYST = "the analyst alone (with a public sample of rows like yours)"
COLLUDING = "the analyst with one other site (holds the anchor and rows of its own)"
RECORD_HOLDER = "anyone holding a patient's record (with the analyst and one other site)"
MODEL_HOLDER = "anyone holding a patient's record and outcome, and the shipped model"
COLLUDING_ADVERSARIES = (COLLUDING, RECORD_HOLDER)  # in scope only when the kit's threat model allows collusion
NOT_COUNTED = ", not counted: outside the kit's threat model"  # how a finding the kit rules out is marked

ATTACKS = {
    "collusion": "rows rebuilt from the bundle through the anchor pairs: least squares, and the posterior mean "
                 "with the colluding site's own rows as the prior (Gaussian and empirical)",
    "analyst_alone": "rows rebuilt from the bundle, the kit's public statistics and a public sample, without the "
                     "anchor: column means, moment matching, the eigenvector (PCA) attack and the ICA attack",
    "membership": "whether a given patient was in your rows (distance to the closest shipped row, or the shipped "
                  "model's loss on the patient)",
    "nearest_record": "whether a shipped row is a near-copy of a real patient (against rows that never left)",
    "group_size": "the fewest patients behind any shipped average",
}
# the attacks behind each reconstruction finding, in the order tried (``AttackFinding.by_attack``'s keys)
REBUILDS = {
    "collusion": {"least_squares": "least squares through the anchor pairs, shrunk towards the means under noise",
                  "gaussian_prior": "posterior mean, Gaussian prior from the colluding site's rows",
                  "empirical_prior": "posterior mean, the colluding site's rows as the prior"},
    "analyst_alone": {"column_means": "every value guessed as its column's mean",
                      "moment_matching": "whitened rows coloured by the public statistics, rotations guessed",
                      "eigen": "the eigenvector (PCA) attack with a public sample",
                      "ica": "the ICA attack with a public sample"},
}
VERDICTS = ("ok", "poor", "not applicable")


@dataclass
class AttackFinding:
    """One attack's result: who attacks, its numbers, on how many rows, the verdict and one plain sentence."""

    attack: str
    adversary: str
    numbers: dict[str, float]
    rows: int
    verdict: str
    sentence: str
    in_scope: bool = True  # whether the kit's threat model counts this adversary against the export
    strongest: str = ""  # the attack whose numbers these are (a key of REBUILDS[attack]), for a reconstruction
    by_attack: dict[str, dict[str, float]] = field(default_factory=dict)  # every attack tried: its numbers

    def to_dict(self) -> dict:
        out = {"attack": self.attack, "adversary": self.adversary, "numbers": dict(self.numbers),
               "rows": int(self.rows), "verdict": self.verdict, "sentence": self.sentence, "in_scope": self.in_scope}
        if self.strongest:
            out["strongest"] = self.strongest
            out["by_attack"] = {k: dict(v) for k, v in self.by_attack.items()}
        return out


@dataclass
class PrivacyAssessment:
    """Every finding of one export, the limits they were judged by, and what a formal guarantee covers."""

    method: str
    rows: int  # the site's rows
    findings: list[AttackFinding]
    thresholds: PrivacyThresholds
    seconds: float = 0.0
    seed: int = 0
    formal: dict | None = None  # the (ε, δ) accounting when the export used the formal noise option
    not_covered: list[str] = field(default_factory=list)  # what leaves outside any formal guarantee
    threat: ThreatModel = field(default_factory=ThreatModel)  # which adversaries count (the kit's)
    reference_rows: int = 0  # the site's rows that stood in for the public sample and the colluder's rows

    @property
    def verdict(self) -> str:
        """"poor" when any attack by an adversary the threat model counts is poor, else "ok"."""
        return "poor" if self.poor else "ok"

    @property
    def poor(self) -> list[AttackFinding]:
        """The poor findings the threat model counts: an export with any needs the site's confirmation."""
        return [f for f in self.findings if f.verdict == "poor" and f.in_scope]

    @property
    def poor_out_of_scope(self) -> list[AttackFinding]:
        """Poor findings of adversaries the kit rules out (shown, not counted)."""
        return [f for f in self.findings if f.verdict == "poor" and not f.in_scope]

    @property
    def needs_consent(self) -> bool:
        """Whether sealing this export needs the site's explicit confirmation (a poor in-scope verdict)."""
        return bool(self.poor)

    def finding(self, attack: str) -> AttackFinding | None:
        return next((f for f in self.findings if f.attack == attack), None)

    def lines(self) -> list[str]:
        """One line per finding, ``[verdict] sentence`` (the CLI and the audit show these)."""
        out = [f"[{f.verdict}{'' if f.in_scope else NOT_COUNTED}] {f.sentence}" for f in self.findings]
        if self.formal:
            out.append(f"[formal] {self.formal['sentence']}")
        return out

    def to_dict(self) -> dict:
        return {"method": self.method, "rows": int(self.rows), "verdict": self.verdict, "seconds": self.seconds,
                "seed": self.seed, "thresholds": self.thresholds.to_dict(),
                "findings": [f.to_dict() for f in self.findings], "formal": self.formal,
                "not_covered": list(self.not_covered), "threat_model": self.threat.to_dict(),
                "reference_rows": int(self.reference_rows)}


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %" if x >= 0.01 or x == 0 else f"{100 * x:.1f} %"


def _poor_by(errors: dict, th: PrivacyThresholds) -> tuple[bool, bool]:
    """(too many rows rebuilt within 10 %, median error below the limit and below 90 % of the column-mean guess's)."""
    share, err, base = errors["within_10pct"], errors["median_cell_error"], errors["public_mean_error"]
    # the column-mean guess is what the kit's public statistics already give: no rebuild is judged on beating less
    return share > th.recovered_share_max, err < th.reconstruction_error_min and err < BEATS_MEAN_GUESS * base


def strongest_rebuild(scored: dict[str, dict], th: PrivacyThresholds) -> str:
    """The attack among ``scored`` (name → its errors, with ``public_mean_error``) that the verdict rests on: a
    poor one before any other, then the most rows within 10 %, then the smallest median error."""
    return max(scored, key=lambda k: (any(_poor_by(scored[k], th)), scored[k]["within_10pct"],
                                      -scored[k]["median_cell_error"]))


def _reconstruction_finding(attack: str, adversary: str, who: str, scored: dict[str, dict], rows: int, n_site: int,
                            th: PrivacyThresholds) -> AttackFinding:
    """The finding of the strongest of the attacks ``scored`` (name → errors), every attack's numbers kept."""
    best = strongest_rebuild(scored, th)
    errors = scored[best]
    share, err, base = errors["within_10pct"], errors["median_cell_error"], errors["public_mean_error"]
    poor_share, poor_err = _poor_by(errors, th)
    verdict = "poor" if poor_share or poor_err else "ok"
    how = REBUILDS.get(attack, {}).get(best, best)
    if poor_share:
        sentence = (f"{who} could rebuild {_pct(share)} of your {n_site:,} rows with every value within 10 % of "
                    f"its column's spread — above the kit's limit of {_pct(th.recovered_share_max)} (attack: {how}).")
    elif poor_err:
        sentence = (f"{who} could rebuild your values with a median error of {err:.2f} of each column's spread — "
                    f"closer than the kit's limit of {th.reconstruction_error_min:.2f} (guessing every value as its "
                    f"column's average misses by {base:.2f}; attack: {how}).")
    else:
        sentence = (f"{who} would rebuild your values with a median error of {err:.2f} of each column's spread "
                    f"and {_pct(share)} of rows within 10 % at best — within the kit's limits (strongest of "
                    f"{len(scored)} attacks tried: {how}).")
    keep = ("median_cell_error", "within_10pct")
    return AttackFinding(attack, adversary, {k: round(float(v), 6) for k, v in errors.items()}, rows, verdict,
                         sentence, strongest=best,
                         by_attack={k: {x: round(float(v[x]), 6) for x in keep} for k, v in scored.items()})


def _membership_finding(numbers: dict, rows: int, th: PrivacyThresholds, adversary: str) -> AttackFinding:
    auc, tpr = numbers["auc"], numbers["tpr_at_1pct_fpr"]
    poor = auc > th.membership_auc_max or tpr > th.membership_tpr_at_1pct_max
    verdict = "poor" if poor else "ok"
    tell = ("could tell" if poor else "could barely tell")
    sentence = (f"Someone holding a patient's record {tell} whether that patient is in your rows: right "
                f"{_pct(auc)} of the time on a pair (50 % is a coin toss), catching {_pct(tpr)} of your patients "
                f"at 1 % false accusations — " + ("above" if poor else "within") +
                f" the kit's limits ({th.membership_auc_max:.2f}, {_pct(th.membership_tpr_at_1pct_max)}).")
    return AttackFinding("membership", adversary, {k: round(float(v), 6) for k, v in numbers.items()}, rows,
                         verdict, sentence)


def not_applicable(attack: str, adversary: str, reason: str) -> AttackFinding:
    return AttackFinding(attack, adversary, {}, 0, "not applicable", f"Not applicable: {reason}.")


def _split(n: int, max_rows: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Members and hold-out rows, each at most ``max_rows // 2``, disjoint, seeded."""
    take = rng.permutation(n)[: min(n, max_rows)]
    half = len(take) // 2
    return np.sort(take[:half]), np.sort(take[half: 2 * half])


def _simulate(method: Releasing, site, rows: np.ndarray, seed: int):
    """The method's release of ``rows`` alone, as the site would make it (same settings, fixed seed), except the
    kit settings of :data:`NOT_MEASURED` (they shape only arrays no test here reads)."""
    settings = dict(site.settings)
    if "seed" in {s.name for s in method.site_settings_spec()}:
        settings["seed"] = seed
    sub = replace(site, X=site.X[rows], y=None if site.y is None else site.y[rows], ids_hashed=None,
                  settings=settings)
    return _for_simulation(method).site_compute(sub)


# Kit settings that shape only arrays the membership and near-copy tests never read, and the cheapest value each
# may take in the simulated export: distillation's ``local_epochs`` trains the local model whose answers on the
# anchor (``soft_labels``) group sites; the distilled rows are drawn from their own seed stream, so they come out
# the same (tests/privacy/test_round.py checks it). A third of the simulated distillation's time at 500 rows.
NOT_MEASURED = {"local_epochs": 1}


def _for_simulation(method: Releasing) -> Releasing:
    """``method`` with the settings of :data:`NOT_MEASURED` it declares set to their cheapest value."""
    cheap = {k: v for k, v in NOT_MEASURED.items() if k in method.settings}
    return type(method)(**{**method.settings, **cheap}) if cheap else method


def reference_split(n: int, public_rows: int, seed: int = 0) -> np.ndarray:
    """The site's rows that stand in for what the adversaries hold besides the bundle — the analyst's public sample
    and the colluding site's own rows: min(``public_rows``, n // 2) rows, drawn by
    ``np.random.default_rng([seed, REFERENCE_STREAM]).permutation(n)`` (the first ones, sorted). Rows of the same
    population as the attacked ones (a real public cohort or another hospital differs more), so the numbers err
    towards the attacker; the reconstruction attacks are measured on the other rows only (a row among the stand-in
    rows would be its own best guess)."""
    r = min(int(public_rows), int(n) // 2)
    return np.sort(np.random.default_rng([int(seed), REFERENCE_STREAM]).permutation(int(n))[:r])


def assess_export(site, export, method: Releasing, thresholds: PrivacyThresholds | None = None,
                  *, max_rows: int = MAX_ROWS, seed: int = 0, control: JobControl | None = None,
                  threat: ThreatModel | None = None) -> PrivacyAssessment:
    """The site's measured disclosure of ``export`` (a :class:`core.methods.base.SiteExport` made by ``method`` from
    ``site``, a :class:`core.methods.base.SiteInput`): see the module doc. The attacks follow what the method
    declares it releases (``method.discloses``, :mod:`core.privacy.release`).

    A release of one image per row is measured on the export itself: the collusion and analyst-alone attacks on
    ``max_rows`` of its rows outside :func:`reference_split` (matched to the site's rows through the kept
    permutation), the membership test on the images of ``max_rows // 4`` rows (members) with as many rows' images
    left out (hold-out: the export they never joined). A joint release is tested on a simulated release of the
    members' rows alone. ``threat``: the kit's threat model (default: collusion in scope, 1,000 public rows). Small
    products only, so BLAS is held to one thread (on a busy machine extra threads only spin)."""
    with one_blas_thread():
        return _assess(site, export, method, thresholds, max_rows=max_rows, seed=seed, control=control,
                       threat=threat or ThreatModel())


@dataclass
class _Case:
    """What every step of one assessment reads: the site's rows and their summary, the release and its arrays."""

    site: Any
    export: Any
    method: Releasing
    th: PrivacyThresholds
    rng: np.random.Generator
    X: np.ndarray
    spread: np.ndarray
    binary: np.ndarray
    max_rows: int
    seed: int

    @property
    def release(self) -> Release:
        return self.method.discloses

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        return self.export.arrays

    def shipped(self, kind: str) -> bool:
        """The release is of ``kind`` and in the bundle, with the anchor it is read through when it has one."""
        r = self.release
        return r.kind == kind and r.ships(self.arrays) and (not r.anchor or self.site.anchor is not None)

    @property
    def on_export(self) -> bool:
        """A release of one image per row whose row order the site kept: measured on the export itself."""
        perm = self.export.private_arrays.get("permutation")
        return self.shipped(REDUCED_ROWS) and perm is not None and len(perm) == len(self.X)

    def noise_var(self) -> np.ndarray | None:
        return stated_noise_var(self.export.manifest, self.arrays[self.release.rows])


def _assess(site, export, method: Releasing, thresholds: PrivacyThresholds | None,
            *, max_rows: int, seed: int, control: JobControl | None, threat: ThreatModel) -> PrivacyAssessment:
    control = ensure(control)
    t0 = time.perf_counter()
    X = np.asarray(site.X, np.float64)
    _, spread, binary = A.column_summary(X)  # one pass over the rows for all three
    case = _Case(site, export, method, thresholds or PrivacyThresholds(), np.random.default_rng(seed), X, spread,
                 binary, max_rows, seed)
    control.step(0.1, "rebuilding rows as a colluding site would")
    findings, reference = _rebuild_findings(case, threat, control)
    control.step(0.5, "testing whether a patient's presence shows")
    findings += _membership_findings(case)
    control.step(0.9, "checking group sizes")
    findings.append(_group_size_finding(case))
    control.step(1.0, "privacy assessment done")
    for f in findings:
        f.in_scope = threat.in_scope(f.adversary in COLLUDING_ADVERSARIES)
    acc = export.manifest.get("privacy")
    formal = {**acc, "sentence": describe(acc)} if isinstance(acc, dict) else None
    return PrivacyAssessment(method.name, len(X), findings, case.th, round(time.perf_counter() - t0, 4), seed, formal,
                             list(acc.get("not_covered", NOT_COVERED)) if formal else [], threat, len(reference))


def _rebuild_findings(case: _Case, threat: ThreatModel, control: JobControl) -> tuple[list[AttackFinding], np.ndarray]:
    """The collusion and analyst-alone findings (the strongest rebuild of each adversary, measured on the export's
    own rows), or why they do not apply; and the rows that stood in for the public sample."""
    release, X, n = case.release, case.X, len(case.X)
    if not case.on_export:
        if case.shipped(DISTILLED_ROWS):
            return [not_applicable("collusion", COLLUDING, "the bundle holds no image of your rows, only distilled "
                                   "rows (see the near-copy test)"),
                    not_applicable("analyst_alone", ANALYST, "the bundle holds no image of your rows")], \
                np.empty(0, np.int64)
        what = release.words if release.kind != REDUCED_ROWS else "rows it cannot match to yours"
        return [not_applicable(attack, who, f"the bundle holds no rows, only {what}")
                for attack, who in (("collusion", COLLUDING), ("analyst_alone", ANALYST))], np.empty(0, np.int64)
    rng, arrays, spread, binary = case.rng, case.arrays, case.spread, case.binary
    perm = np.asarray(case.export.private_arrays["permutation"])
    reference = reference_split(n, threat.public_rows, case.seed)
    order = rng.permutation(len(perm))  # shipped positions in a seeded order (the membership split draws next)
    shipped = np.sort(order[~np.isin(perm[order], reference)][:case.max_rows])  # never a stand-in row
    truth = X[perm[shipped]]
    Y = np.asarray(arrays[release.rows][shipped], np.float64)
    noise_var = case.noise_var()
    acc = case.export.manifest.get("privacy")
    clip = float(acc["clip"]) if isinstance(acc, dict) and "clip" in acc else None
    mean = X.mean(axis=0)
    base = A.reconstruction_errors(truth, A.public_mean_guess(len(truth), mean), spread, binary)
    base_error = base["median_cell_error"]

    def score(X_hat: np.ndarray) -> dict:
        return {**A.reconstruction_errors(truth, X_hat, spread, binary), "public_mean_error": base_error}

    anchor_tilde = np.asarray(arrays[release.anchor], np.float64)
    anchor = release.anchor_pairs(case.site.anchor, anchor_tilde)
    sample = X[reference] if len(reference) >= MIN_REFERENCE_ROWS else None
    colluder = {"least_squares": score(A.collusion_reconstruct(anchor, anchor_tilde, Y, noise_var, mean))}
    if noise_var is not None and sample is not None:  # without noise least squares is exact: no prior helps
        colluder["gaussian_prior"] = score(A.gaussian_prior_collusion(anchor, anchor_tilde, Y, sample, noise_var,
                                                                      clip))
        colluder["empirical_prior"] = score(A.empirical_prior_collusion(anchor, anchor_tilde, Y, sample,
                                                                        noise_var, clip))
    findings = [_reconstruction_finding("collusion", COLLUDING, "With the anchor, another site and the analyst",
                                        colluder, len(shipped), n, case.th)]
    control.step(0.3, "rebuilding rows as the analyst alone would")
    alone = {"column_means": {**base, "public_mean_error": base_error}}
    tries = [score(g) for g in A.moment_matching_guesses(Y, mean, spread, rng)]
    alone["moment_matching"] = min(tries, key=lambda e: (e["median_cell_error"], -e["within_10pct"]))
    if sample is not None:  # the shipped rows' own statistics from all of them: the analyst holds every one
        standardised = bool(case.export.manifest.get("standardised", True))
        every = arrays[release.rows]
        moments = A.row_moments(every)  # the shipped rows' mean and covariance, read once for both attacks
        tried = {"eigen": lambda: [A.eigen_attack(every, sample, noise_var, standardised=standardised,
                                                  rows=shipped, moments=moments)]}
        if Y.shape[1] >= 2:  # FastICA from several starting points: the closest rebuild is kept
            tried["ica"] = lambda: A.ica_rebuilds(every, sample, seed=case.seed, standardised=standardised,
                                                  rows=shipped, moments=moments)
        for name, rebuilds in tried.items():
            try:
                scored = [score(X_hat) for X_hat in rebuilds()]
            except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                continue  # e.g. a degenerate sample: an attack that cannot run adds nothing (the others stand)
            alone[name] = min(scored, key=lambda e: (e["median_cell_error"], -e["within_10pct"]))
    findings.append(_reconstruction_finding("analyst_alone", ANALYST, "The analyst alone", alone, len(shipped), n,
                                            case.th))
    return findings, reference


def _membership_findings(case: _Case) -> list[AttackFinding]:
    """Whether a patient's presence shows (and, for distilled rows, whether a shipped row is a near-copy of one):
    on the export itself for a release of one image per row, else on a simulated release of the members alone."""
    X, n, th = case.X, len(case.X), case.th
    members, holdout = _split(n, case.max_rows // MEMBERSHIP_SHARE, case.rng)
    distilled = case.shipped(DISTILLED_ROWS)
    model = case.shipped(COEFFICIENTS) and case.site.y is not None
    out: list[AttackFinding] = []
    if not (case.on_export or distilled or case.shipped(PROTOTYPES) or model):
        out.append(not_applicable("membership", RECORD_HOLDER, "the bundle holds no rows, averages or model to test "
                                  "a patient's record against"))
    elif len(members) < MIN_SPLIT_ROWS // 2:
        out.append(not_applicable("membership", RECORD_HOLDER, f"{n} rows are too few to split into patients who "
                                  "left and patients who did not"))
    elif case.on_export:
        numbers = A.membership_test(X[members], X[holdout], _exported_images(case, members), case.spread)
        out.append(_membership_finding(numbers, len(members) + len(holdout), th, RECORD_HOLDER))
    else:
        out += _simulated_membership(case, members, holdout, model, distilled)
    if distilled and not any(f.attack == "nearest_record" for f in out):
        out.append(not_applicable("nearest_record", COLLUDING, "no simulated distillation could be made"))
    if not distilled:
        out.append(not_applicable("nearest_record", COLLUDING, "no distilled rows are shipped"))
    return out


def _exported_images(case: _Case, members: np.ndarray) -> np.ndarray:
    """The members' rows as the strongest adversary rebuilds them from the export (through the anchor pairs, in
    the site's units); every other row's image is left out, as if it had never been exported."""
    release, arrays = case.release, case.arrays
    position = np.empty(len(case.X), np.int64)
    position[np.asarray(case.export.private_arrays["permutation"])] = np.arange(len(case.X))
    anchor_tilde = arrays[release.anchor]
    return A.collusion_reconstruct(release.anchor_pairs(case.site.anchor, anchor_tilde), anchor_tilde,
                                   arrays[release.rows][position[members]], case.noise_var(), case.X.mean(axis=0))


def _simulated_membership(case: _Case, members: np.ndarray, holdout: np.ndarray, model: bool,
                          distilled: bool) -> list[AttackFinding]:
    """The membership (and near-copy) findings of a joint release, on the method's release of the members alone."""
    X, th, site, release = case.X, case.th, case.site, case.release
    try:
        sim = _simulate(case.method, site, members, case.seed)
    except (DCError, ValueError, ArithmeticError, IndexError) as exc:
        # e.g. a class missing from the members: the test cannot be made, which must not stop the export
        return [not_applicable("membership", RECORD_HOLDER, f"the simulated export of half your rows failed "
                               f"({exc if isinstance(exc, DCError) else type(exc).__name__})")]
    if model:
        coef = sim.arrays.get(release.rows)
        if coef is None:
            return [not_applicable("membership", MODEL_HOLDER, "the simulated export fitted no model ("
                                   + str(sim.manifest.get("reason", "no estimate")) + ")")]
        # a model fitted over some classes (``classes_fitted``) scores the rows of those classes, in its order
        fitted = np.asarray(sim.manifest.get("classes_fitted", range(coef.shape[0] + 1)), np.int64)
        y_all = np.asarray(site.y, np.int64)
        scored = [rows[np.isin(y_all[rows], fitted)] for rows in (members, holdout)]
        scores = [A.model_loss_scores(release.predict(coef, X[rows]), np.searchsorted(fitted, y_all[rows]))
                  for rows in scored]
        return [_membership_finding(A.membership_from_scores(*scores), len(members) + len(holdout), th,
                                    MODEL_HOLDER)]
    released = _released_rows(release, site, sim)
    out = [_membership_finding(A.membership_test(X[members], X[holdout], released, case.spread),
                               len(members) + len(holdout), th, RECORD_HOLDER)]
    if distilled:
        ratio = A.nearest_record_ratio(released, X[members], X[holdout], case.spread)
        poor = ratio["ratio"] < th.nearest_record_ratio_min
        out.append(AttackFinding(
            "nearest_record", COLLUDING, {k: round(v, 6) for k, v in ratio.items()},
            len(members) + len(holdout), "poor" if poor else "ok",
            f"Shipped rows sit {ratio['ratio']:.2f} times as far from the patients they were made from as "
            "from patients who never left (1 = no closer) — "
            + ("below" if poor else "within") + f" the kit's limit of {th.nearest_record_ratio_min:.2f}."))
    return out


def _group_size_finding(case: _Case) -> AttackFinding:
    """The fewest patients behind any shipped average (prototypes with their group sizes)."""
    if not (case.shipped(PROTOTYPES) and case.release.counts):
        return not_applicable("group_size", ANALYST, "no averages of groups are shipped")
    counts = case.arrays[case.release.counts]
    smallest = A.smallest_group(counts)
    poor = smallest < case.th.group_size_min
    return AttackFinding(
        "group_size", ANALYST, {"smallest_group": float(smallest), "groups": float(np.size(counts))},
        len(case.X), "poor" if poor else "ok",
        f"The smallest group behind a shipped average holds {smallest} of your patients — "
        + ("below" if poor else "at or above") + f" the kit's minimum of {case.th.group_size_min}.")


def _released_rows(release: Release, site, sim) -> np.ndarray:
    """A simulated joint release's rows as the strongest adversary holds them, in the site's units: prototypes as
    shipped (raw units), distilled rows mapped back through the anchor pairs."""
    a = sim.arrays
    if release.kind == PROTOTYPES:
        return np.asarray(a[release.rows], np.float64)
    return A.collusion_reconstruct(release.anchor_pairs(site.anchor, a[release.anchor]), a[release.anchor],
                                   a[release.rows])


def stated_noise_var(manifest: dict, x_tilde: np.ndarray) -> np.ndarray | None:
    """The noise variance per shipped column that the manifest lets anyone work out: the formal noise's σ², plus
    the ``noise`` setting's (noise × the column's spread before it, i.e. a share noise²/(1 + noise²) of the
    shipped column's variance)."""
    acc, noise = manifest.get("privacy"), float(manifest.get("noise") or 0.0)
    var = np.zeros(x_tilde.shape[1])
    if noise > 0:
        var += np.asarray(x_tilde, np.float64).var(axis=0) * noise ** 2 / (1 + noise ** 2)
    if isinstance(acc, dict):
        var += float(acc["sigma"]) ** 2
    return var if var.any() else None
