"""The project kit (``.dckit``): what the analyst hands every participant before anything else.

Signed, not secret. It fixes the project id, the task, the schema (ordered feature columns, optional
public ranges, label and classes, optional id column), the method and its settings, the analyst's public
card (the key every bundle is encrypted to and every package is verified against) and an optional roster
of expected sites. File: ``{"format": "dcstudio/kit/v1", "kit": {...}, "signature": base64}``, where the
signature is Ed25519 by the analyst over ``b"dcstudio/kit/v1\\0" + canonical_json(kit)``.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..data.schema import Schema
from ..errors import ConfigError, FormatError, VerificationError
from ..fileio import canonical_json, read_json_capped, utc_now, write_json_atomic
from .fields import declaration
from .identity import Identity, PublicCard
from .threat import ThreatModel
from .thresholds import PrivacyThresholds

FORMAT = "dcstudio/kit/v1"
TASKS = ("classification", "clustering")
ANCHOR_KINDS = ("uniform", "gaussian", "smote")  # how the lead site makes X^anc (core.formats.anchor)
SIGNATURE_DOMAIN = b"dcstudio/kit/v1\0"


@dataclass
class Kit:
    name: str
    task: str
    schema: Schema
    method: str
    analyst: PublicCard
    settings: dict = field(default_factory=dict)
    anchor: dict = field(default_factory=lambda: {"kind": "smote", "rows": 1000})
    roster: list[dict] | None = None  # [{"name": ..., "fingerprint": ...}]
    # The privacy limits the kit states (core.formats.thresholds), only those differing from the defaults:
    # omitted from the file when empty, so kits made before it keep their digest.
    privacy: dict = field(default_factory=dict)
    # The threat model the kit declares (core.formats.threat): omitted when it is the default, as above.
    threat_model: dict = field(default_factory=dict)
    project_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created: str = field(default_factory=utc_now)

    def __post_init__(self):
        if self.task not in TASKS:
            raise ConfigError(f"unknown task '{self.task}'; choose one of {', '.join(TASKS)}")
        if self.task == "classification" and (not self.schema.label or len(self.schema.classes) < 2):
            raise ConfigError("a classification project needs a label column with at least two classes")
        if self.task == "classification" and self.schema.blocks is not None:
            raise ConfigError("feature blocks (a vertical partition) are only for clustering projects")
        if self.task == "clustering" and len(self.schema.block_names) > 1 and not self.schema.id_column:
            raise ConfigError("a clustering project with several feature blocks needs an id column to link the "
                              "blocks' rows (give one with --id-column)")
        self.privacy = PrivacyThresholds.from_dict(self.privacy or {}).kit_block()
        self.threat_model = ThreatModel.from_dict(self.threat_model or {}).kit_block()

    @property
    def privacy_thresholds(self) -> PrivacyThresholds:
        """The limits every site's privacy assessment is judged by (a site may only tighten them)."""
        return PrivacyThresholds.from_dict(self.privacy)

    @property
    def threat(self) -> ThreatModel:
        """Which adversaries every site's privacy assessment counts against an export (shown before export)."""
        return ThreatModel.from_dict(self.threat_model)

    def to_dict(self) -> dict:
        return {"project_id": self.project_id, "name": self.name, "created": self.created, "task": self.task,
                "schema": self.schema.to_dict(), "method": self.method, "settings": self.settings,
                "anchor": self.anchor, "analyst": self.analyst.to_dict(), "roster": self.roster,
                **({"privacy": dict(self.privacy)} if self.privacy else {}),
                **({"threat_model": dict(self.threat_model)} if self.threat_model else {})}

    @classmethod
    def from_dict(cls, d: dict) -> Kit:
        d = declaration("kit").check(d, "the kit")  # its declared members only (FORMAT §8)
        try:
            return cls(name=str(d["name"]), task=str(d["task"]), schema=Schema.from_dict(d["schema"]),
                       method=str(d["method"]), analyst=PublicCard.from_dict(d["analyst"]),
                       settings=dict(d.get("settings") or {}), anchor=dict(d.get("anchor") or {}),
                       roster=d.get("roster"), project_id=str(d["project_id"]), created=str(d["created"]),
                       privacy=_privacy_block(d.get("privacy")),
                       threat_model=ThreatModel.from_dict(d.get("threat_model")).kit_block())
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise FormatError(f"kit is incomplete or malformed ({exc.__class__.__name__})") from exc

    def digest(self) -> str:
        """SHA-256 (hex) of the canonical JSON of :meth:`to_dict`."""
        return self.digests()[0]

    def digests(self) -> tuple[str, str]:
        """(the kit's digest, its schema's digest, :meth:`core.data.schema.Schema.digest`) from one serialisation:
        every bundle carries both, and the analyst checks both."""
        import hashlib

        d = self.to_dict()
        return hashlib.sha256(canonical_json(d)).hexdigest(), hashlib.sha256(canonical_json(d["schema"])).hexdigest()

    def save(self, path: str | Path, analyst: Identity) -> None:
        """Sign with the analyst's identity (which must be the kit's analyst) and write atomically."""
        if analyst.card.key_id != self.analyst.key_id:
            raise ConfigError("the kit must be signed by the analyst it names")
        body = declaration("kit").write(self.to_dict())  # as its declaration allows, checked as a site will
        sig = analyst.sign(SIGNATURE_DOMAIN + canonical_json(body))
        write_json_atomic(path, {"format": FORMAT, "kit": body, "signature": base64.b64encode(sig).decode()})

    @classmethod
    def load(cls, path: str | Path, *, expect_analyst: PublicCard | None = None) -> Kit:
        """Read and verify a kit; refuse unknown versions, bad signatures and a different analyst."""
        d = read_json_capped(path, 64 << 20)
        if not isinstance(d, dict) or "format" not in d:
            raise FormatError("not a DC Studio kit file", path=path)
        if d["format"] != FORMAT:
            raise FormatError(f"unsupported kit format '{d['format']}' (this program reads {FORMAT})", path=path)
        try:
            body, sig = d["kit"], d["signature"]
            if not isinstance(sig, str) or not sig.isascii():
                raise TypeError("signature")
            sig = base64.b64decode(sig, validate=True)
            kit = cls.from_dict(body)
        except (KeyError, TypeError, ValueError, binascii.Error) as exc:
            raise FormatError("kit file is incomplete or malformed", path=path) from exc
        except FormatError as exc:
            raise FormatError(exc.message, path=path) from exc
        try:
            kit.analyst.verify(SIGNATURE_DOMAIN + canonical_json(body), sig)
        except VerificationError as exc:
            raise VerificationError("the kit's signature does not verify: it was altered or forged",
                                    path=path) from exc
        if expect_analyst is not None and kit.analyst.key_id != expect_analyst.key_id:
            raise VerificationError("the kit is signed by a different analyst than expected", path=path)
        return kit

    def describe(self) -> list[str]:
        """What a participant checks before trusting a kit (``dcstudio kit show``)."""
        features = self.schema.feature_names
        lines = [f"project:     {self.name} (id {self.project_id})", f"created:     {self.created}",
                 f"analyst:     {self.analyst.name}", f"fingerprint: {self.analyst.fingerprint}  "
                 "(compare with the analyst by phone or on paper)",
                 f"task:        {self.task}", f"method:      {self.method}"
                 + (f" ({', '.join(f'{k}={v}' for k, v in sorted(self.settings.items()))})" if self.settings else ""),
                 f"schema:      {len(features)} features ({self.schema.width} encoded columns): "
                 f"{', '.join(features)}"]
        lines += ["             " + line for line in self.schema.describe_columns()]
        if self.schema.label:
            lines.append(f"label:       {self.schema.label} (classes {', '.join(self.schema.classes)})")
        if self.schema.id_column:
            lines.append(f"id column:   {self.schema.id_column}")
        lines.append(f"anchor:      {self.anchor.get('kind')} ({self.anchor.get('rows')} rows)")
        if self.privacy:
            lines.append("privacy:     " + ", ".join(f"{k} = {v:g}" for k, v in sorted(self.privacy.items()))
                         + " (sites may only tighten these)")
        lines += [("threat:      " if i == 0 else "             ") + line
                  for i, line in enumerate(self.threat.lines())]
        if self.roster is not None:
            lines.append("roster:      " + "; ".join(f"{e['name']} ({e['fingerprint']})" for e in self.roster))
        lines.append(f"kit digest:  {self.digest()}")
        return lines

    def roster_allows(self, card: PublicCard) -> bool:
        if self.roster is None:
            return True
        fingerprint = card.fingerprint  # a hash: worked out once, not once per roster entry
        return any(e.get("fingerprint") == fingerprint for e in self.roster)


def _privacy_block(d) -> dict:
    """A kit's ``privacy`` block, checked (FormatError naming the limit when it is not a known numeric limit)."""
    return {} if d is None else PrivacyThresholds.from_dict(d).kit_block()
