"""Screenshots of the analyst window for the docs: builds a 6-site project, walks every page (after import,
after a threshold move, after training, after export) and saves ``analyst-<n>-<page>.png``; then a tiny round
of every other method, each page it shows saved as ``methods/<method>-<page>-<scale>.png`` (8-bit colour, to keep
them small). ``--scale 125`` draws on a 1366×768 laptop at 125 % (logical DPI 120) and renders only the per-method
pages; every page is checked to be whole (no key widget cut) before it is saved.

    QT_QPA_PLATFORM=offscreen python docs/tools/analyst_screens.py docs/screenshots
    QT_QPA_PLATFORM=offscreen python docs/tools/analyst_screens.py docs/screenshots --scale 125
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.simulation.projects import Project, build_clustering_project, build_project, fake_clustering_result  # noqa: E402,F401
from participant_screens import save_small  # noqa: E402  (this folder is on sys.path)


# ---- driving the window -------------------------------------------------------------------------------------
def wait_job(app, job, timeout: float = 120.0) -> None:
    """Process events until ``job`` ended and its signals were delivered."""
    if job is None:
        raise RuntimeError("no job was started")
    deadline = time.monotonic() + timeout
    while job.running or getattr(job, "_thread", None) is not None and job._thread.is_alive():
        app.processEvents()
        time.sleep(0.005)
        if time.monotonic() > deadline:
            raise TimeoutError(job.title)
    for _ in range(5):
        app.processEvents()


def open_session(app, window, project: Project) -> None:
    """Unlock the identity on the Project page (the kit was given to the window)."""
    page = window.project_page
    page.identity_path_edit.setText(str(project.identity))
    page.open_passphrase.setText(project.passphrase)
    wait_job(app, page.unlock_identity())
    if window.state.session is None:
        page.open_kit(project.kit)
    if window.state.session is None:
        raise RuntimeError(page.kit_message.text() or page.identity_message.text())
    if window.bundles_page.job_panel.busy:  # re-opening what an earlier run imported
        wait_job(app, window.bundles_page.job_panel.job)


def confirm_senders(app, bundles_page, fingerprints: list[str]) -> None:
    """Tick Confirmed for each sender (as the analyst does after comparing fingerprints); each tick imports
    that sender's waiting files."""
    for fp in fingerprints:
        job = bundles_page.set_confirmed(fp, True)
        if job is not None:
            wait_job(app, job)


def _grab(app, window, out_dir: Path, n: int, key: str, written: list[Path], prepare=None) -> None:
    window.show_page(key)
    for _ in range(10):
        app.processEvents()
    if prepare is not None:
        prepare()
        for _ in range(10):
            app.processEvents()
    path = out_dir / f"analyst-{n}-{key}.png"
    window.grab().save(str(path))
    written.append(path)


def _scroll_to_plots(page) -> None:
    """Scroll the method's views so the plots (projection, k curve, sizes) fill the shot; the tables above
    them stay one scroll away."""
    views = page.views
    if views.plots:
        views.verticalScrollBar().setValue(max(0, views.plots[0].y() - 8))


def _scroll_to_clinical(page) -> None:
    """Scroll the Models page's Results tab to the per-site clinical figures (the table, then the plots)."""
    from PySide6.QtWidgets import QLabel

    views = page.views
    for w in views.widgets:
        label = w.findChild(QLabel)
        if label is not None and "What each site is sent" in label.text():
            views.verticalScrollBar().setValue(max(0, w.y() - 8))
            return


def _scroll_to_roc(page) -> None:
    """Scroll the Models page's Results tab so the first ROC plot (then the reliability curves) fills the shot."""
    views = page.views
    for w in views.plots:
        if "ROC" in w.getPlotItem().titleLabel.text:
            views.verticalScrollBar().setValue(max(0, w.y() - 8))
            return


# tiny rounds: (kit settings, site settings); the clustering methods use the clustering project
METHOD_ROUNDS = {
    "dccfl": ({"epochs": 30}, {}),
    "hfldd": ({"epochs": 20, "min_steps": 400, "local_epochs": 20, "anchor_rows": 60, "clusters": 2},
              {"kip_steps": 40, "init": "means"}),
    "feddag": ({"epochs": 20, "warmup_rounds": 1, "warmup_epochs": 2, "cv_folds": 2}, {}),
    "meta-lr": ({}, {}),
    "gold": ({"k": "auto"}, {}),
    "dcclustering": ({"k": "auto", "k_range": [2, 5]}, {}),
}


def render_methods(out_dir: Path, workdir: Path, scale: int) -> list[Path]:
    """A tiny round of every method; each page the window lets the analyst open (Models, Clients, Data clustering,
    Export) saved as ``methods/<method>-<page>-<scale>.png`` after checking that no key widget is cut."""
    from PySide6.QtWidgets import QApplication

    from gui.analyst.window import AnalystWindow
    from gui.screen import fully_visible, reveal, window_fits

    app = QApplication.instance()
    target = Path(out_dir) / "methods"
    target.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for method, (settings, site) in METHOD_ROUNDS.items():
        if method in ("gold", "dcclustering"):
            project = build_clustering_project(workdir / f"m-{method}", n_sites=3, rows=150, k=3, method=method,
                                               settings=settings)
        else:
            project = build_project(workdir / f"m-{method}", n_sites=4, rows=160, epochs=settings.get("epochs", 5),
                                    groups=2, method=method, settings=settings, site_settings=site)
        window = AnalystWindow(kit_path=str(project.kit))
        window.show()
        open_session(app, window, project)
        wait_job(app, window.bundles_page.import_paths([str(p) for p in project.bundles]))
        confirm_senders(app, window.bundles_page, window.bundles_page.pending_fingerprints())
        window.show_page("models")
        wait_job(app, window.models_page.train(), timeout=600)
        for key in ("models", "clients", "clustering", "export"):
            if not window.show_page(key):
                continue
            for _ in range(20):
                app.processEvents()
            page = window.pages[key]
            if hasattr(page, "ensure_fresh"):
                page.ensure_fresh()
            for _ in range(10):
                app.processEvents()
            if not window_fits(window):
                raise RuntimeError(f"{method}: the window does not fit the screen")
            for w in (getattr(page, name, None) for name in ("heatmap_plot", "dendrogram_plot", "loss_plot",
                                                             "train_button")):
                if w is not None and w.isVisible():
                    reveal(w)
                    app.processEvents()
                    if not fully_visible(w):
                        raise RuntimeError(f"{method} {key}: {type(w).__name__} is cut")
            page.parentWidget().parentWidget().verticalScrollBar().setValue(0)  # shots start at the top
            if key == "clustering":
                _scroll_to_plots(page)
            for _ in range(5):
                app.processEvents()
            written.append(save_small(window, target / f"{method}-{key}-{scale}.png"))
        window.close()
    return written


def render(out_dir: Path, workdir: Path) -> list[Path]:
    """Build a 6-site project in ``workdir``, walk every page and save PNGs into ``out_dir``."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from gui import settings as app_settings
    from gui.analyst.window import AnalystWindow

    out_dir, workdir = Path(out_dir), Path(workdir)
    out_dir.mkdir(parents=True, exist_ok=True)
    QSettings.setPath(QSettings.NativeFormat, QSettings.UserScope, str(workdir / "settings"))
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(workdir / "settings"))
    app = QApplication.instance() or QApplication(["dcstudio-shots"])
    app.setOrganizationName(app_settings.ORG)
    app.setApplicationName(app_settings.APP)
    project = build_project(workdir / "project", n_sites=6, rows=240, epochs=40, groups=3, extras=True)
    window = AnalystWindow(kit_path=str(project.kit))
    window.show()
    written: list[Path] = []
    # 1: project page, identity still locked (kit opened from the recent list)
    page = window.project_page
    page.identity_path_edit.setText(str(project.identity))
    page.identity_tabs.setCurrentIndex(0)
    page.sample_edit.setText(str(project.sample))
    wait_job(app, page.load_sample(str(project.sample)))
    page.project_name.setText("Skewed wards")
    _grab(app, window, out_dir, 1, "project", written)
    open_session(app, window, project)
    _grab(app, window, out_dir, 2, "project", written)
    # bundles (+ the three refusals)
    bp = window.bundles_page
    wait_job(app, bp.import_paths([str(p) for p in project.bundles] + [str(p) for p in project.extras.values()]))
    # the analyst compared fingerprints with five sites by phone; the sixth waits, its file not yet opened
    pending = bp.pending_fingerprints()
    confirm_senders(app, bp, pending[:-1])
    _grab(app, window, out_dir, 3, "bundles", written)
    confirm_senders(app, bp, pending[-1:])
    # clients, threshold moved
    window.clients_page.set_threshold(0.45)
    _grab(app, window, out_dir, 4, "clients", written)
    window.clients_page.auto_t_check.setChecked(True)
    # train
    mp = window.models_page
    window.show_page("models")
    wait_job(app, mp.train(), timeout=300)
    _grab(app, window, out_dir, 5, "models", written, prepare=lambda: _scroll_to_clinical(mp))
    _grab(app, window, out_dir, 6, "clients", written)
    # export
    ep = window.export_page
    ep.out_edit.setText(str(workdir / "packages"))
    wait_job(app, ep.export())
    ep.save_pdf(workdir / "packages" / "report.pdf")
    _grab(app, window, out_dir, 7, "export", written)
    window.close()
    # a yes/no outcome: the Models page's ROC and reliability curves per site and per group
    bproject = build_project(workdir / "binary", n_sites=4, rows=240, epochs=40, groups=3, classes=2)
    bwindow = AnalystWindow(kit_path=str(bproject.kit))
    bwindow.show()
    open_session(app, bwindow, bproject)
    wait_job(app, bwindow.bundles_page.import_paths([str(p) for p in bproject.bundles]))
    confirm_senders(app, bwindow.bundles_page, bwindow.bundles_page.pending_fingerprints())
    bwindow.show_page("models")
    wait_job(app, bwindow.models_page.train(), timeout=300)
    _grab(app, bwindow, out_dir, 10, "models", written, prepare=lambda: _scroll_to_roc(bwindow.models_page))
    bwindow.close()
    # data clustering: a real dcclustering project when core has the method, else a synthetic result
    from core.methods import METHODS

    if "dcclustering" in METHODS:
        cproject = build_clustering_project(workdir / "clustering", n_sites=3, rows=200, k=3)
        cwindow = AnalystWindow(kit_path=str(cproject.kit))
        cwindow.show()
        open_session(app, cwindow, cproject)
        wait_job(app, cwindow.bundles_page.import_paths([str(p) for p in cproject.bundles]))
        confirm_senders(app, cwindow.bundles_page, cwindow.bundles_page.pending_fingerprints())
        wait_job(app, cwindow.models_page.train(), timeout=300)
    else:
        cwindow = window
        cwindow.show()
        cwindow.clustering_page.show_result(fake_clustering_result())
        cwindow._refresh()
    _grab(app, cwindow, out_dir, 8, "clustering", written, prepare=lambda: _scroll_to_plots(cwindow.clustering_page))
    cwindow.close()
    return written


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    target = Path(args[0]) if args else Path("docs/screenshots")
    scale = int(sys.argv[sys.argv.index("--scale") + 1]) if "--scale" in sys.argv else 100
    args = [a for a in args if a != str(scale)]
    from gui.screen import laptop_platform

    # offscreen runs draw on a 1366×768 screen at this scaling (a real display, e.g. Xvfb, is kept)
    laptop_platform(dpi=round(96 * scale / 100))
    with tempfile.TemporaryDirectory() as tmp:
        from PySide6.QtCore import QSettings
        from PySide6.QtWidgets import QApplication

        from gui import settings as app_settings

        QSettings.setPath(QSettings.NativeFormat, QSettings.UserScope, str(Path(tmp) / "settings"))
        QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(Path(tmp) / "settings"))
        app = QApplication.instance() or QApplication(["dcstudio-shots"])
        app.setOrganizationName(app_settings.ORG)
        app.setApplicationName(app_settings.APP)
        shots = render(target, Path(tmp)) if scale == 100 else []
        for p in shots + render_methods(target, Path(tmp) / "methods", scale):
            print(p)
