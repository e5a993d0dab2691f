"""The one interface every method plugs into the pipelines, the CLI, the app and the report through.

A method declares (class attributes) what it is for and what it needs — ``task``, ``needs_anchor``,
``labels_leave``, ``what_leaves``, ``kit_carries_aux``, what its bundle releases of a site's rows (``discloses``, a
:class:`core.privacy.release.Release`, which the privacy assessment reads), who can score a site's own model
against the shared one (``own_model_choice``, :mod:`core.methods.promise`) — and its settings as data
(:attr:`Method.settings_spec`, see :mod:`core.methods.settings`). It implements four steps:

1. ``site_compute``: what a site computes and ships (:class:`SiteExport`), given its rows (and X^anc when
   ``needs_anchor``);
2. ``check_bundle``: whether a verified, decrypted bundle fits the kit and this method (shapes, ranges);
3. ``fit(bundles, context)``: what the analyst learns (:class:`MethodResult`: per-site package contents,
   a JSON-able summary, arrays for plots);
4. ``apply``: what a site does with its package, given its kept private state;

and says what it shows: ``summary_lines`` (CLI), ``views`` (plots and tables as data, drawn by the app
and the report), ``page_texts`` (the analyst window's headings, explanations, axis names and which of its
controls apply), and optionally ``client_distances`` (the Clients page's interactive view, for methods
that cluster sites). The pipelines handle files, keys, workspaces, audit and checks; a new method is one
module plus one line in :mod:`core.methods` (or a :func:`core.methods.register` call).
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..control import JobControl, ensure
from ..errors import ConfigError, FormatError
from ..formats.fields import Array, Facts, Field, Rule, check_fields, declaration, method_schemas
from ..learn.reduction import resolved_dimension
from ..privacy.release import Release
from .settings import Setting, check_settings
from .views import Heatmap, PageTexts, View


@dataclass
class SiteInput:
    """What a site's method sees: its rows in kit column order, labels as class indices, X^anc."""

    X: np.ndarray
    y: np.ndarray | None
    classes: list[str]
    anchor: np.ndarray | None
    ids_hashed: np.ndarray | None = None  # (n, 32) uint8 keyed hashes, when the kit links rows by id
    settings: dict = field(default_factory=dict)  # site-side settings (checked against the method's spec)
    block: str | None = None  # the feature block these columns are (clustering kits; X and anchor hold only it)
    scale: np.ndarray | None = None  # the kit's public per-column scale (standard deviations), when it gives one
    centre: np.ndarray | None = None  # the kit's public per-column means, when it gives them (formal noise)


@dataclass
class Disclosure:
    """One array (or manifest value) that leaves the site, described for a person."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    meaning: str
    plain: str = ""  # the same for someone who has never heard of Data Collaboration


@dataclass
class SiteExport:
    """A site's one-shot contribution: what ships, and what stays in its workspace."""

    arrays: dict[str, np.ndarray]
    manifest: dict
    private_arrays: dict[str, np.ndarray]
    private_meta: dict
    disclosures: list[Disclosure]
    stays: list[str]
    plain: str = ""  # what leaves, in plain words for the site's staff (e.g. core.wording.leaves_sentence)

    @property
    def shipped_bytes(self) -> int:
        return int(sum(a.nbytes for a in self.arrays.values()))


@dataclass
class ReceivedBundle:
    """A verified, decrypted bundle as the analyst holds it."""

    site: str
    fingerprint: str
    digest: str
    envelope_id: str
    manifest: dict
    arrays: dict[str, np.ndarray]
    card: Any = None  # core.formats.identity.PublicCard (kept untyped to keep this module dependency-free)


@dataclass
class FitContext:
    """What the analyst's side gives ``fit`` besides the bundles.

    classes : the kit's class names (empty for clustering). blocks : the kit's feature-block names in
    order. control : progress and cancel. on_epoch(epoch, losses) : per-epoch training callback (or None).
    features : the kit's column names in order (for methods that report per-column results; may be empty).
    """

    classes: list[str]
    blocks: list[str] = field(default_factory=list)
    control: JobControl | None = None
    on_epoch: Callable[[int, Any], None] | None = None
    features: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.control = ensure(self.control)


@dataclass
class MethodResult:
    """Everything the analyst learned: per-site package contents plus a JSON-able summary."""

    method: str
    packages: list[tuple[dict, dict[str, np.ndarray]]]  # per received bundle: (manifest, arrays)
    summary: dict
    details: dict = field(default_factory=dict)  # arrays for plots/reports (distances, curves, …)


@dataclass
class ClientDistances:
    """The Clients page's view for methods that cluster sites: a distance matrix between sites, the
    per-site histograms it came from, and ``cut(t)`` → cluster of each site (0-based)."""

    distances: np.ndarray
    histograms: np.ndarray
    linkage: np.ndarray
    cut: Callable[[float], np.ndarray]
    what: str  # e.g. "total-variation distance between the sites' label distributions"
    # Further site × site matrices drawn beside ``distances`` (e.g. the distance the method groups by).
    companions: list[Heatmap] = field(default_factory=list)
    # The groups the method will train (0-based, per site) when it does not cut the dendrogram at a
    # threshold (e.g. k-means on a companion matrix); the page then shows these instead of ``cut(t)``.
    chosen: np.ndarray | None = None
    chosen_how: str = ""  # one phrase: how ``chosen`` was found


class Method(ABC):
    name: ClassVar[str]
    title: ClassVar[str]  # one line for analysts: what the method does
    plain_title: ClassVar[str] = ""  # the same for a site's staff, without terms
    task: ClassVar[str]  # "classification" | "clustering"
    family: ClassVar[str]  # bundles of the same family are interchangeable (e.g. dc and dccfl)
    labels_leave: ClassVar[str]  # "rows" | "counts" | "none"
    labels_at_site: ClassVar[bool] = False  # the site reads its labels even though none leave (a model fitted there)
    needs_anchor: ClassVar[bool] = True  # sites need the participants' shared anchor file
    kit_carries_aux: ClassVar[bool] = False  # the kit holds public auxiliary data for the analyst (never X^anc)
    what_leaves: ClassVar[str] = ""  # one sentence for people, before anything is computed
    # What the bundle releases of the site's rows (kind and arrays; core/privacy/release.py): every method declares
    # it, and the privacy assessment reads it to choose the attacks that apply.
    discloses: ClassVar[Release]
    settings_spec: ClassVar[tuple[Setting, ...]] = ()
    # The method's part of its files' declarations (core/formats/fields.py), used to write them and to check them:
    # the manifest members its bundles and packages carry beyond the shared ones (adding one is one line here), the
    # arrays its bundles hold (dtype, and shape from the manifest and the kit; None leaves them to check_bundle) and
    # the rules between them. The pipelines check them before check_bundle / check_package / apply see a file.
    bundle_fields: ClassVar[tuple[Field, ...]] = ()
    package_fields: ClassVar[tuple[Field, ...]] = ()
    bundle_arrays: ClassVar[tuple[Array, ...] | None] = None
    bundle_rules: ClassVar[tuple[Rule, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any):
        super().__init_subclass__(**kwargs)
        if isinstance(cls.__dict__.get("name"), str):
            if not isinstance(getattr(cls, "discloses", None), Release):
                raise TypeError(f"method '{cls.name}' does not declare what it discloses: set its class attribute "
                                "discloses = Release(kind, rows=...) (core/privacy/release.py)")
            method_schemas(cls.name, cls.bundle_fields, cls.package_fields, family=cls.family,
                           arrays=cls.bundle_arrays, rules=cls.bundle_rules,
                           site_scored=cls.task == "classification" and cls.own_model_choice == "site")
    # Classification: who can score a site's candidates, its own model among them (:mod:`core.methods.promise`).
    # "analyst": the analyst chooses per site from what it received; "site": it cannot, so the site keeps some rows
    # out of its export and chooses at apply. A new method is "site" unless it says it can score.
    own_model_choice: ClassVar[str] = "site"
    # Whether ``apply``'s columns for a row depend on that row alone, not on the other rows given with it (a fitted
    # model applied row by row; not a clustering that maps the exported rows back by their permutation): a site's
    # ``apply`` then streams its CSV to RESULT.csv block by block (core/participant.py, core/result_csv.py).
    apply_per_row: ClassVar[bool] = False
    # Whether a site's default numbers per row are the papers' m − 1 rather than the product's rule (DC-Clustering).
    papers_dimension: ClassVar[bool] = False

    def __init__(self, **settings: Any):
        self.settings = check_settings(self.name, self.settings_spec, settings, side="analyst")
        self.check_settings()

    def check_settings(self) -> None:  # noqa: B027 - optional hook
        """Raise ConfigError when settings that are each valid do not fit together."""

    @classmethod
    def with_known(cls, settings: dict) -> Method:
        """An instance from ``settings``, leaving out those this method does not declare (e.g. DC-CFL's
        threshold when the same settings drive DC's one shared model)."""
        own = cls.default_settings()
        return cls(**{k: v for k, v in settings.items() if k in own})

    # ---- declarations ------------------------------------------------------------------------------------
    @classmethod
    def default_settings(cls) -> dict:
        """The kit-level (analyst-side) settings and their defaults."""
        return {s.name: s.default for s in cls.settings_spec if s.side == "analyst"}

    @classmethod
    def reads_labels(cls) -> bool:
        """Whether a site reads its label column: labels leave (``rows`` or ``counts``), or the site's own
        computation uses them while none leave (``labels_at_site``, e.g. a model whose coefficients leave)."""
        return cls.labels_leave != "none" or cls.labels_at_site

    @classmethod
    def site_settings_spec(cls) -> tuple[Setting, ...]:
        return tuple(s for s in cls.settings_spec if s.side == "site")

    @classmethod
    def check_site_settings(cls, given: dict) -> dict:
        return check_settings(cls.name, cls.settings_spec, given, side="site")

    @classmethod
    def numbers_per_row(cls, settings: dict | None, n_columns: int, n_rows: int | None = None) -> int | None:
        """How many numbers each of a site's rows keeps in its export: the site's ``dimension`` setting resolved for m =
        ``n_columns`` encoded columns and n = ``n_rows`` rows (:func:`core.learn.reduction.resolved_dimension`, the
        rule the export itself follows), or None for a method without that site setting. The kit page, the privacy
        page and the bundle show this one value."""
        spec = cls.setting("dimension")
        if spec is None or spec.side != "site":
            return None
        return resolved_dimension((settings or {}).get("dimension"), n_columns, n_rows, papers=cls.papers_dimension)

    @classmethod
    def setting(cls, name: str) -> Setting | None:
        return next((s for s in cls.settings_spec if s.name == name), None)

    @classmethod
    def threshold_setting(cls) -> Setting | None:
        """The setting the Clients page's threshold line sets, if this method has one."""
        return next((s for s in cls.settings_spec if s.role == "threshold"), None)

    # ---- the four steps ----------------------------------------------------------------------------------
    @abstractmethod
    def site_compute(self, site: SiteInput, control: JobControl | None = None) -> SiteExport:
        """What a site computes from its rows and what of it leaves (step 1, at the site, before anything is sealed).

        Parameters
        ----------
        site : the site's rows in kit column order (missing cells filled, levels encoded), its labels as class
            indices when the method reads them (:meth:`reads_labels`), X^anc when ``needs_anchor``, its checked
            site settings and the kit's public scale and centre.
        control : progress and cancel (:class:`core.control.JobControl`); call ``control.step`` as the work goes.

        Returns
        -------
        SiteExport
            ``arrays`` and ``manifest`` that ship (declared in ``bundle_arrays`` / ``bundle_fields``; what they release
            of the rows is :attr:`discloses`), ``private_arrays`` and ``private_meta`` that stay in the site's
            workspace for :meth:`apply`, and the ``disclosures`` and ``stays`` sentences the site reads first.
        """

    @classmethod
    def bundle_facts(cls, kit, manifest: dict) -> Facts:
        """What the kit fixes about a bundle of this method (its members typed before): the encoded width, the class
        count, the raw column names, whether rows are linked by id, and this method's settings in the kit."""
        schema = kit.schema
        return Facts(width=schema.width, classes=len(schema.classes) if kit.task == "classification" else 0,
                     features=tuple(schema.feature_names), linked=len(schema.block_names) > 1,
                     settings={**cls.default_settings(), **(kit.settings if kit.method == cls.name else {})})

    @classmethod
    def check_bundle_declared(cls, manifest: dict, arrays: dict[str, np.ndarray], kit) -> dict:
        """The bundle checked against its declaration (``bundle:<name>``): members typed and ranged, arrays of the
        declared dtypes and shapes, rules between them and the kit; FormatError naming the member, array or rule.
        Returns the declared members only (what the analyst may read)."""
        kind = f"bundle:{cls.name}"
        check_fields(kind, manifest, "the bundle's manifest")
        return declaration(kind).check(manifest, "the bundle's manifest", arrays, cls.bundle_facts(kit, manifest))

    @classmethod
    def write_bundle_manifest(cls, manifest: dict, arrays: dict[str, np.ndarray], kit) -> dict:
        """``manifest`` as the site writes it, checked first against the bundle's declaration exactly as the analyst
        will check it (an undeclared member or a value outside the declaration is a FormatError here)."""
        return declaration(f"bundle:{cls.name}").write(manifest, arrays, cls.bundle_facts(kit, manifest))

    @classmethod
    def check_package_fields(cls, manifest: dict) -> dict:
        """The package manifest's members typed and ranged (``package:<name>``): FormatError naming the field.
        Returns the declared members only (what the site may read)."""
        return declaration(f"package:{cls.name}").check(manifest, "the package's manifest")

    @classmethod
    def write_package_manifest(cls, manifest: dict) -> dict:
        """``manifest`` as the analyst writes it, checked against the package's declaration (as the site will)."""
        return declaration(f"package:{cls.name}").write(manifest)

    def check_bundle(self, bundle: ReceivedBundle, kit) -> None:
        """Whether a verified, decrypted bundle fits the kit and this method (step 2, at the analyst).

        Parameters
        ----------
        bundle : the bundle as the analyst holds it; its manifest's members and its arrays were checked against the
            bundle's declaration before (:meth:`check_bundle_declared`).
        kit : the project's kit (:class:`core.formats.kit.Kit`).

        Returns
        -------
        None; raises :class:`core.errors.FormatError` with one sentence naming what does not fit.
        """
        if bundle.manifest.get("family") != self.family:
            raise FormatError(f"bundle was made for method '{bundle.manifest.get('method')}', not for this kit's "
                              "method")

    @abstractmethod
    def fit(self, bundles: list[ReceivedBundle], context: FitContext) -> MethodResult:
        """What the analyst learns from every site's bundle (step 3).

        Parameters
        ----------
        bundles : the checked bundles in the canonical site order (:func:`canonical_order`); deterministic in them.
        context : the kit's classes, blocks and column names, progress and cancel, a per-epoch callback.

        Returns
        -------
        MethodResult
            ``packages``: one (manifest, arrays) per bundle, in the order given (declared in ``package_fields``);
            ``summary``: a JSON-able summary (``sites``: one entry per site, with ``own_model`` for classification);
            ``details``: arrays for plots and the report.
        """

    def check_package(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],  # noqa: B027
                      kit) -> None:
        """Raise FormatError unless the package's arrays have exactly the names, dtypes and shapes this method's
        apply needs for this site's kept state and the kit (FORMAT.md's MUST-refuse rules), before any is used.
        Its manifest's fields were typed before (:meth:`check_package_fields`)."""

    @abstractmethod
    def apply(self, manifest: dict, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray],
              X: np.ndarray) -> dict[str, np.ndarray]:
        """What a site does with its package (step 4, at the site).

        Parameters
        ----------
        manifest, arrays : the package's checked members and arrays (:meth:`check_package`).
        private_arrays : what this site's export kept in its workspace (``SiteExport.private_arrays``).
        X : the rows to predict or place, in kit column order (encoded as at export, with the export's fills).

        Returns
        -------
        dict
            Columns to add to the site's CSV: name → one value per row of ``X``, in its order (e.g. ``prediction``
            and ``prob_<class>``, or ``cluster``).
        """

    # ---- what it shows -----------------------------------------------------------------------------------
    def summary_lines(self, summary: dict) -> list[str]:
        """Lines for the CLI after ``analyst run``.

        Parameters
        ----------
        summary : :attr:`MethodResult.summary` of this method's fit.

        Returns
        -------
        list of str
            Plain lines, one fact each.
        """
        return [f"method {self.name}: {len(summary.get('sites', []))} site(s)"]

    def views(self, result: MethodResult) -> list[View]:
        """Tables and plots of a result, as data (:mod:`core.methods.views`): the analyst window and the report draw
        them.

        Parameters
        ----------
        result : this method's :meth:`fit` result.

        Returns
        -------
        list of View
            Tables, curves, bars, heatmaps, scatters and texts, in the order shown.
        """
        return []

    @classmethod
    def page_texts(cls) -> PageTexts:
        """The Models and Clients pages' words and controls for this method (see :class:`PageTexts`). The
        default fits a method that trains a model with a live loss and draws no cut: it names no method's terms."""
        if cls.task == "clustering":
            return PageTexts(models="Group the rows of every site together; the groups appear on the Data "
                                    "clustering page.", train="&Cluster the data")
        return PageTexts(models="Train the model on the imported bundles. Each site's expected accuracy and its "
                                "figures appear below when training ends.",
                         loss="Training loss (live)", loss_y="loss",
                         clients="How the sites' outcome mixes differ (for exploring: this method does not "
                                 "group sites by a threshold).",
                         distance="difference in outcome mix",
                         distance_tip="total-variation distance between the sites' label distributions")

    def client_distances(self, bundles: list[ReceivedBundle], classes: list[str]) -> ClientDistances | None:
        """The Clients page's view before any fit (methods that cluster sites).

        Parameters
        ----------
        bundles : the checked bundles; classes : the kit's class names.

        Returns
        -------
        ClientDistances or None
            The site × site distances, the histograms they come from and how a threshold cuts them; None hides the
            view.
        """
        return None

    def representation(self, arrays: dict[str, np.ndarray], private_arrays: dict[str, np.ndarray]
                       ) -> tuple[np.ndarray, np.ndarray] | None:
        """(per-row representation in the site's own order, centroids), for methods that return one."""
        return None


def need(condition: bool, message: str) -> None:
    """ConfigError with ``message`` unless ``condition``: for :meth:`Method.check_settings`."""
    if not condition:
        raise ConfigError(message)


def rows_digest(X: np.ndarray) -> np.ndarray:
    """SHA-256 of a site's float64 matrix, (32,) uint8: ties a package's labels to the exported rows."""
    return np.frombuffer(hashlib.sha256(np.ascontiguousarray(X, dtype=np.float64).tobytes()).digest(),
                         dtype=np.uint8).copy()


def content_digest(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 (hex) of a bundle's decrypted arrays — names, dtypes, shapes and bytes, in name order. Unlike the
    sealed file's digest it does not change when the same content is sealed again (fresh keys and nonces), so
    the analysis seeds and orders sites by it (:func:`core.methods.dc_analysis.derived_seed`)."""
    h = hashlib.sha256(b"dcstudio/bundle-content/v1")
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\0{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def canonical_order(bundles: list[ReceivedBundle]) -> list[int]:
    """The canonical order of the sites: by the digest of the bundle's decrypted content (:func:`content_digest`;
    then sealed-file digest, fingerprint, site name), never by the order, names or modification times of the
    files, nor by the fresh keys and nonces of their sealing. The analyst's pipeline hands every method its
    bundles in this order (:meth:`core.analyst.AnalystRound.run`), so a method that is deterministic in its input
    is deterministic in the files."""
    keys = [(content_digest(b.arrays), b.digest, b.fingerprint, b.site) for b in bundles]
    return sorted(range(len(bundles)), key=lambda i: keys[i])


def canonical_cluster_numbers(labels: np.ndarray, k: int, weights: np.ndarray | None = None) -> np.ndarray:
    """``new[old]``: cluster numbers by content, so the same clustering is numbered the same however its
    algorithm happened to number it: the largest cluster (in rows, or in ``weights`` per entry) first, ties by
    the cluster's first entry in ``labels`` (the rows in the canonical site order). Entries < 0 (no cluster) and
    empty clusters keep their place after the others."""
    labels = np.asarray(labels, dtype=np.int64)
    w = np.ones(len(labels)) if weights is None else np.asarray(weights, dtype=np.float64)
    ok = labels >= 0
    size = np.bincount(labels[ok], weights=w[ok], minlength=k)[:k]
    first = np.full(k, len(labels), dtype=np.int64)
    np.minimum.at(first, labels[ok], np.flatnonzero(ok))
    old = np.lexsort((np.arange(k), first, -size))  # last key sorts first: size, then first entry
    new = np.empty(k, dtype=np.int64)
    new[old] = np.arange(k)
    return new


def check_standardised(manifest: dict, expected: bool, scaling: str, made: str) -> None:
    """A bundle's ``standardised`` flag (default true) agrees with the kit's ``scaling`` setting; FormatError saying
    the site must export again otherwise. ``made``: how the bundle was made ("reduced", "grouped")."""
    standardised = manifest.get("standardised", True)
    if standardised != expected:
        raise FormatError(f"bundle was {made} {'with' if standardised else 'without'} standardisation, but the kit's "
                          f"scaling is {scaling!r}: the site must export again with this kit")
