"""``python -m benchmarks clinical``: whole product rounds on real clinical tables (issue #22).

Data: the R-package tables ``clinical_*.csv`` of the data folder (datasets README, last section), kept as
published: text columns stay text, ``NA`` cells stay empty in every CSV a site is given. Per case the
columns that leak the outcome, R's row-name column and the columns that define the sites are dropped.

Protocol, per (case, seed):
1. Sites (:data:`CASES`): flchain by ``sample.yr``, consecutive years merged until a site holds ≥ 300 rows
   (a short tail joins the previous site); colon (``etype == 2``) in 3 sites with label skew by a fixed rule on
   the patient id (:func:`colon_sites`); nwtco by ``study`` × ``instit``; lung by ``inst``, institutions in code
   order merged until a site holds ≥ 55 patients (a tail of ≥ 40 is its own site). Each site's rows are split
   75/25 into training and test rows, stratified by the outcome, with the seed.
2. References, all scored on each site's test rows: the site's own logistic regression on its raw training rows
   (text one-hot, numbers median-imputed with a missing indicator, all standardised; L2, C = 1), and the same
   logistic regression and a histogram gradient-boosting model fitted on every site's training rows pooled
   (upper references: no one-shot collaboration can see the pooled rows); issue #37: the same pooled logistic
   regression with one intercept per site (a one-hot site column), scored with the site's own intercept.
3. The product round (:func:`product_round`), as users would run it: the schema inferred from a pooled sample
   (:data:`SCHEMA_SAMPLE_ROWS` rows drawn from all sites' training rows: a stand-in for the public reference
   sample a kit is made from), the kit built with the method's defaults and the seed, the lead site's (the
   first site's) anchor made from its training CSV as ``dcstudio anchor new --csv`` does (extended SMOTE seeded
   by synthetic rows from that CSV's column statistics), every site's export of its raw training CSV, the
   analyst's import, run and export of packages, and every site's ``participant apply --validate`` on its test
   CSV (the product's class probabilities ``prob_<class>`` give its AUC: the model the site uses, whichever
   ``apply`` chose; ``--validate`` also scores the logistic regression the site kept at export on the kit's
   columns). Issue #37's oracle, the package as sent without any gate: for the DC family the same imported
   bundles analysed again with ``own_model=false``, for other methods the round's own package, each opened in the
   site's workspace and applied to the test rows without "keep your own" or the site's check
   (:func:`ungated_proba`). ``--method NAME:key=value,…`` runs a method with kit settings
   (e.g. ``meta-lr:effects=fixed``).
4. Scores: accuracy and AUC (binary: ROC AUC of the second class in the kit's order; more classes: macro
   one-vs-rest), averaged over seeds per site.
The seed fixes the splits, the references and the method's seed setting, but every round draws fresh keys, a
fresh project id and a fresh anchor secret, as a real one does (the analyst's random choices derive from the
bundles' digests): two runs of the same seeds give the same references and different packages.

Target (issue #22), per case and method: no site's package more than 1 pt (accuracy) or 0.01 (AUC) below its
own raw-row logistic regression, the mean over sites at least equal, and where the pooled logistic regression
beats the mean own model by more than 2 pt (accuracy), at least 50 % of that gap closed by the packages.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from core.api import ConfigError, DataError

from . import clinical_gains
from .clinical_gains import check_lines, gains_table, must_show, site_gains, smallest_line, smallest_third

DEFAULT_METHODS = ("dccfl", "dc", "meta-lr")  # the product's methods for a classification kit
DEFAULT_SEEDS = 5
TEST_SHARE = 0.25
SCHEMA_SAMPLE_ROWS = 200
ANCHOR_ROWS = 1000


# ---- cases ---------------------------------------------------------------------------------------------------
def contiguous_groups(counts: pd.Series, target: int, minimum: int) -> dict[Any, int]:
    """Group the index of ``counts`` (in index order) into runs: a run closes once it holds ≥ ``target`` rows; a
    last run smaller than ``minimum`` joins the run before it. Returns value → group number."""
    groups, run, size = {}, 0, 0
    for value, n in counts.sort_index().items():
        groups[value] = run
        size += int(n)
        if size >= target:
            run, size = run + 1, 0
    if 0 < size < minimum and run > 0:
        groups = {v: (g - 1 if g == run else g) for v, g in groups.items()}
    return groups


def grouped_sites(values: pd.Series, target: int, minimum: int, prefix: str) -> pd.Series:
    """Site names for rows grouped by :func:`contiguous_groups` of their ``values``, e.g. ``yr2000-2003``."""
    groups = contiguous_groups(values.value_counts(), target, minimum)
    members: dict[int, list] = {}
    for v, g in groups.items():
        members.setdefault(g, []).append(v)
    name = {g: prefix + (f"{_fmt(vs[0])}" if len(vs) == 1 else f"{_fmt(vs[0])}-{_fmt(vs[-1])}")
            for g, vs in members.items()}
    return values.map(lambda v: name[groups[v]])


def _fmt(v) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def colon_sites(frame: pd.DataFrame) -> pd.Series:
    """Three sites with label skew, fixed across seeds: rows ranked by patient id within each outcome; of every
    ten deaths 5 go to site A, 3 to B, 2 to C; of every ten survivors 2 to A, 3 to B, 5 to C."""
    rank = frame.groupby("status")["id"].rank(method="first").astype(int) - 1
    deal = {1: "AAAAABBBCC", 0: "AABBBCCCCC"}
    return pd.Series([f"site-{deal[int(s)][r % 10]}" for s, r in zip(frame["status"], rank, strict=True)],
                     index=frame.index)


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    label: str
    drop: tuple[str, ...]  # leaks the outcome, or defines the site (constant within a site)
    sites: Callable[[pd.DataFrame], pd.Series]
    rule: str  # how the sites were made, for the record
    keep: Callable[[pd.DataFrame], pd.Series] | None = None  # which rows are the case's


CASES: dict[str, Case] = {c.name: c for c in (
    Case("flchain", "clinical_flchain.csv", "death", ("futime", "chapter", "sample.yr"),
         lambda f: grouped_sites(f["sample.yr"], 300, 300, "yr"),
         "by `sample.yr`, consecutive years merged until a site holds ≥ 300 rows (a short tail joins the previous "
         "site)"),
    Case("colon", "clinical_colon.csv", "status", ("time", "etype", "id"), colon_sites,
         "no natural sites: 3 sites with label skew, rows ranked by patient id within each outcome; of every ten "
         "deaths 5/3/2 go to sites A/B/C, of every ten survivors 2/3/5", keep=lambda f: f["etype"] == 2),
    Case("nwtco", "clinical_nwtco.csv", "rel", ("edrel", "seqno", "in.subcohort", "study", "instit"),
         lambda f: "study" + f["study"].astype(int).astype(str) + "-instit" + f["instit"].astype(int).astype(str),
         "`study` × `instit` (4 sites)"),
    Case("lung", "clinical_lung.csv", "status", ("time", "inst"),
         lambda f: grouped_sites(f["inst"], 55, 40, "inst"),
         "by `inst`, institutions in code order merged until a site holds ≥ 55 patients (a tail of ≥ 40 is its own "
         "site); the row without `inst` is left out", keep=lambda f: f["inst"].notna()),
)}


def load_case(case: Case, data_dir: str | Path | None) -> tuple[pd.DataFrame, pd.Series]:
    """The case's rows (raw columns minus :attr:`Case.drop` and R's row names; text stays text, NA stays NaN)
    and each row's site."""
    from benchmarks.simulation.datasets import default_data_dir

    base = Path(data_dir) if data_dir else default_data_dir()
    if base is None:
        raise ConfigError("no data folder was given (--data-dir) and ../shared/datasets was not found")
    path = base / case.file
    if not path.is_file():
        raise DataError(f"the clinical table '{case.file}' is not in the data folder", path=path)
    frame = pd.read_csv(path)
    frame = frame.drop(columns=[c for c in frame.columns if c == "" or c.startswith("Unnamed: ")])
    if case.keep is not None:
        frame = frame[case.keep(frame)]
    sites = case.sites(frame)
    frame = frame.drop(columns=list(case.drop)).reset_index(drop=True)
    if frame[case.label].isna().any():
        raise DataError(f"the outcome '{case.label}' has missing values", path=path)
    frame[case.label] = frame[case.label].astype(int).astype(str)
    return frame, sites.reset_index(drop=True)


def split_sites(frame: pd.DataFrame, sites: pd.Series, label: str, seed: int
                ) -> list[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """(site, training rows, test rows) per site, in site-name order: a stratified 75/25 split per site."""
    from sklearn.model_selection import train_test_split

    out = []
    for k, name in enumerate(sorted(sites.unique())):
        rows = frame[sites.to_numpy() == name]
        tr, te = train_test_split(rows, test_size=TEST_SHARE, stratify=rows[label], random_state=seed * 1000 + k)
        out.append((str(name), tr.reset_index(drop=True), te.reset_index(drop=True)))
    return out


# ---- references on raw rows ----------------------------------------------------------------------------------
def text_columns(frame: pd.DataFrame, label: str) -> list[str]:
    return [c for c in frame.columns if c != label and not pd.api.types.is_numeric_dtype(frame[c])]


def raw_logistic_regression(frame: pd.DataFrame, label: str):
    """Text one-hot (a missing text cell is its own level), numbers median-imputed with a missing-indicator
    column, everything standardised; L2 logistic regression (C = 1)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    text = text_columns(frame, label)
    numbers = [c for c in frame.columns if c != label and c not in text]
    encode = ColumnTransformer([
        ("numbers", make_pipeline(SimpleImputer(strategy="median", add_indicator=True)), numbers),
        ("text", make_pipeline(SimpleImputer(strategy="constant", fill_value="(missing)"),
                               OneHotEncoder(handle_unknown="ignore", sparse_output=False)), text)])
    return Pipeline([("encode", encode), ("scale", StandardScaler()), ("lr", LogisticRegression(max_iter=2000))])


def raw_gradient_boosting(frame: pd.DataFrame, label: str, seed: int):
    """Histogram gradient boosting on the raw columns: text as native categories, NaN handled by the trees."""
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OrdinalEncoder

    text = text_columns(frame, label)
    numbers = [c for c in frame.columns if c != label and c not in text]
    encode = ColumnTransformer([
        ("text", OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan,
                                encoded_missing_value=np.nan), text),
        ("numbers", "passthrough", numbers)])
    hgb = HistGradientBoostingClassifier(categorical_features=list(range(len(text))) or None, random_state=seed)
    return Pipeline([("encode", encode), ("hgb", hgb)])


def scores(truth: Sequence[str], proba: np.ndarray, classes: Sequence[str]) -> dict[str, float]:
    """Accuracy of argmax and AUC (binary: ROC AUC of ``classes[1]``; more: macro one-vs-rest); NaN AUC when
    the test rows hold one class only."""
    from sklearn.metrics import roc_auc_score

    truth = np.asarray(truth, dtype=object)
    classes = list(classes)
    acc = float(np.mean(np.asarray(classes, dtype=object)[proba.argmax(axis=1)] == truth))
    auc = float("nan")
    if len(set(truth)) >= 2:
        if len(classes) == 2:
            auc = float(roc_auc_score(truth == classes[1], proba[:, 1]))
        else:
            auc = float(roc_auc_score(truth, proba, multi_class="ovr", average="macro", labels=classes))
    return {"accuracy": acc, "auc": auc}


def fitted_scores(model, test: pd.DataFrame, label: str) -> dict[str, float]:
    proba = model.predict_proba(test.drop(columns=label))
    return scores(test[label], proba, [str(c) for c in model.classes_])


def event_risk(model, test: pd.DataFrame, label: str, event: str) -> np.ndarray:
    """A fitted model's probability of the class ``event`` for each test row."""
    proba = model.predict_proba(test.drop(columns=label))
    return proba[:, [str(c) for c in model.classes_].index(str(event))]


SITE_COLUMN = "(site)"


def with_site_column(parts: list[tuple[str, pd.DataFrame, pd.DataFrame]]) -> pd.DataFrame:
    """Every site's training rows pooled with a text column naming the site: :func:`raw_logistic_regression` one-hots
    it, so the pooled logistic regression gets one intercept per site (issue #37's reference; a test row is scored
    with its own site's name, i.e. its own intercept)."""
    return pd.concat([tr.assign(**{SITE_COLUMN: name}) for name, tr, _ in parts], ignore_index=True)


# ---- the product round ---------------------------------------------------------------------------------------
def method_spec(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME`` or ``NAME:key=value,key=value`` (a method with kit settings, e.g. ``meta-lr:effects=fixed``) →
    (method name, settings); an unknown method or setting, or a value out of range, is one ConfigError sentence."""
    from core.api.common import method_class

    name, _, rest = text.partition(":")
    cls = method_class(name)
    settings: dict[str, Any] = {}
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        spec = cls.setting(key.strip())
        if not eq or spec is None:
            raise ConfigError(f"'{part}' in --method {text} is not a setting of {name} (key=value)")
        settings[spec.name] = spec.parse(value.strip())
    return name, settings


@dataclass
class RoundOptions:
    """How the harness drives the product. ``site_impute``: today (before issue #22's typed columns) the product
    refuses an empty cell unless the site passes ``--impute mean``; ``"auto"`` reads each CSV as a user would
    (no option) and only if the product refuses it, again with ``CsvOptions(impute="mean")``, the fix its error
    names. Once the kit decides missing values, the first read succeeds and nothing here changes."""

    site_impute: str = "auto"  # auto | mean | none
    anchor_rows: int = ANCHOR_ROWS


@dataclass
class RoundOutcome:
    sites: dict[str, dict[str, Any]]  # per site: package scores, the kept own model's accuracy, what was sent
    kit_columns: list[str]
    schema_notes: list[str]
    imputed: bool  # some CSV was read with impute="mean"
    analyst_seconds: float
    summary: dict = field(default_factory=dict)
    figures: dict = field(default_factory=dict)  # metrics_agreement: per-site figures checked against sklearn
    oracle: str = ""  # how the package without any gate was read (issue #37)


def _read_with(load: Callable, site_impute: str):
    """``load(options)`` per :class:`RoundOptions` ``site_impute``; returns (result, whether mean-imputed)."""
    from core.api.common import CsvOptions

    if site_impute == "mean":
        return load(CsvOptions(impute="mean")), True
    try:
        return load(None), False
    except DataError:
        if site_impute != "auto":
            raise
        return load(CsvOptions(impute="mean")), True  # raises again if missing values were not the reason


def product_round(folder: Path, sample_csv: Path, sites: list[tuple[str, Path, Path]], label: str, method: str,
                  seed: int, options: RoundOptions | None = None) -> RoundOutcome:
    """One whole round through the product's API, in ``folder``: kit, lead-site anchor, every export, the analyst's
    import/run/export, every site's ``apply --validate``. ``sites``: (name, training CSV, test CSV); the first
    is the lead site. Every call into the product lives here (an API change is one edit)."""
    from core.api import Identity
    from core.api.analyst import AnalystRound, build_kit
    from core.api.common import AnalystWorkspace, SiteWorkspace, infer_schema, method_class, read_table
    from core.api.participant import ParticipantRound, anchor_for_kit, apply_package

    from .metrics_agreement import check_run

    o = options or RoundOptions()
    method, extra = method_spec(method)
    cls = method_class(method)
    imputed = False
    analyst = Identity.generate("analyst")
    schema, notes = infer_schema(sample_csv, label=label)
    settings = {**({"seed": seed} if "seed" in cls.default_settings() else {}), **extra}
    kit, kit_notes = build_kit(name=f"clinical {label}", schema=schema, analyst=analyst.card, method=method,
                               settings=settings, anchor_rows=o.anchor_rows if cls.needs_anchor else None)
    kit_path = folder / "project.dckit"
    kit.save(kit_path, analyst)
    idents = {name: Identity.generate(name) for name, _, _ in sites}
    anchor = None
    if cls.needs_anchor:
        lead_X, imp = _read_with(lambda opt: read_table(sites[0][1], kit.schema, options=opt, labels=False).X,
                                 o.site_impute)
        imputed |= imp
        anchor = anchor_for_kit(kit, local_X=lead_X, rng=np.random.default_rng([seed, 22]))
        anchor.secret = hashlib.sha256(f"clinical-benchmark/{seed}".encode()).digest()  # same anchor rows every run
    bundles_dir = folder / "to-analyst"
    site_seed = {s.name for s in cls.site_settings_spec()} & {"seed"}
    for k, (name, train_csv, _) in enumerate(sites):
        job = ParticipantRound(kit, kit_path, idents[name], folder / name, anchor=anchor,
                               site_settings={"seed": seed * 100 + k} if site_seed else None)
        job.confirm_analyst(kit.analyst, how="benchmark: the kit's own signer")
        job.accept_privacy_risk("benchmark: a simulated site accepts its poor verdicts")
        _, imp = _read_with(lambda opt, job=job, csv=train_csv: job.load(csv, opt), o.site_impute)
        imputed |= imp
        job.seal(bundles_dir / f"{name}.dcbundle")
    analysis = AnalystRound(kit, analyst, AnalystWorkspace(folder / "analyst"))
    for ident in idents.values():
        analysis.confirm(ident.card, how="benchmark: the sites' cards")
    _, bundles = analysis.import_folder(bundles_dir)
    t0 = time.perf_counter()
    run = analysis.run(bundles)
    analyst_seconds = time.perf_counter() - t0
    outputs = analysis.export(run, folder / "to-sites")
    figures = check_run(json.loads(outputs.summary.read_text()), run.result.details.get("oof") or [],
                        [str(c) for c in kit.schema.classes], outputs.report.read_text()).to_dict()
    per_site = {str(x.get("site")): x for x in run.result.summary.get("sites", [])}
    classes = list(kit.schema.classes)
    # the oracle (issue #37): the package as sent without any gate. A method whose analyst chooses own models (the
    # DC family) analyses the same bundles again with own_model=false; any other method's package is read as sent.
    oracle_dir, oracle_how = folder / "to-sites", "the package as sent, before the site's check"
    if "own_model" in cls.default_settings() and cls.own_model_choice == "analyst":
        oracle_dir, oracle_how = folder / "to-sites-oracle", "the same bundles analysed with own_model=false"
        analysis.export(analysis.run(bundles, settings={"own_model": False}), oracle_dir)
    out: dict[str, dict[str, Any]] = {}
    for name, _, test_csv in sites:
        res, imp = _read_with(
            lambda opt, name=name, test_csv=test_csv: apply_package(
                folder / "to-sites" / f"{name}.dcpkg", idents[name], test_csv, folder / f"{name}-results.csv",
                workspace=SiteWorkspace(folder / name), options=opt, validate=True), o.site_impute)
        imputed |= imp
        result = pd.read_csv(res.out_path, dtype=str, keep_default_na=False)
        probs = [f"prob_{c}" for c in classes]
        if all(c in result.columns for c in probs):
            proba = result[probs].to_numpy(float)
        else:  # a method that writes predictions only: its AUC is that of hard 0/1 scores
            proba = (result["prediction"].to_numpy(object)[:, None] == np.asarray(classes, object)).astype(float)
        local = (res.validation or {}).get("local") or {}
        info = per_site.get(name, {})
        oracle, _ = _read_with(lambda opt, name=name, test_csv=test_csv: ungated_proba(
            oracle_dir / f"{name}.dcpkg", idents[name], SiteWorkspace(folder / name), test_csv, opt), o.site_impute)
        choice = res.choice or {}
        out[name] = {**scores(result[label], proba, classes), "kept_own_accuracy": local.get("accuracy"),
                     "sent": info.get("model"), "kept_own": res.kept_own,
                     "used": str(choice.get("kind") or choice.get("model") or "package"),
                     "used_by": choice.get("by"),
                     "expected": (info.get("expected") or {}).get("accuracy"),
                     "expected_own": (info.get("own_model") or {}).get("accuracy"),
                     "oracle": scores(result[label], oracle, classes),
                     "_proba": {"classes": [str(c) for c in classes], "in_use": proba, "oracle": oracle}}
    return RoundOutcome(out, list(kit.schema.feature_names), notes + kit_notes, imputed, analyst_seconds,
                        {k: v for k, v in run.result.summary.items() if k in ("t", "n_clusters")}, figures,
                        oracle_how)


def ungated_proba(package_path: Path, identity, workspace, csv_path: Path, options=None) -> np.ndarray:
    """The class probabilities of a package's own model on the rows of ``csv_path``, as the analyst sent it: the
    site's workspace opens and checks it as ``participant apply`` does, but neither a "keep your own" in its manifest
    nor the site's own check is applied (issue #37's oracle). Rows in the CSV's order, columns in the kit's class
    order."""
    from core.api.common import Kit, get_method, inspect, read_table
    from core.api.research import apply_checked, check_package, open_sealed, package_limits, proba_of

    binding = inspect(package_path)
    kit = Kit.load(workspace.kit_path(binding.project_id))
    meta, private = workspace.load_export(kit.project_id, binding.in_reply_to, identity.card)
    rows = meta.get("rows") if type(meta.get("rows")) is int else None
    opened = open_sealed(package_path, identity, expect_kind="package", expect_project=kit.project_id,
                         expect_sender=kit.analyst, expect_in_reply_to=binding.in_reply_to,
                         limits=package_limits(kit, rows))
    manifest, arrays = opened.payload.manifest, opened.payload.arrays
    check_package(kit, manifest, arrays, rows if rows is not None else -1, private)
    as_sent = {k: v for k, v in manifest.items() if k not in ("model", "own_kind")} \
        if manifest.get("model") == "own" else manifest
    method = get_method(manifest["method"])
    schema = kit.schema.block_schema(meta["block"]) if meta.get("block") else kit.schema
    fills = meta.get("fill_values")
    table = read_table(csv_path, schema, options=options, labels=False,
                       fill_values=fills if isinstance(fills, dict) else None)
    columns = apply_checked(method, as_sent, arrays, private, table.X, package_path)
    return proba_of(columns, [str(c) for c in kit.schema.classes])


# ---- one (case, seed) ----------------------------------------------------------------------------------------
def run_cell(case: Case, frame: pd.DataFrame, sites: pd.Series, seed: int, methods: Sequence[str],
             options: RoundOptions | None = None) -> dict[str, Any]:
    """Every reference and every method's product round for one case and seed."""
    import warnings

    started = time.perf_counter()
    label = case.label
    parts = split_sites(frame, sites, label, seed)
    pooled = pd.concat([tr for _, tr, _ in parts], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter of small sites; the scores say what matters
        pooled_lr = raw_logistic_regression(pooled, label).fit(pooled.drop(columns=label), pooled[label])
        pooled_hgb = raw_gradient_boosting(pooled, label, seed).fit(pooled.drop(columns=label), pooled[label])
        with_sites = with_site_column(parts)
        pooled_si = raw_logistic_regression(with_sites, label).fit(with_sites.drop(columns=label), with_sites[label])
        rows = {}
        classes = sorted(pooled[label].unique())
        for name, tr, te in parts:
            own = raw_logistic_regression(tr, label).fit(tr.drop(columns=label), tr[label])
            te_site = te.assign(**{SITE_COLUMN: name})
            rows[name] = {
                "train_rows": len(tr), "test_rows": len(te),
                "train_events": {c: int((tr[label] == c).sum()) for c in classes},
                "test_events": {c: int((te[label] == c).sum()) for c in classes},
                "raw_columns": int(tr.shape[1] - 1),
                "encoded_columns": int(len(own[:-1].get_feature_names_out())),
                "own_lr": fitted_scores(own, te, label),
                "pooled_lr": fitted_scores(pooled_lr, te, label),
                "pooled_si_lr": fitted_scores(pooled_si, te_site, label),
                "pooled_hgb": fitted_scores(pooled_hgb, te, label),
                "methods": {},
                "_risk": {"y": (te[label].to_numpy(object) == classes[-1]).astype(np.int64),
                          "own": event_risk(own, te, label, classes[-1]),
                          "reference": event_risk(pooled_si, te_site, label, classes[-1])}}
    references_seconds = time.perf_counter() - started
    methods_out = {}
    with tempfile.TemporaryDirectory(prefix=f"clinical-{case.name}-") as tmp:
        root = Path(tmp)
        csvs = []
        for name, tr, te in parts:
            train_csv, test_csv = root / f"{name}-train.csv", root / f"{name}-test.csv"
            tr.to_csv(train_csv, index=False, na_rep="")
            te.to_csv(test_csv, index=False, na_rep="")
            csvs.append((name, train_csv, test_csv))
        sample_csv = root / "public-sample.csv"
        pooled.sample(n=min(SCHEMA_SAMPLE_ROWS, len(pooled)), random_state=seed).to_csv(sample_csv, index=False,
                                                                                      na_rep="")
        for method in methods:
            folder = root / "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in method)
            folder.mkdir()
            t0 = time.perf_counter()
            r = product_round(folder, sample_csv, csvs, label, method, seed, options)
            for name in rows:
                site = dict(r.sites[name])
                proba = site.pop("_proba")
                rows[name]["methods"][method] = site
                if len(proba["classes"]) == 2:  # issue #37's paired measures: binary outcomes
                    k = proba["classes"].index(str(classes[-1]))
                    rows[name]["_risk"][method] = {"in_use": proba["in_use"][:, k], "oracle": proba["oracle"][:, k]}
            methods_out[method] = {"kit_columns": r.kit_columns, "schema_notes": r.schema_notes,
                                   "imputed": r.imputed, "analyst_seconds": r.analyst_seconds,
                                   "round_seconds": time.perf_counter() - t0, "figures": r.figures,
                                   "oracle": r.oracle, **r.summary}
    return {"case": case.name, "seed": seed, "sites": rows, "methods": methods_out,
            "references_seconds": references_seconds, "seconds": time.perf_counter() - started}


def _cell_task(name: str, data_dir: str | None, seed: int, methods: Sequence[str], options: RoundOptions):
    from benchmarks import one_thread

    case = CASES[name]
    frame, sites = load_case(case, data_dir)
    with one_thread():
        return run_cell(case, frame, sites, seed, methods, options)


# ---- summary and target --------------------------------------------------------------------------------------
def _mean(values) -> float:
    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else float("nan")


def _se(values) -> float:
    """Standard error of the mean over seeds (NaN for one seed)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")


def summarise(cells: list[dict], methods: Sequence[str]) -> dict[str, Any]:
    """Per case: each site's means over seeds, and per method the target check (module docstring)."""
    out: dict[str, Any] = {}
    for case in dict.fromkeys(c["case"] for c in cells):
        cs = [c for c in cells if c["case"] == case]
        names = list(cs[0]["sites"])
        sites = {}
        for n in names:
            rs = [c["sites"][n] for c in cs]
            s = {"train_rows": _mean(r["train_rows"] for r in rs), "test_rows": _mean(r["test_rows"] for r in rs),
                 "train_events": {c: _mean(r["train_events"][c] for r in rs) for c in rs[0]["train_events"]},
                 "test_events": {c: _mean(r["test_events"][c] for r in rs) for c in rs[0]["test_events"]},
                 "raw_columns": rs[0]["raw_columns"], "encoded_columns": _mean(r["encoded_columns"] for r in rs)}
            for ref in REFERENCES:
                s[ref] = {k: _mean(r[ref][k] for r in rs if ref in r) for k in ("accuracy", "auc")}
            s["methods"] = {m: {"accuracy": _mean(r["methods"][m]["accuracy"] for r in rs),
                                "auc": _mean(r["methods"][m]["auc"] for r in rs),
                                "kept_own_accuracy": _mean(r["methods"][m]["kept_own_accuracy"] for r in rs),
                                "sent_own": int(sum(r["methods"][m]["sent"] == "own" for r in rs)),
                                "used": _counts(r["methods"][m].get("used") for r in rs),
                                "oracle": {k: _mean(r["methods"][m]["oracle"][k] for r in rs if "oracle" in
                                                    r["methods"][m]) for k in ("accuracy", "auc")},
                                **{f"delta_{k}_se": _se([r["methods"][m][k] - r["own_lr"][k] for r in rs])
                                   for k in ("accuracy", "auc")}}
                            for m in methods}
            if all("_risk" in r and all(m in r["_risk"] for m in methods) for r in rs):  # issue #37, binary
                events = list(s["train_events"].values())[-1] + list(s["test_events"].values())[-1]  # the outcome's
                s["gains"] = {m: site_gains([{"y": r["_risk"]["y"], "own": r["_risk"]["own"],
                                              "reference": r["_risk"]["reference"], **r["_risk"][m]} for r in rs],
                                            events) for m in methods}
            sites[n] = s
        mean = {ref: {k: _mean(s[ref][k] for s in sites.values()) for k in ("accuracy", "auc")}
                for ref in REFERENCES}
        info = {m: {"kit_columns": cs[0]["methods"][m]["kit_columns"],
                    "schema_notes": cs[0]["methods"][m]["schema_notes"],
                    "imputed": any(c["methods"][m]["imputed"] for c in cs),
                    "figures": {k: int(sum(c["methods"][m].get("figures", {}).get(k, 0) for c in cs))
                                for k in ("checked", "mismatches")}} for m in methods}
        out[case] = {"seeds": [c["seed"] for c in cs], "sites": sites, "mean": mean, "product": info,
                     "targets": {m: target_check(sites, m) for m in methods}}
        if all("gains" in x for x in sites.values()):
            out[case]["must_show"] = {m: must_show(case, {n: x["gains"][m] for n, x in sites.items()})
                                      for m in methods}
    return out


REFERENCES = ("own_lr", "pooled_lr", "pooled_si_lr", "pooled_hgb")


def _counts(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        if v is not None:
            out[str(v)] = out.get(str(v), 0) + 1
    return out


def smallest_sites(summary: dict[str, Any], methods: Sequence[str]) -> dict[str, Any]:
    """Issue #37's check over every table: the smallest third of all sites (by rows) per method."""
    out = {}
    for m in methods:
        sites = {f"{case}/{n}": {"rows": x["train_rows"] + x["test_rows"], **x["gains"][m]}
                 for case, s in summary.items() for n, x in s["sites"].items() if "gains" in x}
        out[m] = smallest_third(sites)
    return out


MEAN_TOLERANCE = 0.0005  # "at least equal" at the precision the record reports (0.1 pt, 0.001 AUC)


def target_check(sites: dict[str, dict], method: str) -> dict[str, Any]:
    """Issue #22's target for one method on one case, from per-site means over seeds."""
    d_acc = {n: s["methods"][method]["accuracy"] - s["own_lr"]["accuracy"] for n, s in sites.items()}
    d_auc = {n: s["methods"][method]["auc"] - s["own_lr"]["auc"] for n, s in sites.items()}
    pkg = _mean(s["methods"][method]["accuracy"] for s in sites.values())
    own = _mean(s["own_lr"]["accuracy"] for s in sites.values())
    pooled = _mean(s["pooled_lr"]["accuracy"] for s in sites.values())
    pkg_auc = _mean(s["methods"][method]["auc"] for s in sites.values())
    own_auc = _mean(s["own_lr"]["auc"] for s in sites.values())
    gap = pooled - own
    share = (pkg - own) / gap if gap > 0.02 else None
    worst_acc, worst_auc = min(d_acc.values()), min(d_auc.values())
    se_acc = sites[min(d_acc, key=d_acc.get)]["methods"][method].get("delta_accuracy_se", float("nan"))
    se_auc = sites[min(d_auc, key=d_auc.get)]["methods"][method].get("delta_auc_se", float("nan"))
    ok_sites = worst_acc >= -0.01 and worst_auc >= -0.01
    ok_mean = pkg >= own - MEAN_TOLERANCE and pkg_auc >= own_auc - MEAN_TOLERANCE  # equal as reported
    ok_gap = share is None or share >= 0.5
    return {"worst_site_accuracy_pt": 100 * worst_acc, "worst_site_auc": worst_auc,
            "worst_site_accuracy_se_pt": 100 * se_acc, "worst_site_auc_se": se_auc,
            "sites_below": sorted(n for n in sites if d_acc[n] < -0.01 or d_auc[n] < -0.01),
            "mean_accuracy_pt": 100 * (pkg - own), "mean_auc": pkg_auc - own_auc,
            "pooled_gap_pt": 100 * gap, "gap_closed": share,
            "pass_sites": bool(ok_sites), "pass_mean": bool(ok_mean), "pass_gap": bool(ok_gap),
            "pass": bool(ok_sites and ok_mean and ok_gap)}


def target_line(case: str, method: str, t: dict) -> str:
    share = "pooling helps ≤ 2 pt (no gap target)" if t["gap_closed"] is None else \
        f"gap to pooled LR {t['pooled_gap_pt']:.1f} pt, {100 * t['gap_closed']:.0f} % closed"
    se = "" if not np.isfinite(t.get("worst_site_accuracy_se_pt", float("nan"))) else \
        f" (± {t['worst_site_accuracy_se_pt']:.1f} / ± {t['worst_site_auc_se']:.3f} over seeds)"
    return (f"{case} / {method}: {'PASS' if t['pass'] else 'FAIL'} — worst site {t['worst_site_accuracy_pt']:+.1f} pt "
            f"/ {t['worst_site_auc']:+.3f} AUC{se}; mean {t['mean_accuracy_pt']:+.1f} pt / {t['mean_auc']:+.3f} AUC; "
            f"{share}" + (f"; sites below: {', '.join(t['sites_below'])}" if t["sites_below"] else ""))


# ---- record --------------------------------------------------------------------------------------------------
def _f(x, digits: int = 3) -> str:
    return "–" if x is None or (isinstance(x, float) and not np.isfinite(x)) else f"{x:.{digits}f}"


def markdown(out: dict, command: str) -> str:
    """The record: protocol, the target check per case and method, and per case the per-site table."""
    from benchmarks import machine

    methods = out["methods"]
    lines = ["# Clinical tables: the product's package vs each site's own logistic regression (issue #22)", "",
             f"Command: `{command}`", "", f"Commit: {out.get('commit') or 'unknown'}. Machine: {machine()}; load "
             f"average at the end {out.get('load', 0):.1f} (shared machine); {out['jobs']} worker process(es).", "",
             f"Wall time {out['wall_seconds'] / 60:.1f} min; seeds {out['seeds']}; methods {', '.join(methods)}; "
             f"site CSVs read with `impute` = {out['site_impute']}.", "",
             (__doc__ or "").split("\n\n", 1)[1].strip(), "", "## Target check", "",
             "Means over seeds; Δ = package − the site's own raw-row logistic regression; ± is the standard "
             "error of the worst site's Δ over seeds.", ""]
    lines += [f"- {target_line(case, m, s['targets'][m])}" for case, s in out["summary"].items() for m in methods]
    lines += issue37_markdown(out)
    lines += ["", "## Per-site figures against scikit-learn (issue #23)", "",
              "Every per-site figure of each round's summary.json and report.html, recomputed with scikit-learn on the "
              "out-of-fold predictions it was computed on (`benchmarks/metrics_agreement.py`; summed over seeds):", ""]
    lines += [f"- {case} / {m}: figures checked: {s['product'][m]['figures']['checked']}, mismatches: "
              f"{s['product'][m]['figures']['mismatches']}" for case, s in out["summary"].items() for m in methods]
    for case, s in out["summary"].items():
        lines += ["", f"## {case}", "", f"Sites: {out['rules'][case]}.", ""]
        for m in methods:
            p = s["product"][m]
            lines.append(f"- `{m}` kit columns ({len(p['kit_columns'])}): {', '.join(p['kit_columns'])}"
                         + (f"; schema notes: {'; '.join(p['schema_notes'])}" if p["schema_notes"] else "")
                         + ("; the sites' CSVs needed `impute = mean`" if p["imputed"] else ""))
        head = ["site", "train rows (events)", "test rows (events)", "columns raw / encoded",
                "own LR acc / AUC", *[f"{m} acc / AUC" for m in methods], "pooled LR acc / AUC",
                "pooled LR + site intercepts acc / AUC", "pooled GBM acc / AUC",
                *[f"{m}: kept LR acc · sent own" for m in methods]]
        lines += ["", "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
        for n, x in s["sites"].items():
            ev = list(x["train_events"])[-1]
            cells = [n, f"{x['train_rows']:.0f} ({x['train_events'][ev]:.0f})", f"{x['test_rows']:.0f} "
                     f"({x['test_events'][ev]:.0f})", f"{x['raw_columns']} / {x['encoded_columns']:.0f}",
                     f"{_f(x['own_lr']['accuracy'])} / {_f(x['own_lr']['auc'])}",
                     *[f"{_f(x['methods'][m]['accuracy'])} / {_f(x['methods'][m]['auc'])}" for m in methods],
                     f"{_f(x['pooled_lr']['accuracy'])} / {_f(x['pooled_lr']['auc'])}",
                     f"{_f(x['pooled_si_lr']['accuracy'])} / {_f(x['pooled_si_lr']['auc'])}",
                     f"{_f(x['pooled_hgb']['accuracy'])} / {_f(x['pooled_hgb']['auc'])}",
                     *[f"{_f(x['methods'][m]['kept_own_accuracy'])} · {x['methods'][m]['sent_own']}/"
                       f"{len(s['seeds'])}" for m in methods]]
            lines.append("| " + " | ".join(cells) + " |")
        mean = s["mean"]
        pk = {m: (_mean(x["methods"][m]["accuracy"] for x in s["sites"].values()),
                  _mean(x["methods"][m]["auc"] for x in s["sites"].values())) for m in methods}
        lines.append("| **mean** | | | | " + " | ".join(
            [f"{_f(mean['own_lr']['accuracy'])} / {_f(mean['own_lr']['auc'])}",
             *[f"{_f(pk[m][0])} / {_f(pk[m][1])}" for m in methods],
             f"{_f(mean['pooled_lr']['accuracy'])} / {_f(mean['pooled_lr']['auc'])}",
             f"{_f(mean['pooled_si_lr']['accuracy'])} / {_f(mean['pooled_si_lr']['auc'])}",
             f"{_f(mean['pooled_hgb']['accuracy'])} / {_f(mean['pooled_hgb']['auc'])}", *["" for _ in methods]])
                     + " |")
        lines += ["", "Rows and events (rows of the last class, the outcome): means over seeds. \"kept LR\": the "
                  "logistic regression the site keeps at export on the kit's columns, scored by `apply --validate`; "
                  "\"sent own\": seeds in which the analyst sent the site \"keep your own model\"."]
    return "\n".join(lines) + "\n"


def issue37_markdown(out: dict) -> list[str]:
    """The record's issue #37 section: the checks, then per case and method the per-site gains table."""
    methods, summary = out["methods"], out["summary"]
    if not any("must_show" in s for s in summary.values()):
        return []
    lines = ["", "## Collaboration that pays (issue #37)", "",
             (clinical_gains.__doc__ or "").split("\n\n", 1)[1].strip(),
             "", "### Must show", ""]
    lines += [f"- {line}" for line in issue37_lines(out)]
    how = {m: next((c["methods"][m].get("oracle") for c in out.get("cells", []) if m in c["methods"]), "")
           for m in methods}
    lines += ["", "Oracle per method: " + "; ".join(f"`{m}`: {how[m]}" for m in methods) + "."]
    for case, s in summary.items():
        if "must_show" not in s:
            continue
        for m in methods:
            used = {n: x["methods"][m].get("used", {}) for n, x in s["sites"].items()}
            lines += ["", f"### {case} / {m}", "",
                      *gains_table({n: x["gains"][m] for n, x in s["sites"].items()}, used, len(s["seeds"]))]
    lines += ["", "AUCs: means over seeds of each seed's test-row AUC. Differences: paired over the same test rows, "
              "stratified DeLong over seeds with a 95 % interval. \"used\": which model `participant apply` used, "
              "seeds per kind (package = the package as sent; own = the site's own model). Events: the site's "
              "outcome rows, training and test. Calibration slope: logistic recalibration of the model in use on "
              "all seeds' test rows."]
    return lines


def _commit() -> str | None:
    import subprocess

    try:
        root = Path(__file__).resolve().parents[1]
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def run(cases: Sequence[str], seeds: Sequence[int], methods: Sequence[str], *, data_dir: str | None = None,
        options: RoundOptions | None = None, jobs: int = 1, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Every (case, seed) cell (in ``jobs`` processes), the summary and the target check."""

    options = options or RoundOptions()
    for m in methods:
        method_spec(m)  # an unknown method or setting is one sentence before any work
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        raise ConfigError(f"unknown clinical case '{unknown[0]}'; the cases are {', '.join(CASES)}")
    for c in cases:
        load_case(CASES[c], data_dir)  # a missing table is one sentence before any work
    tasks = [(c, s) for c in cases for s in seeds]
    tasks.sort(key=lambda t: t[0] != "flchain")  # the biggest first, for load balance
    started = time.perf_counter()
    cells = []

    def done(cell: dict) -> None:
        cells.append(cell)
        say(f"[{len(cells)}/{len(tasks)}] {cell['case']} seed {cell['seed']} ({cell['seconds']:.0f} s): " + "; ".join(
            f"{n} own {r['own_lr']['accuracy']:.3f} " + " ".join(
                f"{m} {r['methods'][m]['accuracy']:.3f}" for m in methods) for n, r in cell["sites"].items()))

    if jobs <= 1:
        for c, s in tasks:
            done(_cell_task(c, data_dir, s, methods, options))
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor, as_completed

        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            for fut in as_completed([pool.submit(_cell_task, c, data_dir, s, methods, options) for c, s in tasks]):
                done(fut.result())
    cells.sort(key=lambda c: (list(cases).index(c["case"]), c["seed"]))
    return {"experiment": "clinical", "cases": list(cases), "seeds": list(seeds), "methods": list(methods),
            "site_impute": options.site_impute, "jobs": jobs, "rules": {c: CASES[c].rule for c in cases},
            "summary": (summary := summarise(cells, methods)), "smallest": smallest_sites(summary, methods),
            "cells": cells, "wall_seconds": time.perf_counter() - started, "load": os.getloadavg()[0],
            "commit": _commit()}


def run_from_args(args, say: Callable[[str], None]) -> dict[str, Any]:
    """``python -m benchmarks clinical [--dataset CASE]… [--seeds N] [--method M]… [--site-impute auto|mean|none]
    [--data-dir DIR] [--json FILE]``; seeds default to 5 here."""
    from benchmarks import worker_count
    from core.api import write_json_atomic, write_text_atomic

    cases = args.dataset or list(CASES)
    n_seeds = args.seeds if getattr(args, "seeds_given", False) else DEFAULT_SEEDS
    methods = list(dict.fromkeys(getattr(args, "method", None) or DEFAULT_METHODS))
    options = RoundOptions(site_impute=getattr(args, "site_impute", None) or "auto")
    out = run(cases, list(range(n_seeds)), methods, data_dir=args.data_dir, options=options, jobs=worker_count(),
              say=say)
    parts = ["python -m benchmarks clinical", *(f"--dataset {c}" for c in (args.dataset or [])),
             f"--seeds {n_seeds}", *(f"--method {m}" for m in (getattr(args, "method", None) or [])),
             *([f"--site-impute {options.site_impute}"] if options.site_impute != "auto" else []),
             *([f"--data-dir {args.data_dir}"] if args.data_dir else []),
             *([f"--json {args.json}"] if args.json else [])]
    out["command"] = " ".join(parts)
    say("", "Target check (issue #22):",
        *(target_line(c, m, s["targets"][m]) for c, s in out["summary"].items() for m in methods),
        *(f"{c} / {m}: figures checked: {s['product'][m]['figures']['checked']}, mismatches: "
          f"{s['product'][m]['figures']['mismatches']}" for c, s in out["summary"].items() for m in methods),
        "", "Collaboration that pays (issue #37):", *issue37_lines(out),
        f"wall time {out['wall_seconds'] / 60:.1f} min")
    if args.json:
        write_json_atomic(args.json, _finite(json.loads(json.dumps(_public(out), default=_jsonable))))
        write_text_atomic(Path(args.json).with_suffix(".md"), markdown(out, out["command"]))
    return out


def issue37_lines(out: dict) -> list[str]:
    """Issue #37's "Must show" checks, one line each (:mod:`benchmarks.clinical_gains`)."""
    lines = [line for case, s in out["summary"].items() for m in out["methods"] if "must_show" in s
             for line in check_lines(case, m, s["must_show"][m])]
    return lines + [smallest_line(m, x) for m, x in out.get("smallest", {}).items()]


def _public(o: Any) -> Any:
    """The tree without the in-memory arrays (keys starting with '_': each test row's risks)."""
    if isinstance(o, dict):
        return {k: _public(v) for k, v in o.items() if not str(k).startswith("_")}
    if isinstance(o, list):
        return [_public(v) for v in o]
    return o


def _jsonable(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"not JSON-able: {type(o)}")


def _finite(o: Any) -> Any:
    """The JSON tree with NaN (an AUC on one-class test rows) as null: strict JSON."""
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_finite(v) for v in o]
    return None if isinstance(o, float) and not np.isfinite(o) else o


__all__ = ["CASES", "Case", "RoundOptions", "contiguous_groups", "load_case", "markdown", "product_round", "run",
           "run_cell", "run_from_args", "scores", "split_sites", "summarise", "target_check"]
