"""The privacy page's disclosure check, driven like a user would: findings with their verdicts and numbers, the
levers table when a check is poor, and "Use this" changing the setting and checking again in the page's job."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PySide6.QtCore import Qt

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from core.data.schema import infer_schema  # noqa: E402
from core.data.tabular import read_table  # noqa: E402
from core.formats.anchor import make_anchor  # noqa: E402
from core.formats.identity import Identity  # noqa: E402
from core.formats.kit import Kit  # noqa: E402
from gui.screen import fully_visible  # noqa: E402
from tests.support.gui import (  # noqa: E402
    accept_kit,
    import_anchor,
    read_csv,
    wait_job,
    wait_page,
    wizard_with_new_identity,
)


def wait_check(qtbot, pp) -> None:
    """The page computed and checked what leaves, and the levers' own job (when a check is poor) has ended."""
    wait_page(qtbot, pp)
    if pp.levers_job is not None:
        wait_job(qtbot, pp.levers_job)


@pytest.fixture
def project(tmp_path):
    """A two-class kit with public statistics (so the formal-noise lever can be measured), its anchor and a CSV
    of 300 rows in 6 columns (m̃ = m: the colluding site rebuilds them almost exactly)."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({f"x{j}": rng.normal(size=300) * (j + 1) + 3 * j for j in range(6)})
    frame["label"] = np.where(frame["x0"] + rng.normal(size=300) > 0, "yes", "no")
    frame.iloc[:120].to_csv(tmp_path / "sample.csv", index=False)
    frame.to_csv(tmp_path / "site.csv", index=False)
    analyst = Identity.generate("Analyst")
    schema, _ = infer_schema(tmp_path / "sample.csv", label="label", with_statistics=True)
    kit = Kit(name="Check", task="classification", schema=schema, method="dccfl", analyst=analyst.card)
    kit.save(tmp_path / "p.dckit", analyst)
    make_anchor(kit.project_id, schema.feature_names, kind="smote", rows=300,
                seed_rows=read_table(tmp_path / "sample.csv", schema, labels=False).X).save(tmp_path / "a.dcanchor")
    return tmp_path



def at_privacy_page(qtbot, project, name: str, ids):
    """A wizard with a new identity ``name`` (in ``ids``) that accepted the project's kit and anchor and read the
    site's CSV, now on the privacy page."""
    w = wizard_with_new_identity(qtbot, name, ids)
    accept_kit(w, project / "p.dckit")
    import_anchor(qtbot, w, project / "a.dcanchor")
    w.next()
    read_csv(qtbot, w, project / "site.csv")
    w.next()
    return w

def test_poor_check_offers_levers_and_use_this_applies_one(qtbot, project):
    w = wizard_with_new_identity(qtbot, "Site A", project / "ids")
    w.resize(1366 - 16, 768 - 40)  # a laptop screen, less the window frame
    accept_kit(w, project / "p.dckit")
    import_anchor(qtbot, w, project / "a.dcanchor")
    w.next()
    read_csv(qtbot, w, project / "site.csv")
    w.next()
    pp = w.privacy_page
    wait_page(qtbot, pp)
    assert pp.isComplete() and pp.levers_job is not None  # the site may export while the levers are tried
    wait_job(qtbot, pp.levers_job)
    check = pp.check

    # every finding in words with its badge; the colluding site rebuilds the rows: poor
    attacks = [f["attack"] for f in pp.findings]
    assert attacks[0] == "collusion" and check.findings_table.rowCount() == len(attacks)
    assert check.verdict_of(0) == "poor" and check.findings_table.item(0, 0).text() == "Poor"
    assert check.findings_table.item(0, 1).text().startswith("With the anchor, another site and the analyst")
    assert "collusion" in check.findings_table.item(0, 1).toolTip()  # the technical name, in the tooltip
    na = [r for r in range(len(attacks)) if check.verdict_of(r) == "not applicable"]
    assert na and all(check.findings_table.item(r, 0).text() == "n.a." for r in na)
    numbers = {check.numbers_table.item(r, 0).text(): (check.numbers_table.item(r, 1).text(),
                                                       check.numbers_table.item(r, 2).text())
               for r in range(check.numbers_table.rowCount())}
    assert len(numbers) == len(attacks) - len(na)  # one row per measured check, in words, with its rows
    what, rows = numbers["Another site with the analyst"]
    assert what.startswith("median error 0") and "rows within 10 %: 100 %" in what
    assert rows == "150"  # the other 150 stand in for the public sample and the colluding site's rows (issue #35)
    assert "median_cell_error = " in check.numbers_table.item(0, 1).toolTip()
    assert "checks are poor" in check.summary_label.text() and "checks are poor" in pp.leaves_label.text()
    # the kit's threat model, before anything is exported; a poor counted check asks for the site's tick
    assert "Who is counted" in check.threat_label.text() and "one other site" in check.threat_label.text()
    assert check.consent_check.isVisibleTo(pp) and not check.consent_check.isChecked()
    assert "I accept this risk" in check.consent_check.text() and w.exporter.privacy_risk_accepted is None

    # the levers: new verdicts and the accuracy they cost, a Use this button for each the site can apply
    assert check.levers_box.isVisibleTo(pp) and check.levers_table.rowCount() == len(pp.levers.options)
    labels = [check.levers_table.item(r, 0).text() for r in range(check.levers_table.rowCount())]
    assert "Add noise of 2 × each number's spread" in labels and "Distilled mode" in labels
    assert len(check.use_buttons) == sum(o.applicable for o in pp.levers.options)
    effect = check.levers_table.item(labels.index("Add noise of 2 × each number's spread"), 3).text()
    assert effect.startswith("AUC ") and "→" in effect  # two classes: ranked and said in AUC, a loss as a loss
    assert check.levers_table.horizontalHeaderItem(3).text() == "Effect on your model"
    assert any(label.startswith("Formal noise: (ε, δ) = (1, ") for label in labels)
    formal = check.formal_label.text()
    assert "(ε, δ) = (" in formal and "a formal guarantee:" in formal
    # it fits a laptop screen: scrolled to, the levers' first button is wholly shown
    pp.scroll.ensureWidgetVisible(check.use_buttons[0])
    assert fully_visible(check.use_buttons[0])

    # "Use this" on formal noise (not a form setting): a line says it is on, with its guarantee in words; Off
    assert not pp.formal_row.isVisibleTo(pp)
    row = next(r for r, label in enumerate(labels) if label.startswith("Formal noise: (ε, δ) = (1, "))
    qtbot.mouseClick(check.levers_table.cellWidget(row, 4), Qt.LeftButton)
    wait_check(qtbot, pp)
    assert w.exporter.site_settings["privacy_epsilon"] == 1.0 and pp.site_export.manifest["privacy"]["epsilon"] == 1
    assert pp.formal_row.isVisibleTo(pp) and "Formal noise is on: (ε, δ) = (1, " in pp.formal_label.text()
    assert "a formal guarantee:" in pp.formal_label.text()
    qtbot.mouseClick(pp.formal_off_button, Qt.LeftButton)
    wait_check(qtbot, pp)
    assert w.exporter.site_settings["privacy_epsilon"] is None and "privacy" not in pp.site_export.manifest
    assert not pp.formal_row.isVisibleTo(pp) and check.verdict_of(0) == "poor"
    labels = [check.levers_table.item(r, 0).text() for r in range(check.levers_table.rowCount())]

    # "Use this" on the strongest noise: the form changes, the page computes and checks again in its job
    first_export = pp.site_export
    row = labels.index("Add noise of 2 × each number's spread")
    qtbot.mouseClick(check.levers_table.cellWidget(row, 4), Qt.LeftButton)
    assert pp.site_form.widget("noise").value() == 2.0 and not pp.isComplete()
    wait_check(qtbot, pp)
    assert pp.site_export is not first_export and pp.site_export.manifest["noise"] == 2.0
    assert w.exporter.site_settings["noise"] == 2.0
    collusion = next(f for f in pp.findings if f["attack"] == "collusion")
    assert collusion["verdict"] == "ok" and check.verdict_of(0) == "ok"
    assert check.levers_box.isVisibleTo(pp) == any(f["verdict"] == "poor" for f in pp.findings)


def test_levers_that_cannot_be_measured_never_block_the_export(qtbot, project, monkeypatch):
    from core.errors import ConfigError
    from gui.participant import privacy_page

    def refuse(*_, **__):
        raise ConfigError("no lever today")

    monkeypatch.setattr(privacy_page, "measure_levers", refuse)
    w = at_privacy_page(qtbot, project, "Site B", project / "ids-b")
    pp = w.privacy_page
    wait_check(qtbot, pp)
    assert pp.isComplete() and pp.check.verdict_of(0) == "poor" and not pp.check.levers_box.isVisibleTo(pp)
    assert pp.message.kind == "warning" and "no lever today" in pp.message.text()


def test_export_page_shows_the_privacy_budget_before_a_formal_export(qtbot, project):
    """Issue #35: the ε ledger (spent so far and what this export adds) is on the export page before sealing."""
    w = at_privacy_page(qtbot, project, "Site A", project / "ids")
    pp = w.privacy_page
    wait_page(qtbot, pp)
    w.exporter.set_site_settings({**w.exporter.site_settings, "privacy_epsilon": 1.0})
    w.exporter.compute()
    w.next()
    assert w.page_name() == "export"
    text = w.export_page.ledger_label.text()
    assert text.startswith("Privacy budget: no earlier export") and "this export adds ε = 1" in text


def test_a_poor_counted_check_needs_the_tick_before_export(qtbot, project):
    """Issue #35: the export button waits for "I accept this risk" when a check the kit counts is poor; the tick is
    recorded in the audit log's export entry."""
    import json

    from tests.support.gui import wait_for_page

    w = at_privacy_page(qtbot, project, "Site C", project / "ids-c")
    pp = w.privacy_page
    wait_page(qtbot, pp)
    assert pp.check.needs_consent and pp.isComplete()
    w.next()
    ep = w.export_page
    ep.folder_field.set_path(project)
    ep.name_edit.setText("c.dcbundle")
    assert not ep.export_button.isEnabled() and "I accept this risk" in ep.target_label.text()
    w.back()
    pp.check.consent_check.setChecked(True)
    assert w.exporter.privacy_risk_accepted and "privacy page" in w.exporter.privacy_risk_accepted
    w.next()
    assert ep.export_button.isEnabled()
    ep.export_button.click()
    wait_for_page(qtbot, w, "done")
    log = [json.loads(line) for line in (w.exporter.workspace.root / "audit.jsonl").read_text().splitlines()]
    consent = next(e for e in log if e["event"] == "export")["privacy_consent"]
    assert "ticked" in consent["how"] and any(a.startswith("collusion/") for a in consent["accepted"])
