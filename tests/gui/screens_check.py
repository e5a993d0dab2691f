"""Key widgets are fully visible on a 1366×768 laptop screen. Run by ``tests/gui/test_gui_screens.py`` in a child
process whose offscreen screen is 1366×768 logical pixels at device-pixel ratio 1 or 2 (a 2732×1536 panel),
so the windows open exactly as they would there. Not collected on its own (its name has no ``test_`` prefix).
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

from PySide6.QtGui import QGuiApplication  # noqa: E402
from PySide6.QtWidgets import QWizard  # noqa: E402

from gui.participant import ParticipantWizard  # noqa: E402
from gui.screen import fully_visible, text_fits, visible_rows, window_fits  # noqa: E402
from tests.gui.test_gui_analyst import built, import_all, open_window, project  # noqa: E402, F401
from tests.gui.test_gui_participant import drive_to_export  # noqa: E402
from tests.gui.test_gui_participant import project as site_project  # noqa: E402, F401
from tests.support.gui import wait_page  # noqa: E402


def test_the_screen_is_a_laptop(qapp):
    screen = QGuiApplication.primaryScreen()
    assert screen.geometry().width() == 1366 and screen.geometry().height() == 768


def _visible(*widgets) -> list[str]:
    return [w.objectName() or type(w).__name__ for w in widgets if not fully_visible(w)]


def test_wizard_fits_a_laptop(qtbot, site_project, tmp_path):  # noqa: F811
    w = ParticipantWizard()
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    assert window_fits(w), (w.width(), w.height())
    drive_to_export(qtbot, w, site_project, tmp_path, create=True)
    w.back()
    w.back()
    w.back()
    ip = w.identity_page
    assert w.page_name() == "identity"
    qtbot.wait(50)
    assert not _visible(ip.fingerprint_view.text, ip.fingerprint_view.qr, w.button(QWizard.NextButton))
    assert text_fits(ip.fingerprint_view.text)
    w.next()
    kp = w.kit_page
    qtbot.wait(50)
    assert not _visible(kp.analyst_view.text, kp.analyst_view.qr, kp.fingerprint_edit, w.button(QWizard.NextButton))
    assert text_fits(kp.analyst_view.text)
    w.resize(w.minimumSizeHint())  # even at its smallest the fingerprint is whole
    qtbot.wait(50)
    assert text_fits(kp.analyst_view.text), (kp.analyst_view.text.width(), w.size())
    w.resize(960, 720)
    w.next()
    w.next()
    dp = w.data_page
    dp.set_csv(site_project["sites"]["site0"][0])
    wait_page(qtbot, dp)
    qtbot.wait(50)
    assert window_fits(w)
    assert visible_rows(dp.preview_view) >= 6, visible_rows(dp.preview_view)
    assert visible_rows(dp.columns_table) >= 5, visible_rows(dp.columns_table)
    assert not _visible(dp.preview_view, dp.columns_table, dp.impute_check, w.button(QWizard.NextButton))
    w.next()
    pp = w.privacy_page
    wait_page(qtbot, pp)
    qtbot.wait(50)
    assert not _visible(pp.site_form.widget("reduction"), pp.plain_label, pp.leaves_label, pp.details_button,
                        w.button(QWizard.NextButton))
    pp.details_button.click()  # the technical disclosure, opened, shows every array that leaves
    qtbot.wait(50)
    assert pp.disclosure_table.rowCount() >= 4
    assert visible_rows(pp.disclosure_table) == pp.disclosure_table.rowCount(), visible_rows(pp.disclosure_table)
    assert not _visible(pp.disclosure_table, w.button(QWizard.NextButton))


def test_analyst_window_fits_a_laptop(qtbot, project):  # noqa: F811
    w = open_window(qtbot, project)
    qtbot.waitExposed(w)
    assert window_fits(w), (w.width(), w.height())
    page = w.project_page
    qtbot.wait(50)
    fp = page.fingerprint_view
    assert not _visible(fp.text, fp.qr), (fp.qr.geometry(), page.size())
    assert text_fits(fp.text)
    import_all(qtbot, w, project)
    assert w.show_page("bundles")
    qtbot.wait(50)
    table = w.bundles_page.table
    assert visible_rows(table) >= 6
    assert w.show_page("models")
    qtbot.wait(50)
    assert not _visible(w.models_page.train_button, w.models_page.loss_plot)
