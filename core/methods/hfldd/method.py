"""DC with distilled sets (``hfldd``): HFLDD made one-shot, behind the DC family's site step and alignment.

Site (algorithms.md §1.2 then §7): the DC private reduction X̃ᵢ = fᵢ(Xᵢ), X̃ᵢᵃⁿᶜ = fᵢ(X^anc) exactly as
``dccfl`` computes it (:func:`core.methods.dc_site.dc_site_compute`, noise included), then distillation of
X̃ᵢ in the site's anchor-whitened space z = (x − μ_A) W_A (μ_A, W_A from the shipped anchor image;
:func:`core.methods.hfldd.kip.anchor_whitening`), max(``rows_per_class``, ⌈``rows_share``·n_c⌉) rows per class present.
Default (``objective="match"``): start at the class's kernel-herding choice of real rows and move them by Adam
to minimise Σ_c MMD²(S_c, X̃ᵢ,c) with the energy-distance kernel k = −‖x − x'‖ (class-wise distribution
matching towards support points), then rescale each class's rows about the class mean so that their mean
squared distance to it equals the real rows' (the best k-point set of a class huddles nearer its mean than the
class's rows do, and since every site does the same the union's classes come out too narrow for the analyst's
MLP; docs/results/hfldd/README.md). ``objective="kip"``: Kernel Inducing Points (HFLDD Eq. 1), NTK kernel, early
stop on a 20 % local hold-out. The site ships the distilled rows and their labels,
the soft labels S_i = softmax(h_i(X̃ᵢᵃⁿᶜ)) of a local model h_i (HFLDD §III-B), ``anchor_rows`` evenly
spaced rows of its anchor image (the same rows at every site), and its class counts — never X̃ᵢ. The
export measures how far each distilled row lies from the nearest real reduced row, in units of the real
rows' own median nearest-neighbour spacing (:func:`core.methods.hfldd.kip.nn_disclosure`), and refuses to ship a
row equal to a real one.

Analyst: DC alignment on the shipped anchor images (affine by default, :class:`AnchorBasis`), the KL matrix
M_ij = (1/r) Σ_k Σ_c S_ik^c log(S_ik^c / S_jk^c) (HFLDD Eq. 4) and k-means on its rows into ``clusters``
groups (1: one model), and one MLP per group on the union of its members' aligned distilled sets with at
least ``min_steps`` SGD steps (small unions need ≥ 10,000, docs/results/hfldd/README.md item 1). Packages
are DC-CFL's (mapping, scaler, MLP, class-prior correction from the shipped counts), so ``apply`` is DC-CFL's.
Why the MLP and not KIP's own kernel-ridge model: KRR predicts from the training rows themselves, so every
site's package would have to carry every other site's distilled rows.
"""

from __future__ import annotations

import math

import numpy as np

from ...control import JobControl, ensure
from ...errors import ConfigError, FormatError
from ...formats.fields import CLUSTER_PACKAGE_FIELDS, Array, Field, Rule, register_fields, site_rows
from ...learn.alignment import AnchorBasis
from ...learn.client_clustering import LabelDistributionClustering
from ...learn.cluster_models import prior_logit, train_cluster_models
from ...learn.intervals import describe
from ...learn.own_cv import alone_estimate, read_own_cv
from ...parallel import one_blas_thread
from ...privacy.release import DISTILLED_ROWS, Release
from ..base import (
    ClientDistances,
    Disclosure,
    FitContext,
    Method,
    MethodResult,
    ReceivedBundle,
    SiteExport,
    SiteInput,
    canonical_order,
)
from ..dc_analysis import (
    ALIGNMENT_SETTINGS,
    LEARNER_SETTINGS,
    PRIOR_SETTINGS,
    apply_cluster_package,
    check_cluster_package,
)
from ..dc_site import DC_BUNDLE_FIELDS, DC_REDUCED_RULES, MIN_ROWS, SITE_SETTINGS, dc_site_compute
from ..settings import Setting
from ..views import SITE_ROWS_TIP, Heatmap, PageTexts, Table, Text, View, site_rows_cell
from .kip import KIPSettings, distill_sites, kl_clusters, kl_matrix, local_soft_labels, nn_disclosure
from .near_copies import DEFAULT_FRACTION, keep_apart

# As measured best (docs/results/hfldd/README.md): anchor-whitened space, target batch 64; KIP with early stop
# on a 20 % hold-out; distribution matching (class-wise energy distance, no KRR term) for a fixed number of steps,
# its rows then given the real rows' spread around each class mean.
# Why HFLDD has no per-site figures: only distilled rows leave a site, and scoring on them would score the
# model on rows made to be easy for it. (KIP's 20 % hold-out is the site's own, scores the distilled set's
# kernel-ridge fit, not the analyst's MLP, and is off under the default objective "match": nothing to report.)
NOT_SCORED = ("the analyst cannot score the model on any site's real rows (only distilled rows leave): each site tries "
              "it, when the package arrives, on rows it set aside at export and keeps its own model unless the "
              "package is better by more than 1.645 standard errors (check again on other labelled rows: dcstudio "
              "participant apply --validate)")
KIP_DEFAULTS = {"kernel": "ntk", "lr": 0.01, "target_batch": 64, "holdout": 0.2, "scale": "anchor", "patience": 5}
OBJECTIVES = {"kip": {}, "match": {"kip_weight": 0.0, "mmd_weight": 1.0, "holdout": 0.0, "mmd_kernel": "energy",
                                   "match_spread": True}}
COPY_TOLERANCE = 1e-6  # a shipped row closer than this × the data's spacing to a real row counts as a copy


def anchor_subset(total: int, wanted: int) -> np.ndarray:
    """Indices of ``wanted`` evenly spaced rows out of ``total`` (all of them when wanted ≥ total): the same
    rows at every site. Extended SMOTE writes each seed row's draws together, so a prefix would hold only a
    few seed rows' neighbourhoods; an even stride takes one draw from ~every seed row."""
    if wanted >= total:
        return np.arange(total)
    return (np.arange(wanted) * total) // wanted


def _kib(n: int) -> str:
    return f"{n / 1024:.1f} KB"


register_fields("nn_disclosure", (  # measured at export, shown to the analyst (FORMAT §7.1)
    *(Field(k, "number", low=0) for k in ("spacing", "ratio_min", "ratio_median", "ratio_mean", "share_below_1")),
    Field("copies", "int", low=0)))


register_fields("near_copies", (Field("fraction", "number", low=0), Field("moved", "int", low=0),
                                Field("dropped", "int", low=0)))


def _counts_sum(m, a, f) -> bool:
    c = a["label_counts"]
    return bool(c.min(initial=0) >= 0 and int(c.sum()) == m["n_rows"])


class HFLDD(Method):
    name = "hfldd"
    title = "DC with distilled sets: sites ship a few synthetic rows per class (HFLDD, one-shot)"
    plain_title = "a shared model learned from a few made-up summary rows per class from each site"
    task = "classification"
    family = "hfldd"
    discloses = Release(DISTILLED_ROWS, rows="x_distilled", anchor="anchor_tilde", anchor_rows=anchor_subset)
    apply_per_row = True  # a fitted model applied row by row
    bundle_fields = (*DC_BUNDLE_FIELDS, Field("n_distilled", "int", required=True, low=0),
                     Field("dccfl_bundle_bytes", "int", low=0), Field("bundle_bytes", "int", low=0),
                     Field("anchor_rows_total", "int", required=True, low=1),
                     Field("nn_disclosure", "object", schema="nn_disclosure"),
                     Field("rows_per_class", "int", low=1), Field("rows_share", "number", low=0, high=1),
                     Field("kip_steps", "int", low=1), Field("kip_best_step", "int", low=-1),
                     Field("init", "text", choices=("herding", "real", "means")),
                     Field("objective", "text", choices=("match", "kip")),
                     Field("near_copies", "object", schema="near_copies"))
    package_fields = CLUSTER_PACKAGE_FIELDS
    bundle_arrays = (Array("x_distilled", "<f4", ("n_distilled", "dimension")),
                     Array("y_distilled", "<i4", ("n_distilled",)),
                     Array("soft_labels", "<f4", ("anchor_rows", "classes")),
                     Array("anchor_tilde", "<f4", ("anchor_rows", "dimension")),
                     Array("label_counts", "<i8", ("classes",)))
    bundle_rules = (
        *DC_REDUCED_RULES,
        Rule("label_counts are non-negative and count n_rows rows", _counts_sum),
        Rule("anchor_rows is the kit's anchor_rows setting, or anchor_rows_total when the anchor has fewer rows",
             lambda m, a, f: m["anchor_rows"] == min(int(f.settings["anchor_rows"]), m["anchor_rows_total"])),
        Rule("bundle_bytes is the size of the arrays shipped",
             lambda m, a, f: "bundle_bytes" not in m or m["bundle_bytes"] == sum(int(x.nbytes) for x in a.values())),
    )
    labels_leave = "counts"
    what_leaves = ("a few made-up rows per class that summarise the site's compressed rows, their classes, the "
                   "site's model's answers on the shared anchor rows, those anchor rows after the site's private "
                   "compression, and how many rows the site has in each class")
    settings_spec = (
        Setting("clusters", "int", 1, "groups of sites by their models' answers on the anchor (k-means on the KL "
                "matrix); 1 trains one model for every site", label="Groups of sites", low=1, high=1000,
                at_run=True),
        Setting("seed", "int", 0, "random seed of the grouping and the training", label="Random seed", low=0,
                high=2**31 - 1),
        Setting("min_steps", "int", 10000, "at least this many SGD steps (epochs are raised for small unions)",
                low=0, high=10_000_000, advanced=True, at_run=True),
        Setting("anchor_rows", "int", 100, "anchor-image rows each site ships (evenly spaced, the same at every "
                "site; alignment needs at least the reduced dimension + 1)", low=2, high=1_000_000, advanced=True),
        Setting("local_epochs", "int", 100, "epochs of each site's local model whose answers on the anchor "
                "rows group the sites", low=1, high=10000, advanced=True),
        *PRIOR_SETTINGS[:2], *ALIGNMENT_SETTINGS, *LEARNER_SETTINGS,
        Setting("rows_per_class", "int", 5, "made-up rows shipped for each class this site has",
                label="Rows per class", low=1, high=10000, side="site"),
        Setting("rows_share", "float", 0.0, "at least this share of each class's rows (0: exactly 'rows per "
                "class'; 0.25 ships a quarter of a small site's rows)", label="Share of rows", low=0.0, high=1.0,
                side="site", advanced=True),
        Setting("kip_steps", "int", 300, "optimisation steps that shape the made-up rows (fewer: closer to "
                "the real rows they start from, faster)", label="Distillation steps", low=1, high=100000, side="site"),
        Setting("objective", "choice", "match", "what the made-up rows are moved to do", label="Distil by",
                choices=("match", "kip"),
                choice_help=("match the spread of each class's real rows (distribution matching by energy "
                             "distance; recommended)",
                             "let a kernel model trained on them classify your rows (Kernel Inducing Points)"),
                side="site"),
        Setting("init", "choice", "herding", "where the made-up rows start", label="Start from",
                choices=("herding", "real", "means"),
                choice_help=("the most representative rows of each class (kernel herding), then moved "
                             "(recommended)", "randomly chosen rows, then moved", "class averages plus noise"),
                side="site"),
        Setting("min_distance", "float", DEFAULT_FRACTION, "no made-up row is shipped closer to one of your real "
                "rows than this many times the usual distance between two neighbouring real rows (closer rows are "
                "pushed out, or left out)", label="Keep away from real rows", low=0.0, high=5.0, side="site",
                advanced=True),
        *SITE_SETTINGS,
    )

    # ---- site ----------------------------------------------------------------------------------
    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport:
        control = ensure(control)
        if site.y is None:
            raise ConfigError("distillation needs the label column")
        opts = self.check_site_settings(dict(site.settings))
        K = len(site.classes)
        dc = dc_site_compute(site, ship_labels=True, control=control.sub(0.0, 0.15))
        X = dc.arrays["x_tilde"].astype(np.float64)   # reduced (and noised) rows: these never leave
        y = dc.arrays["y"].astype(np.int64)
        A_full = dc.arrays["anchor_tilde"]
        idx = anchor_subset(len(A_full), int(self.settings["anchor_rows"]))
        A = A_full[idx]
        k = X.shape[1]
        if len(A) < k + 1:
            raise ConfigError(f"the kit ships {len(A)} anchor rows, fewer than the {k + 1} the alignment needs; "
                              "lower 'dimension'")
        rng = np.random.default_rng(None if opts.get("seed") is None else [int(opts["seed"]), 16])  # not f's stream
        seed = int(rng.integers(2**31))
        control.phase("soft labels of a local model on the anchor rows")
        soft = local_soft_labels([(X, y, A)], K, epochs=int(self.settings["local_epochs"]), random_state=seed,
                                 control=control.sub(0.15, 0.3))[0].astype(np.float32)
        kip = KIPSettings(rows_per_class=int(opts["rows_per_class"]), rows_share=float(opts["rows_share"]),
                          steps=int(opts["kip_steps"]),
                          init=opts["init"], n_classes=K, random_state=seed,
                          **{**KIP_DEFAULTS, **OBJECTIVES[opts["objective"]]})
        apart = float(opts["min_distance"])
        control.phase("distilling")
        out = distill_sites([(X, y)], kip, control.sub(0.3, 0.9), anchors=[A.astype(np.float64)])[0]
        Xd, yd, moved = self._kept_apart(out, X, apart, seed)
        if self._copies(Xd, X):  # early stopping kept the starting rows (possible only without the near-copy rule)
            kip.holdout = 0.0
            out = distill_sites([(X, y)], kip, control.sub(0.9, 0.95), anchors=[A.astype(np.float64)])[0]
            Xd, yd, moved = self._kept_apart(out, X, apart, seed)
            if self._copies(Xd, X):
                raise ConfigError("distillation left a real row unchanged; choose more steps or init=means")
        disc = nn_disclosure(Xd.astype(np.float64), X)
        counts = dc.arrays["label_counts"]
        arrays = {"x_distilled": Xd, "y_distilled": yd, "soft_labels": soft, "anchor_tilde": A, "label_counts": counts}
        n, m = site.X.shape
        shipped = int(sum(a.nbytes for a in arrays.values()))
        dccfl_bytes = dc.shipped_bytes  # what DC-CFL ships for this site: x_tilde, y, the full anchor image, counts
        manifest = {k2: v for k2, v in dc.manifest.items() if k2 != "anchor_rows"}
        manifest.update({
            "n_rows": n, "n_distilled": int(len(yd)), "rows_per_class": int(opts["rows_per_class"]),
            "rows_share": float(opts["rows_share"]),
            "kip_steps": int(opts["kip_steps"]), "kip_best_step": int(out.best_step), "init": opts["init"],
            "objective": opts["objective"],
            "anchor_rows": int(len(A)), "anchor_rows_total": int(len(A_full)),
            "nn_disclosure": {key: (round(v, 4) if isinstance(v, float) and math.isfinite(v) else v)
                              for key, v in disc.items()},
            "near_copies": {"fraction": apart, "moved": moved["moved"], "dropped": moved["dropped"]},
            "bundle_bytes": shipped, "dccfl_bundle_bytes": int(dccfl_bytes)})
        shown = manifest["nn_disclosure"]  # the sentence says the numbers the manifest carries (rounded once)
        ratio = shown["ratio_median"]
        share = float(opts["rows_share"])
        per = (str(opts["rows_per_class"]) if share <= 0 else
               f"{share:.0%} of the class's rows, at least {opts['rows_per_class']},")
        near = (f"The made-up rows lie a median {ratio:.2f}× the usual distance between two of your neighbouring "
                f"rows from the nearest real row (closest {shown['ratio_min']:.2f}×; 0 would be a copy). "
                + near_copy_words(apart, moved["moved"], moved["dropped"]))
        disclosures = [
            Disclosure("x_distilled", Xd.shape, "float32",
                       f"{len(yd)} synthetic rows ({per} per class present) distilled "
                       f"({'distribution matching' if opts['objective'] == 'match' else 'KIP'}) "
                       f"from your {n} privately reduced rows, {k} columns each. {near}",
                       plain=f"{len(yd)} made-up summary rows of {k} numbers each. {near}"),
            Disclosure("y_distilled", yd.shape, "int32", "the class of each synthetic row",
                       plain="the class of each made-up row"),
            Disclosure("soft_labels", soft.shape, "float32",
                       f"a local model's class probabilities on the {len(A)} anchor-image rows (groups sites)",
                       plain="your own small model's answers on the shared made-up anchor rows"),
            Disclosure("anchor_tilde", A.shape, "float32",
                       f"{len(A)} of the shared synthetic anchor rows after your private reduction",
                       plain="some of the shared made-up rows, compressed like yours (so the analyst can line sites "
                             "up)"),
            Disclosure("label_counts", counts.shape, "int64", "how many rows of each class",
                       plain="how many of your rows are in each class"),
        ]
        if "variance_kept" in manifest:
            disclosures.append(Disclosure("variance_kept", (1,), "number",
                                          "the share of your columns' variance the reduction keeps",
                                          plain="one number: how much of your data's variation the compression "
                                                "keeps"))
        plain = (f"{len(yd)} made-up summary rows ({per} per class), {k} numbers each, instead of "
                 f"your {n:,} rows; their classes; your small model's answers on {len(A)} shared anchor rows and "
                 f"those rows compressed like yours; how many rows you have in each class. No real row, no original "
                 f"value. {near} File: {_kib(shipped)} instead of {_kib(dccfl_bytes)} for a DC-CFL bundle of the "
                 f"same rows ({dccfl_bytes / max(shipped, 1):.1f}× smaller).")
        if float(opts["noise"]):
            plain += f" Random noise of {float(opts['noise']):g} × each column's spread is added before distilling."
        private = {key: v for key, v in dc.private_arrays.items() if key != "permutation"}
        control.step(1.0, "distilled")
        return SiteExport(arrays, manifest, private, dict(dc.private_meta), disclosures, list(dc.stays), plain)

    @staticmethod
    def _kept_apart(out, X: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray, dict]:
        """The distilled rows and labels after the near-copy rule (:func:`.near_copies.keep_apart`), as shipped."""
        Xa, ya, moved = keep_apart(out.X, out.y, X, fraction, seed)
        if not len(ya):
            raise ConfigError(f"every made-up row lay closer than {fraction:g} × the usual spacing of your rows to a "
                              "real row; lower 'min_distance' or ship fewer rows per class")
        return Xa.astype(np.float32), ya.astype(np.int32), moved

    @staticmethod
    def _copies(Xd: np.ndarray, X: np.ndarray) -> bool:
        """Whether a shipped row equals (to COPY_TOLERANCE × the data's spacing) a real reduced row."""
        d = nn_disclosure(Xd.astype(np.float64), X)
        return bool(d["ratio_min"] <= COPY_TOLERANCE or d["copies"] > 0)

    def check_bundle(self, bundle: ReceivedBundle, kit) -> None:
        super().check_bundle(bundle, kit)
        check_distilled_bundle(bundle.arrays, len(kit.schema.classes))

    # ---- analyst -------------------------------------------------------------------------------
    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        with one_blas_thread():
            return self._fit(bundles, context)

    def _fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        control = context.control
        s = self.settings
        classes = list(context.classes)
        K = len(classes)
        if not bundles:
            raise ConfigError("no bundles to analyse")
        if len({b.arrays["anchor_tilde"].shape[0] for b in bundles}) != 1:
            raise FormatError("bundles were made with different anchors (different anchor row counts)")
        control.step(0.0, "grouping sites by their soft labels")
        counts = np.stack([np.asarray(b.arrays["label_counts"], np.int64) for b in bundles])
        M, groups = self._kl_groups(bundles)
        clusters = [tuple(np.flatnonzero(groups == g).tolist()) for g in range(int(groups.max()) + 1)]
        tv = LabelDistributionClustering().fit(counts)
        # DC-CFL's training on the distilled sets: the same arrays under DC-CFL's names.
        shims = [ReceivedBundle(b.site, b.fingerprint, b.digest, b.envelope_id, b.manifest,
                                {"x_tilde": b.arrays["x_distilled"], "y": b.arrays["y_distilled"],
                                 "anchor_tilde": b.arrays["anchor_tilde"]}) for b in bundles]
        smallest = min(sum(len(bundles[i].arrays["y_distilled"]) for i in c) for c in clusters)
        per_epoch = -(-smallest // int(s["batch_size"]))
        epochs = max(int(s["epochs"]), -(-int(s["min_steps"]) // max(per_epoch, 1)))
        settings = {**s, "epochs": epochs}
        control.phase(f"training {len(clusters)} model{'s' if len(clusters) > 1 else ''} ({epochs} epochs)")
        basis = AnchorBasis([b.arrays["anchor_tilde"] for b in bundles], affine=s["alignment"] == "affine")
        models = train_cluster_models(shims, clusters, K, settings, control=control.sub(0.02, 1.0),
                                      on_epoch=context.on_epoch, basis=basis)
        packages, sites = [], []
        for i, b in enumerate(bundles):
            g = int(groups[i])
            cm = models[g]
            arrays = {**cm.mappings[i].to_arrays(), "scaler_mean": cm.mean, "scaler_scale": cm.scale,
                      **cm.model.to_arrays("mlp")}
            if s["prior_correction"]:
                arrays["prior_logit"] = prior_logit(counts[i], cm.class_counts, float(s["prior_smoothing"]))
            packages.append(({"method": self.name, "cluster": g, "cluster_size": len(cm.members), "classes": classes,
                              "architecture": cm.model.architecture(), "alignment": s["alignment"],
                              "dimension": int(cm.mappings[i].G.shape[1])}, arrays))
            man = b.manifest
            disc = man.get("nn_disclosure") or {}
            sites.append({"site": b.site, "fingerprint": b.fingerprint, "rows": int(man.get("n_rows", counts[i].sum())),
                          "distilled_rows": int(len(b.arrays["y_distilled"])), "cluster": g + 1,
                          "label_counts": counts[i].tolist(), "model": "chosen at the site",
                          **({"own_model": alone} if (alone := alone_estimate(read_own_cv(man, site_rows(man), K)))
                             else {}),
                          **({"nn_ratio": float(disc["ratio_median"])} if "ratio_median" in disc else {}),
                          "bundle_bytes": int(sum(a.nbytes for a in b.arrays.values())),
                          **({"dccfl_bundle_bytes": int(man["dccfl_bundle_bytes"])}
                             if isinstance(man.get("dccfl_bundle_bytes"), int) else {})})
        summary = {"method": self.name, "task": self.task, "n_clusters": len(clusters), "epochs": epochs,
                   "steps_smallest_union": epochs * per_epoch, "sites": sites, "settings": s,
                   "scored": False, "not_scored": NOT_SCORED}
        details = {"kl": M, "distances": tv.distances_, "histograms": tv.histograms_, "clusters": clusters}
        control.step(1.0, "trained")
        return MethodResult(self.name, packages, summary, details)

    def _kl_groups(self, bundles: list[ReceivedBundle]) -> tuple[np.ndarray, np.ndarray]:
        """(KL matrix M of HFLDD Eq. 4 in the bundles' order, k-means groups on its rows numbered by first
        member); one group when ``clusters`` is 1."""
        M = kl_matrix([b.arrays["soft_labels"] for b in bundles])
        n = int(self.settings["clusters"])
        groups = kl_clusters(M, n, int(self.settings["seed"])) if n > 1 else np.zeros(len(bundles), dtype=int)
        order = list(dict.fromkeys(int(g) for g in groups))
        return M, np.array([order.index(int(g)) for g in groups], dtype=np.int64)

    # ---- what it shows --------------------------------------------------------------------------
    @classmethod
    def page_texts(cls) -> PageTexts:
        """HFLDD's words: a model per group of sites (k-means on the soft-label KL rows), trained on the made-up
        rows; at least ``min_steps`` SGD steps, so the epochs shown can exceed the Epochs setting."""
        steps = cls.setting("min_steps").default
        return PageTexts(
            models="One model is trained for every group of sites ('Groups of sites'; 1 = one model for all), on the "
                   "few made-up summary rows each site sent. Because those rows are few, training always runs at "
                   f"least {steps:,} small steps (an advanced setting), so the loss plot can count many more epochs "
                   "than the Epochs setting. Nothing is held out: accuracy cannot be measured on made-up rows.",
            loss="Training loss per group model (live)", loss_y="cross-entropy",
            loss_tip="mean cross-entropy of each group's model on the distilled rows",
            loss_before="The training loss of each group's model appears here, epoch by epoch, once you press Train.",
            loss_during="Grouping the sites; the training loss appears here when training starts.",
            clients="How the sites' label mixes differ (left), and how differently each site's own model answers on "
                    "the shared anchor rows (right). Training groups the sites by the second; the groups are listed "
                    "under the dendrogram.",
            distance="difference in label mix",
            distance_tip="total-variation distance between the sites' label distributions",
            columns={"distilled_rows": ("Made-up rows sent", "distilled rows the site shipped"),
                     "nn_ratio": ("Distance to real rows (× their spacing)", "NN distance ratio: median distance "
                                  "of a distilled row to the site's nearest real compressed row, in units of the real "
                                  "rows' own median spacing (0 would be a copy of a real row; 1, as far as real rows "
                                  "are from each other)"),
                     "rows_kept_at_site": ("Rows kept to check", "rows the site set aside at export to check the "
                                           "package against its own model (they count in its own model's n, not in "
                                           "the rows it distilled)"),
                     "bundle_bytes": ("Bundle size (bytes)", "bytes of the arrays the site shipped"),
                     "dccfl_bundle_bytes": ("Size as a DC-CFL bundle (bytes)", "what the same site would have shipped "
                                            "with DC-CFL (every compressed row and its class)")})

    def client_distances(self, bundles: list[ReceivedBundle], classes: list[str]) -> ClientDistances | None:
        """The Clients page: the sites' label-distribution TV distance (from the shipped class counts, with
        its complete-linkage dendrogram for exploring), the soft-label KL matrix beside it, and the groups
        ``fit`` will train (k-means on the KL rows, the same call as ``fit``)."""
        K = len(classes)
        if len(bundles) < 2 or K < 2:
            return None
        counts = np.stack([np.asarray(b.arrays["label_counts"], np.int64)[:K] for b in bundles])
        tv = LabelDistributionClustering().fit(counts)
        # the groups ``fit`` will train: found in the canonical site order (as the pipeline fits), shown in this one
        order = canonical_order(bundles)
        M, groups = self._kl_groups([bundles[i] for i in order])
        back = np.argsort(order)
        M, groups = M[np.ix_(back, back)], groups[back]
        names = [b.site for b in bundles]
        kl = Heatmap("How differently the sites' models answer", M, names, names, 0.0, float(max(M.max(), 1e-12)))
        k = int(groups.max()) + 1
        how = ("one model for every site ('Groups of sites' is 1)" if int(self.settings["clusters"]) <= 1 else
               f"how alike their models answer, into {k} group{'s' if k > 1 else ''} ('Groups of sites' = "
               f"{int(self.settings['clusters'])})")
        return ClientDistances(tv.distances_, tv.histograms_, tv.linkage_, tv.cut, "difference in label mix",
                               companions=[kl], chosen=groups, chosen_how=how)

    def summary_lines(self, summary: dict) -> list[str]:
        n = summary.get("n_clusters", 1)
        lines = [f"method {self.name}: {'one model' if n == 1 else f'{n} groups of sites'} trained on distilled "
                 f"sets ({summary.get('epochs')} epochs, ≥ {summary.get('steps_smallest_union')} SGD steps)"]
        for x in summary.get("sites", []):
            size = f"bundle {x['bundle_bytes']:,} B"
            if x.get("dccfl_bundle_bytes"):
                size += f" vs DC-CFL {x['dccfl_bundle_bytes']:,} B"
            nn = f", nearest-real-row ratio {x['nn_ratio']:.2f}" if "nn_ratio" in x else ""
            alone = f", its own model alone {describe(x['own_model'])}" if x.get("own_model") else ""
            lines.append(f"  {x['site']}: {x['rows']:,} rows → {x['distilled_rows']} distilled, cluster "
                         f"{x['cluster']}{nn}{alone}, {size}")
        return [*lines, NOT_SCORED]

    def views(self, result: MethodResult) -> list[View]:
        s, d = result.summary, result.details
        sites = s.get("sites", [])
        rows = [[x["site"], site_rows_cell(x), x["distilled_rows"], x["cluster"],
                 "" if "nn_ratio" not in x else f"{x['nn_ratio']:.2f}", x.get("model", ""),
                 describe(x.get("own_model")) if x.get("own_model") else "", x["bundle_bytes"],
                 x.get("dccfl_bundle_bytes", ""),
                 "" if not x.get("dccfl_bundle_bytes") else f"{x['dccfl_bundle_bytes'] / x['bundle_bytes']:.1f}×"]
                for x in sites]
        out: list[View] = [Table("Sites (made-up summary rows)", ["site", "rows", "made-up rows", "group",
                                                                  "distance to real rows", "model sent",
                                                                  "its own rows alone", "bundle size (bytes)",
                                                                  "as DC-CFL (bytes)", "smaller by"], rows,
                                 tips={**SITE_ROWS_TIP,
                                       "distance to real rows": self.page_texts().columns["nn_ratio"][1]}),
                           Text(NOT_SCORED[0].upper() + NOT_SCORED[1:] + ".")]
        have = [x for x in sites if x.get("dccfl_bundle_bytes")]
        if have:
            ours = sum(x["bundle_bytes"] for x in have)
            theirs = sum(x["dccfl_bundle_bytes"] for x in have)
            out.append(Text(f"Bundles: {ours:,} bytes in all, against {theirs:,} bytes had the same sites shipped "
                            f"DC-CFL bundles (every reduced row, its class and the whole anchor image): "
                            f"{theirs / max(ours, 1):.1f}× smaller. Distance to real rows: the median distance of "
                            "a made-up row to the site's nearest real compressed row, in units of the real rows' own "
                            "median spacing (0 would be a copy of a real row; 1, as far as real rows are from each "
                            "other)."))
        names = [x["site"] for x in sites]
        if "kl" in d and len(names) > 1:
            M = np.asarray(d["kl"])
            out.append(Heatmap("How differently the sites' own models answer on the shared anchor rows", M, names,
                               names, 0.0, float(max(M.max(), 1e-12))))
        if "distances" in d and len(names) > 1:
            out.append(Heatmap("Difference in label mix between sites", np.asarray(d["distances"]), names, names))
        return out

    # ---- site, after the round -----------------------------------------------------------------
    def check_package(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
                      kit) -> None:
        # FORMAT §7, every package kind
        check_cluster_package(manifest, arrays, private_arrays, kit, self.default_settings())

    def apply(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
              X: np.ndarray) -> dict[str, np.ndarray]:
        return apply_cluster_package(manifest, arrays, private_arrays, X)  # the same package contents


def near_copy_words(fraction: float, moved: int, dropped: int) -> str:
    """The export's plain sentence about the near-copy rule (:mod:`.near_copies`)."""
    if fraction <= 0:
        return "No minimum distance from your real rows was asked for."
    done = ("none had to be moved" if not moved and not dropped else
            f"{moved} were pushed out to that distance" + (f" and {dropped} left out" if dropped else "")
            if moved else f"{dropped} were left out")
    return (f"None is closer to a real row than {fraction:g}× that usual distance: {done}.")


def check_distilled_bundle(arrays: dict[str, np.ndarray], n_classes: int) -> None:
    """Shapes, ranges and finiteness of an ``hfldd`` bundle; FormatError naming what is wrong."""
    for key in ("x_distilled", "anchor_tilde", "soft_labels"):
        a = arrays.get(key)
        if a is None or a.ndim != 2 or a.dtype.kind != "f" or 0 in a.shape:
            raise FormatError(f"bundle lacks a 2-D float array '{key}'")
        if not np.all(np.isfinite(a)):
            raise FormatError(f"bundle array '{key}' holds non-finite values")
    X, A, S = arrays["x_distilled"], arrays["anchor_tilde"], arrays["soft_labels"]
    if X.shape[1] != A.shape[1]:
        raise FormatError("bundle's distilled rows and anchor image have different widths")
    if A.shape[0] < A.shape[1] + 1:
        raise FormatError("bundle's anchor image has too few rows to align")
    if S.shape != (A.shape[0], n_classes) or S.min() < 0 or np.any(np.abs(S.sum(axis=1) - 1) > 1e-3):
        raise FormatError("bundle's soft labels are not one probability per class for each anchor row")
    y = arrays.get("y_distilled")
    if y is None or y.shape != (X.shape[0],) or y.dtype.kind not in "iu":
        raise FormatError("bundle lacks one integer label 'y_distilled' per distilled row")
    if len(y) and (y.min() < 0 or y.max() >= n_classes):
        raise FormatError("bundle labels are outside the kit's class list")
    c = arrays.get("label_counts")
    if c is None or c.shape != (n_classes,) or c.dtype.kind not in "iu" or c.min() < 0 or c.sum() < MIN_ROWS:
        raise FormatError("bundle lacks class counts for the kit's class list")
    if np.any(np.bincount(y.astype(np.int64), minlength=n_classes)[c == 0] > 0):
        raise FormatError("bundle holds distilled rows of a class the site has no rows of")
