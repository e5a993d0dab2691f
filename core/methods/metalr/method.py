"""Meta-analysed logistic regression (``meta-lr``): the reference a biostatistician would use in one round.

1. Site i fits a logistic regression on its own rows, in the kit's encoding (the matrix X every method
   receives), with a ridge penalty λ on the slopes (:mod:`.site_logit`): binary outcomes one logit, K classes a
   multinomial logit with the kit's first class as reference — (K − 1)·p parameters, p = columns + 1, with
   their full covariance (not K − 1 separate binary logits: those share rows, so the covariances between
   contrasts would be unknown and the combination would weight them wrongly). The coefficients are always in
   the columns' own units, so they mean the same at every site; the penalty measures slopes per public
   standard deviation when the kit gives one, else (``penalty_scale = "spread"``) per the column's spread at
   the site — glmnet's convention; it changes how hard slopes are shrunk, never their units — or in raw units
   (``"raw"``). It ships θ̂ᵢ, V̂ᵢ = (penalised observed information)⁻¹ and its row count. A site lacking some
   of the kit's classes fits over the kᵢ ≥ 2 classes it has, against the first of them (``classes_fitted``):
   a class with no row has no finite coefficient, so it is left out of the fit, not the site. A site with one
   class (or a fit that failed) ships only its row count and why; it still receives a model.
2. The analyst validates every array (shapes for the kit's width and classes, finite, V̂ᵢ symmetric positive
   definite by a Cholesky factorisation) and combines by fixed-effect inverse-variance weighting
   (:mod:`.fixed_effect`), θ̂ = (Σ V̂ᵢ⁻¹)⁻¹ Σ V̂ᵢ⁻¹ θ̂ᵢ, Var(θ̂) = (Σ V̂ᵢ⁻¹)⁻¹, with Cochran's Q and I².
   Per class, not only over sites with every class: a site fitted over some classes estimates Aᵢθ, the
   contrasts θ_c − θ_c₀ of the common θ (class k against the kit's first, θ₀ = 0), Aᵢ = Dᵢ ⊗ I
   (:func:`contrast_map`), and θ̂ = (Σ AᵢᵀV̂ᵢ⁻¹Aᵢ)⁺ Σ AᵢᵀV̂ᵢ⁻¹ θ̂ᵢ — each contrast combined over the sites that
   inform it, directly or through shared classes. "Only sites with every class" would be simpler, but on
   label-skewed small sites it is often no site at all (issue #25's small-sites bench: every cell refused).
   A package gives no probability to a class its site cannot compare with its own (:func:`only_classes`): with
   site intercepts any class the site has no row of (its maximum-likelihood intercept is −∞), with a common
   intercept any class the sites' contrasts do not link to the site's (:func:`linked_classes`).
   ``intercepts = "site"`` (default): only the slopes are combined and each site keeps its own intercepts given
   them, âᵢ + V̂ᵢ,aβ V̂ᵢ,ββ⁻¹ (β̂ − β̂ᵢ) — a site-stratified model, as when sites differ in how common each class is
   (Q and I² then measure the slopes); ``"common"``: every coefficient combined, every site the same model.
   With every site's penalty λ, the combination is close to one pooled fit with penalty S·λ.
   ``effects = "random"`` (default, issue #37; :mod:`.random_effects`): sites' slopes may differ by a
   DerSimonian–Laird τ² per coefficient, and each site gets its empirical-Bayes slopes — the posterior mean given
   its own estimate and the prior the other sites imply (their random-effects combination without it, its
   covariance plus their τ²) — with its intercepts given them; the package carries that prior so the site can
   recompute its model from any part of its rows (:mod:`.shared_oof`). ``"fixed"``: T = 0, every site the
   combined slopes (the model above).
3. Never worse than alone, as far as the coefficients can tell: a site whose own coefficients differ from the
   combined ones (:func:`.fixed_effect.site_deviation`, χ² test at 5 %; with random effects, from its prior:
   :func:`.random_effects.deviation_from_prior`) is told to keep its own model
   (``model`` = own, ``own_kind`` = linear, as the DC family does), and ``apply`` then uses the logistic
   regression the site kept at export.
4. ``apply`` gives ``prediction`` and ``prob_<class>`` from the package's coefficients.

If no site shipped an estimate, every site is told to keep its own model, and the summary says why.

No row and no label leaves, so the analyst cannot score the combined model on any site's rows: the summary
says so, and each site compares the package with the logistic regression it kept from its own rows at
export (``participant apply --validate``).

Defaults measured (``python -m benchmarks meta-lr --seeds 3``, docs/results/metalr/): λ = 1 per column spread
is within 0.5 pt of λ = 0.01 and λ = 10 except on the smallest sites (lung, 45–65 rows: λ = 10 loses 2.5 pt);
site intercepts gain 1.8 pt over a common one on lung and lose ≤ 0.6 pt elsewhere. On the label-skewed
synthetic sites of the tests (four classes) a common intercept lost 8–11 pt.
"""

from __future__ import annotations

import numpy as np

from ...control import JobControl, ensure
from ...errors import ConfigError, FormatError
from ...formats.fields import Array, Field, Rule, site_rows
from ...learn.heterogeneity import differ_terms, differ_words
from ...learn.intervals import describe
from ...learn.own_cv import alone_estimate, read_own_cv
from ...privacy.release import COEFFICIENTS, Release
from ..base import (
    Disclosure,
    FitContext,
    Method,
    MethodResult,
    ReceivedBundle,
    SiteExport,
    SiteInput,
    canonical_order,
)
from ..dc_analysis import exact_arrays
from ..settings import Setting
from ..views import SITE_ROWS_TIP, Bars, PageTexts, Table, Text, View, site_rows_cell
from .fixed_effect import combine, site_deviation
from .private_site import PRIVATE_SETTINGS, private_site_compute, total_covariance
from .random_effects import combine_random, deviation_from_prior, posterior, prior_from, prior_without
from .shared_oof import shared_oof_at_site
from .site_logit import fit_site_logit, only_classes, predict_proba

Z95 = 1.959963984540054
DEVIATION_P = 0.05  # a site whose coefficients differ from the combined at this level keeps its own model
NOT_SCORED = ("the analyst cannot score the combined model on any site's rows (no row leaves); each site compares "
              "it with its own model on labelled rows: dcstudio participant apply --validate")
NOTHING_COMBINED = ("no site shipped a logistic regression (each had rows of one class only or its fit did not "
                    "converge), so nothing could be combined: every site keeps its own model")
PACKAGE_NOTE = ("this model combines the sites' logistic regressions; nobody has scored it on your rows yet: run "
                "`participant apply --validate` on labelled rows to compare it with your own model")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def contrast_map(fitted: list[int], K: int) -> np.ndarray:
    """Dᵢ ((kᵢ − 1) × (K − 1)): a site fitted over its classes c₀ < c₁ < … (``fitted``) estimates the contrasts
    θ_{c_r} − θ_{c₀} of the common ones (θ_k: class k against the kit's first class, θ₀ = 0)."""
    D = np.zeros((len(fitted) - 1, K - 1))
    for r, k in enumerate(fitted[1:]):
        D[r, k - 1] = 1.0
        if fitted[0] > 0:
            D[r, fitted[0] - 1] = -1.0
    return D


def linked_classes(fitted: list[list[int]], K: int) -> dict[int, list[int]]:
    """For each class some site fitted, the classes linked to it (the connected component of the graph whose
    edges join the classes one site fitted together): only between linked classes do the sites' contrasts say
    anything, so only they are compared in one site's package."""
    root = list(range(K))

    def find(k: int) -> int:
        while root[k] != k:
            root[k] = root[root[k]]
            k = root[k]
        return k

    for f in fitted:
        for k in f[1:]:
            root[find(k)] = find(f[0])
    seen = sorted({k for f in fitted for k in f})
    return {k: [j for j in seen if find(j) == find(k)] for k in seen}


def _per_coefficient(values: np.ndarray, own_intercepts: bool, q: int, p: int) -> np.ndarray:
    """A value per common coefficient as (q, p), the intercepts' column 0 when they are the sites' own."""
    if not own_intercepts:
        return np.asarray(values, np.float64).reshape(q, p)
    out = np.zeros((q, p))
    out[:, 1:] = np.asarray(values, np.float64).reshape(q, p - 1)
    return out


RANDOM_WORDS = ("random effects (DerSimonian–Laird τ²): each site gets its own coefficients, between its own and "
                "the other sites' combined ones")


def _kind(summary: dict) -> str:
    return "random-effects" if summary.get("effects") == "random" else "fixed-effect"


def _contrasts(classes: list[str]) -> list[str]:
    return [f"{c} vs {classes[0]}" for c in classes[1:]]


def _fitted(m, f) -> bool:
    return m.get("estimate") == "fitted"


def _formal(m, f) -> bool:
    """a bundle exported under the formal option (it ships the noise's covariance)"""
    return isinstance(m.get("privacy"), dict)


def _contrasts_fitted(m, f) -> int:
    """the classes fitted − 1"""
    fitted = m.get("classes_fitted")
    return (len(fitted) if isinstance(fitted, list) else f.classes) - 1


def _parameters(m, f) -> int:
    """n_features + 1"""
    return m["n_features"] + 1


def _coefficients(m, f) -> int:
    return _contrasts_fitted(m, f) * _parameters(m, f)


class MetaLR(Method):
    name = "meta-lr"
    title = "Meta-analysed logistic regression (one round, coefficients only)"
    plain_title = "each site's logistic regression, combined into one by weighting each by its precision"
    task = "classification"
    family = "meta-lr"
    discloses = Release(COEFFICIENTS, rows="coef", predict=predict_proba)
    bundle_fields = (Field("n_rows", "int", required=True, low=1), Field("n_features", "int", required=True, low=1),
                     Field("n_classes", "int", required=True, low=2),
                     Field("estimate", "text", required=True, choices=("fitted", "none")), Field("reason", "text"),
                     Field("classes_fitted", "list", items="int"),
                     Field("ridge", "number", low=0),
                     Field("penalty_scale", "text", choices=("public", "spread", "raw")),
                     Field("iterations", "int", low=0), Field("converged", "bool"))
    bundle_arrays = (Array("coef", "<f8", (_contrasts_fitted, _parameters), present=_fitted),
                     Array("cov", "<f8", (_coefficients, _coefficients), present=_fitted),
                     Array("noise_cov", "<f8", (_coefficients, _coefficients), present=_formal))  # formal option
    bundle_rules = (
        Rule("n_features and n_classes are the kit's", lambda m, a, f: m["n_features"] == f.width
             and m["n_classes"] == f.classes),
        Rule("ridge is the kit's ridge penalty (under the formal option: the option's)", lambda m, a, f:
             _formal(m, f) or m.get("ridge", f.settings["ridge"]) == float(f.settings["ridge"])),
        Rule("a fitted estimate converged within the kit's max_iter Newton steps", lambda m, a, f: not _fitted(m, f)
             or (m.get("converged", True) is True and m.get("iterations", 0) <= int(f.settings["max_iter"]))),
    )
    package_fields = (Field("classes", "list", required=True, items="text"), Field("reference", "text"),
                      Field("features", "int", low=1), Field("sites_combined", "int", low=0),
                      Field("intercepts", "text"), Field("note", "text"),
                      Field("effects", "text", choices=("random", "fixed")), Field("ridge", "number", low=0),
                      Field("penalty_scale", "text"), Field("max_iter", "int", low=1),
                      Field("prior_sites", "int", low=0),
                      Field("model", "text", choices=("cluster", "own", "global")),
                      Field("own_kind", "text", nullable=True))
    # No row leaves, so the analyst cannot score the combined model: each site checks it on rows it kept out of its
    # fit (core/methods/promise.py), beside the analyst's coefficient test (step 3), which a label-skewed site whose
    # slopes agree but whose rows the combined model fits worse can pass (tests/methods/test_method_contract.py).
    own_model_choice = "site"
    pairs_at_site = True  # the site recomputes the shared model's out-of-fold predictions (shared_oof.py)
    apply_per_row = True  # a fitted model applied row by row
    labels_leave = "none"
    labels_at_site = True
    needs_anchor = False
    what_leaves = ("p coefficients and a p × p covariance matrix per site (p = the kit's columns + 1; times the "
                   "classes − 1 for more than two classes) from a logistic regression fitted to the site's rows (over "
                   "the classes it has, and which those are), and its row count; no row, no label")
    settings_spec = (
        Setting("ridge", "float", 1.0, "ridge penalty λ on each site's slopes (not the intercept), in the columns' "
                "own units (per public standard deviation when the kit gives one); keeps small sites' estimates "
                "finite", label="Ridge penalty λ", low=1e-6, high=1e6),
        Setting("effects", "choice", "random", "how the sites' coefficients are combined and what each site gets",
                label="Effects", choices=("random", "fixed"),
                choice_help=("random effects: sites may differ; each site gets its own coefficients between its "
                             "own and the others' (empirical Bayes, DerSimonian–Laird τ²)",
                             "fixed effect: one set of slopes for every site (inverse-variance weighted)")),
        Setting("tau", "choice", "proportional", "how the spread between sites (random effects) is estimated",
                label="Between-site spread", choices=("proportional", "per-coefficient"),
                choice_help=("one DerSimonian–Laird τ² for all coefficients, relative to a typical site's sampling "
                             "variance (stable with few sites)",
                             "one DerSimonian–Laird τ² per coefficient"), advanced=True),
        Setting("intercepts", "choice", "site", "whether each site keeps its own intercept (baseline risk)",
                label="Intercepts", choices=("site", "common"),
                choice_help=("each site's own, given the combined slopes (a site-stratified model: sites may differ "
                             "in how common each class is)",
                             "one for all sites (every coefficient combined; every site gets the same model)")),
        Setting("penalty_scale", "choice", "spread", "the units the ridge penalty measures slopes in when the kit "
                "gives no public standard deviation", label="Penalty units", choices=("spread", "raw"),
                choice_help=("per standard deviation of the column at the site (coefficients stay in the "
                             "columns' own units)", "the columns' own units"), advanced=True),
        Setting("max_iter", "int", 100, "Newton steps of a site's fit at most", low=5, high=1000, advanced=True),
        *PRIVATE_SETTINGS,
    )

    # ---- site ----------------------------------------------------------------------------------
    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport:
        control = ensure(control)
        if site.y is None:
            raise ConfigError("this method fits a logistic regression on your rows: the CSV needs the kit's label "
                              "column")
        X = np.asarray(site.X, dtype=np.float64)
        n, m = X.shape
        K = len(site.classes)
        if K < 2:
            raise ConfigError("a logistic regression needs at least two classes in the kit")
        if (site.settings or {}).get("privacy_epsilon") is not None:  # central (ε, δ)-DP: .private_site
            return private_site_compute(site, control)
        public = site.scale is not None and np.shape(site.scale) == (m,)
        scale = (np.asarray(site.scale, dtype=np.float64) if public else
                 np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0) if self.settings["penalty_scale"] == "spread"
                 else None)
        lam = float(self.settings["ridge"])
        p = m + 1
        counts = np.bincount(np.asarray(site.y, dtype=np.int64), minlength=K)
        manifest = {"n_rows": n, "n_features": m, "n_classes": K, "ridge": lam,
                    "penalty_scale": "public" if public else self.settings["penalty_scale"]}
        present = np.flatnonzero(counts > 0)
        q = len(present) - 1  # the site's own contrasts: each of its classes against its first one
        arrays: dict[str, np.ndarray] = {}
        reason = ""
        if q < 1:
            reason = "only one class in these rows: a logistic regression needs rows of two classes at least"
        else:
            control.step(0.1, "fitting the logistic regression")
            y_own = np.searchsorted(present, np.asarray(site.y, dtype=np.int64))
            fit = fit_site_logit(X, y_own, q + 1, lam=lam, scale=scale, max_iter=int(self.settings["max_iter"]))
            manifest.update(iterations=fit.iterations, converged=fit.converged)
            try:
                np.linalg.cholesky(fit.cov)
                ok = bool(np.all(np.isfinite(fit.coef)) and np.all(np.isfinite(fit.cov)))
            except np.linalg.LinAlgError:
                ok = False
            if not fit.converged or not ok:
                reason = (f"the logistic regression did not converge in {fit.iterations} Newton steps"
                          if not fit.converged else "the logistic regression's covariance is not positive definite")
            else:
                arrays = {"coef": np.ascontiguousarray(fit.coef), "cov": np.ascontiguousarray(fit.cov)}
                manifest["classes_fitted"] = [int(k) for k in present]
        manifest.update(estimate="none" if reason else "fitted", **({"reason": reason} if reason else {}))
        disclosures = [Disclosure("n_rows", (1,), "number", "how many rows you have", "your row count")]
        if arrays:
            ref = site.classes[int(present[0])]
            shape = f"{p}" if q == 1 else f"{q} × {p}"
            disclosures = [
                Disclosure("coef", (q, p), "float64",
                           f"the {shape} coefficients (intercept and one per column{'' if q == 1 else ', per class'}"
                           f" against '{ref}') of a logistic regression of your rows, in your "
                           "columns' own units",
                           "how strongly each column goes with each class, summarised over all your rows"),
                Disclosure("cov", (q * p, q * p), "float64",
                           "the covariance matrix of those coefficients (inverse of the penalised information)",
                           "how precise each of those numbers is, and how they move together"),
                *disclosures]
            count = f"{p} coefficients and a {p} × {p} covariance matrix" if q == 1 else (
                f"{q} × {p} coefficients and a {q * p} × {q * p} covariance matrix")
            lacking = [site.classes[k] for k in range(K) if counts[k] == 0]
            plain = (f"The {count} of a logistic regression fitted to your {n:,} rows, and that row count"
                     + (f" (over the {q + 1} classes you have; you have no row of "
                        f"{', '.join(repr(c) for c in lacking)}, and which classes you have leaves too)"
                        if lacking else "") + ". No row, no names, no labels, no original values.")
        else:
            plain = (f"Only your row count ({n:,}): {reason}, so nothing else leaves. You still receive the "
                     "combined model.")
        stays = ["your data file and every original value in it", "the class of every row"]
        control.step(1.0, "done")
        return SiteExport(arrays, manifest, {}, {"estimate": manifest["estimate"]}, disclosures, stays, plain)

    def check_bundle(self, bundle: ReceivedBundle, kit) -> None:
        """Row count, width and classes as in the kit; a fitted bundle's ``coef`` (K − 1, m + 1) and ``cov``
        (d, d) finite, ``cov`` symmetric and positive definite (Cholesky)."""
        super().check_bundle(bundle, kit)
        man, a = bundle.manifest, bundle.arrays
        m, K = kit.schema.width, len(kit.schema.classes)
        n = man.get("n_rows")
        if type(n) is not int or n < 1:
            raise FormatError("bundle's row count (n_rows) is missing or not a positive whole number")
        if man.get("n_features") != m or man.get("n_classes") != K:
            raise FormatError(f"bundle has {man.get('n_features')} column(s) and {man.get('n_classes')} class(es); "
                              f"the kit has {m} and {K}")
        estimate = man.get("estimate")
        if estimate == "none":
            if a or not isinstance(man.get("reason"), str):
                raise FormatError("bundle says it has no estimate but ships arrays or gives no reason")
            return
        if estimate != "fitted":
            raise FormatError("bundle's manifest does not say whether it holds an estimate ('estimate')")
        fitted = man.get("classes_fitted", list(range(K)))
        if (not isinstance(fitted, list) or len(fitted) < 2 or any(type(k) is not int for k in fitted)
                or fitted != sorted(set(fitted)) or fitted[0] < 0 or fitted[-1] >= K):
            raise FormatError(f"bundle's 'classes_fitted' is not an increasing list of at least two class numbers "
                              f"from 0 to {K - 1}")
        q, p = len(fitted) - 1, m + 1
        coef, cov = a.get("coef"), a.get("cov")
        shipped = {"coef", "cov", "noise_cov"} if isinstance(man.get("privacy"), dict) else {"coef", "cov"}
        if set(a) != shipped:
            raise FormatError(f"bundle ships {', '.join(sorted(a)) or 'no arrays'}; this method ships exactly "
                              + " and ".join(f"'{k}'" for k in sorted(shipped)))
        if coef.dtype.kind != "f" or coef.shape != (q, p):
            raise FormatError(f"bundle's 'coef' has shape {coef.shape}; {m} column(s) and {q + 1} classes fitted "
                              f"need a float array of shape ({q}, {p})")
        if cov.dtype.kind != "f" or cov.shape != (q * p, q * p):
            raise FormatError(f"bundle's 'cov' has shape {cov.shape}; the kit needs a float array of shape "
                              f"({q * p}, {q * p})")
        noise = a.get("noise_cov")
        if noise is not None and (noise.dtype.kind != "f" or noise.shape != cov.shape):
            raise FormatError(f"bundle's 'noise_cov' has shape {noise.shape}; it must be a float array of the shape "
                              f"of 'cov', {cov.shape}")
        for key in shipped:
            if not np.all(np.isfinite(a[key])):
                raise FormatError(f"bundle's '{key}' holds non-finite values")
        C = total_covariance(a)  # with the formal option's noise added: what the combination weights by
        if not np.allclose(C, C.T, rtol=1e-9, atol=1e-12 * float(np.abs(C).max(initial=0.0))):
            raise FormatError("bundle's covariance matrix 'cov' is not symmetric")
        try:
            np.linalg.cholesky(C)
        except np.linalg.LinAlgError as exc:
            raise FormatError("bundle's covariance matrix 'cov' is not positive definite (its Cholesky "
                              "factorisation fails), so its coefficients cannot be weighted") from exc

    # ---- analyst -------------------------------------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        control = ensure(context.control)
        if not bundles:
            raise ConfigError("no bundles to analyse")
        classes = list(context.classes)
        K = len(classes)
        q = K - 1
        m = int(bundles[0].manifest["n_features"])
        p = m + 1
        names = ["intercept", *(context.features if len(context.features) == m else
                                [f"column {j + 1}" for j in range(m)])]
        # the canonical order (by content digest): the same bundles give bit-identical sums whatever their order
        order = canonical_order(bundles)
        used = [i for i in order if bundles[i].manifest.get("estimate") == "fitted"]
        if not used:
            return self._nothing_to_combine(bundles, order, classes, m)
        control.step(0.2, f"combining {_plural(len(used), 'site')}")
        fitted = {i: [int(k) for k in bundles[i].manifest.get("classes_fitted", range(K))] for i in used}
        D = {i: contrast_map(fitted[i], K) for i in used}
        coefs = [bundles[i].arrays["coef"] for i in used]
        covs = [total_covariance(bundles[i].arrays) for i in used]  # a formal option's noise added (.private_site)
        full_maps = [np.kron(D[i], np.eye(p)) for i in used]
        everything = combine(coefs, covs, full_maps)  # every coefficient common: the plain fixed-effect model
        own_intercepts = self.settings["intercepts"] == "site"
        random = self.settings["effects"] == "random"
        if own_intercepts:  # the slopes common, each site's intercepts its own given them (a stratified fit)
            commons = [np.array([r * p + j for r in range(len(fitted[i]) - 1) for j in range(1, p)]) for i in used]
            maps = [np.kron(D[i], np.eye(m)) for i in used]
        else:
            commons = [np.arange((len(fitted[i]) - 1) * p) for i in used]
            maps = full_maps
        parts = [np.asarray(b, np.float64).ravel()[c] for b, c in zip(coefs, commons, strict=True)]
        part_covs = [np.asarray(v, np.float64)[np.ix_(c, c)] for v, c in zip(covs, commons, strict=True)]
        comb = combine(parts, part_covs, maps) if own_intercepts else everything  # fixed effect: Q and I²
        how = self.settings["tau"]
        mean_model = combine_random(parts, part_covs, maps, how) if random else None  # every site, random effects
        centre, centre_cov = (mean_model.coef, mean_model.cov) if mean_model else (comb.coef, comb.cov)
        coef = everything.coef.reshape(q, p).copy()
        se = np.sqrt(np.diag(everything.cov)).reshape(q, p)
        if own_intercepts:  # the common intercepts given the combined slopes (the same step as a site's own)
            a_, b_ = np.arange(q) * p, np.array([k * p + j for k in range(q) for j in range(1, p)])
            V = everything.cov
            coef[:, 0] += V[np.ix_(a_, b_)] @ np.linalg.lstsq(V[np.ix_(b_, b_)], centre - everything.coef[b_],
                                                               rcond=None)[0]
            coef[:, 1:] = centre.reshape(q, m)
            se[:, 1:] = np.sqrt(np.diag(centre_cov)).reshape(q, m)
        elif random:
            coef, se = centre.reshape(q, p).copy(), np.sqrt(np.diag(centre_cov)).reshape(q, p)
        # each site's prior from the other sites only (random_effects.py), and its coefficients given its own
        priors = {i: prior_without(k, parts, part_covs, maps, random, how) for k, i in enumerate(used)}
        deviates = {}  # never worse than alone: a site whose own slopes differ from the others' keeps its model
        for k, i in enumerate(used):
            q_i, df_i, p_i = (deviation_from_prior(coefs[k], covs[k], commons[k], maps[k], priors[i]) if random
                              else site_deviation(parts[k], part_covs[k], comb, maps[k]))
            if df_i and p_i < DEVIATION_P:
                deviates[i] = (q_i, df_i, p_i)
        linked = linked_classes([fitted[i] for i in used], K)
        seen = sorted({k for i in used for k in fitted[i]})
        sent_of = {}
        for k, i in enumerate(used):
            beta_i, theta_i = posterior(coefs[k], covs[k], commons[k], maps[k], priors[i])
            if own_intercepts:  # its slopes, and its classes' intercepts its own (alpha: class k vs the kit's
                # first), placed so that on average they sit where the combined ones do
                theta = coef.copy()
                theta[:, 1:] = beta_i.reshape(q, m)
                alpha = np.concatenate([[0.0], coef[:, 0]])
                own = np.concatenate([[0.0], theta_i.reshape(-1, p)[:, 0]])
                alpha[fitted[i]] = own + np.mean(alpha[fitted[i]] - own)
                theta[:, 0] = alpha[1:] - alpha[0]
            else:
                theta = beta_i.reshape(q, p).copy()
            # site intercepts: a class with no row here has the maximum-likelihood intercept −∞ (no probability);
            # common ones: only classes the sites' contrasts link to this site's are comparable with them
            sent_of[i] = only_classes(theta, fitted[i] if own_intercepts else linked[fitted[i][0]])
        everyone = prior_from(parts, part_covs, maps, random, len(centre), how)  # of a site in no estimate
        sites, packages = [], [None] * len(bundles)
        manifest = {"method": self.name, "classes": classes, "reference": classes[0], "features": m,
                    "sites_combined": len(used), "intercepts": self.settings["intercepts"], "note": PACKAGE_NOTE,
                    "effects": self.settings["effects"], "ridge": float(self.settings["ridge"]),
                    "penalty_scale": self.settings["penalty_scale"], "max_iter": int(self.settings["max_iter"])}
        for i in order:
            b = bundles[i]
            entry = {"site": b.site, "fingerprint": b.fingerprint, "bundle_digest": b.digest,
                     "rows": int(b.manifest["n_rows"]), "combined": "yes" if i in used else "no"}
            alone = alone_estimate(read_own_cv(b.manifest, site_rows(b.manifest), len(classes)))
            if alone:
                entry["own_model"] = alone  # the "alone" column, as every classification method gives it
            theta = sent_of[i] if i in sent_of else only_classes(coef, seen)
            if i in used:
                entry["coef"] = np.asarray(b.arrays["coef"], dtype=np.float64).tolist()
                entry["se"] = np.sqrt(np.diag(total_covariance(b.arrays))).reshape(-1, p).tolist()
                if len(fitted[i]) < K:
                    entry["classes_fitted"] = [classes[k] for k in fitted[i]]
                    entry["note"] = (f"combined over the {len(fitted[i])} classes it has (no row of "
                                     + ", ".join(repr(c) for k, c in enumerate(classes) if k not in fitted[i])
                                     + ("; its package gives those no probability)" if own_intercepts else
                                        "; its package gives them the common intercepts where other sites link "
                                        "them to its classes)"))
            else:
                entry["note"] = (f"left out of the combination: {b.manifest.get('reason', 'no estimate')}"
                                 + ("; it is sent the combined model with the common intercept" if own_intercepts
                                    else "; it is sent the combined model"))
            entry["intercept_sent"] = theta[:, 0].tolist()
            own = {}
            if i in deviates:
                q_i, df_i, p_i = deviates[i]
                own = {"model": "own", "own_kind": "linear"}
                said = f"{entry['note']}; " if entry.get("note") else ""
                entry.update(own, note=f"{said}its coefficients differ from the other sites' more than chance "
                             f"would make them differ (by chance with probability {p_i:.2g}; Q = {q_i:.1f}, "
                             f"{df_i} degrees of freedom): it keeps its own model")
            sites.append(entry)
            prior = priors.get(i, everyone)
            packages[i] = ({**manifest, **own, "prior_sites": len(used) - (i in priors)},
                           {"coef": np.ascontiguousarray(theta, dtype=np.float64),
                            "prior_mean": np.ascontiguousarray(prior.mean, dtype=np.float64),
                            "prior_precision": np.ascontiguousarray(prior.precision, dtype=np.float64)})
        summary = {
            "method": self.name, "task": self.task, "sites": sites, "sites_combined": len(used),
            "reference": classes[0], "intercepts": self.settings["intercepts"],
            "parameters": q * p, "names": names, "contrasts": _contrasts(classes),
            "combined": {"coef": coef.tolist(), "se": se.tolist()},
            "heterogeneity": {"q": comb.q, "df": comb.df, "p_value": comb.p_value, "i2": comb.i2,
                              "of": "slopes" if own_intercepts else "all coefficients",
                              "i2_each": everything.i2_each.reshape(q, p).tolist()},
            "effects": self.settings["effects"], **({"tau": how} if random else {}),
            **({"tau2": _per_coefficient(mean_model.tau2, own_intercepts, q, p).tolist()} if mean_model else {}),
            "scored": False, "not_scored": NOT_SCORED, "settings": self.settings,
            "own_model_sites": len(deviates),
            "classes_in_no_estimate": [c for k, c in enumerate(classes) if k not in seen],
        }
        control.step(1.0, "done")
        return MethodResult(self.name, packages, summary, {"site_order": order})

    def _nothing_to_combine(self, bundles: list[ReceivedBundle], order: list[int], classes: list[str], m: int
                            ) -> MethodResult:
        """No site shipped an estimate: every site is told to keep its own model (zero coefficients ship, as the
        package format needs them; ``apply`` uses the model the site kept)."""
        q, p = len(classes) - 1, m + 1
        manifest = {"method": self.name, "classes": classes, "reference": classes[0], "features": m,
                    "sites_combined": 0, "intercepts": self.settings["intercepts"], "note": NOTHING_COMBINED,
                    "model": "own", "own_kind": "linear"}
        sites, packages = [], [None] * len(bundles)
        for i in order:
            b = bundles[i]
            entry = {"site": b.site, "fingerprint": b.fingerprint, "bundle_digest": b.digest,
                     "rows": int(b.manifest["n_rows"]), "combined": "no", "model": "own",
                     "note": f"{b.manifest.get('reason', 'no estimate')}; it keeps its own model"}
            alone = alone_estimate(read_own_cv(b.manifest, site_rows(b.manifest), len(classes)))
            if alone:
                entry["own_model"] = alone
            sites.append(entry)
            packages[i] = (dict(manifest), {"coef": np.zeros((q, p))})
        zeros = np.zeros((q, p)).tolist()
        summary = {"method": self.name, "task": self.task, "sites": sites, "sites_combined": 0,
                   "reference": classes[0], "intercepts": self.settings["intercepts"], "parameters": q * p,
                   "names": ["intercept", *[f"column {j + 1}" for j in range(m)]], "contrasts": _contrasts(classes),
                   "combined": {"coef": zeros, "se": zeros},
                   "heterogeneity": {"q": 0.0, "df": 0, "p_value": 1.0, "i2": 0.0, "of": "nothing", "i2_each": zeros},
                   "scored": False, "not_scored": NOTHING_COMBINED, "settings": self.settings,
                   "own_model_sites": len(bundles), "nothing_combined": True}
        return MethodResult(self.name, packages, summary, {"site_order": order})

    # ---- what it shows --------------------------------------------------------------------------
    @staticmethod
    def _label(s: dict, k: int, j: int) -> str:
        contrasts = s.get("contrasts", [])
        name = s["names"][j]
        return name if len(contrasts) <= 1 else f"{contrasts[k]}: {name}"

    @staticmethod
    def _heterogeneity_text(h: dict) -> str:
        return (f"Cochran's Q = {h['q']:.1f} on {h['df']} df (p = {h['p_value']:.3g}), I² = {100 * h['i2']:.0f} %"
                if h.get("df") else "one site only: no heterogeneity to measure")

    def summary_lines(self, summary: dict) -> list[str]:
        s = summary
        sites, h = s.get("sites", []), s.get("heterogeneity", {})
        if s.get("nothing_combined"):
            return [f"method {self.name}: {NOTHING_COMBINED}",
                    *(f"  {x['site']}: {x['rows']:,} rows, {x.get('note', '')}" for x in sites)]
        lines = [f"method {self.name}: {_kind(s)} meta-analysis of the logistic regressions of "
                 f"{s.get('sites_combined')} of {_plural(len(sites), 'site')}, {s.get('parameters')} coefficients each",
                 "heterogeneity: " + self._heterogeneity_text(h)
                 + (" — the sites' coefficients differ more than chance allows: one model for all sites is "
                    "doubtful" if h.get("df") and h.get("p_value", 1.0) < 0.05 else "")]
        if s.get("effects") == "random":
            lines.append(RANDOM_WORDS)
        for x in sites:
            what = ("combined" + (f"; {x['note']}" if x.get("note") else "") if x["combined"] == "yes"
                    else x.get("note", "left out"))
            lines.append(f"  {x['site']}: {x['rows']:,} rows, {what}")
        if s.get("classes_in_no_estimate"):
            lines.append("no site had rows of " + ", ".join(repr(c) for c in s["classes_in_no_estimate"])
                         + " beside another class: their coefficients are left at 0 (not estimated)")
        lines.append("combined coefficients (95 % interval):")
        coef, se = np.asarray(s["combined"]["coef"]), np.asarray(s["combined"]["se"])
        for k in range(coef.shape[0]):
            for j in range(coef.shape[1]):
                b, e = coef[k, j], se[k, j]
                lines.append(f"  {self._label(s, k, j)}: {b:.4g} [{b - Z95 * e:.4g}, {b + Z95 * e:.4g}]")
        return [*lines, NOT_SCORED]

    @classmethod
    def page_texts(cls) -> PageTexts:
        """Meta-analysis words: each site's regression, combined in one step; nothing is trained here."""
        return PageTexts(
            models="Combine the sites' logistic regressions into one, weighting each by how precise it is (a "
                   "meta-analysis). Nothing is trained here, so there is no loss to watch; each site's figures "
                   "appear below.",
            train="&Combine",
            clients="How the sites' outcome mixes differ (for exploring: this method does not group sites).",
            distance="difference in outcome mix",
            distance_tip="total-variation distance between the sites' label distributions")

    def views(self, result: MethodResult) -> list[View]:
        s = result.summary
        sites, h = s.get("sites", []), s.get("heterogeneity", {})
        if s.get("nothing_combined"):
            return [Text(NOTHING_COMBINED[0].upper() + NOTHING_COMBINED[1:] + ".", tone="warning"),
                    Table("Sites", ["site", "fingerprint", "rows", "its own rows alone", "note"],
                          [[x["site"], x.get("fingerprint", ""), site_rows_cell(x), describe(x.get("own_model")),
                            x.get("note", "")] for x in sites], tips=SITE_ROWS_TIP)]
        coef, se = np.asarray(s["combined"]["coef"]), np.asarray(s["combined"]["se"])
        i2 = np.asarray(h.get("i2_each", np.zeros_like(coef)))
        out: list[View] = [Text(
            f"{_kind(s).capitalize()} meta-analysis of the logistic regressions of {s.get('sites_combined')} of "
            f"{_plural(len(sites), 'site')} ({s.get('parameters')} coefficients each, inverse-variance weighted"
            + (f"; {RANDOM_WORDS}" if s.get("effects") == "random" else "") + "). Only coefficients, "
            "their covariance and row counts left the sites; no row and no label did. " + NOT_SCORED[0].upper()
            + NOT_SCORED[1:] + ".")]
        doubtful = bool(h.get("df")) and h.get("p_value", 1.0) < 0.05
        what = "the slopes" if h.get("of") == "slopes" else "the coefficients"
        out.append(Text("How much the sites differ: " + differ_words(h.get("i2"), h.get("p_value"), h.get("df"), what)
                        + (" One model for all sites is doubtful; look below for the coefficients with a large share "
                           "beyond chance." if doubtful else ""),
                        tone="warning" if doubtful else "info",
                        tip=differ_terms(h.get("q"), h.get("df"), h.get("p_value"), h.get("i2"))))
        whole = [x for x in sites if x["combined"] == "yes" and "classes_fitted" not in x]  # in the kit's contrasts
        left = [x for x in sites if x["combined"] != "yes"]
        if left:
            out.append(Text(f"{_plural(len(left), 'site')} contributed nothing: "
                            + "; ".join(f"{x['site']} ({x.get('note', '')})" for x in left), tone="warning"))
        out.append(Table("Sites", ["site", "fingerprint", "rows", "combined", "its own rows alone", "note"],
                         [[x["site"], x.get("fingerprint", ""), site_rows_cell(x), x["combined"],
                           describe(x.get("own_model")), x.get("note", "")] for x in sites],
                         tips=SITE_ROWS_TIP))
        rows, forest = [], []
        tau2 = np.asarray(s["tau2"]) if "tau2" in s else None
        for k in range(coef.shape[0]):
            for j in range(coef.shape[1]):
                label, b, e = self._label(s, k, j), float(coef[k, j]), float(se[k, j])
                rows.append([label, round(b, 6), f"[{b - Z95 * e:.4g}, {b + Z95 * e:.4g}]",
                             f"{np.exp(b):.4g}" if abs(b) < 700 else "—", f"{100 * float(i2[k, j]):.0f} %",
                             *([f"{float(tau2[k, j]):.3g}"] if tau2 is not None else [])])
                weights = [1.0 / float(x["se"][k][j]) ** 2 for x in whole]
                total = sum(weights) or 1.0
                for x, w in zip(whole, weights, strict=True):
                    bi, ei = float(x["coef"][k][j]), float(x["se"][k][j])
                    forest.append([label, x["site"], round(bi, 6), round(bi - Z95 * ei, 6), round(bi + Z95 * ei, 6),
                                   f"{100 * w / total:.0f} %"])
                forest.append([label, "combined", round(b, 6), round(b - Z95 * e, 6), round(b + Z95 * e, 6), "100 %"])
        out.append(Table(f"Combined coefficients (log-odds against class '{s.get('reference', '')}'), with 95 % "
                         "intervals and how much the sites differ",
                         ["coefficient", "estimate", "95 % interval", "odds ratio", "spread beyond chance",
                          *(["spread between sites"] if tau2 is not None else [])], rows,
                         tips={"spread beyond chance": "I²: the share of the spread of this coefficient between "
                                                       "sites that is beyond chance (Higgins)",
                               "spread between sites": "τ², the between-site variance of this coefficient "
                                                       "(DerSimonian–Laird)",
                               "odds ratio": "exp(estimate): how the odds change per unit of the column"}))
        out.append(Table("Forest plot data: each site's coefficient (sites with every class) and the combined one, "
                         "with 95 % intervals",
                         ["coefficient", "site", "estimate", "low", "high", "weight"], forest))
        out.append(Bars("How much of each coefficient's spread between sites is beyond chance (%)",
                        [r[0] for r in rows], [100.0 * float(v) for v in i2.ravel()], ylabel="beyond chance (I², %)"))
        return out

    # ---- site, after the round -----------------------------------------------------------------
    def check_package(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
                      kit) -> None:
        """§7.3: a finite ``coef`` <f8 (K − 1, m + 1), whatever ``model`` says, and either both or neither of the
        site's prior from the other sites, ``prior_mean`` <f8 (d,) and ``prior_precision`` <f8 (d, d), d = (K − 1)·m
        with site intercepts, (K − 1)·(m + 1) with common ones."""
        K, m = len(kit.schema.classes), kit.schema.width
        d = (K - 1) * (m if manifest.get("intercepts", "site") == "site" else m + 1)
        prior = {"prior_mean": ((d,), "<f8"), "prior_precision": ((d, d), "<f8")}
        exact_arrays(arrays, {"coef": ((K - 1, m + 1), "<f8"), **prior},
                     optional=frozenset(prior) if not set(prior) & set(arrays) else frozenset())

    def shared_oof_at_site(self, manifest: dict, arrays: dict[str, np.ndarray], private: dict[str, np.ndarray]
                           ) -> tuple[np.ndarray, np.ndarray] | None:
        """(rows, n × K probabilities): the package's shared model out of fold on the rows the site kept at export
        (``pair_x``, ``pair_y``; :func:`.shared_oof.shared_oof_at_site`), stratified 5-fold seeded from the rows;
        None without them (an export made under the formal option or before issue #37) or with a package that
        carries no prior."""
        from ...learn.own_cv import rows_seed
        from ...learn.site_update import folds_of, plan

        if not all(k in private for k in ("pair_x", "pair_y", "own_oof_rows")):
            return None
        X, y = np.asarray(private["pair_x"], np.float64), np.asarray(private["pair_y"], np.int64)
        rows = np.asarray(private["own_oof_rows"], np.int64)
        if X.ndim != 2 or y.shape != (len(X),) or rows.shape != y.shape or len(np.unique(y)) < 2:
            return None
        folds = folds_of(y, plan(y)[0], rows_seed(X, y))
        try:
            P = shared_oof_at_site(manifest, arrays, X, y, folds, private.get("pair_scale"))
        except (ConfigError, FormatError):
            return None
        return rows, P

    def apply(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
              X: np.ndarray) -> dict[str, np.ndarray]:
        """p(k | x) = softmax(0, θ₁ᵀz, …, θ_{K−1}ᵀz), z = [1, x]; the prediction is the most probable class: the
        shared model as sent (which model the site uses is decided beside it, :mod:`core.methods.promise`)."""
        classes = [str(c) for c in manifest.get("classes", [])]
        X = np.asarray(X, dtype=np.float64)
        coef = np.asarray(arrays.get("coef"))
        if len(classes) < 2 or coef.dtype.kind != "f" or coef.shape != (len(classes) - 1, X.shape[1] + 1):
            raise FormatError("the package's coefficients do not fit this site's columns and the kit's classes")
        proba = predict_proba(coef, X)
        out: dict[str, np.ndarray] = {"prediction": np.asarray(classes, dtype=object)[proba.argmax(axis=1)]}
        for k, c in enumerate(classes):
            out[f"prob_{c}"] = proba[:, k]
        return out
