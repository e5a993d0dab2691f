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
