"""DC analysis with one shared model (``dc``) and DC-CFL (``dccfl``): algorithms.md §1.3–1.4 and §2.

DC-CFL (Sugawara, Kawamata et al.):
1. pᵢ = label histogram of site i; Dᵢⱼ = TV(pᵢ, pⱼ); complete linkage cut at t (§2.1 steps 2–4);
2. per cluster C_l: DC alignment on the members' anchor images only (its own m̂_l), X̂^(l) = [X̃ᵢGᵢ]_{i∈C_l},
   standardise, train h_l (MLP d → 64 → 32 → K, SGD lr 0.01, momentum 0.5, batch 32, 50 epochs);
3. a singleton cluster trains on that site alone; inference h_l(standardise(fᵢ(x)Gᵢ + gᵢ)).
Selection (issue #15, "results a small consortium can trust"):
- Determinism: the sites are put in a canonical order (by content digest, :func:`site_order`) before anything
  else, and every random choice (folds, initialisations, shuffles, subsamples) draws from
  :func:`derived_seed` = SHA-256(seed, sorted digests of the bundles' decrypted arrays): the same bundles give
  bit-identical packages and summary whatever the order, names or import times of the files, and so does the
  same content sealed again.
- Cross-validation over all of every site's received rows (nothing more is asked of sites): each site's rows
  are dealt into k folds (``cv_folds = "auto"``: 5, or one 20 % hold-out when the median site has ≥ 1,000
  rows), repeated ``cv_repeats`` times (auto: ⌈100 / median rows⌉, 1–3). For every split, every distinct
  cluster over the t grid is trained on the training folds of its members (one batched fit) and scored on
  each member's test fold; a site's CV accuracy of a candidate is correct predictions / tested rows.
- Never worse than alone, by construction: each site's candidates also include a model of its own received rows
  only — a logistic regression (:func:`~core.learn.cluster_models.fit_linear`, the twin of the baseline the site
  keeps, :mod:`core.learn.local_model`). A site keeps its own model when that cross-validates strictly better
  than its cluster's; a site with < 30 rows, whose estimates cannot tell small differences from noise, keeps its
  own unless its cluster's is clearly better on the same CV rows (McNemar's exact one-sided test at 5 %,
  :func:`~core.learn.cluster_models.clearly_better`). t maximises the mean over sites of the CV accuracy of what
  each site would be sent; ties in t → the larger t. A package that says "keep your own" (``model`` = ``own``)
  is applied with the logistic regression the site trained on its raw rows at export, when its workspace holds
  it: exactly the model it would have had alone. (An own-rows MLP is no separate candidate: taking the better of
  two noisy own-rows scores favoured "alone" by chance — measured on the DC-CFL benchmark's gesture cells; a
  singleton cluster at a small t still trains one.)
- Honest numbers: the summary gives, per site, the CV accuracy of what it is sent and of its own-rows model,
  each with n = the site's rows and a 95 % Wilson interval (:mod:`core.learn.intervals`), and flags a site
  whose interval is wider than 20 pt.
- Scale: selection models train on at most ``selection_site_rows`` rows per member and
  ``selection_max_rows`` in total (seeded subsamples); when one split's groups would hold more than
  ``selection_total_rows`` rows in all (a million: thousands of sites), the biggest groups' cap shrinks until they
  fit (:func:`~core.learn.cluster_models.selection_cap`), so the selection stops growing with the sites; a final
  model bigger than ``max_epoch_rows`` sees that many fresh random rows per epoch. None of these binds at the
  DC-CFL benchmark's sizes (≤ 12,000 rows per cluster) or on the clinical tables.
t ≥ 1 puts every site in one cluster (TV distances never exceed 1). ``dc`` is the same with one cluster
holding every site.

Product defaults versus the paper's recipe (measured in docs/results/dccfl/): the defaults use affine
alignment (§1.4; exact for centred private maps such as PCA) and correct each site's predictions for its
own class prior (``prior_correction``): the cluster model was trained under the cluster's class
frequencies π_l, the site's rows follow its own π_i, so the Bayes-optimal adjustment is
p_i(k|x) ∝ p_l(k|x)·π_i(k)/π_l(k), with Laplace-smoothed frequencies (``prior_smoothing``) from the labels
the site already shipped; the site receives the log-ratio vector in its package. The hold-out choice of t
scores the corrected predictions (``prior_in_selection``), and the grid runs to t = 1.0 (one cluster):
once the prior is corrected per site, a bigger cluster often wins, and the cross-validation decides.
The paper's recipe is ``alignment="linear", prior_correction=False, t_grid=[0.1..0.9]`` with one 20 % hold-out
and no own-rows candidates (``cv_folds=1, cv_repeats=1, own_model=False``).
"""

from __future__ import annotations

import numpy as np

from ..control import JobControl, ensure
from ..formats.fields import CLUSTER_PACKAGE_FIELDS
from ..learn.alignment import AnchorBasis
from ..learn.client_clustering import LabelDistributionClustering
from ..learn.cluster_models import (
    bundle_own_cv,
    cross_validate,
    cross_validate_linear,
    cross_validate_si,
    fit_groups,
    fit_site_intercept_groups,
    is_si_key,
    new_selection,
    opt_int,
    pick_own,
    prior_logit,
    shared_key,
    si_key,
    site_estimates,
    site_note,
)
from ..parallel import one_blas_thread
from .base import ClientDistances, FitContext, Method, MethodResult, ReceivedBundle
from .dc_analysis import (
    ALIGNMENT_SETTINGS,
    DEFAULT_T_GRID,
    LEARNER_SETTINGS,
    PRIOR_SETTINGS,
    SELECTION_SETTINGS,
    apply_cluster_package,
    canonical_bundles,
    check_cluster_package,
    chosen_oof,
    derived_seed,
    metric_views,
    site_gate,
    site_line,
    site_metrics,
    site_views,
)
from .dc_site import (
    DC_BUNDLE_FIELDS,
    LABELLED_DC_LEAVES,
    LABELLED_DC_RULES,
    SITE_SETTINGS,
    LabelledDCSite,
    dc_bundle_arrays,
)
from .settings import Setting
from .views import Curve, Heatmap, PageTexts, View


def _partition(labels: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(np.flatnonzero(labels == c).tolist()) for c in range(int(labels.max()) + 1)]


class DCCFL(LabelledDCSite, Method):
    name = "dccfl"
    title = "DC-CFL: one model per group of sites with similar label mixes"
    plain_title = "one model per group of sites with a similar mix of outcomes (label mix)"
    task = "classification"
    labels_leave = "rows"
    family = "dc"
    bundle_fields = DC_BUNDLE_FIELDS
    bundle_arrays = dc_bundle_arrays(labelled=True)
    bundle_rules = LABELLED_DC_RULES
    package_fields = CLUSTER_PACKAGE_FIELDS
    own_model_choice = "analyst"  # cross-validates every candidate on each site's received rows
    apply_per_row = True  # a fitted model applied row by row
    what_leaves = LABELLED_DC_LEAVES
    one_cluster = False
    settings_spec = (
        Setting("t", "float", "auto", "threshold on the label-distribution distance that cuts sites into groups",
                label="Threshold t", low=0.0, high=1.0, auto=True, at_run=True, role="threshold",
                auto_help="chosen by cross-validation on the received rows"),
        Setting("t_grid", "float_list", list(DEFAULT_T_GRID), "the thresholds tried when t is auto", advanced=True),
        Setting("linkage", "choice", "complete", "how groups of sites are merged",
                choices=("complete", "average", "single"), advanced=True),
        Setting("holdout", "float", 0.2, "share of a site's received rows held out when one hold-out is used",
                low=0.05,
                high=0.5, advanced=True),
        Setting("seed", "int", 0, "random seed of the hold-out split and the training", label="Random seed",
                low=0, high=2**31 - 1),
        *SELECTION_SETTINGS, *PRIOR_SETTINGS, *ALIGNMENT_SETTINGS, *LEARNER_SETTINGS, *SITE_SETTINGS,
    )

    # ---- analyst (the site side is LabelledDCSite's) ------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        with one_blas_thread():
            return self._fit(bundles, context.classes, context.control, context.on_epoch)

    def _fit(self, received: list[ReceivedBundle], classes: list[str], control: JobControl | None,
             on_epoch) -> MethodResult:
        control = ensure(control)
        s = self.settings
        K = len(classes)
        order, bundles = canonical_bundles(received)   # everything below works in the canonical site order
        seed = derived_seed(int(s["seed"]), bundles)
        S = len(bundles)
        n_rows = [int(b.arrays["y"].shape[0]) for b in bundles]
        counts = np.stack([np.bincount(b.arrays["y"], minlength=K) for b in bundles])
        clus = LabelDistributionClustering(method=s.get("linkage", "complete")).fit(counts)
        grid = [float(t) for t in s.get("t_grid", [1.0])]
        candidates = [1.0] if self.one_cluster else grid
        if not self.one_cluster and s.get("t", "auto") != "auto":
            candidates = [float(s["t"])]
        everyone = [tuple(range(S))]
        partitions = {t: (everyone if self.one_cluster or t >= 1.0 else _partition(clus.cut(t)))
                      for t in candidates}
        basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=s["alignment"] == "affine")
        own_on = bool(s["own_model"])
        smoothing = float(s["prior_smoothing"])
        maps: dict = {}

        # ---- selection: cross-validated accuracy of every candidate model for every site ------------------
        sel = None
        folds = repeats = 0
        if len(partitions) > 1 or own_on:
            sel = new_selection(n_rows, s, seed, [bundle_own_cv(b, K) for b in bundles], K)
            folds, repeats = sel.folds, sel.repeats
            distinct = sorted({c for p in partitions.values() for c in p})
            control.phase(f"step 1 of 2, choosing the threshold ({len(partitions)} candidates)" if len(partitions) > 1
                          else "step 1 of 2, checking each site's own-rows model")
            control.step(0.0, f"cross-validating {len(distinct)} candidate model(s) over {len(sel.splits)} split(s)")
            cross_validate(sel, bundles, distinct, K, s, basis, seed=seed, maps=maps, control=control.sub(0.0, 0.6))
            if s.get("site_intercepts", True):  # each group's linear model with one intercept per site
                cross_validate_si(sel, bundles, distinct, K, s, basis, seed=seed, maps=maps)
            if own_on:  # the site's own rows, linear: a logistic regression (what the site checks against)
                cross_validate_linear(sel, bundles, K, s, basis, maps)
        curve: dict[float, float] = {t: sel.score(part, own_on) for t, part in partitions.items()} if sel else {}
        best = max(curve, key=lambda t: (round(curve[t], 12), t)) if len(curve) > 1 else next(iter(partitions))
        final = partitions[best]
        cluster_of = {i: k for k, members in enumerate(final) for i in members}
        # Per site: its group's shared model (the MLP, or the linear model with site intercepts when that
        # cross-validates better for the site), always sent; the site then compares it with its own model on its own
        # rows (issue #37, dc_analysis.site_gate). own_pick is the analyst's own guess, kept in the package for a
        # site whose workspace predates the paired comparison.
        keys = [shared_key(sel, final[cluster_of[i]], i) if sel else final[cluster_of[i]] for i in range(S)]
        cluster_acc = np.array([sel.acc(keys[i])[i] for i in range(S)]) if sel else np.zeros(S)
        cluster_score = np.array([sel.score_of(keys[i])[i] for i in range(S)]) if sel else cluster_acc
        own_pick, _ = pick_own(sel, cluster_score, own_on, keys) if sel else ([False] * S, [False] * S)
        acc = sel is not None
        need = sorted({k for k in keys if not is_si_key(k)})
        need_si = sorted({k[1] for k in keys if is_si_key(k)})
        control.phase(("step 2 of 2, " if acc else "") + f"training the final model{'s' if len(need) > 1 else ''}"
                      + f" at t = {best:g}")
        control.step(0.6, "starting")
        trained = fit_groups(bundles, [(c, None) for c in need], K, s, basis, seed=seed, maps=maps,
                             epoch_rows=opt_int(s["max_epoch_rows"]), control=control.sub(0.6, 1.0),
                             on_epoch=on_epoch) if need else []
        model_of: dict = dict(zip(need, trained, strict=True))
        for c, per_site in zip(need_si, fit_site_intercept_groups(bundles, [(c, None) for c in need_si], K, s, basis,
                                                                  seed=seed, maps=maps), strict=True):
            for i in c:
                model_of[(si_key(c), i)] = per_site[i]
        gates = [site_gate(sel, bundles, i, keys[i], K, s, basis, maps) if acc and own_on else None
                 for i in range(S)]
        oof = chosen_oof(sel, bundles, keys, K, s, basis, maps) if sel else None
        packages, sites = [], []
        for i, b in enumerate(bundles):
            si = is_si_key(keys[i])
            cm = model_of[(keys[i], i)] if si else model_of[keys[i]]
            arrays = {**cm.mappings[i].to_arrays(), "scaler_mean": cm.mean, "scaler_scale": cm.scale,
                      **cm.model.to_arrays("mlp")}
            if s["prior_correction"] and not si:  # a site-intercept model carries the site's base rate already
                arrays["prior_logit"] = prior_logit(counts[i], cm.class_counts, smoothing)
            members = final[cluster_of[i]]
            info = {"model": "own" if own_pick[i] else "cluster" if len(members) > 1 else "own",
                    "shared_kind": "site-intercepts" if si else "mlp"}
            if own_pick[i]:
                info["own_kind"] = "linear"
            if acc:
                info.update(site_estimates(sel, i, cluster_acc[i], cluster_acc[i], own_on))
            if gates[i] is not None:
                gate_arrays, gate_info = gates[i]
                arrays.update(gate_arrays)
                info.update(gate_info)
            manifest = {"method": self.name, "cluster": cluster_of[i], "cluster_size": len(members),
                        "t": best, "classes": list(classes), "architecture": cm.model.architecture(),
                        "alignment": s["alignment"], "dimension": int(cm.mappings[i].G.shape[1]), **info}
            packages.append((manifest, arrays))
            sites.append({"site": b.site, "fingerprint": b.fingerprint, "bundle_digest": b.digest,
                          "rows": n_rows[i], "cluster": cluster_of[i] + 1,  # numbered from 1 for people
                          "label_counts": counts[i].tolist(),
                          **info, **({"holdout_accuracy": info["expected"]["accuracy"]} if acc else {}),
                          **({"note": site_note(info)} if acc and site_note(info) else {}),
                          **({"metrics": site_metrics(oof[i], b.arrays["y"], classes, False)}
                             if oof and oof[i] is not None else {})})
        control.step(1.0, "done")
        unorder = np.argsort(order)   # packages go back in the caller's bundle order
        summary = {
            "method": self.name, "task": self.task, "t": best,
            "t_auto": s.get("t") == "auto" and not self.one_cluster,
            "validation_curve": {f"{t:g}": a for t, a in curve.items()},
            "selection": {"kind": ("cv" if folds > 1 else "holdout") if acc else "none", "folds": folds,
                          "repeats": repeats, "own_model": own_on,
                          "metric": sel.metric if sel else "accuracy",
                          "what": f"mean over sites of the CV {(sel.metric if sel else 'accuracy').replace('_', ' ')}"
                                  " of what each is sent (its cluster's model or its own)"
                          if own_on else "mean over sites of the cluster model's "
                                         f"{(sel.metric if sel else 'accuracy').replace('_', ' ')}"},
            "n_clusters": len(final),
            "own_model_sites": int(sum(1 for x in sites if (x.get("update") or {}).get("estimate") == "own")),
            "final_models": len(need),
            "sites": sites,
            "settings": s,
        }
        if acc:
            summary["expected_mean"] = float(np.mean([x["expected"]["accuracy"] for x in sites]))
            if own_on:
                summary["own_model_mean"] = float(np.mean([x["own_model"]["accuracy"] for x in sites]))
        details = {"histograms": clus.histograms_, "distances": clus.distances_, "linkage": clus.linkage_,
                   "clusters": final, "validation_curve": curve, "site_order": order,
                   "oof": [None if oof is None or oof[i] is None else
                           (oof[i][0], b.arrays["y"][oof[i][0]], oof[i][1]) for i, b in enumerate(bundles)]}
        return MethodResult(self.name, [packages[j] for j in unorder], summary, details)

    def estimate(self, bundles: list[ReceivedBundle], classes: list[str],
                 control: JobControl | None = None) -> dict:
        """"Simulate before you collaborate": the fit's per-site expected accuracy against its own-rows model
        (cross-validated on the received rows), without sealing anything; the summary of :meth:`fit`."""
        return self.fit(bundles, FitContext(classes, control=control)).summary

    # ---- what it shows --------------------------------------------------------------------------
    def summary_lines(self, summary: dict) -> list[str]:
        s = summary
        how = " (chosen by cross-validation on the received rows)" if s.get("t_auto") else ""
        lines = [f"method {self.name}: t = {s.get('t')}{how}, {s.get('n_clusters')} cluster(s) of sites"
                 + (f"; {s['own_model_sites']} site(s) keep a model of their own rows" if s.get("own_model_sites")
                    else "")]
        return lines + [site_line(x) for x in s.get("sites", [])]

    def views(self, result: MethodResult) -> list[View]:
        s, d = result.summary, result.details
        sites = s.get("sites", [])
        out: list[View] = site_views(result) + metric_views(result)
        if "distances" in d and len(d["distances"]) > 1:
            names = [x["site"] for x in sites]  # the distances and the summary share the canonical site order
            out.append(Heatmap("Total-variation distance between the sites' label distributions",
                               np.asarray(d["distances"]), names, names))
        curve = s.get("validation_curve") or {}
        if len(curve) > 1:
            xs = [float(t) for t in curve]
            word = (s.get("selection") or {}).get("metric", "accuracy").replace("_", " ")
            out.append(Curve(f"Cross-validated {word} for each threshold t", xs, {word: list(curve.values())},
                             xlabel="t", ylabel=word, mark=float(s.get("t", xs[0]))))
        return out

    @classmethod
    def page_texts(cls) -> PageTexts:
        """DC-CFL's words: one model per cluster of sites cut at t; out-of-fold predictions (cross-validation, or
        one hold-out for large sites: :func:`core.learn.cluster_models.resolve_cv`) measure accuracy and choose t."""
        return PageTexts(
            models="One model is trained per group of sites with similar label mixes, on the aligned compressed "
                   "rows. Each site's expected accuracy (and the threshold t, when automatic) comes from rows no "
                   "model saw in training: every row is predicted by models trained without it (5-fold "
                   "cross-validation; one held-out fifth instead when the typical site sent 1,000 rows or more).",
            loss="Training loss per group model (live)", loss_y="cross-entropy",
            loss_tip="mean cross-entropy of each cluster model on its training rows",
            loss_before="The training loss of each group's model appears here, epoch by epoch, once you press Train.",
            loss_during="Choosing the threshold first (models trained on most of each site's rows); the loss of the "
                        "final models appears here when their training starts.",
            accuracy="Expected accuracy per site (rows not seen in training)",
            accuracy_before="Each site's expected accuracy, on rows no model saw in training, appears here after "
                            "training.",
            accuracy_none="No expected accuracy for this run: with a fixed threshold and the sites' own check off, "
                          "no model was cross-validated.",
            clients="Sites whose label mixes are close are trained together. Drag the red line on the dendrogram to "
                    "choose the threshold t: the sites of every group then differ by at most t.",
            distance="difference in label mix",
            distance_tip="total-variation distance between the sites' label distributions (0: the same mix, 1: no "
                         "class in common)",
            threshold="t", auto_panel=True)

    def client_distances(self, bundles: list[ReceivedBundle], classes: list[str]) -> ClientDistances | None:
        K = len(classes)
        if len(bundles) < 2 or K < 2:
            return None
        counts = np.stack([np.bincount(np.asarray(b.arrays["y"]), minlength=K)[:K] for b in bundles])
        clus = LabelDistributionClustering(method=self.settings.get("linkage", "complete")).fit(counts)
        return ClientDistances(clus.distances_, clus.histograms_, clus.linkage_, clus.cut,
                               "total-variation distance between the sites' label distributions")

    # ---- site, after the round -----------------------------------------------------------------
    def check_package(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
                      kit) -> None:
        # FORMAT §7, every package kind
        check_cluster_package(manifest, arrays, private_arrays, kit, self.default_settings())

    def apply(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
              X: np.ndarray) -> dict[str, np.ndarray]:
        return apply_cluster_package(manifest, arrays, private_arrays, X)


class DC(DCCFL):
    name = "dc"
    title = "DC analysis: one shared model for all sites"
    plain_title = "one model shared by all sites"
    one_cluster = True
    settings_spec = tuple(s for s in DCCFL.settings_spec if s.name not in ("t", "t_grid", "linkage"))

    def summary_lines(self, summary: dict) -> list[str]:
        """The one-model line, then each site's line with its figures (as DC-CFL's)."""
        return ([f"method {self.name}: one model for all {len(summary.get('sites', []))} sites"
                 + (f"; {summary['own_model_sites']} site(s) keep a model of their own rows"
                    if summary.get("own_model_sites") else "")]
                + [site_line(x) for x in summary.get("sites", [])])

    @classmethod
    def page_texts(cls) -> PageTexts:
        """One model for every site: no threshold, no choice to hold rows out for."""
        return PageTexts(
            models="One model is trained for all sites together, on the aligned compressed rows. Each site's "
                   "expected accuracy comes from rows the model did not see in training (out-of-fold).",
            loss="Training loss (live)", loss_y="cross-entropy",
            loss_tip="mean cross-entropy of the shared model on its training rows",
            clients="How the sites' label mixes differ (for exploring: this method trains one model for all sites).",
            distance="difference in label mix",
            distance_tip="total-variation distance between the sites' label distributions")

    def views(self, result: MethodResult) -> list[View]:
        """DC-CFL's Sites table and clinical figures, without the distances and the t curve (one cluster)."""
        return site_views(result) + metric_views(result)
