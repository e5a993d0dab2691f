"""Issue #24 in a site's round: the assessment runs before sealing, its raw numbers land in the workspace and
the audit log and nowhere in the bundle, and it costs little beside the export."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.data.schema import infer_schema
from core.data.tabular import read_table
from core.formats.anchor import make_anchor
from core.formats.envelope import open_sealed
from core.formats.identity import Identity
from core.formats.kit import Kit
from core.formats.threat import ThreatModel
from core.formats.workspace import SiteWorkspace
from core.methods.base import SiteInput
from core.methods.hfldd.method import HFLDD
from core.participant import ParticipantRound
from core.privacy.assessment import MAX_ROWS, MEMBERSHIP_SHARE, _simulate


def make_round(d, rows: int, *, privacy: dict | None = None, method: str = "dccfl"):
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({f"x{j}": rng.normal(size=rows) * (j + 1) + 10 * j for j in range(8)})
    frame["label"] = np.where(frame["x0"] + (frame["x1"] - 10) / 2 > 0, "a", "b")
    frame.iloc[:200].to_csv(d / "sample.csv", index=False)
    frame.to_csv(d / "site.csv", index=False)
    analyst, site = Identity.generate("analyst"), Identity.generate("site")
    schema, _ = infer_schema(d / "sample.csv", label="label")
    kit = Kit(name="p", task="classification", schema=schema, method=method, analyst=analyst.card,
              privacy=privacy or {})
    kit.save(d / "p.dckit", analyst)
    anchor = make_anchor(kit.project_id, schema.feature_names, kind="smote", rows=500,
                         seed_rows=read_table(d / "sample.csv", schema, labels=False).X)
    return kit, analyst, site, anchor


def test_numbers_land_in_the_workspace_and_audit_log_never_in_the_bundle(tmp_path):
    kit, analyst, site, anchor = make_round(tmp_path, 600, privacy={"membership_auc_max": 0.58})
    ws = SiteWorkspace(tmp_path / "ws")
    job = ParticipantRound(kit, tmp_path / "p.dckit", site, ws, anchor=anchor, site_settings={"seed": 1})
    job.confirm_analyst(kit.analyst, how="test")
    assert job.privacy_thresholds.membership_auc_max == 0.58  # the kit's limit
    job.tighten_privacy({"group_size_min": 20})
    job.load(tmp_path / "site.csv")
    job.accept_privacy_risk("test: the site accepts the poor verdicts")
    sealed = job.seal(tmp_path / "b.dcbundle")  # seal runs the assessment when it was not run
    assessment = job.assessment_
    assert assessment is not None and assessment.finding("collusion").verdict == "poor"
    kept = json.loads((ws.export_dir(kit.project_id, sealed.digest) / "privacy.json").read_text())
    assert kept["findings"] == json.loads(json.dumps([f.to_dict() for f in assessment.findings]))
    assert kept["thresholds"]["group_size_min"] == 20 and kept["thresholds"]["membership_auc_max"] == 0.58
    entry = next(e for e in ws.audit.entries() if e.get("event", e.get("kind")) == "export"
                 or e.get("digest") == sealed.digest)
    assert entry["privacy"]["verdict"] == "poor"
    assert entry["privacy_consent"] == {"how": "test: the site accepts the poor verdicts",
                                        "accepted": [f"{f.attack}/{f.adversary}" for f in assessment.poor]}
    assert {f["attack"] for f in entry["privacy"]["findings"]} >= {"collusion", "membership"}
    opened = open_sealed(tmp_path / "b.dcbundle", analyst, expect_kind="bundle")
    assert set(opened.payload.arrays) == {"x_tilde", "anchor_tilde", "label_counts", "y"}
    text = json.dumps(opened.payload.manifest)
    assert not {"privacy", "findings", "thresholds", "assessment"} & set(opened.payload.manifest)
    for word in ("membership", "collusion", "median_cell_error", "tpr_at_1pct", "within_10pct", "verdict"):
        assert word not in text


def _assessed(tmp_path, rows: int, method: str):
    """The assessment of a whole export of ``rows`` rows (read, compute, assess); distillation with few steps."""
    kit, _, site, anchor = make_round(tmp_path, rows, method=method)
    fast = {"kip_steps": 10, "init": "means"} if method == "hfldd" else {}
    job = ParticipantRound(kit, tmp_path / "p.dckit", site, SiteWorkspace(tmp_path / "ws"), anchor=anchor,
                           site_settings={"seed": 1, **fast})
    job.confirm_analyst(kit.analyst, how="test")
    job.load(tmp_path / "site.csv")
    job.compute()
    return job.assess()


def test_the_assessment_measures_a_capped_sample_whatever_the_rows(tmp_path):
    """What keeps the assessment cheap beside the export at any size (issue #24; the timings are benchmark records,
    docs/results/privacy/timing*.json, not a test): the attacks run on at most MAX_ROWS of the exported rows."""
    assessment = _assessed(tmp_path, 2500, "dccfl")
    # the rebuilds are measured on the shipped rows that do not stand in for the public sample and the colluding
    # site's rows, at most MAX_ROWS of them
    for attack in ("collusion", "analyst_alone"):
        assert assessment.finding(attack).rows == min(MAX_ROWS, 2500 - assessment.reference_rows)
    # 1,000 of the site's rows stand in for the public sample and the colluding site's rows (issue #35)
    assert assessment.reference_rows == ThreatModel().public_rows == 1000
    assert set(assessment.finding("analyst_alone").by_attack) == {"column_means", "moment_matching", "eigen", "ica"}


@pytest.mark.parametrize("method", ["hfldd", "gold"])
def test_simulating_methods_assess_a_capped_simulation(tmp_path, method):
    """Distillation and GOLD re-run the method on a capped subsample (half of ``MAX_ROWS // MEMBERSHIP_SHARE``
    rows as members), so the assessment costs the same at any size while the export grows at least linearly with
    the rows (measured whole: docs/results/privacy/timing-10k-*.json)."""
    assessment = _assessed(tmp_path, 2_500, method)
    membership = assessment.finding("membership")
    assert membership.verdict in ("ok", "poor")  # measured, not skipped
    assert membership.rows == MAX_ROWS // MEMBERSHIP_SHARE  # members + hold-out: the cap, not the table


def test_simulated_distillation_ships_the_rows_the_method_would():
    """The simulation's shortcut (no soft-label training) leaves the distilled rows it measures unchanged."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((800, 6))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    anchor = rng.standard_normal((300, 6))
    rows = np.arange(0, 800, 2)
    method = HFLDD()
    full = method.site_compute(SiteInput(X[rows], y[rows], ["a", "b"], anchor, None, {"seed": 0}))
    simulated = _simulate(method, SiteInput(X, y, ["a", "b"], anchor, None, {"seed": 5}), rows, 0)
    np.testing.assert_array_equal(simulated.arrays["x_distilled"], full.arrays["x_distilled"])
    np.testing.assert_array_equal(simulated.arrays["y_distilled"], full.arrays["y_distilled"])
    assert not np.array_equal(simulated.arrays["soft_labels"], full.arrays["soft_labels"])  # the shortcut ran
