"""Issue #35 (part B), the site under the formal option: empty cells filled from the kit's public values (never
from other rows), the fill counts left out of the bundle, a rare 0/1 column no obstacle, and the ε ledger that
adds up every export and is shown before the next."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.data.schema import infer_schema
from core.data.tabular import read_table
from core.formats.anchor import make_anchor
from core.formats.envelope import open_sealed
from core.formats.identity import Identity
from core.formats.kit import Kit
from core.formats.workspace import SiteWorkspace
from core.participant import ParticipantRound


def make_round(d, *, rows: int = 300, method: str = "dccfl"):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({f"x{j}": rng.normal(size=rows) * (j + 1) + 5 * j for j in range(5)})
    frame["rare"] = np.where(np.arange(rows) % 100 == 0, "yes", "no")  # 1 % of rows: a rare 0/1 column
    frame["label"] = np.where(frame["x0"] + frame["x1"] / 2 > 1, "a", "b")
    frame.iloc[:200].to_csv(d / "sample.csv", index=False)
    site = frame.copy()
    site.loc[::7, "x2"] = np.nan  # empty cells for the kit's "impute" policy
    site.to_csv(d / "site.csv", index=False)
    analyst, me = Identity.generate("analyst"), Identity.generate("site")
    schema, _ = infer_schema(d / "sample.csv", label="label", with_statistics=True)
    kit = Kit(name="p", task="classification", schema=schema, method=method, analyst=analyst.card)
    kit.save(d / "p.dckit", analyst)
    anchor = make_anchor(kit.project_id, schema.feature_names, kind="smote", rows=200,
                         seed_rows=read_table(d / "sample.csv", schema, labels=False).X)
    return kit, analyst, me, anchor


def job_of(d, kit, me, anchor, settings):
    job = ParticipantRound(kit, d / "p.dckit", me, SiteWorkspace(d / "ws"), anchor=anchor, site_settings=settings)
    job.confirm_analyst(kit.analyst, how="test")
    job.load(d / "site.csv")
    return job


def test_formal_export_fills_from_public_values_and_ships_no_fill_counts(tmp_path):
    kit, analyst, me, anchor = make_round(tmp_path)
    plain = job_of(tmp_path, kit, me, anchor, {"seed": 1})
    own_median = plain.table.fill_values["x2"]
    job = job_of(tmp_path, kit, me, anchor, {"seed": 1, "privacy_epsilon": 1.0})
    job.compute()
    public_mean = next(f for f in kit.schema.features if f.name == "x2").mean
    assert job.table.fill_values["x2"] == pytest.approx(public_mean) != pytest.approx(own_median)
    job.accept_privacy_risk("the test accepts the default kit's collusion risk")
    sealed = job.seal(tmp_path / "b.dcbundle")
    manifest = open_sealed(sealed.path, analyst, expect_kind="bundle").payload.manifest
    assert "filled" not in manifest and manifest["privacy"]["epsilon"] == 1.0
    # without the option the counts ship, as before
    plain.compute()
    plain.accept_privacy_risk("the test accepts the default kit's collusion risk")
    assert plain.seal(tmp_path / "c.dcbundle", replace=True) and "filled" in open_sealed(
        tmp_path / "c.dcbundle", analyst, expect_kind="bundle").payload.manifest


def test_one_rows_image_does_not_depend_on_the_others(tmp_path):
    """Under the option a row's encoded values use public fills only: replacing another row changes nothing."""
    kit, _, me, anchor = make_round(tmp_path)
    job = job_of(tmp_path, kit, me, anchor, {"privacy_epsilon": 1.0})
    job.compute()
    before = job.table.X.copy()
    frame = pd.read_csv(tmp_path / "site.csv")
    frame.loc[3, "x2"] = 1e6  # one other row replaced: the site's median would move, the public mean does not
    frame.to_csv(tmp_path / "site.csv", index=False)
    job.load(tmp_path / "site.csv")
    job.compute()
    changed = np.flatnonzero(np.any(job.table.X != before, axis=1))
    assert changed.tolist() == [3]


def test_a_rare_binary_column_does_not_block_the_formal_option(tmp_path):
    kit, _, me, anchor = make_round(tmp_path)
    rare = next(f for f in kit.schema.features if f.name == "rare")
    rare.frequencies = [1.0, 0.0]  # as if the sample had no "yes" at all: its public spread is 0
    job = job_of(tmp_path, kit, me, anchor, {"privacy_epsilon": 1.0})
    assert job.compute().manifest["privacy"]["epsilon"] == 1.0


def test_the_ledger_adds_up_every_export_and_is_shown_before_the_next(tmp_path):
    kit, _, me, anchor = make_round(tmp_path)
    first = job_of(tmp_path, kit, me, anchor, {"privacy_epsilon": 1.0})
    first.compute()
    assert "no earlier export" in first.ledger_lines()[0] and "ε = 2" not in " ".join(first.ledger_lines())
    first.accept_privacy_risk("the test accepts the default kit's collusion risk")
    first.seal(tmp_path / "one.dcbundle")
    second = job_of(tmp_path, kit, me, anchor, {"privacy_epsilon": 1.0})
    second.compute()
    ledger = second.privacy_spent()
    assert (ledger.exports, ledger.formal, ledger.epsilon) == (1, 1, 1.0)
    text = " ".join(second.ledger_lines())
    assert "ε = 1" in text and "ε = 2" in text  # spent so far, and the total once this one is sealed
    second.accept_privacy_risk("the test accepts the default kit's collusion risk")
    second.seal(tmp_path / "two.dcbundle")
    third = job_of(tmp_path, kit, me, anchor, {"seed": 1})
    third.compute()
    assert third.privacy_spent().epsilon == 2.0 and "no formal bound" in " ".join(third.ledger_lines())
    # a new audit log (after an upgrade, or a refusal) forgets nothing: the ledger reads the exports' signed states
    third.workspace.audit.start_new(me, "test: a new log")
    again = job_of(tmp_path, kit, me, anchor, {"privacy_epsilon": 1.0})
    again.compute()
    assert (again.privacy_spent().formal, again.privacy_spent().epsilon) == (2, 2.0)


def test_the_assessment_reports_the_summary_paths_guarantee(tmp_path):
    kit, _, me, _ = make_round(tmp_path, method="meta-lr")
    job = job_of(tmp_path, kit, me, None, {"privacy_epsilon": 1.0})
    ex = job.compute()
    assert set(ex.arrays) == {"coef", "cov", "noise_cov"}
    assessment = job.assess()
    assert "(ε = 1, δ" in assessment.formal["sentence"] and "objective perturbation" in assessment.formal["sentence"]
    assert any("number of rows" in x for x in assessment.not_covered)
    assert not any("anchor" in x for x in assessment.not_covered)  # the DC family's items do not apply
    assert assessment.finding("membership").verdict in ("ok", "poor")  # the loss attack runs on the noised model
