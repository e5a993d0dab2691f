"""The participant's half of a round: CSV → private reduction → sealed bundle; later package → results.

:class:`ParticipantRound` is the object the export wizard holds and the CLI drives: load the CSV, compute
(and show) what leaves, then seal. :func:`apply_package` is the site's last step.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .control import JobControl, ensure
from .data.blocks import BlockReader, NotStreamable
from .data.encoding import encoded_means, encoded_scales
from .data.harmony import unit_warnings
from .data.missing import public_fills
from .data.public_stats import formal_scales
from .data.tabular import CsvFormat, CsvOptions, LocalTable, preview, read_table
from .errors import Cancelled, ConfigError, DataError, DCError, FormatError, VerificationError
from .fileio import atomic_writer, significant, utc_now
from .formats.anchor import AnchorFile
from .formats.envelope import DEFAULT_LIMITS, Limits, Payload, SealedFile, inspect, open_sealed, seal
from .formats.identity import Identity, PublicCard, read_fingerprint
from .formats.kit import Kit
from .formats.thresholds import PrivacyThresholds
from .formats.workspace import SiteWorkspace, remove_empty_workspace
from .heap import reuse_freed_memory
from .learn.clinical_metrics import delong, json_safe, metrics_for
from .learn.intervals import estimate, mcnemar_p
from .learn.local_model import has_local_model, local_predict_proba
from .learn.own_cv import MODEL_NAME as OWN_MODEL_NAME
from .learn.threshold import DEFAULT_THRESHOLD, check_threshold, rates_at, threshold_for
from .methods import METHODS, Disclosure, SiteExport, SiteInput, get_method, method_class
from .methods.promise import check_shared_oof, export_with_check, own_model_state, promised_columns
from .parallel import one_blas_thread
from .privacy.assessment import PrivacyAssessment, assess_export
from .privacy.ledger import Ledger, spent
from .privacy.protective import is_formal
from .result_csv import ResultWriter
from .wording import ARRAY_WORDS


def hash_ids(ids: np.ndarray, key: bytes) -> np.ndarray:
    """HMAC-SHA-256 of every id under the participants' key: (n, 32) uint8, irreversible to the analyst."""
    out = np.empty((len(ids), 32), dtype=np.uint8)
    for i, v in enumerate(ids):
        out[i] = np.frombuffer(hmac.new(key, str(v).encode("utf-8"), hashlib.sha256).digest(), dtype=np.uint8)
    return out


def own_cv_disclosure(cv: dict) -> Disclosure:
    """The privacy page's line for the ``own_cv`` scores: every number that leaves, with its row counts."""
    events = f", {cv['events']} events" if "events" in cv else ""
    shown = (f"accuracy {cv['accuracy']:.3f}, balanced accuracy {cv['balanced_accuracy']:.3f}, AUC {cv['auc']:.3f}, "
             f"log-loss {cv['log_loss']:.3f}")
    return Disclosure("own_cv", (len(cv),), "numbers",
                      f"how well a {cv['model']} of your rows predicts them, cross-validated here "
                      f"({cv['folds']}-fold × {cv['repeats']} on {cv['rows']} rows{events}): {shown}; "
                      "only these scores, never the model", ARRAY_WORDS["own_cv"])


def public_scale(schema, width: int) -> np.ndarray | None:
    """The kit's public standard deviation of every matrix column (:func:`core.data.encoding.encoded_scales`),
    or None when the kit does not publish one for each (methods then work in the columns' own units)."""
    scales = encoded_scales(schema)
    return scales if scales is not None and len(scales) == width else None


def public_centre(schema, width: int) -> np.ndarray | None:
    """The kit's public mean of every matrix column (:func:`core.data.encoding.encoded_means`), or None."""
    means = encoded_means(schema)
    return means if means is not None and len(means) == width else None


def needs_anchor(kit: Kit) -> bool:
    """Whether the kit's method needs the participants' anchor file (the wizard skips its anchor page if not)."""
    return method_class(kit.method).needs_anchor


def check_analyst_pin(workspace_root: str | Path, kit: Kit, owner: PublicCard) -> str:
    """Trust on first use, checked without writing: ``"new"`` when this workspace has never seen the project
    (or does not exist yet) or holds no pin signed by ``owner`` (the workspace's owner) — then the site confirms
    the fingerprint (again) before anything is sealed —, ``"known"`` when the kit carries the analyst key it
    pinned; VerificationError naming both fingerprints when the kit is signed by another key."""
    return analyst_pin_status(workspace_root, kit, owner)[0]


def analyst_pin_status(workspace_root: str | Path, kit: Kit, owner: PublicCard) -> tuple[str, str | None]:
    """:func:`check_analyst_pin` and, when a pin is there but cannot be trusted (an earlier version's unsigned pin,
    or one edited or re-pointed), the sentence saying so."""
    root = Path(workspace_root)
    if not root.is_dir():
        return "new", None
    ws = SiteWorkspace(root)
    problem = ws.pin_state(kit.project_id, owner)[1]
    return ws.pin_analyst(kit.project_id, kit.analyst, record=False, owner=owner), problem


def load_anchor(path: str | Path, kit: Kit, identity: Identity) -> AnchorFile:
    """The project's anchor file, decrypted with this site's identity and checked to be the kit's project's."""
    return AnchorFile.load(path, expect_project=kit.project_id, identity=identity, project_name=kit.name)


class ParticipantRound:
    """One site's round for one project: the object the export wizard holds and the CLI drives.

    It owns every step both front ends need, each done once: the analyst pin (trust on first use: checked
    here, recorded when the bundle is sealed), the roster check, the method object, the site's settings
    (checked when set), the anchor's project, reading the CSV against the kit, the private reduction, the
    own-rows baseline, sealing with the audit line, and tidying a workspace it made when nothing was exported.

    Parameters
    ----------
    kit, kit_path : the verified project kit and where it was read from (copied into the workspace).
    identity : the site's unlocked identity (signs the bundle).
    workspace : the site's workspace (where f_i and the permutation are kept), or its folder (made when the
        bundle is sealed).
    anchor : the project's anchor file, or its path (then decrypted here with ``identity``, :func:`load_anchor`);
        ``None`` only for methods that need none.
    site_settings : the method's site-side settings (:meth:`core.methods.base.Method.site_settings_spec`).

    Attributes
    ----------
    first_use : whether this workspace had never seen the project's analyst (the pin is new).
    table, block, export_ : the CSV read, its feature block (clustering), the computed reduction.
    """

    def __init__(self, kit: Kit, kit_path: str | Path, identity: Identity, workspace: SiteWorkspace | str | Path, *,
                 anchor: AnchorFile | str | Path | None = None, site_settings: dict | None = None):
        root = workspace.root if isinstance(workspace, SiteWorkspace) else Path(workspace)
        status, self.pin_problem = analyst_pin_status(root, kit, identity.card)  # refuses another analyst key
        self.first_use = status == "new"  # no pin, or none this site's owner signed: confirm the fingerprint
        self.anchor_path = None
        if isinstance(anchor, str | Path):
            self.anchor_path, anchor = Path(anchor), load_anchor(anchor, kit, identity)
        if anchor is not None and anchor.project_id != kit.project_id:
            raise ConfigError("the anchor file belongs to another project than the kit")
        if not kit.roster_allows(identity.card):
            raise ConfigError("this identity is not on the kit's roster of expected sites")
        self.method = get_method(kit.method, kit.settings)
        if self.method.needs_anchor and anchor is None:
            raise ConfigError("this project needs its anchor file: give it with --anchor FILE (in the app: the "
                              "anchor page); the lead participant makes it with `dcstudio anchor new` and hands it "
                              "to every site")
        self.kit, self.kit_path, self.identity, self.anchor = kit, Path(kit_path), identity, anchor
        self.site_settings: dict = {}
        self.set_site_settings(site_settings)
        self.workspace_root = root
        self._workspace = workspace if isinstance(workspace, SiteWorkspace) else None
        self._made_workspace = False
        self.table: LocalTable | None = None
        self._read: tuple | None = None  # how ``table`` was read (a formal export reads it again with public fills)
        self.block: str | None = None
        self.export_: SiteExport | None = None
        self.local_baseline = True  # train the own-rows model that ``apply --validate`` compares with
        self.analyst_confirmed: str | None = None  # how the site confirmed the analyst's key (first use)
        self.unit_warnings: list[str] = []  # columns that do not look like the kit's sample (core.data.harmony)
        self.units_checked = False  # the site's staff checked them: sealing goes ahead despite the warnings
        self.privacy_thresholds: PrivacyThresholds = kit.privacy_thresholds  # the kit's, tightened by the site
        self.assessment_: PrivacyAssessment | None = None  # the measured disclosure of ``export_`` (issue #24)
        # how the site confirmed exporting despite a poor verdict the kit's threat model counts (issue #35)
        self.privacy_risk_accepted: str | None = None
        self._site_input: SiteInput | None = None

    def confirm_analyst(self, who: PublicCard | str, how: str) -> str:
        """Confirm the kit's analyst key the first time this workspace sees the project: ``who`` is the fingerprint
        the analyst read to the site (typed or scanned) or the analyst's public card received another way.
        VerificationError naming both fingerprints when it is not the key that signed the kit."""
        fingerprint = who.fingerprint if isinstance(who, PublicCard) else read_fingerprint(who)
        if fingerprint is None:
            raise ConfigError(f"'{who}' is not a fingerprint (16 characters like K8ZA-XT1E-2PKR-1GNP)")
        if fingerprint != self.kit.analyst.fingerprint:
            raise VerificationError(
                f"the fingerprint you were given ({fingerprint}) is not that of the key that signed this kit "
                f"({self.kit.analyst.fingerprint}, '{self.kit.analyst.name}'); do not export: call the analyst on a "
                "number you already know and ask which key is genuine")
        self.analyst_confirmed = how
        return fingerprint

    @property
    def workspace(self) -> SiteWorkspace:
        """The site's workspace, made on first use (sealing): reading and reducing the CSV write nothing."""
        if self._workspace is None:
            self._made_workspace = not self.workspace_root.exists()
            self._workspace = SiteWorkspace(self.workspace_root)
        return self._workspace

    def set_site_settings(self, settings: dict | None) -> dict:
        """Check and keep the site's settings (ConfigError naming the setting); a change discards the reduction."""
        checked = self.method.check_site_settings(dict(settings or {}))
        if checked != self.site_settings:
            self.site_settings, self.export_ = checked, None
        return checked

    def tighten_privacy(self, changes: dict[str, float]) -> PrivacyThresholds:
        """Make the kit's privacy limits stricter for this export (ConfigError naming a limit it would loosen)."""
        self.privacy_thresholds = self.kit.privacy_thresholds.stricter(changes)
        self.assessment_ = None
        return self.privacy_thresholds

    def assess(self, thresholds: PrivacyThresholds | None = None,
               control: JobControl | None = None) -> PrivacyAssessment:
        """The measured disclosure of the computed export (:func:`core.privacy.assessment.assess_export`), judged
        by ``thresholds`` (default: the kit's, as tightened here); kept for sealing (its raw numbers go to the
        workspace and the audit log, never into the bundle)."""
        if self.export_ is None or self._site_input is None:
            raise ConfigError("compute the export first (load a CSV, then compute)")
        if thresholds is not None:
            self.privacy_thresholds = thresholds
        self.assessment_ = assess_export(self._site_input, self.export_, self.method, self.privacy_thresholds,
                                         control=control, threat=self.kit.threat)
        return self.assessment_

    def accept_privacy_risk(self, how: str) -> None:
        """The site's explicit confirmation that it exports even though an attack the kit's threat model counts
        is poor (``--accept-poor-privacy``, or the tick on the app's privacy page); recorded in the audit log's
        export entry with the findings it accepted. Sealing such an export without it is refused."""
        self.privacy_risk_accepted = str(how)

    def load(self, csv_path: str | Path, options: CsvOptions | None = None, *, block: str | None = None,
             control: JobControl | None = None) -> LocalTable:
        """Read the CSV against the kit. A clustering kit's site holds one feature block: ``block`` names it,
        or it is the one block whose columns are all in the file (ConfigError naming the columns if none)."""
        schema = self.kit.schema
        self.block = None
        if self.kit.task == "clustering":
            header = [str(c) for c in preview(csv_path, options, nrows=0)[0].columns]
            if block is None:
                try:
                    block = schema.detect_block(header)
                except ConfigError as exc:
                    raise ConfigError(exc.message, path=csv_path) from exc
            columns = schema.block_columns(block)
            absent = [c for c in columns if c not in header]
            if absent:
                raise DataError(f"the file lacks {', '.join(repr(c) for c in absent)} of feature block '{block}' "
                                f"(the block's columns are {', '.join(repr(c) for c in columns)})", path=csv_path)
            self.block = block
            schema = schema.block_schema(block)
        linked = self.kit.task == "clustering" and len(self.kit.schema.block_names) > 1
        needs_ids = bool(schema.id_column) and linked
        self._read = (csv_path, schema, options, self.method.reads_labels() and schema.label is not None, needs_ids)
        self.table = read_table(csv_path, schema, options=options, labels=self._read[3], ids=needs_ids,
                                control=control)
        self.unit_warnings = unit_warnings(schema, self.table.X, self.table.y, self.table.unseen)
        self.export_ = None
        return self.table

    def _public_fills(self) -> None:
        """Under the formal option, empty cells are filled from the kit's public values, never from this site's own
        rows (core.data.missing.public_fills): the table is read again with them when it filled any cell otherwise."""
        t = self.table
        if self._read is None:
            return
        path, schema, options, labels, ids = self._read
        fills, lacking = public_fills(schema.features)
        if not t.filled or all(t.fill_values.get(k) == fills.get(k) for k in t.filled):
            return
        if any(k in lacking for k in t.filled):
            raise ConfigError("the formal privacy option fills empty cells from the kit's public values only, and "
                              "the kit publishes none for " + ", ".join(repr(k) for k in t.filled if k in lacking)
                              + "; ask the analyst for a kit made with --statistics, or export without it")
        self.table = read_table(path, schema, options=options, labels=labels, ids=ids, fill_values=fills)

    def privacy_spent(self) -> Ledger:
        """The formal privacy this site has spent on the kit's project so far (core/privacy/ledger.py), read from
        the signed states of the exports the workspace keeps (none when the workspace does not exist yet)."""
        states = (self.workspace.export_states(self.kit.project_id, self.identity.card)
                  if self.workspace_root.exists() else [])
        return spent(states, self.kit.project_id)

    def ledger_lines(self) -> list[str]:
        """What is shown before the next export: the budget spent so far and what this export adds."""
        acc = self.export_.manifest.get("privacy") if self.export_ is not None else None
        formal = is_formal(self.site_settings)
        return self.privacy_spent().lines(acc if isinstance(acc, dict) else None, formal_export=formal)

    def compute(self, control: JobControl | None = None) -> SiteExport:
        """The private reduction of the loaded rows (what would leave, shown before sealing)."""
        if self.table is None:
            raise ConfigError("load a CSV first")
        formal = is_formal(self.site_settings)
        if formal:
            self._public_fills()
        t = self.table
        ids_hashed = None
        if t.ids is not None:
            if self.anchor is None:
                raise ConfigError("linking rows by id needs the project's anchor file")
            values, counts = np.unique(t.ids, return_counts=True)
            if (counts > 1).any():
                dup = np.argsort(-counts, kind="stable")[: int((counts > 1).sum())]
                shown = ", ".join(f"'{values[i]}' ({counts[i]} rows)" for i in dup[:5])
                more = f" and {len(dup) - 5} more" if len(dup) > 5 else ""
                raise DataError(f"the id column '{self.kit.schema.id_column}' has {len(dup)} duplicate value(s), "
                                f"e.g. {shown}{more}; every row needs its own id", path=t.source)
            ids_hashed = hash_ids(t.ids, self.anchor.id_hash_key())
        anchor = None if self.anchor is None else self.anchor.generate()
        if anchor is not None and self.block is not None:
            anchor = anchor[:, self.kit.schema.block_indices(self.block)]  # the anchor split by the same blocks
        schema, width = self.kit.schema, t.X.shape[1]
        scale, centre = public_scale(schema, width), public_centre(schema, width)
        if formal:  # the block's own public statistics; a rare or unseen 0/1 column must not block the option
            schema = schema.block_schema(self.block) if self.block else schema
            scale, centre = public_scale(schema, width), public_centre(schema, width)
            scale = formal_scales(schema) if scale is None else scale
        site = SiteInput(t.X, t.y, list(self.kit.schema.classes), anchor, ids_hashed, self.site_settings,
                         block=self.block, scale=scale, centre=centre)
        self.assessment_ = None
        self.export_ = export_with_check(self.method, site, control)  # rows kept out when the site must choose
        self._site_input = site
        formal = isinstance(self.export_.manifest.get("privacy"), dict)  # formal noise: no unaccounted scores
        if self.local_baseline and self.kit.task == "classification" and t.y is not None \
                and len(np.unique(t.y)) >= 2:
            # The site's own-rows baseline (issue #15) and its out-of-fold probabilities (issue #37): kept in the
            # workspace beside f_i, never in the bundle; its cross-validated scores are the only part that leaves
            scores, private = own_model_state(self.method, t.X, t.y, len(self.kit.schema.classes), scale=site.scale,
                                              settings=self.site_settings)
            self.export_.private_arrays.update(private)
            self.export_.private_meta["local_model"] = {"kind": OWN_MODEL_NAME, "rows": int(min(t.n_rows, 20000))}
            self.export_.stays.append("a logistic regression trained on these rows (to check the package against)")
            if scores is not None and not formal:
                self.export_.manifest["own_cv"] = scores
                self.export_.disclosures.append(own_cv_disclosure(scores))
        return self.export_

    def check_target(self, out_path: str | Path, *, replace: bool = False) -> None:
        """Refuse a bundle path that exists (unless ``replace``) or that names one of the round's inputs."""
        out = Path(out_path)
        if out.exists() and not replace:
            raise ConfigError(f"{out} exists; choose another name or allow replacing it (--force)", path=out)
        inputs = [("the CSV", self.table.source if self.table is not None else None), ("the kit", self.kit_path),
                  ("the anchor file", self.anchor_path)]
        for what, path in inputs:
            if path and same_file(out, path):
                raise ConfigError(f"the bundle would overwrite {what}; choose another file name", path=out)

    def seal(self, out_path: str | Path, *, replace: bool = False, control: JobControl | None = None) -> SealedFile:
        """Seal the bundle to the kit's analyst (computing the reduction first if needed).

        The analyst is pinned first; then private state before the shared file: the workspace keeps f_i, the
        permutation and the own-rows model and the audit line is appended before the bundle gets its final name,
        so a kill at any moment leaves no bundle without its state. A failure leaves no workspace this round made."""
        control = ensure(control)
        self.check_target(out_path, replace=replace)
        if self.first_use and self.analyst_confirmed is None and self.pin_problem:
            raise VerificationError(f"{self.pin_problem}; nothing is sealed to the kit's signer "
                                    f"'{self.kit.analyst.name}' ({self.kit.analyst.fingerprint}) until you do")
        if self.first_use and self.analyst_confirmed is None:
            raise ConfigError(
                f"this workspace has never worked on project '{self.kit.name}': before anything is sealed to its "
                f"analyst '{self.kit.analyst.name}', confirm the analyst's fingerprint {self.kit.analyst.fingerprint}"
                " with them by phone or in person, then export again with --analyst-fingerprint FINGERPRINT (or "
                "the analyst's card: --analyst-fingerprint ANALYST.dcpub); in the app: type it on the kit page")
        if self.unit_warnings and not self.units_checked:
            raise ConfigError(f"{len(self.unit_warnings)} column(s) do not look like the kit's sample ("
                              + "; ".join(self.unit_warnings) + "); if they are right, export again with "
                              "--units-checked (in the app: tick 'I checked these columns')", path=self.table.source)
        try:
            if self.export_ is None:
                self.compute(control.sub(0.0, 0.4))
                control = control.sub(0.4, 1.0)
            if self.assessment_ is None:
                self.assess(control=control.sub(0.0, 0.2))
                control = control.sub(0.2, 1.0)
            if self.assessment_.needs_consent and self.privacy_risk_accepted is None:
                raise ConfigError(poor_privacy_refusal(self.assessment_), path=self.table.source)
            return self._seal(Path(out_path), control)
        except BaseException:
            self.tidy()
            raise

    def _seal(self, out_path: Path, control: JobControl) -> SealedFile:
        ex = self.export_
        assessment = json_safe(self.assessment_.to_dict())
        consent = ({"accepted": [f"{f.attack}/{f.adversary}" for f in self.assessment_.poor],
                    "how": self.privacy_risk_accepted} if self.assessment_.needs_consent else None)
        kit_digest, schema_digest = self.kit.digests()
        manifest = {**ex.manifest, "method": self.method.name, "family": self.method.family,
                    "kit_digest": kit_digest, "schema_digest": schema_digest,
                    "site": self.identity.card.name, "software": __version__}
        formal = ex.manifest.get("privacy") if isinstance(ex.manifest.get("privacy"), dict) else None
        if self.table.filled and formal is None:  # cells filled per column (kit policy "impute"), shown to the site
            manifest["filled"] = dict(self.table.filled)  # before export; left out under the formal option
        # written only as the bundle's declaration allows, checked as the analyst will check it
        manifest = self.method.write_bundle_manifest(manifest, ex.arrays, self.kit)

        def keep_state(sealed: SealedFile) -> None:
            """Runs before the bundle gets its final name: the private state staged whole, the audit line, then
            the state published (one rename), so no published state lacks its line and a kill before the line
            leaves only a staging folder, which the next opening of the workspace removes."""
            ws, pid = self.workspace, self.kit.project_id
            stage = ws.stage_export(self.kit_path, pid, sealed.digest, ex.private_arrays,
                                    {**ex.private_meta, "method": self.method.name, "csv": str(self.table.source),
                                     "rows": int(self.table.n_rows), "envelope_id": sealed.binding.envelope_id,
                                     "fill_values": dict(self.table.fill_values),
                                     **({"formal": {k: formal[k] for k in ("epsilon", "delta")}} if formal
                                        else {})},  # the ε ledger adds these up (core/privacy/ledger.py)
                                    privacy=assessment, sealed_at=position)
            ws.audit.append("export", project=pid, file=str(out_path.resolve()), digest=sealed.digest,
                            envelope_id=sealed.binding.envelope_id, rows=int(self.table.n_rows),
                            arrays=sorted(ex.arrays), privacy=assessment,
                            **({"privacy_consent": consent} if consent else {}),
                            **({"formal": {k: formal[k] for k in ("epsilon", "delta")}} if formal
                               else {}))  # the ε ledger adds these up (core/privacy/ledger.py)
            ws.publish_export(stage, pid, sealed.digest)
            ws.record_sealed(self.identity, position, sealed.digest)

        self.workspace.audit.bind(self.identity)  # starts a new workspace's log; refuses a damaged one
        self.workspace.pin_analyst(self.kit.project_id, self.kit.analyst,  # trust on first use, recorded
                                   how=self.analyst_confirmed or "already pinned")
        position = self.workspace.audit.position()  # (log, entries, head): the bundle carries the head
        return seal(out_path, Payload(manifest, ex.arrays), kind="bundle", project_id=self.kit.project_id,
                    sender=self.identity, recipient=self.kit.analyst, audit_head=position[2],
                    before_publish=keep_state, control=control)

    def tidy(self) -> None:
        """Remove the workspace folder if this round made it and nothing was written to it (a failed first
        export)."""
        if self._made_workspace:
            remove_empty_workspace(self.workspace_root)


@dataclass
class ApplyResult:
    out_path: Path
    rows: int
    columns: list[str]
    method: str
    summary: dict
    input_format: CsvFormat | None = None
    output_format: CsvFormat | None = None
    warnings: list[str] = field(default_factory=list)
    validation: dict | None = None  # with ``validate``: the package beside the site's own model (see below)
    kept_own: bool = False  # the package said "keep your own model" and the workspace's own-rows model was used
    threshold: dict | None = None  # two classes: the threshold of ``decision`` and how it was chosen (value, how…)
    scored: dict | None = None  # with ``validate``: y, the package's and the own model's probabilities (for plots)
    choice: dict | None = None  # classification: which model was used (package | own), who chose and why (promise.py)

    @property
    def model_note(self) -> str:
        """One sentence on which model gave the results, when the site's own model did or the site chose."""
        from .wording import KEPT_OWN_WORDS

        if self.choice and self.choice.get("by") == "site":
            from .learn.site_update import UPDATE_WORDS

            kind = self.choice.get("kind")
            return (f"you use {UPDATE_WORDS[kind]}: " if kind in UPDATE_WORDS else "") + self.choice["reason"]
        return KEPT_OWN_WORDS if self.kept_own else ""


def poor_privacy_refusal(assessment: PrivacyAssessment) -> str:
    """The one sentence that refuses to seal an export whose assessment is poor against an adversary the kit's
    threat model counts, saying how to go on."""
    poor = assessment.poor
    which = "; ".join(f"{f.attack} ({f.adversary})" for f in poor)
    return (f"the privacy assessment is poor on {len(poor)} attack(s) the kit's threat model counts: {which}; "
            "choose a lever (dcstudio participant assess --levers) or, if your site accepts that risk, export again "
            "with --accept-poor-privacy (in the app: tick 'I accept this risk' on the privacy page); the "
            "confirmation is recorded in the audit log")


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file (also through links or a different spelling of the path)."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def result_format(table_format: CsvFormat, out_options: CsvOptions | None = None) -> CsvFormat:
    """The format RESULT.csv is written in: the input's own encoding, delimiter and decimal mark, each
    overridable by ``out_options`` (so the site's spreadsheet opens it as it opened the input)."""
    o = out_options or CsvOptions()
    fmt = CsvFormat(o.encoding or table_format.encoding, o.delimiter or table_format.delimiter,
                    o.decimal or table_format.decimal)
    if fmt.encoding == "utf-16":  # read fine, but many spreadsheets mangle UTF-16 CSV: keep UTF-8 with a BOM
        fmt = CsvFormat("utf-8-sig", fmt.delimiter, fmt.decimal)
    if fmt.decimal == fmt.delimiter:
        raise ConfigError("the decimal mark and the column separator of the result file cannot be the same")
    return fmt


def _line_ending(path: str | Path) -> str:
    with open(path, "rb") as fh:
        return "\r\n" if b"\r\n" in fh.read(1 << 16) else "\n"


PROBABILITY_DIGITS = 6  # significant digits of RESULT.csv's probabilities (a model is not surer than that)


def rounded_probabilities(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The result columns with every class probability (``prob_…``) rounded to :data:`PROBABILITY_DIGITS`
    significant digits (:func:`core.fileio.significant`): what RESULT.csv shows is what the risk, the decision, the
    threshold and the validation use."""
    return {name: significant(values, PROBABILITY_DIGITS)
            if str(name).startswith("prob_") and np.asarray(values).dtype.kind == "f" else values
            for name, values in columns.items()}


def _apply_in_blocks(csv_path, out_path, schema, options, fills, out_options, ending, result_columns, control
                     ) -> tuple[int, list[str], CsvFormat, CsvFormat, dict | None, dict | None] | None:
    """RESULT.csv in one pass over the CSV: each block of records (:mod:`core.data.blocks`) read against the schema,
    its result columns computed (``result_columns``) and written (:class:`core.result_csv.ResultWriter`).

    Returns (rows, result column names, input format, output format, model choice, threshold), or None, having
    written nothing, when the file must be read whole (:class:`core.data.blocks.NotStreamable`), when the
    blocks disagree on the choice or the columns, or on a product error, which the whole-file reading then
    reports in its own words (a bad cell's line, a missing column)."""
    try:
        reader = BlockReader(csv_path, schema, options=options, fill_values=fills)
        fmt = reader.format
        out_fmt = result_format(fmt, out_options)
        size = max(Path(csv_path).stat().st_size, 1)
        rows, done, first = 0, 0, None
        with atomic_writer(out_path, "wb") as fh:
            writer = ResultWriter(fh, reader.header_raw, fmt, out_fmt, ending, markers=reader.markers,
                                  out_path=out_path)
            for block in reader:
                done += len(block.raw)
                if not block.rows:
                    continue
                if block.table.notes:  # an unseen level or a column filled with the kit's value: counted whole
                    raise NotStreamable("the rows need notes counted over the whole file")
                with one_blas_thread():
                    columns, choice, chosen = result_columns(block.table.X)
                if first is None:
                    first = (list(columns), choice, chosen)
                elif (list(columns), choice, chosen) != first:
                    raise NotStreamable("the blocks' results differ in kind")
                writer.write(block, columns)
                rows += block.rows
                control.step(0.4 + 0.55 * min(done / size, 1.0), f"applied to {rows:,} rows")
            if first is None:
                raise NotStreamable("no data rows")
            writer.close()
    except Cancelled:
        raise
    except (NotStreamable, DCError):
        return None
    return rows, first[0], fmt, out_fmt, first[1], first[2]


def write_result_csv(csv_path: str | Path, out_path: str | Path, schema, options: CsvOptions | None, fmt: CsvFormat,
                     out_fmt: CsvFormat, line_ending: str, columns: dict[str, np.ndarray]) -> None:
    """Write RESULT.csv atomically from result ``columns`` computed for every row of ``csv_path`` (read in ``fmt``):
    block by block when the file allows it, else from the whole file read as text. A character the output's
    encoding cannot hold is a clear error (:class:`core.result_csv.ResultWriter`)."""
    options = options or CsvOptions()
    forced = CsvOptions(fmt.encoding, fmt.delimiter, fmt.decimal, options.missing_tokens, options.impute)
    n = len(next(iter(columns.values()))) if columns else 0
    try:
        reader = BlockReader(csv_path, schema, options=forced, tables=False)
        with atomic_writer(out_path, "wb") as fh:
            writer = ResultWriter(fh, reader.header_raw, fmt, out_fmt, line_ending, markers=reader.markers,
                                  out_path=out_path)
            written = 0
            for block in reader:
                if block.rows:
                    writer.write(block, {k: v[block.start:block.start + block.rows] for k, v in columns.items()})
                    written += block.rows
            if written != n or not written:
                raise NotStreamable("the text rows are not the rows read")
            writer.close()
        return
    except NotStreamable:
        pass
    original = pd.read_csv(csv_path, sep=fmt.delimiter, encoding=fmt.encoding, dtype=str, keep_default_na=False)
    step = 50_000
    with atomic_writer(out_path, "wb") as fh:
        writer = ResultWriter(fh, b"", fmt, out_fmt, line_ending, out_path=out_path)
        for start in range(0, max(len(original), 1), step):
            writer.write_frame(original.iloc[start:start + step].copy(),
                               {k: v[start:start + step] for k, v in columns.items()})
        writer.close()


def package_limits(kit: Kit, rows: int | None) -> Limits:
    """The envelope caps of a package for a site of ``kit`` that exported ``rows`` rows (FORMAT.md §7, §4.7 step 5),
    checked from the age section's size and each ``.npy`` header before anything of that size is allocated: one
    array holds at most max(L², rows·max(W, 64)) eight-byte values, L = max(W, 1024) a layer's width, W the widest
    array the kit allows (:func:`core.methods.dc_analysis.declared_width`: columns + blocks, classes, declared
    hidden widths and cluster counts), and the archive at most 16 such arrays plus the manifest."""
    from .methods.dc_analysis import LAYER_WIDTH_FLOOR, declared_width

    if rows is None:
        return DEFAULT_LIMITS
    W = declared_width(kit, method_class(kit.method).default_settings())
    L = max(W, LAYER_WIDTH_FLOOR)  # a layer's width (a run may set wider hidden layers than the kit declares)
    array = 8 * max(L * L, max(int(rows), 1) * max(W, 64)) + (1 << 20)
    return Limits(max_array_bytes=array, max_plaintext_bytes=DEFAULT_LIMITS.max_manifest_bytes + (1 << 20) + 16 * array)


def check_package(kit: Kit, manifest: dict, arrays: dict[str, np.ndarray], rows: int,
                  private: dict[str, np.ndarray] | None = None) -> dict:
    """Checks of a package against the kit and this site's kept export, before any of it is used: its manifest's
    fields typed by the schema of its method (``package:<method>``, core/formats/fields.py), a method of the kit's
    family, the class list the kit's, arrays finite (``z`` may hold NaN for rows left out), a scaler that never
    divides by zero, per-row arrays with one entry per exported row; then (with ``private``) the method's own
    shape/dtype rules for every package kind (:meth:`core.methods.Method.check_package`, FORMAT.md §6–§7).
    Returns the manifest's declared members: the only ones the site reads."""
    name = manifest.get("method") if isinstance(manifest, dict) else None
    if not isinstance(name, str):
        raise FormatError("the package does not name its method")
    if name not in METHODS or METHODS[name].family != method_class(kit.method).family:
        raise FormatError(f"the package was made by method {name[:40]!r}, which cannot answer this kit's bundles")
    cls = METHODS[name]
    manifest = cls.check_package_fields(manifest)  # the declared members only: nothing else is read
    if kit.task == "classification":
        classes = manifest.get("classes")
        if classes != list(kit.schema.classes):
            raise FormatError("the package's class list differs from the kit's")
    for name, a in arrays.items():
        if a.dtype.kind == "f" and name != "z" and not np.all(np.isfinite(a)):
            raise FormatError(f"the package's array '{name}' holds non-finite values")
        if a.dtype.kind == "f" and name == "z" and np.any(np.isinf(a)):
            raise FormatError("the package's array 'z' holds infinite values")
    scale = arrays.get("scaler_scale")
    if scale is not None and (scale.ndim != 1 or not np.all(np.abs(scale) > 1e-300)):
        raise FormatError("the package's scaler has a zero or malformed scale, which would give no predictions")
    if kit.task == "classification":
        check_shared_oof(arrays, rows, len(kit.schema.classes))
    for name in ("labels", "z"):
        if name in arrays and (arrays[name].ndim < 1 or arrays[name].shape[0] != rows):
            raise FormatError(f"the package's '{name}' has {arrays[name].shape[0] if arrays[name].ndim else 0} "
                              f"rows, but this site exported {rows}")
    if private is not None:
        get_method(cls.name).check_package(manifest, arrays, private, kit)
    return manifest


def apply_checked(method, manifest: dict, arrays: dict[str, np.ndarray], private: dict[str, np.ndarray],
                  X: np.ndarray, path: str | Path | None = None) -> dict[str, np.ndarray]:
    """``method.apply`` for a package that passed :func:`check_package`, with every failure turned into one
    FormatError sentence and every output column checked (one value per row; finite probabilities)."""
    try:
        columns = method.apply(manifest, arrays, private, X)
    except DCError as exc:
        raise FormatError(exc.message, path=path) from exc
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, ArithmeticError, MemoryError) as exc:
        # a signed package that does not fit this site's state: refuse it in one sentence, never crash
        raise FormatError(f"the package does not fit this site's export ({exc.__class__.__name__})",
                          path=path) from exc
    if not isinstance(columns, dict):
        raise FormatError("the package gives no results for this site's rows", path=path)
    for name, values in columns.items():
        v = np.asarray(values)
        if v.shape[:1] != (len(X),) or (v.dtype.kind == "f" and not str(name).startswith("z")
                                        and not np.all(np.isfinite(v))):
            raise FormatError(f"the package gives no valid '{name}' for this site's rows", path=path)
    return columns


def reconfirm_analyst(workspace: SiteWorkspace, project_id: str, given: str | PublicCard,
                      how: str = "fingerprint given again at apply") -> str:
    """Confirm again the analyst of a project whose kit this workspace keeps: ``given`` (a fingerprint the analyst
    read out, or their card) must be that of the key that signed the kept kit; a pin that cannot be trusted (an
    earlier version's, or edited) is then replaced by a signed one (``"pinned"``); a trusted pin of that key is
    ``"known"``; a trusted pin of another key is refused naming both."""
    kit = Kit.load(workspace.kit_path(project_id))
    if kit.project_id != project_id:
        raise VerificationError(f"the kit kept for project {project_id[:8]}… is another project's: it was replaced",
                                path=workspace.kit_path(project_id))
    fingerprint = given.fingerprint if isinstance(given, PublicCard) else read_fingerprint(given)
    if fingerprint is None:
        raise ConfigError(f"'{given}' is not a fingerprint (16 characters like K8ZA-XT1E-2PKR-1GNP)")
    if fingerprint != kit.analyst.fingerprint:
        raise VerificationError(
            f"the fingerprint you were given ({fingerprint}) is not that of the key that signed this project's kit "
            f"({kit.analyst.fingerprint}, '{kit.analyst.name}'); call the analyst on a number you already know and "
            "ask which key is genuine")
    return workspace.pin_analyst(project_id, kit.analyst, how=how)


def _run_order(created: str, seq) -> tuple[str, int]:
    """When an analyst run happened: its time, then its place in the analyst's audit log (runs in one second)."""
    return str(created), seq if isinstance(seq, int) and not isinstance(seq, bool) else -1


ALREADY_APPLIED = "this package was already applied"  # apply's note on the same package again (a rewrite says it)


def _package_warnings(workspace: SiteWorkspace, project_id: str, bundle_digest: str, digest: str,
                      created: str, seq=None, run_id: str = "", *, allow_older: bool = False) -> list[str]:
    """Warn when this exact package was applied before; refuse (ConfigError naming both runs) a package older
    than one already applied for the same bundle, unless ``allow_older`` (then it is a warning)."""
    out = []
    for entry in workspace.applied(project_id, bundle_digest):
        if entry.get("digest") == digest:
            out.append(f"{ALREADY_APPLIED} on {entry.get('applied')} (to {entry.get('out')})")
        elif _run_order(entry.get("created", ""), entry.get("run_seq")) > _run_order(created, seq):
            older = (f"this package (analyst run {run_id or '?'}, {created}) is older than the package of analyst "
                     f"run {entry.get('run_id') or '?'} ({entry.get('created')}) applied on {entry.get('applied')}")
            if not allow_older:
                raise ConfigError(older + "; refused (a site goes back to an older result only on purpose: "
                                  "--allow-older; in the app: tick 'Apply an older package on purpose')")
            out.append(older + " (applied on purpose: --allow-older)")
    return out


def apply_package(package_path: str | Path, identity: Identity, csv_path: str | Path, out_path: str | Path, *,
                  workspace: SiteWorkspace, options: CsvOptions | None = None,
                  control: JobControl | None = None, with_representation: bool = False,
                  out_options: CsvOptions | None = None, validate: bool = False,
                  threshold: float | None = None, threshold_target: tuple[str, float] | None = None,
                  allow_older: bool = False, analyst_fingerprint: str | PublicCard | None = None) -> ApplyResult:
    """Verify a package against the kit's analyst, map this site's rows with it and write RESULT.csv.

    RESULT.csv is the input CSV (its cells unchanged) plus the result columns, written in the input's own
    encoding, delimiter and decimal mark unless ``out_options`` says otherwise (:func:`result_format`).
    ``with_representation`` (clustering): also write the rows' clustering representation Z_i as columns
    ``z1`` … ``zq`` (empty for rows left out). Writing onto the input CSV or the package is refused.

    ``validate``: the CSV's rows carry labels the site trusts. The package's predictions and those of the
    site's own-rows model (trained at export, kept in the workspace) are scored on them, each accuracy with its
    row count and 95 % Wilson interval, plus McNemar's exact test on the rows where the two disagree; the
    better is recommended and its predictions written as ``recommended`` (beside ``prediction`` and
    ``local_prediction``); both models' clinical figures (:func:`core.learn.clinical_metrics.metrics_for`) and,
    for two classes, DeLong's paired test of their AUCs. Nothing leaves the site.

    Two classes: ``risk_<positive>`` (the probability of the kit's second class) and ``decision`` (that class
    when the risk ≥ the threshold, else the other) are written too. The threshold is ``threshold`` (0 < T < 1,
    default 0.5) or picked on the labelled rows by ``threshold_target`` = ("sensitivity" | "specificity", S)
    (:func:`core.learn.threshold.threshold_for`; needs ``validate``).

    A package older (by its analyst run) than one already applied for the same bundle is refused unless
    ``allow_older`` (no silent rollback).

    The package is verified against the kit this workspace keeps, which must be signed by the analyst key of the
    site's signed pin; ``analyst_fingerprint`` (the fingerprint the analyst read out, or their card) confirms that
    key again when the pin cannot be trusted (:func:`reconfirm_analyst`)."""
    control = ensure(control)
    threshold = _checked_threshold_request(threshold, threshold_target, validate)
    for what, path in (("the CSV it reads", csv_path), ("the package", package_path)):
        if same_file(out_path, path):
            raise ConfigError(f"the results would overwrite {what}; choose another file name", path=out_path)
    workspace.audit.bind(identity)  # refuses a missing, cut, edited or rebuilt audit log before any work
    binding = inspect(package_path)
    kit_path = workspace.kit_path(binding.project_id)
    if not kit_path.exists():
        raise FormatError("this package is for a project this site's workspace does not know", path=package_path)
    if analyst_fingerprint is not None:
        reconfirm_analyst(workspace, binding.project_id, analyst_fingerprint)
    kit = workspace.kit(binding.project_id)  # the kept kit, signed by the analyst key of the site's signed pin
    # the export the package answers, read once: its rows set the caps before anything is decrypted; without it the
    # package is refused after its envelope checks, with the sentence saying so
    export, no_export = None, None
    if binding.in_reply_to:
        try:
            export = workspace.load_export(kit.project_id, binding.in_reply_to)
        except FormatError as exc:
            no_export = exc
    exported_rows = export[0].get("rows") if export is not None else None
    opened = open_sealed(package_path, identity, expect_kind="package", expect_project=kit.project_id,
                         expect_sender=kit.analyst, expect_in_reply_to=binding.in_reply_to,
                         limits=package_limits(kit, exported_rows if type(exported_rows) is int else None),
                         control=control.sub(0.0, 0.3))
    if not opened.binding.in_reply_to:
        raise FormatError("package is not bound to a bundle", path=package_path)
    if no_export is not None:
        raise no_export
    meta, private = export
    rows = meta.get("rows") if type(meta.get("rows")) is int else -1
    manifest, arrays = opened.payload.manifest, opened.payload.arrays
    try:
        manifest = check_package(kit, manifest, arrays, rows, private)
    except FormatError as exc:
        raise FormatError(exc.message, path=package_path) from exc
    warnings = _package_warnings(workspace, kit.project_id, opened.binding.in_reply_to, opened.digest,
                                 str(manifest.get("run_created") or opened.binding.created), manifest.get("run_seq"),
                                 str(manifest.get("run_id", "")), allow_older=allow_older)
    method = get_method(manifest["method"])
    control.step(0.4, "reading the CSV")
    schema = kit.schema.block_schema(meta["block"]) if meta.get("block") else kit.schema
    fills = meta.get("fill_values")  # the export's, so that these rows are encoded exactly as its rows were
    fills = fills if isinstance(fills, dict) else None
    classes = [str(c) for c in manifest.get("classes", [])] if kit.task == "classification" else []
    check_rows, answered = private.get("check_x"), {}

    def as_sent(rows: np.ndarray) -> dict[str, np.ndarray]:
        """The package's columns for ``rows``, as sent; those of the rows set aside to check it (promise.py), the
        same for every block of the CSV, are computed once."""
        if check_rows is not None and rows is check_rows:
            if "check" not in answered:
                answered["check"] = apply_checked(method, manifest, arrays, private, rows, package_path)
            return answered["check"]
        return apply_checked(method, manifest, arrays, private, rows, package_path)

    def result_columns(X: np.ndarray, y: np.ndarray | None = None) -> tuple[dict, dict | None, dict | None]:
        """(result columns, the model choice, the threshold) for the rows X (labels y with ``validate``); the site's
        choice (issue #37) is made once, on its kept rows, and used for every block."""
        columns, choice = promised_columns(method, manifest, private, X, as_sent, arrays=arrays,
                                           metric=kit.settings.get("metric", "auto"), choice=answered.get("choice"))
        answered["choice"] = choice
        columns = rounded_probabilities(columns)
        binary = len(classes) == 2 and f"prob_{classes[1]}" in columns
        if not binary and (threshold is not None or threshold_target is not None):
            raise ConfigError("a threshold applies only to a package that gives the risk of one of two classes")
        if validate and (y is None or "prediction" not in columns):
            raise ConfigError("only a classification package can be validated against labelled rows")
        chosen = None
        if binary:
            risk = np.asarray(columns[f"prob_{classes[1]}"], np.float64)
            chosen = _choose_threshold(risk, y if validate else None, classes, threshold, threshold_target)
            columns[f"risk_{classes[1]}"] = risk
            columns["decision"] = np.where(risk >= chosen["value"], classes[1], classes[0]).astype(object)
        return columns, choice, chosen

    ending = _line_ending(csv_path)
    validation, scored, streamed = None, None, None
    if method.apply_per_row and not validate and not with_representation:
        # one pass: each block of the CSV read, applied and written (memory bounded by a block)
        workspace.audit.verify()
        with reuse_freed_memory():  # each block allocates what the one before freed (core/heap.py)
            streamed = _apply_in_blocks(csv_path, out_path, schema, options, fills, out_options, ending,
                                        result_columns, control)
    if streamed is not None:
        n_rows, names, fmt, out_fmt, choice, chosen = streamed
    else:  # the rows' results need the whole file (labels to validate on, a clustering's rows, fill values)
        table = read_table(csv_path, schema, options=options, labels=validate, fill_values=fills)
        warnings += table.notes  # rows predicted from an unseen bucket, columns filled with the kit's value
        control.step(0.6, "applying the package")
        columns, choice, chosen = result_columns(table.X, table.y)
        if validate:
            sent = _probabilities(as_sent(table.X), classes) if choice and choice["model"] != "package" else None
            validation, scored = _validate(columns, private, table, classes, manifest,
                                           chosen["value"] if chosen else DEFAULT_THRESHOLD,
                                           own_used=bool(choice) and choice["model"] == "own", sent=sent)
        rep = method.representation(arrays, private) if with_representation else None
        if rep is not None:
            Z, _ = rep
            for q in range(Z.shape[1]):
                columns[f"z{q + 1}"] = np.asarray(Z[:, q], dtype=np.float64)  # NaN (left out) is written empty
        control.step(0.8, "writing the results")
        fmt, n_rows, names = table.format, int(table.n_rows), list(columns)
        workspace.audit.verify()
        out_fmt = result_format(fmt, out_options)
        write_result_csv(csv_path, out_path, schema, options, fmt, out_fmt, ending, columns)
    workspace.audit.append("apply", project=kit.project_id, package=str(Path(package_path).resolve()),
                           package_digest=opened.digest, in_reply_to=opened.binding.in_reply_to,
                           run_id=str(manifest.get("run_id", "")), rows=n_rows,
                           out=str(Path(out_path).resolve()), warnings=warnings,
                           **_applied_choices(chosen, choice, validation))
    workspace.record_applied(kit.project_id, opened.binding.in_reply_to,
                             {"digest": opened.digest, "run_id": str(manifest.get("run_id", "")),
                              "created": str(manifest.get("run_created") or opened.binding.created),
                              "run_seq": manifest.get("run_seq"),
                              "applied": utc_now(), "out": str(Path(out_path).resolve())})
    control.step(1.0, "done")
    kept_own = bool(choice) and choice["model"] == "own"
    return ApplyResult(Path(out_path), n_rows, names, method.name, manifest, fmt, out_fmt,
                       warnings, validation, kept_own, chosen, scored, choice)


def _checked_threshold_request(threshold: float | None, target: tuple[str, float] | None,
                               validate: bool) -> float | None:
    """The threshold ``apply`` was given (checked: 0 < T < 1), or None; a sensitivity/specificity ``target`` is
    refused beside a threshold, for any other measure, or without labelled rows to choose it on."""
    if threshold is not None:
        threshold = check_threshold(threshold)
    if target is not None:
        if threshold is not None:
            raise ConfigError("give a threshold or a sensitivity/specificity to reach, not both")
        if target[0] not in ("sensitivity", "specificity"):
            raise ConfigError(f"a threshold is chosen by sensitivity or specificity, not {target[0]!r}")
        if not validate:
            raise ConfigError(f"choosing the threshold by {target[0]} needs labelled rows (--validate)")
    return threshold


def _applied_choices(chosen: dict | None, choice: dict | None, validation: dict | None) -> dict:
    """What the audit log's ``apply`` entry records of the threshold, the model the site used and the validation,
    each only when there is one."""
    return {**({"threshold": {k: chosen[k] for k in ("value", "how", "target", "positive")}} if chosen else {}),
            **({"model_used": {k: choice[k] for k in ("model", "by", "reason", "kind", "weight", "rows", "paired_on")
                               if k in choice}} if choice else {}),
            **({"validation": json_safe({k: validation.get(k) for k in (
                "package", "local", "recommend", "package_metrics", "local_metrics", "delong")})}
               if validation else {})}


def _choose_threshold(risk: np.ndarray, y: np.ndarray | None, classes: list[str], threshold: float | None,
                      target: tuple[str, float] | None) -> dict:
    """The threshold of ``decision`` and how it was chosen: ``value``, ``how`` (default | given | sensitivity |
    specificity), ``target``, ``positive`` and ``sentence`` (the plain words the CLI, the app and the audit use)."""
    pos = classes[1]
    if target is not None:
        name, s = target
        value = threshold_for(y == 1, risk, **{name: s})
        sens, spec = (float(v[0]) for v in rates_at(y == 1, risk, [value]))
        reached = sens if name == "sensitivity" else spec
        sentence = (f"threshold {value:.3f}, chosen on your {len(y)} labelled row(s) as the "
                    + ("largest" if name == "sensitivity" else "smallest")
                    + f" that reaches {name} ≥ {float(s):.2f} (reached {reached:.3f})")
        return {"value": value, "how": name, "target": float(s), "positive": pos, "sentence": sentence}
    how = "default" if threshold is None else "given"
    value = DEFAULT_THRESHOLD if threshold is None else float(threshold)
    sentence = f"threshold {value:.3f} ({'the default' if how == 'default' else 'as given'})"
    return {"value": value, "how": how, "target": None, "positive": pos, "sentence": sentence}


def _probabilities(columns: dict, classes: list[str]) -> np.ndarray:
    """The n × K class probabilities a package wrote (``prob_<class>``), or the one-hot of ``prediction`` when it
    gives none."""
    if all(f"prob_{c}" in columns for c in classes):
        return np.column_stack([np.asarray(columns[f"prob_{c}"], np.float64) for c in classes])
    pred = np.asarray(columns["prediction"], dtype=object)
    return np.column_stack([(pred == c).astype(np.float64) for c in classes])


def _never_predicts(m: dict, classes: list[str]) -> list[str]:
    """Plain sentences for a class with labelled rows that the model never predicts (its accuracy hides it)."""
    if m["task"] == "binary":
        if not m["never_predicts_minority"]:
            return []
        events = m["events"]
        minority = 1 if events <= m["rows"] - events else 0
        figure = "sensitivity" if minority == 1 else "specificity"
        count = events if minority == 1 else m["rows"] - events
        return [f"never predicts '{classes[minority]}' at threshold {m['threshold']:.2f}: {figure} 0 on the "
                f"{count} labelled row(s) of that class"]
    return [f"never predicts '{c}': its recall is 0 on the "
            f"{next(pc['support'] for pc in m['per_class'] if pc['class'] == c)} labelled row(s) of that class"
            for c in m["never_predicted"]]


def _validate(columns: dict, private: dict, table: LocalTable, classes: list[str], manifest: dict,
              threshold: float = DEFAULT_THRESHOLD, *, own_used: bool = False,
              sent: np.ndarray | None = None) -> tuple[dict, dict]:
    """Score the package and the site's own model on labelled rows; add ``local_prediction`` and
    ``recommended`` to ``columns``; return the numbers (every accuracy with n and a 95 % interval, both models'
    clinical figures at ``threshold``, DeLong's paired AUC test for two classes) and the scored probabilities.
    ``sent``: when the site uses its own model or an update of the shared one, the shared model's probabilities as
    sent, scored too (``sent_metrics``; with two classes DeLong against the own model, ``delong_sent``), so the site
    sees what its choice left aside."""
    truth = np.asarray(classes, dtype=object)[table.y]
    pkg_ok = columns["prediction"] == truth
    n = int(len(truth))
    out = {"rows": n, "package": estimate(float(pkg_ok.mean()) if n else 0.0, n),
           "analyst_expected": manifest.get("expected"), "local": None, "recommend": "package",
           "reason": "this workspace holds no own-rows model (exported before it was kept)"}
    P_pkg = _probabilities(columns, classes)
    y = np.asarray(table.y, np.int64)
    out["package_metrics"] = metrics_for(y, P_pkg, classes, threshold)
    out["flags"] = [f"the package {s}" for s in _never_predicts(out["package_metrics"], classes)]
    scored = {"y": y, "classes": list(classes), "package": P_pkg, "local": None, "sent": sent}
    if sent is not None:
        out["sent_metrics"] = metrics_for(y, sent, classes, threshold)
        if len(classes) == 2 and has_local_model(private):
            out["delong_sent"] = delong(y, sent[:, 1], local_predict_proba(private, table.X)[:, 1])
    if own_used:  # the result is the site's own model (the analyst's or the site's choice): nothing to compare
        out.update({"recommend": "local", "own_model_package": True,
                    "reason": "the package is your own model (no shared model beat it clearly), so there is no "
                              "second model to compare it with"})
    elif has_local_model(private):
        P_loc = local_predict_proba(private, table.X)
        scored["local"] = P_loc
        out["local_metrics"] = metrics_for(y, P_loc, classes, threshold)
        out["flags"] += [f"your own model {s}" for s in _never_predicts(out["local_metrics"], classes)]
        if len(classes) == 2:
            out["delong"] = delong(y, P_pkg[:, 1], P_loc[:, 1])
        local_pred = np.asarray(classes, dtype=object)[P_loc.argmax(axis=1)]
        loc_ok = local_pred == truth
        out["local"] = estimate(float(loc_ok.mean()) if n else 0.0, n)
        b, c = int(np.sum(pkg_ok & ~loc_ok)), int(np.sum(~pkg_ok & loc_ok))  # rows only one model gets right
        p = mcnemar_p(b, c)
        out.update({"package_only_right": b, "local_only_right": c, "mcnemar_p": p})
        better = "local" if c > b else "package"
        out["recommend"] = better
        out["reason"] = (("the package" if better == "package" else "your own model") + " is right on "
                         f"{max(b, c)} row(s) where the other is wrong, and wrong on {min(b, c)} where the other is "
                         "right" + (f"; the difference is not clear at this size (McNemar p = {p:.2f})"
                                    if p >= 0.05 else f" (McNemar p = {p:.3f})"))
        columns["local_prediction"] = local_pred
        columns["recommended"] = local_pred if better == "local" else columns["prediction"]
    out["weak"] = bool(out["package"]["weak"])
    return out, scored
