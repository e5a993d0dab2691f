"""What the DC-family analyses (``dc``, ``dccfl``, ``feddag``, ``hfldd``) share on the analyst's side.

Their setting groups (alignment, learner, class-prior correction, model selection), the canonical site order and
the seed every random choice derives from (so the same bundles give the same packages, whatever their order or
names), the per-site summary line and Sites table, and the site's use of a cluster-model package:
p(k | x) ∝ softmax(h_l(standardise(f_i(x) G_i + g_i)))_k · exp(prior_logit_k) (algorithms.md §2, with the
per-site class-prior correction of :mod:`core.learn.cluster_models`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from ..errors import ConfigError, FormatError
from ..formats.fields import check_fields
from ..learn.alignment import SiteMapping
from ..learn.client_clustering import T_GRID
from ..learn.clinical_metrics import calibration_points, json_safe, metrics_for, roc_points
from ..learn.cluster_models import (
    ALIGNMENT_DEFAULTS,
    LEARNER_DEFAULTS,
    OWN,
    PRIOR_DEFAULTS,
    SELECTION_DEFAULTS,
    Selection,
    adjust_proba,
    linear_oofs,
    oof_proba,
)
from ..learn.intervals import describe, estimate
from ..learn.mlp import MLPWeights
from .base import MethodResult, ReceivedBundle, canonical_order, content_digest
from .dc_site import check_anchor_width, site_map
from .promise import SHARED_OOF
from .settings import Setting
from .views import Bars, Curve, Heatmap, Table, Text, View

ALIGNMENT_SETTINGS = (
    Setting("alignment", "choice", ALIGNMENT_DEFAULTS["alignment"],
            "how each site's reduced rows are mapped to the common space",
            label="Alignment", choices=("linear", "affine"),
            choice_help=("linear (the paper's recipe)", "affine, with an offset (exact for centred maps)")),
    Setting("threshold", "float", ALIGNMENT_DEFAULTS["threshold"],
            "singular values of the anchor images below this are dropped",
            low=0.0, advanced=True),
    Setting("relative_threshold", "bool", ALIGNMENT_DEFAULTS["relative_threshold"],
            "read the threshold relative to the largest singular value",
            advanced=True),
    Setting("scale", "choice", ALIGNMENT_DEFAULTS["scale"], "C in the alignment: identity or the singular values",
            choices=("identity", "singular"), advanced=True),
)
LEARNER_SETTINGS = (
    Setting("epochs", "int", LEARNER_DEFAULTS["epochs"],
            "passes over the training rows", label="Epochs", low=1, high=5000, at_run=True),
    Setting("hidden", "int_list", LEARNER_DEFAULTS["hidden"], "hidden layer widths of the MLP", advanced=True),
    Setting("lr", "float", LEARNER_DEFAULTS["lr"], "SGD learning rate", low=1e-6, high=10.0, advanced=True),
    Setting("momentum", "float", LEARNER_DEFAULTS["momentum"], "SGD momentum", low=0.0, high=0.999, advanced=True),
    Setting("batch_size", "int", LEARNER_DEFAULTS["batch_size"],
            "rows per SGD step", low=1, high=100000, advanced=True),
    Setting("weight_decay", "float", LEARNER_DEFAULTS["weight_decay"], "L2 penalty", low=0.0, advanced=True),
)
PRIOR_SETTINGS = (
    Setting("prior_correction", "bool", PRIOR_DEFAULTS["prior_correction"],
            "correct each site's predictions for its own class frequencies",
            label="Per-site class-prior correction"),
    Setting("prior_smoothing", "float", PRIOR_DEFAULTS["prior_smoothing"],
            "Laplace smoothing of the class frequencies", low=0.0,
            advanced=True),
    Setting("prior_in_selection", "bool", PRIOR_DEFAULTS["prior_in_selection"],
            "choose t on the corrected predictions", advanced=True),
)
# Selection (issue #15): cross-validation over every site's received rows ("auto": 5-fold, repeated for small
# sites; one 20 % hold-out when the median site has ≥ 1,000 rows), the site's own-rows model as a candidate,
# and row caps that bound the selection's cost at scale (they never bind at the benchmark's sizes).
SELECTION_SETTINGS = (
    Setting("cv_folds", "int", SELECTION_DEFAULTS["cv_folds"],
            "folds of the cross-validation that chooses each site's model (1: one "
            "hold-out)", low=1, high=50, auto=True, auto_help="5, or one hold-out for large sites", advanced=True),
    Setting("cv_repeats", "int", SELECTION_DEFAULTS["cv_repeats"],
            "repetitions of the cross-validation", low=1, high=50, auto=True,
            auto_help="more for small sites", advanced=True),
    Setting("metric", "choice", SELECTION_DEFAULTS["metric"],
            "what decides each site's model: the site's update on its own rows and the analyst's choice of groups",
            label="Decision metric",
            choices=("auto", "log_loss", "accuracy", "balanced_accuracy", "auc"),
            choice_help=("auto: the site decides on log-loss (with an AUC or accuracy guard), the analyst on AUC "
                         "(two classes) or accuracy", "log-loss (a proper score)", "accuracy",
                         "balanced accuracy (mean recall over the classes)",
                         "ROC AUC (macro one-vs-rest with more than two classes)")),
    Setting("own_model", "bool", SELECTION_DEFAULTS["own_model"],
            "let each site compare the shared model with its own on its own rows and use the better, or a blend "
            "or recalibration of the two (never significantly worse than alone); off: the package is used as sent",
            label="Site's own check"),
    Setting("site_intercepts", "bool", SELECTION_DEFAULTS["site_intercepts"],
            "offer each group a linear model with one intercept per site beside its MLP", advanced=True),
    Setting("selection_max_rows", "int", SELECTION_DEFAULTS["selection_max_rows"],
            "rows a selection model trains on at most", low=1, optional=True,
            none_help="no cap", advanced=True),
    Setting("selection_site_rows", "int", SELECTION_DEFAULTS["selection_site_rows"],
            "rows per site a selection model trains on at most", low=1,
            optional=True, none_help="no cap", advanced=True),
    Setting("selection_total_rows", "int", SELECTION_DEFAULTS["selection_total_rows"],
            "rows all the selection's models of one split train on at most (beyond it, the biggest groups' cap "
            "shrinks)", low=1, optional=True, none_help="no cap", advanced=True),
    Setting("max_epoch_rows", "int", SELECTION_DEFAULTS["max_epoch_rows"],
            "rows a final model sees per epoch at most", low=1, optional=True,
            none_help="no cap", advanced=True),
)
DEFAULT_T_GRID = [*T_GRID, 1.0]


site_order = canonical_order  # the canonical order of the sites (by content digest): :func:`canonical_order`


def canonical_bundles(received: list[ReceivedBundle]) -> tuple[list[int], list[ReceivedBundle]]:
    """The bundles an analysis works on, in the canonical site order (:func:`site_order`), and that order;
    refuses no bundles, and bundles made from different anchors."""
    if not received:
        raise ConfigError("no bundles to analyse")
    check_anchor_width(received)
    order = site_order(received)
    return order, [received[i] for i in order]


def derived_seed(seed: int, bundles: list[ReceivedBundle]) -> int:
    """Every random choice of the analysis draws from SHA-256(seed, sorted content digests of the bundles'
    decrypted arrays, :func:`content_digest`): the same content gives bit-identical results even when it was
    sealed again (fresh keys and nonces, another kit signature), e.g. the demo's every run."""
    h = hashlib.sha256(f"dccfl:{int(seed)}".encode())
    for d in sorted(content_digest(b.arrays) for b in bundles):
        h.update(b"content:" + d.encode())
    return int.from_bytes(h.digest()[:8], "big") >> 2


def site_line(x: dict, extra: str = "") -> str:
    """One summary line of a site: rows, cluster, what it is sent, its expected accuracy (n, 95 % CI) against
    its own model's (n, 95 % CI, and where that number comes from: cross-validated at the site on its raw rows,
    or estimated from its reduced rows), and its note (shared by the DC-family methods)."""
    own = x.get("model") == "own" and x.get("own_kind") and not x.get("update")
    line = f"  {x['site']}: {x['rows']:,} rows, cluster {x['cluster']}" + extra + (
        ", keeps its own model" if own else f", {update_words(x['update'])}" if x.get("update") else "")
    if x.get("expected"):
        line += f", expected accuracy {describe(x['expected'])}"
    if x.get("own_model"):
        line += f" vs {describe(x['own_model'])} alone ({own_model_words(x['own_model'])})"
    if x.get("metrics"):
        line += f"; {metrics_words(x['metrics'])}"
    return line + (f" — {x['note']}" if x.get("note") else "")


def update_words(update: dict) -> str:
    """The analyst's estimate of a site's own choice (issue #37), in a few words."""
    from ..learn.site_update import UPDATE_WORDS

    est = update.get("estimate")
    return ("chooses on its own rows" + (f" (estimated: {UPDATE_WORDS[est]}" + (
        f", {update['weight']:.0%} shared" if est == "blend" and update.get("weight") is not None else "") + ")"
        if est in UPDATE_WORDS else ""))


def own_model_words(e: dict) -> str:
    """Where a site's "alone" number comes from, in words (older summaries carry no ``what``)."""
    auc = f", AUC {e['auc']:.3f}" if e.get("auc") is not None else ""
    return (e.get("what") or "estimated from the reduced rows the site sent") + auc


def site_views(result: MethodResult, extra: tuple[tuple[str, Callable[[dict], object]], ...] = (),
               model_word: Callable[[dict], str] | None = None) -> list[View]:
    """The Sites table (expected accuracy and the own-rows model's, each with n and 95 % CI) and the mean line,
    shared by the DC-family methods; ``extra`` adds (column, value of a site) after the cluster."""
    s = result.summary
    sites = s.get("sites", [])
    classes = [str(c) for c in (result.packages[0][0].get("classes", []) if result.packages else [])]

    def word(x):
        if model_word is not None:
            return model_word(x)
        if x.get("update"):
            return "shared; " + update_words(x["update"])
        return "own rows" if x.get("model") == "own" and x.get("own_kind") else "cluster"

    rows = [[x["site"], x.get("fingerprint", ""), x["rows"], x["cluster"], *[f(x) for _, f in extra], word(x),
             describe(x.get("expected")),
             describe(x.get("own_model")) + (f"; {own_model_words(x['own_model'])}" if x.get("own_model") else ""),
             x.get("note", ""),
             x.get("label_counts", [])] for x in sites]
    out: list[View] = [Table("Sites", ["site", "fingerprint", "rows", "cluster", *[c for c, _ in extra],
                                       "model sent", "expected accuracy", "its own rows alone", "note", "labels"],
                             rows, bars=("labels",), bar_labels=classes)]
    if s.get("expected_mean") is not None:
        out.append(Text(f"Mean expected accuracy of what each site is sent: {s['expected_mean']:.3f}"
                        + (f"; of each site's own-rows model: {s['own_model_mean']:.3f}"
                           if s.get("own_model_mean") is not None else "")
                        + " (each site's numbers, interval and where its own-model number comes from above)."))
    return out


LAYER_WIDTH_FLOOR = 1024  # a layer may be this wide whatever the kit declares: a run may set wider hidden layers


def declared_width(kit, defaults: dict) -> int:
    """W, the widest a package array of ``kit`` can be across: its columns + its feature blocks (each block's common
    space of the anchor images has at most m_b + 1 dimensions, algorithms.md §1.3, and a clustering
    representation joins the blocks), its classes, a hidden width or a cluster count its settings declare
    (``hidden``; ``k``, ``k_range``: a spectral representation has k columns); ``defaults``: the kit's method's
    default settings, which the kit's own settings override."""
    settings = {**defaults, **kit.settings}
    declared = []
    for key in ("hidden", "k_range", "k"):
        v = settings.get(key)
        declared += [h for h in (v if isinstance(v, list) else [v]) if type(h) is int]
    blocks = max(len(kit.schema.block_names), 1)
    return max([kit.schema.width + blocks, len(kit.schema.classes), *declared])


def exact_arrays(arrays: dict[str, np.ndarray], expected: dict[str, tuple[tuple[int, ...], str]],
                 optional: frozenset[str] = frozenset()) -> None:
    """FormatError unless ``arrays`` holds exactly the ``expected`` names (those in ``optional`` may be absent), each
    of its dtype (a §4.6 descr such as ``<f4``) and shape, with finite values when floating point."""
    extra = sorted(set(arrays) - set(expected))
    missing = sorted(set(expected) - set(arrays) - optional)
    if extra or missing:
        raise FormatError(f"the package's arrays are not this method's: unexpected {extra}, missing {missing}")
    for name, (shape, descr) in expected.items():
        a = arrays.get(name)
        if a is None:
            continue
        if a.dtype.str != descr or a.shape != shape:
            raise FormatError(f"the package's '{name}' is {a.dtype.str} {a.shape}; this site's export and the kit "
                              f"need {descr} {shape}")
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
            raise FormatError(f"the package's array '{name}' holds non-finite values")


def _layer_arrays(prefix: str, layers: list[int]) -> dict[str, tuple[tuple[int, ...], str]]:
    out: dict[str, tuple[tuple[int, ...], str]] = {}
    for i in range(len(layers) - 1):
        out[f"{prefix}_w{i}"] = ((layers[i], layers[i + 1]), "<f4")
        out[f"{prefix}_b{i}"] = ((layers[i + 1],), "<f4")
    return out


def _layers(layers: list, first: int | None, cap: int, what: str) -> list[int]:
    if len(layers) < 2 or any(not 1 <= d <= cap for d in layers) or (first is not None and layers[0] != first):
        raise FormatError(f"the package's {what} layers {layers[:8]} do not fit this kit (each width 1 … {cap}"
                          + (f", the first {first}" if first is not None else "") + ")")
    return layers


def check_cluster_package(manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
                          kit, defaults: dict) -> None:
    """FORMAT §7's MUST-refuse rules for a DC-family package of any kind (``model`` cluster, own or global; §7.2's
    dual encoder), from the declared architecture and the arrays' headers, before any value is used: exactly the
    map, scaler, layer (and optional ``prior_logit``) arrays; ``map_matrix`` (m̃, m̂) with m̃ this site's reduced
    width; m̂ = ``dimension`` = the first layer's inputs; every layer chained, ``<f4`` (``<f8`` for the map,
    scaler and prior), finite; K outputs; every width at most :func:`declared_width` of the kit or
    :data:`LAYER_WIDTH_FLOOR`, whichever is larger (the analyst may run with wider hidden layers than the kit's)."""
    K, cap = len(kit.schema.classes), max(declared_width(kit, defaults), LAYER_WIDTH_FLOOR)
    f = private_arrays.get("f_matrix")
    if f is None or f.ndim != 2:
        raise FormatError("this site's export keeps no private reduction, so a model package does not fit it")
    m_tilde = int(f.shape[1])
    arch = manifest["architecture"]
    if manifest.get("encoder", "single") == "dual":
        check_fields("architecture:dual_encoder", arch, "the package's architecture")
        enc = _layers(arch["encoder_layers"], None, cap, "encoder")
        if arch["classes"] != K:
            raise FormatError(f"the package's model gives {arch['classes']} classes; the kit has {K}")
        expected = {**_layer_arrays("enc1", enc), **_layer_arrays("enc2", enc),
                    **_layer_arrays("head", [2 * enc[-1], K])}
    else:
        check_fields("architecture:mlp", arch, "the package's architecture")
        layers = _layers(arch["layers"], None, cap, "model")
        if layers[-1] != K:
            raise FormatError(f"the package's model gives {layers[-1]} classes; the kit has {K}")
        enc = layers
        expected = _layer_arrays("mlp", layers)
    m_hat = enc[0]
    if manifest.get("dimension", m_hat) != m_hat:
        raise FormatError(f"the package's dimension {manifest.get('dimension')} is not its model's {m_hat} inputs")
    expected.update({"map_matrix": ((m_tilde, m_hat), "<f8"), "map_offset": ((m_hat,), "<f8"),
                     "scaler_mean": ((m_hat,), "<f8"), "scaler_scale": ((m_hat,), "<f8"),
                     "prior_logit": ((K,), "<f8")})
    exact_arrays({k: v for k, v in arrays.items() if k not in SHARED_OOF}, expected, frozenset({"prior_logit"}))


def apply_cluster_package(manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
          X: np.ndarray) -> dict[str, np.ndarray]:
    """The package's model on f(X): the shared model as sent (which model the site uses is decided beside it,
    :func:`core.methods.promise.promised_columns`)."""
    f = site_map(private_arrays)
    mapping = SiteMapping.from_arrays(arrays)
    model = MLPWeights.from_arrays(arrays, "mlp")
    classes = list(manifest["classes"])
    if mapping.G.shape[0] != f.n_components or model.weights[0].shape[0] != mapping.G.shape[1]:
        raise FormatError("the package does not fit this site's private reduction")
    Z = (mapping.transform(f.transform(X)) - arrays["scaler_mean"]) / arrays["scaler_scale"]
    prior = arrays.get("prior_logit")
    if prior is not None and (np.shape(prior) != (len(classes),) or not np.all(np.isfinite(prior))):
        raise FormatError("the package's class-prior correction does not match its class list")
    return _columns(classes, adjust_proba(model.predict_proba(Z), prior))


def _columns(classes: list[str], proba: np.ndarray) -> dict[str, np.ndarray]:
    out = {"prediction": np.asarray(classes, dtype=object)[proba.argmax(axis=1)]}
    for k, c in enumerate(classes):
        out[f"prob_{c}"] = proba[:, k]
    return out


# ---------------------------------------------------------------------------------------------- clinical figures
ROC_GRID = np.linspace(0.0, 1.0, 51)  # false-positive rates the per-site ROC curves are drawn at
ROC_SITES = 6  # ROC curves drawn, one per site (the largest sites)
CLUSTER_CURVES = 6  # per-cluster ROC and calibration lines drawn (the largest clusters)
CALIBRATION_BINS = np.linspace(0.0, 1.0, 11)  # equal-width bins of predicted risk for the per-cluster curves


def chosen_oof(sel: Selection, bundles: list, keys: list, n_classes: int, settings: dict, basis,
               maps: dict | None = None, keep: bool = False) -> list:
    """Per site, (rows, float32 probabilities): the out-of-fold predictions of the candidate ``keys[i]`` it is sent
    (a cluster's members, or OWN: its linear own-rows model, cross-validated here on demand when its bundle's
    own_cv spared the selection that), averaged over the repeats; then, unless ``keep`` (a selection cached for
    further fits), the selection's other out-of-fold predictions are let go (memory at scale)."""
    out = []
    linear_oofs(sel, bundles, [i for i, key in enumerate(keys) if key == OWN], n_classes)
    for i, key in enumerate(keys):
        out.append(oof_proba(sel, key, i, n_classes))
    if not keep:
        sel.oof.clear()
    return out


def site_gate(sel: Selection, bundles: list, i: int, key, n_classes: int, settings: dict, basis,
              maps: dict | None = None) -> tuple[dict[str, np.ndarray], dict] | None:
    """The analyst's half of site i's paired comparison (issue #37, :mod:`core.learn.site_update`): the
    out-of-fold probabilities of the shared model ``key`` it is sent, for each of its received rows the selection
    tested (``shared_oof``, float32, rows in bundle order ``shared_oof_rows``). Each comes from a model trained on
    the other folds only, so it is unbiased for a model of the group trained without that row; the site pairs it
    with its own model's out-of-fold probability of the same row (it knows the bundle's row order). The manifest's
    ``update`` is the analyst's estimate of what the site will choose, made with the site's linear twin on its
    reduced rows in place of its own model; ``expected`` its cross-validated accuracy. None when nothing was
    tested."""
    from ..learn.site_update import choose_update

    got = oof_proba(sel, key, i, n_classes)
    if got is None:
        return None
    rows, P = got
    arrays = {"shared_oof": P.astype(np.float32), "shared_oof_rows": rows.astype(np.int64)}
    if (OWN, i) not in sel.oof:  # every site's twin at once: the methods gate every site (linear_oofs batches them)
        linear_oofs(sel, bundles, None, n_classes)
    twin = oof_proba(sel, OWN, i, n_classes)
    info: dict = {"update": {"by": "site", "rows": int(len(rows))}}
    if twin is not None:
        common, a, b = np.intersect1d(rows, twin[0], return_indices=True)
        y = np.asarray(bundles[i].arrays["y"], np.int64)[common]
        est = choose_update(y, twin[1][b], P[a], n_classes, metric=settings.get("metric", "auto"))
        chosen = est["scores"].get(est["kind"])
        info["update"].update({"estimate": est["kind"], "weight": round(float(est["weight"]), 4),
                               "sentence": "estimated with a twin of the site's own model on its reduced rows: "
                                           + est["reason"]})
        if chosen:
            info["expected"] = estimate(float(chosen["accuracy"]), int(len(y)))
            info["expected_auc"] = json_safe(float(chosen["auc"]))
    return arrays, info


def site_metrics(oof: tuple[np.ndarray, np.ndarray], y: np.ndarray, classes: list[str], kept_own: bool) -> dict:
    """The summary's ``metrics`` of a site: :func:`~core.learn.clinical_metrics.metrics_for` of the out-of-fold
    predictions of the model it is sent, on its received rows (NaN → null), saying which model was scored."""
    rows, P = oof
    m = json_safe(metrics_for(np.asarray(y)[rows], P, [str(c) for c in classes]))
    m["scored"] = ("its own-rows logistic regression on its reduced rows (the twin of the model it keeps)"
                   if kept_own else "its cluster's model") + ", cross-validated on the rows it sent"
    return m


def _f(v, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def metrics_words(m: dict) -> str:
    """'AUC 0.81 [0.75–0.87], sens 0.70 / spec 0.85 at 0.5 (n = 120, 40 events)', or the multi-class line."""
    if m.get("task") == "binary":
        text = (f"AUC {_f(m.get('auc'))} [{_f(m.get('auc_low'))}–{_f(m.get('auc_high'))}], "
                f"sens {_f(m.get('sensitivity'))} / spec {_f(m.get('specificity'))} at {m.get('threshold', 0.5):g} "
                f"(n = {m['rows']}, {m['events']} events)")
        return text + (" — never predicts the minority class" if m.get("never_predicts_minority") else "")
    recalls = ", ".join(f"{c['class']} {_f(c['recall'])}" for c in m.get("per_class", []))
    return f"macro-AUC {_f(m.get('macro_auc'))}, recall {recalls} (n = {m['rows']})"


def metric_views(result: MethodResult) -> list[View]:
    """Clinical figures of what each site is sent, from its out-of-fold predictions: a per-site table, ROC curves
    of the largest sites, the pooled reliability curve, per-cluster ROC and reliability curves (members pooled,
    :func:`_cluster_curves`), the pooled confusion matrix, and a warning naming every site whose model never
    predicts the minority class."""
    sites = [x for x in result.summary.get("sites", []) if x.get("metrics")]
    if not sites:
        return []
    binary = sites[0]["metrics"].get("task") == "binary"
    out: list[View] = []
    if binary:
        cols = ["site", "rows", "events", "AUC [95 % CI]", "sensitivity", "specificity", "PPV", "NPV", "Brier",
                "calibration slope", "calibration intercept"]
        rows = [[x["site"], m["rows"], m["events"], f"{_f(m['auc'])} [{_f(m['auc_low'])}–{_f(m['auc_high'])}]",
                 _f(m["sensitivity"]), _f(m["specificity"]), _f(m["ppv"]), _f(m["npv"]), _f(m["brier"], 3),
                 _f(m["calibration_slope"]), _f(m["calibration_intercept"])]
                for x in sites for m in [x["metrics"]]]
        out.append(Table(f"What each site is sent, out-of-fold (risk ≥ {sites[0]['metrics']['threshold']:g} "
                         "counts as an event)", cols, rows))
        out.append(Table("Confusion matrix of each site, out-of-fold (rows of each kind)",
                         ["site", "true negatives", "false positives", "false negatives", "true positives"],
                         [[x["site"], *[int(v) for row in x["metrics"]["confusion"] for v in row]] for x in sites
                          if x["metrics"].get("confusion")]))
        bad = [x["site"] for x in sites if x["metrics"].get("never_predicts_minority")]
        if bad:
            out.append(Text(f"Sensitivity 0 at {sites[0]['metrics']['threshold']:g} for {', '.join(bad)}: the model "
                            "sent never predicts the minority class there — not a good model despite its accuracy.",
                            tone="warning"))
    else:
        names = [c["class"] for c in sites[0]["metrics"]["per_class"]]
        rows = [[x["site"], m["rows"], _f(m["macro_auc"]), _f(m["balanced_accuracy"]),
                 *[_f(c["recall"]) for c in m["per_class"]]] for x in sites for m in [x["metrics"]]]
        out.append(Table("What each site is sent, out-of-fold", ["site", "rows", "macro-AUC", "balanced accuracy",
                                                                 *[f"recall {c}" for c in names]], rows))
        out.append(Table("Confusion matrix of each site, out-of-fold (true class → predicted class: rows)",
                         ["site", *[f"{t} → {p}" for t in names for p in names]],
                         [[x["site"], *[int(v) for row in x["metrics"]["confusion"] for v in row]] for x in sites
                          if x["metrics"].get("confusion")]))
        bad = [f"{x['site']} ({', '.join(x['metrics']['never_predicted'])})" for x in sites
               if x["metrics"].get("never_predicted")]
        if bad:
            out.append(Text("Classes present but never predicted by the model sent: " + "; ".join(bad)
                            + " — recall 0 for those classes, whatever the accuracy.", tone="warning"))
    oof = result.details.get("oof") or []
    got = [(x, o) for x, o in zip(result.summary.get("sites", []), oof, strict=False) if o is not None]
    if got:
        classes = [str(c) for c in (result.packages[0][0].get("classes", []) if result.packages else [])]
        y_all = np.concatenate([o[1] for _, o in got])
        P_all = np.vstack([o[2] for _, o in got])
        if binary:
            curves = {}
            for x, (_, y, P) in sorted(got, key=lambda g: -len(g[1][1]))[:ROC_SITES]:
                if 0 < int(np.sum(y == 1)) < len(y):
                    curves[f"{x['site']} ({_counts(y)})"] = _roc_on_grid(y, P[:, 1])
            if curves:
                out.append(Curve("ROC curves, out-of-fold (largest sites)", ROC_GRID.tolist(),
                                 {**curves, "chance": ROC_GRID.tolist()}, xlabel="1 − specificity",
                                 ylabel="sensitivity"))
            cal = calibration_points(y_all, P_all[:, 1])
            if len(cal["predicted"]) > 1:
                out.append(Curve("Calibration, all sites pooled (observed event rate per tenth of predicted risk)",
                                 cal["predicted"], {"observed": cal["observed"], "ideal": cal["predicted"]},
                                 xlabel="predicted risk", ylabel="observed rate"))
            hist = [int(v) for v in cal["histogram"]]
            out.append(Bars(f"Predicted risks, all sites pooled ({len(y_all):,} rows): how many fall in each tenth",
                            [f"{k / 10:.1f}–{(k + 1) / 10:.1f}" for k in range(len(hist))], hist, ylabel="rows"))
            site_cal = {f"{x['site']} ({_counts(y)})": _binned_rate(y, P[:, 1])
                        for x, (_, y, P) in sorted(got, key=lambda g: -len(g[1][1]))[:ROC_SITES]}
            mids = ((CALIBRATION_BINS[:-1] + CALIBRATION_BINS[1:]) / 2).round(4).tolist()
            out.append(Curve("Calibration per site, out-of-fold (observed event rate per tenth of the risk scale; "
                             "largest sites)", mids, {**site_cal, "ideal": mids}, xlabel="predicted risk",
                             ylabel="observed rate"))
            out += _cluster_curves(got)
        if len(classes) == P_all.shape[1]:
            cm = np.zeros((len(classes), len(classes)))
            np.add.at(cm, (y_all, P_all.argmax(axis=1)), 1)
            share = cm / np.maximum(cm.sum(axis=1, keepdims=True), 1)
            out.append(Heatmap("Confusion matrix, all sites pooled (share of each true class)", share,
                               [f"true {c}" for c in classes], [f"predicted {c}" for c in classes]))
    return out


def _counts(y: np.ndarray) -> str:
    return f"{len(y)} rows, {int(np.sum(y == 1))} events"


def _roc_on_grid(y: np.ndarray, p: np.ndarray) -> list[float]:
    fpr, tpr = roc_points(y, p)
    return np.interp(ROC_GRID, fpr, tpr).round(4).tolist()


def _binned_rate(y: np.ndarray, p: np.ndarray) -> list[float]:
    """Observed event rate per equal-width bin of predicted risk (:data:`CALIBRATION_BINS`); NaN (not drawn)
    where a bin is empty, so clusters share one x axis."""
    k = np.clip(np.digitize(p, CALIBRATION_BINS[1:-1]), 0, len(CALIBRATION_BINS) - 2)
    n = np.bincount(k, minlength=len(CALIBRATION_BINS) - 1)
    events = np.bincount(k, weights=(y == 1).astype(float), minlength=len(CALIBRATION_BINS) - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, events / np.maximum(n, 1), np.nan).round(4).tolist()


def _cluster_curves(got: list) -> list[View]:
    """Per cluster (binary outcome, more than one cluster): the ROC and reliability curves of its members'
    pooled out-of-fold rows under what each member is sent, for the CLUSTER_CURVES largest clusters, each line
    named with its cluster, rows and events."""
    pooled: dict[int, list] = {}
    for x, (_, y, P) in got:
        pooled.setdefault(int(x["cluster"]), []).append((y, P[:, 1]))
    if len(pooled) < 2:
        return []
    merged = {c: (np.concatenate([y for y, _ in parts]), np.concatenate([p for _, p in parts]))
              for c, parts in pooled.items()}
    largest = sorted(merged, key=lambda c: (-len(merged[c][0]), c))[:CLUSTER_CURVES]
    roc, cal = {}, {}
    for c in largest:
        y, p = merged[c]
        name = f"cluster {c} ({_counts(y)})"
        if 0 < int(np.sum(y == 1)) < len(y):
            roc[name] = _roc_on_grid(y, p)
        cal[name] = _binned_rate(y, p)
    out: list[View] = []
    if roc:
        out.append(Curve("ROC curves per cluster, out-of-fold (members pooled, largest clusters)", ROC_GRID.tolist(),
                         {**roc, "chance": ROC_GRID.tolist()}, xlabel="1 − specificity", ylabel="sensitivity"))
    mids = ((CALIBRATION_BINS[:-1] + CALIBRATION_BINS[1:]) / 2).round(4).tolist()
    out.append(Curve("Calibration per cluster, out-of-fold (observed event rate per tenth of the risk scale)", mids,
                     {**cal, "ideal": mids}, xlabel="predicted risk", ylabel="observed rate"))
    return out
