"""The app shows text that crossed the air gap only through core's one sanitiser (issue #32, findings 6 and 7): a
message, a job's failure, a method's table of sites never reads a file's text as markup, and never shows its
control or bidi characters raw."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from PySide6.QtCore import Qt  # noqa: E402

from core.errors import FormatError  # noqa: E402
from core.methods.views import Table  # noqa: E402
from core.safe_text import is_safe  # noqa: E402
from gui.jobs import Job  # noqa: E402
from gui.views_panel import render_view  # noqa: E402
from gui.widgets import JobPanel, MessageLabel, esc  # noqa: E402

HOSTILE = "<img src=x><b>site</b>\x1b[2J\u202etxt.exe"


def test_a_message_quoting_a_file_is_plain_text_with_its_control_characters_escaped(qtbot):
    label = MessageLabel()
    qtbot.addWidget(label)
    label.show_message("error", f"bundle of '{HOSTILE}' refused")
    assert label.textFormat() == Qt.PlainText
    assert "<img src=x><b>site</b>\\x1b[2J\\u202etxt.exe" in label.text() and is_safe(label.text())


def test_a_failed_jobs_sentence_is_shown_plain_and_sanitised(qtbot):
    panel = JobPanel()
    qtbot.addWidget(panel)

    def fail(control):
        raise FormatError(f"the bundle of site '{HOSTILE}' is refused")

    job = Job(fail, "checking")
    with qtbot.waitSignal(panel.finished, timeout=10_000):
        panel.run(job)
    assert panel.status.textFormat() == Qt.PlainText
    assert "\\x1b[2J" in panel.status.text() and is_safe(panel.status.text())


def test_a_methods_table_shows_site_names_as_text(qtbot):
    widget = render_view(Table(f"Sites of {HOSTILE}", ["site", "note"], [[HOSTILE, "ok"]]))
    qtbot.addWidget(widget)
    table = next(w for w in widget.children() if w.metaObject().className() == "QTableWidget")
    cell = table.item(0, 0)
    assert cell.text().startswith("<img src=x>") and is_safe(cell.text())
    assert cell.toolTip().startswith("<qt>&lt;img") and is_safe(cell.toolTip())
    title = next(w for w in widget.children() if w.metaObject().className() == "QLabel")
    assert esc(f"Sites of {HOSTILE}") in title.text() and "<img" not in title.text()


def test_the_bundles_page_lists_a_stored_bundle_that_no_longer_passes_and_goes_on(qtbot, tmp_path):
    """Issue #32, finding 5: a bundle stored before the checks it now fails is listed as refused with its reason
    (naming the site) when the project opens; the other sites' bundles are used."""
    from benchmarks.fuzz import Corpus, reseal
    from core.analyst import AnalystRound
    from core.formats.envelope import file_digest, read_header
    from core.formats.workspace import AnalystWorkspace, default_workspace
    from gui.analyst.bundles import COL_FILE
    from tests.support.gui import PASS, open_analyst_window, until

    (tmp_path / "round").mkdir()
    c = Corpus(tmp_path / "round", 0, "dccfl", sites=3)
    identity = tmp_path / "analyst.dcid"
    c.analyst.save(identity, PASS, log_n=14)
    workspace = AnalystWorkspace(default_workspace(identity))
    session = AnalystRound(c.kit, c.analyst, workspace)  # the workspace's audit log starts here
    lie = tmp_path / "lie.dcbundle"  # site0's own_cv on more rows than it sent, stored as an older version would
    content = dict(c.inner["bundle"].payload.manifest)
    reseal(c, "bundle", lie, {**content, "own_cv": {**content["own_cv"], "rows": content["n_rows"] + 5},
                              "rows_kept_at_site": 5})
    header = read_header(lie)
    workspace.store(c.kit.project_id, lie, header.envelope_id, file_digest(lie), "site0", header.sender.fingerprint, 50)
    session.import_bundles([b.path for b in c.sealed_bundles[1:]])
    aw = open_analyst_window(qtbot, c.kit_path, identity, PASS)
    bp = aw.bundles_page
    until(qtbot, bp.job_panel.finished, lambda: not bp.job_panel.busy and len(aw.state.bundles) == 2)
    refused = bp.rows_by_status("refused")
    assert len(refused) == 1 and sorted(b.site for b in aw.state.bundles) == ["site1", "site2"]
    text = bp.table.item(refused[0], COL_FILE).text()
    assert "site0" in text and "own_cv" in text and is_safe(text)
