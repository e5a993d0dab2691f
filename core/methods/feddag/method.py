"""FedDAG in one round (``feddag``): sites grouped by their data and their models' updates, computed by the
analyst on the DC-CFL bundle (algorithms.md §4; the engine and its equations are in :mod:`.similarity`).

The site side is DC-CFL's, unchanged (:func:`core.methods.dc_site.dc_site_compute` with labels): nothing more
leaves a site. At the analyst, in the canonical site order and with DC-CFL's derived seed (same bundles → same
packages whatever their order or names):

1. every site is aligned into one common space; data distance V (Eqs. 4–6: principal angles between the sites'
   class subspaces, weighted by class sizes), gradient distance G (Eq. 3: a shared θ⁰ warmed up on each site's
   rows, the last update on a shared 2 % mask), and the fused A = w·Ĝ + (1 − w)·V̂ with learned per-client
   weights w (Eqs. 7–8; ``fusion_sign``);
2. hierarchical clustering of the chosen ``view`` cut at every α of ``alpha_grid``; α is chosen by DC-CFL's
   cross-validated rule (``alpha = "auto"``, ``alpha_rule = "cluster"``: every distinct cluster, the global
   model at α = 1 and each site's own-rows models are candidates), the paper's loss L = L₁ + λL₂ (Eqs. 9–10)
   is reported per α;
3. the cross-cluster graph H (Eqs. 11–14) and the cluster models: ``encoder = "single"`` (FedDAG*) trains one
   DC-CFL model per cluster (its package is DC-CFL's, applied by DC-CFL's rule); ``"dual"`` trains dual
   encoders φ¹/φ² + head ψ in the all-site common space (FedDAG with ``sharing``, FedDAG† without), shipped as
   the arrays of docs/FORMAT.md §7.2, for the clusters where a second encoder has rows to learn from and
   cross-validates better than the one-encoder model;
4. each site is sent its cluster's model or its own rows' model when that cross-validates better, and the
   summary shows each site's expected accuracy against its own-rows model with n and 95 % CI — DC-CFL's
   selection code (:mod:`core.learn.cluster_models`), not a copy; every choice (α, dual encoder, the model of
   all sites, own model) maximises the kit's ``metric`` (accuracy, balanced accuracy or AUC), as DC-CFL's;
5. each site's clinical figures (``sites[i]["metrics"]``: AUC with its interval, sensitivity, specificity,
   calibration… or the multi-class ones) are those of the out-of-fold predictions of the model it is sent
   (``details["oof"]``), as DC-CFL's.

Default ``encoder = "single"``: see docs/results/feddag/feddag.md for FedDAG* against FedDAG.
"""

from __future__ import annotations

import numpy as np

from ...control import JobControl, ensure
from ...errors import FormatError
from ...formats.fields import CLUSTER_PACKAGE_FIELDS, Field
from ...learn.alignment import SiteMapping
from ...learn.client_clustering import cut_tree, label_histograms
from ...learn.cluster_models import adjust_proba, prior_logit, site_note
from ...learn.mlp import MLPWeights
from ...parallel import one_blas_thread
from ..base import ClientDistances, FitContext, Method, MethodResult, ReceivedBundle, need
from ..dc_analysis import (
    ALIGNMENT_SETTINGS,
    LEARNER_SETTINGS,
    PRIOR_SETTINGS,
    SELECTION_SETTINGS,
    apply_cluster_package,
    canonical_bundles,
    check_cluster_package,
    derived_seed,
    metric_views,
    site_line,
    site_metrics,
    site_views,
)
from ..dc_site import (
    DC_BUNDLE_FIELDS,
    LABELLED_DC_LEAVES,
    LABELLED_DC_RULES,
    SITE_SETTINGS,
    LabelledDCSite,
    dc_bundle_arrays,
    site_map,
)
from ..settings import Setting
from ..views import Curve, Heatmap, PageTexts, Table, Text, View
from . import similarity as fd

VIEW_WORDS = {"fused": "how different the sites' rows and their models' updates are",
              "data": "how different the sites' rows are, class by class",
              "gradient": "how differently a shared model learns on each site's rows"}
VIEW_TERMS = {"fused": "the fused data + gradient distance A (FedDAG Eqs. 7–8)",
              "data": "the class-wise data distance V̂ (FedDAG Eqs. 4–6)",
              "gradient": "the gradient distance Ĝ (FedDAG Eq. 3)"}


def _seed(seed: int, bundles: list[ReceivedBundle]) -> int:
    """DC-CFL's derived seed (SHA-256 of seed, kit and bundle digests), folded into 31 bits for the engines."""
    return derived_seed(int(seed), bundles) % (2**31 - 1)


class FedDAG(LabelledDCSite, Method):
    name = "feddag"
    title = "FedDAG: groups of sites by their data and their models' updates, optionally sharing across groups"
    plain_title = "one model per group of sites whose patients look alike, judged from the rows they sent"
    task = "classification"
    family = "dc"
    bundle_fields = DC_BUNDLE_FIELDS
    bundle_arrays = dc_bundle_arrays(labelled=True)
    bundle_rules = LABELLED_DC_RULES
    package_fields = (*CLUSTER_PACKAGE_FIELDS, Field("encoder", "text", choices=("single", "dual")))
    own_model_choice = "analyst"  # cross-validates every candidate on each site's received rows
    apply_per_row = True  # a fitted model applied row by row
    labels_leave = "rows"
    what_leaves = LABELLED_DC_LEAVES
    settings_spec = (
        Setting("alpha", "float", "auto", "threshold on the chosen distance that cuts sites into groups",
                label="Threshold α", low=0.0, high=1.0, auto=True, at_run=True, role="threshold",
                auto_help="chosen by cross-validation on the received rows"),
        Setting("view", "choice", "fused", "which distance between sites groups them", label="Similarity",
                choices=("fused", "data", "gradient"),
                choice_help=("data and gradient, weighed per site (FedDAG)", "class-wise data subspaces only",
                             "model updates only")),
        Setting("encoder", "choice", "single", "the model of each group", label="Group model",
                choices=("single", "dual"),
                choice_help=("one model per group (FedDAG*; measured best)",
                             "dual encoder: a second encoder trained on other groups' rows (FedDAG)")),
        Setting("sharing", "bool", True, "dual encoder: train the second encoder on the top source groups' rows "
                "(false: on the group's own rows, FedDAG†)", advanced=True),
        Setting("sharing_selection", "bool", True, "dual encoder: keep a group's second encoder only where it "
                "cross-validates better than the group's one-encoder model (false: always)", advanced=True),
        Setting("global_candidate", "bool", True, "offer every site the model of all sites too (sent where it "
                "cross-validates better than its group's)", advanced=True),
        Setting("top_k", "int", 2, "source groups each group borrows from (dual encoder)", low=0, high=1000,
                advanced=True),
        Setting("warm_start", "bool", True, "dual encoder: start the primary encoder from the members' averaged "
                "warm-up encoders (Eq. 22)", advanced=True),
        Setting("fusion_sign", "choice", "plus", "softmax of +A (as printed and coded) or −A in the fusion "
                "entropy (Eq. 8)", choices=("plus", "minus"), advanced=True),
        Setting("fusion_steps", "int", 100, "Adam steps learning the per-site weights", low=1, high=100000,
                advanced=True),
        Setting("fusion_lr", "float", 0.05, "Adam learning rate of the per-site weights", low=1e-6, high=10.0,
                advanced=True),
        Setting("angle", "choice", "basis", "Eq. 4's angle: between basis vectors (as printed) or the smallest "
                "principal angle", choices=("basis", "subspace"), advanced=True),
        Setting("n_basis", "int", 3, "principal vectors per (site, class)", low=1, high=1000, advanced=True),
        Setting("delta", "float", 0.5, "class-size weights lie in [1 − δ, 1 + δ] (Eq. 6)", low=0.0, high=1.0,
                advanced=True),
        Setting("epsilon", "float", 1.0, "ε in the class-size weights (Eq. 5)", low=1e-9, advanced=True),
        Setting("warmup_rounds", "int", 2, "warm-up rounds for the gradient distance", low=1, high=1000,
                advanced=True),
        Setting("warmup_epochs", "int", 10, "epochs per warm-up round", low=1, high=1000, advanced=True),
        Setting("warmup_lr", "float", 0.01, "warm-up SGD learning rate", low=1e-6, high=10.0, advanced=True),
        Setting("warmup_momentum", "float", 0.5, "warm-up SGD momentum", low=0.0, high=0.999, advanced=True),
        Setting("warmup_weight_decay", "float", 1e-4, "warm-up L2 penalty", low=0.0, advanced=True),
        Setting("warmup_batch_size", "int", 32, "warm-up rows per step", low=1, high=100000, advanced=True),
        Setting("mask_fraction", "float", 0.02, "share of the model's coordinates the update is compared on",
                low=1e-6, high=1.0, advanced=True),
        Setting("alpha_grid", "float_list", list(fd.ALPHA_GRID), "the thresholds tried when α is auto",
                advanced=True),
        Setting("alpha_rule", "choice", "cluster", "what the threshold α maximises when auto", label="α rule",
                choices=fd.ALPHA_RULES,
                choice_help=("the clusters' cross-validated accuracy, each site its cluster's model or its own "
                             "(DC-CFL's rule); the model of all sites is offered per site afterwards",
                             "the same, then the coarsest α within one standard error of the best",
                             "each site's best of its cluster's and all sites' model (optimistic: favours fine "
                             "splits)", "the same, then the coarsest α within one standard error of the best"),
                advanced=True),
        Setting("linkage", "choice", "weighted", "how groups of sites are merged", choices=fd.LINKAGES,
                advanced=True),
        Setting("holdout", "float", 0.2, "share of a site's received rows held out when one hold-out is used",
                low=0.05,
                high=0.5, advanced=True),
        Setting("loss_lambda", "float", 0.01, "λ of the paper's loss (reported, Eq. 9)", low=0.0, advanced=True),
        Setting("loss_gamma", "float", 1.0, "γ of the paper's size penalty (Eq. 10)", low=0.0, advanced=True),
        Setting("loss_tau", "float", 1.0, "τ of the paper's size penalty (Eq. 10)", low=1e-9, advanced=True),
        Setting("seed", "int", 0, "random seed of the warm-up, the hold-out split and the training",
                label="Random seed", low=0, high=2**31 - 1),
        *SELECTION_SETTINGS,
        *PRIOR_SETTINGS, *ALIGNMENT_SETTINGS, *LEARNER_SETTINGS, *SITE_SETTINGS,
    )

    def check_settings(self) -> None:
        grid = self.settings["alpha_grid"]
        need(all(0.0 <= a <= 1.0 for a in grid), "every α in alpha_grid must lie in [0, 1]")

    def _engine_settings(self, seed: int) -> dict:
        return {**{k: v for k, v in self.settings.items() if k in fd.DEFAULTS}, "seed": seed}

    # ---- site: DC-CFL's, unchanged (LabelledDCSite) ------------------------------------------------

    # ---- analyst -------------------------------------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        with one_blas_thread():
            return self._fit(bundles, list(context.classes), context.control, context.on_epoch)

    def _fit(self, received: list[ReceivedBundle], classes: list[str], control: JobControl | None,
             on_epoch=None) -> MethodResult:
        control = ensure(control)
        s = self.settings
        K = len(classes)
        order, bundles = canonical_bundles(received)   # canonical order: the same bundles give the same result
        seed = _seed(s["seed"], bundles)
        res = fd.fit(bundles, classes, self._engine_settings(seed), control=control.sub(0.0, 0.97), on_epoch=on_epoch)
        g = res.geometry
        smoothing = float(s["prior_smoothing"])
        cluster_of = {i: z for z, members in enumerate(res.clusters) for i in members}
        packages, sites = [], []
        for i, b in enumerate(bundles):
            z = cluster_of[i]
            members = res.clusters[z]
            kind, model = res.site_models[i]
            if kind != "dual":
                cm = model
                mapping, mean, scale, trained_counts = cm.mappings[i], cm.mean, cm.scale, cm.class_counts
                arrays = {**cm.model.to_arrays("mlp")}
                architecture = cm.model.architecture()
            else:
                de = model
                mapping, mean, scale = g.maps[i], g.mean, g.scale
                trained_counts = g.counts[list(members)].sum(axis=0)
                arrays = {**MLPWeights([w for w, _ in de.enc1], [c for _, c in de.enc1]).to_arrays("enc1"),
                          **MLPWeights([w for w, _ in de.enc2], [c for _, c in de.enc2]).to_arrays("enc2"),
                          **MLPWeights([de.head[0]], [de.head[1]]).to_arrays("head")}
                architecture = {"type": "dual_encoder", "activation": "relu",
                                "encoder_layers": [int(de.enc1[0][0].shape[0])] + [int(w.shape[1]) for w, _ in de.enc1],
                                "classes": K}
            arrays.update({**mapping.to_arrays(), "scaler_mean": np.asarray(mean, np.float64),
                           "scaler_scale": np.asarray(scale, np.float64)})
            site_intercepts = kind in ("site-intercepts", "global-si")
            if s["prior_correction"] and not site_intercepts:  # site intercepts carry the site's base rate already
                arrays["prior_logit"] = prior_logit(g.counts[i], trained_counts, smoothing)
            extra = dict(res.site_info[i])
            arrays.update(extra.pop("gate_arrays", {}))
            own_pick = extra.pop("own_pick", False)
            is_global = kind in ("global", "global-si")
            info = {"model": "own" if own_pick or (len(members) == 1 and not is_global) else
                    "global" if is_global else "cluster",
                    **({"own_kind": "linear"} if own_pick else {}),
                    "shared_kind": "site-intercepts" if site_intercepts else "mlp", **extra}
            manifest = {"method": self.name, "encoder": "dual" if kind == "dual" else "single", "cluster": z,
                        "cluster_size": len(members), "t": res.alpha, "classes": list(classes),
                        "architecture": architecture, "alignment": s["alignment"],
                        "dimension": int(mapping.G.shape[1]), **info}
            packages.append((manifest, arrays))
            note = site_note(info) if info.get("expected") else ""
            sites.append({"site": b.site, "fingerprint": b.fingerprint, "bundle_digest": b.digest,
                          "rows": int(g.counts[i].sum()), "cluster": z + 1,   # numbered from 1 for people
                          "weight": None if res.weights is None else float(res.weights[i]),
                          "label_counts": g.counts[i].tolist(), **info,
                          **({"holdout_accuracy": info["expected"]["accuracy"]} if info.get("expected") else {}),
                          **({"note": note} if note else {}),
                          **({"metrics": site_metrics(res.oof[i], b.arrays["y"], classes,
                                                      False)}
                             if res.oof and res.oof[i] is not None else {})})
        edges = [{"source": q + 1, "target": p + 1, "weight": float(res.H[p, q])}
                 for p, qs in enumerate(res.sources) for q in qs]
        grid = sorted(res.loss)
        summary = {
            "method": self.name, "task": self.task, "t": res.alpha, "alpha": res.alpha,
            "t_auto": s["alpha"] == "auto", "view": res.view, "encoder": res.encoder,
            "sharing": bool(s["sharing"]) if res.encoder == "dual" else None,
            "n_clusters": len(res.clusters),
            "cluster_models": list(res.cluster_kind),
            "selection": {**res.selection, "what": "mean over sites of the CV "
                          f"{res.selection['metric'].replace('_', ' ')} of the better of the cluster's and the "
                          "site's own model" if res.selection["own_model"] else "mean over sites of the cluster "
                          f"model's {res.selection['metric'].replace('_', ' ')}"},
            "own_model_sites": int(sum(1 for x in sites if (x.get("update") or {}).get("estimate") == "own")),
            "validation_curve": {f"{a:g}": float(v) for a, v in sorted(res.curve.items())},
            "paper_loss": {f"{a:g}": {"L": res.loss[a][0], "L1": res.loss[a][1], "L2": res.loss[a][2],
                                      "clusters": res.n_clusters[a]} for a in grid},
            "alpha_min_loss": res.alpha_min_loss,
            "graph": edges,
            "sites": sites, "settings": s,
        }
        if sites and all(x.get("expected") for x in sites):
            summary["expected_mean"] = float(np.mean([x["expected"]["accuracy"] for x in sites]))
            if all(x.get("own_model") for x in sites):
                summary["own_model_mean"] = float(np.mean([x["own_model"]["accuracy"] for x in sites]))
        details = {"data_distance": g.V, "gradient_distance": g.G, "matrix": res.matrix,
                   "weights": res.weights, "cc_graph": res.H, "clusters": res.clusters, "site_order": order,
                   "seconds": dict(res.seconds),
                   "oof": [None if res.oof is None or res.oof[i] is None else
                           (res.oof[i][0], b.arrays["y"][res.oof[i][0]], res.oof[i][1])
                           for i, b in enumerate(bundles)]}   # timings stay out of the summary: it is bit-reproducible
        control.step(1.0, "done")
        unorder = np.argsort(order)   # packages go back in the caller's bundle order
        return MethodResult(self.name, [packages[j] for j in unorder], summary, details)

    # ---- what it shows --------------------------------------------------------------------------
    def summary_lines(self, summary: dict) -> list[str]:
        s = summary
        how = " (chosen by cross-validation on the received rows)" if s.get("t_auto") else ""
        model = ("one model per cluster (FedDAG*)" if s.get("encoder") == "single" else
                 "dual encoders" + (" sharing across clusters (FedDAG)" if s.get("sharing") else
                                    " without sharing (FedDAG†)"))
        lines = [f"method {self.name}: α = {s.get('alpha')}{how} on the {s.get('view')} distance, "
                 f"{s.get('n_clusters')} cluster(s) of sites, {model}"]
        loss = s.get("paper_loss") or {}
        if loss:
            amin = s.get("alpha_min_loss")
            lines.append(f"  the paper's loss L would pick α = {amin} "
                         f"({loss.get(f'{amin:g}', {}).get('clusters', '?')} clusters); reported, not used")
        kinds = s.get("cluster_models") or []
        if "dual" in kinds:
            lines.append(f"  {kinds.count('dual')} of {len(kinds)} cluster(s) use a second encoder (it cross-validated "
                         "better there); the others a one-encoder model")
        if s.get("own_model_sites"):
            lines.append(f"  {s['own_model_sites']} site(s) keep a model of their own rows")
        n_global = sum(x.get("model") == "global" for x in s.get("sites", []))
        if n_global:
            lines.append(f"  {n_global} site(s) are sent the model of all sites (it cross-validated better there)")
        for x in s.get("sites", []):
            w = x.get("weight")
            lines.append(site_line(x, (f", gradient weight w = {w:.2f}" if w is not None else "")
                                   + (", sent the model of all sites" if x.get("model") == "global" else "")))
        for e in s.get("graph", []):
            lines.append(f"  cluster {e['source']} → cluster {e['target']} (H = {e['weight']:.3g})")
        return lines

    def views(self, result: MethodResult) -> list[View]:
        s, d = result.summary, result.details
        sites = s.get("sites", [])
        names = [x["site"] for x in sites]   # details and summary share the canonical site order
        out: list[View] = [Text(f"FedDAG grouped {len(sites)} site(s) into {s.get('n_clusters')} cluster(s) at "
                                f"α = {s.get('alpha')} on {VIEW_WORDS.get(s.get('view'), s.get('view'))}; "
                                "everything was computed here from the DC-CFL bundles (nothing more left a site).")]
        kinds = s.get("cluster_models") or []

        def word(x):
            if x.get("model") == "own" and x.get("own_kind"):
                return "own rows"
            if x.get("model") == "global":
                return "all sites' model"
            k = kinds[x["cluster"] - 1] if len(kinds) >= x["cluster"] else "single"
            return "cluster, dual encoder" if k == "dual" else "cluster"

        out += site_views(result, (("gradient weight w", lambda x: "" if x.get("weight") is None
                                    else round(float(x["weight"]), 3)),), word)
        out += metric_views(result)
        if len(names) > 1 and "data_distance" in d:
            out.append(Heatmap("How different the sites' rows are, class by class (angle in degrees)",
                               np.asarray(d["data_distance"]), names, names, 0.0, 90.0))
            out.append(Heatmap("How differently a shared model learns on each site (angle in degrees)",
                               np.asarray(d["gradient_distance"]), names, names, 0.0, 180.0))
            used = VIEW_WORDS.get(s.get("view"), s.get("view"))
            out.append(Heatmap(f"Difference the grouping used: {used}", np.asarray(d["matrix"]), names, names, 0.0,
                               1.0))
        loss = s.get("paper_loss") or {}
        curve = s.get("validation_curve") or {}
        if loss:
            xs = sorted(float(a) for a in loss)
            word = (s.get("selection") or {}).get("metric", "accuracy").replace("_", " ")
            series = {"paper's loss L": [loss[f"{a:g}"]["L"] for a in xs]}
            if curve and set(curve) == set(loss):
                series = {f"cross-validated {word}": [curve[f"{a:g}"] for a in xs], **series}
            out.append(Curve(f"Cross-validated {word} and the paper's loss for each threshold α", xs, series,
                             xlabel="α", ylabel=f"{word} / loss", mark=float(s.get("alpha", xs[0]))))
            out.append(Table("Threshold grid", ["α", "clusters", f"cross-validated {word}", "paper's loss L", "L1",
                                                "L2"],
                             [[a, loss[f"{a:g}"]["clusters"], curve.get(f"{a:g}", ""), loss[f"{a:g}"]["L"],
                               loss[f"{a:g}"]["L1"], loss[f"{a:g}"]["L2"]] for a in xs]))
        edges = s.get("graph") or []
        if edges:
            out.append(Table("Sharing between groups: which group's rows help train which group's model",
                             ["from group", "to group", "weight"],
                             [[e["source"], e["target"], e["weight"]] for e in edges]))
        return out

    @classmethod
    def page_texts(cls) -> PageTexts:
        """FedDAG's words: groups of sites whose rows and model updates look alike, cut at α."""
        return PageTexts(
            models="One model is trained per group of sites whose rows look alike, judged from the rows they sent "
                   "and from how a shared model learns on them. Each site's expected accuracy (and the cut α, when "
                   "automatic) comes from rows no model saw in training: every row is predicted by models trained "
                   "without it (5-fold cross-validation; one held-out fifth instead when the typical site sent 1,000 "
                   "rows or more).",
            loss="Training loss per group model (live)", loss_y="cross-entropy",
            loss_tip="mean cross-entropy of each group's model on its own rows",
            loss_before="The training loss of each group's model appears here, epoch by epoch, once you press Train.",
            loss_during="Comparing the sites and choosing the cut α first (short warm-up models on each site's "
                        "rows); the loss of the final models appears here when their training starts.",
            accuracy="Expected accuracy per site (rows not seen in training)",
            accuracy_before="Each site's expected accuracy, on rows no model saw in training, appears here after "
                            "training.",
            accuracy_none="No expected accuracy for this run.",
            clients="Sites whose rows look alike are trained together. Drag the red line on the dendrogram to "
                    "choose the cut α: the sites of every group then differ by at most α (0: alike, 1: most "
                    "different).",
            distance="difference between sites",
            distance_tip=VIEW_TERMS["fused"] + " by default; the kit's 'view' setting may choose "
                         + VIEW_TERMS["data"] + " or " + VIEW_TERMS["gradient"],
            threshold="α", auto_panel=True)

    def client_distances(self, bundles: list[ReceivedBundle], classes: list[str]) -> ClientDistances | None:
        """The distance of ``view`` (the fused A by default) in the caller's bundle order, computed as ``fit``
        computes it (canonical order, derived seed), with its linkage and cut."""
        K = len(classes)
        if len(bundles) < 2 or K < 2:
            return None
        order, canon = canonical_bundles(bundles)
        s = fd.settings_with(**self._engine_settings(_seed(self.settings["seed"], canon)))
        with one_blas_thread():
            g = fd.geometry(canon, K, s)
            M, _ = fd.view_matrix(g, s)
        back = np.argsort(order)
        D = M[np.ix_(back, back)]
        D = 0.5 * (D + D.T)
        np.fill_diagonal(D, 0.0)
        from scipy.cluster.hierarchy import linkage as hier_linkage  # (scipy: not on a site's export path)
        from scipy.spatial.distance import squareform

        Z = hier_linkage(squareform(D, checks=False), method=s["linkage"])
        counts = g.counts[back]
        return ClientDistances(D, label_histograms(counts), Z, lambda t: cut_tree(Z, len(D), float(t)),
                               VIEW_WORDS[s["view"]] + " between the sites")

    # ---- site, after the round -----------------------------------------------------------------
    def check_package(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
                      kit) -> None:
        # FORMAT §7, every package kind
        check_cluster_package(manifest, arrays, private_arrays, kit, self.default_settings())

    def apply(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
              X: np.ndarray) -> dict[str, np.ndarray]:
        if manifest.get("encoder", "single") == "single":
            return apply_cluster_package(manifest, arrays, private_arrays, X)  # DC-CFL's package, DC-CFL's rule
        f = site_map(private_arrays)
        mapping = SiteMapping.from_arrays(arrays)
        enc1, enc2 = MLPWeights.from_arrays(arrays, "enc1"), MLPWeights.from_arrays(arrays, "enc2")
        head = MLPWeights.from_arrays(arrays, "head")
        classes = list(manifest["classes"])
        if (mapping.G.shape[0] != f.n_components or enc1.n_features != mapping.G.shape[1]
                or enc2.n_features != mapping.G.shape[1]
                or head.n_features != enc1.weights[-1].shape[1] + enc2.weights[-1].shape[1]
                or head.n_classes != len(classes) or len(head.weights) != 1):
            raise FormatError("the package does not fit this site's private reduction")
        Z = (mapping.transform(f.transform(X)) - arrays["scaler_mean"]) / arrays["scaler_scale"]
        model = fd.DualEncoder(list(zip(enc1.weights, enc1.biases, strict=True)),
                               list(zip(enc2.weights, enc2.biases, strict=True)), (head.weights[0], head.biases[0]))
        prior = arrays.get("prior_logit")
        if prior is not None and (np.shape(prior) != (len(classes),) or not np.all(np.isfinite(prior))):
            raise FormatError("the package's class-prior correction does not match its class list")
        proba = adjust_proba(model.predict_proba(Z).astype(np.float64), prior)
        out = {"prediction": np.asarray(classes, dtype=object)[proba.argmax(axis=1)]}
        for k, c in enumerate(classes):
            out[f"prob_{c}"] = proba[:, k]
        return out
