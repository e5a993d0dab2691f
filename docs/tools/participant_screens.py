"""Screenshots of the participant side for the docs: ``render(out_dir, workdir)`` builds a small project with
core (analyst identity, kit, site CSVs), fills the wizard page by page as a user would and saves each page,
then applies a package in the results window.

    QT_QPA_PLATFORM=offscreen python docs/tools/participant_screens.py docs/screenshots
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication, QWidget

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.analyst import AnalystRound  # noqa: E402
from core.data.schema import infer_schema  # noqa: E402
from core.data.tabular import read_table  # noqa: E402
from core.formats.anchor import AnchorFile, anchor_for_kit  # noqa: E402
from core.formats.identity import Identity  # noqa: E402
from core.formats.kit import Kit  # noqa: E402
from core.formats.workspace import AnalystWorkspace, SiteWorkspace, default_workspace  # noqa: E402
from core.participant import ParticipantRound  # noqa: E402
from gui import settings as app_settings  # noqa: E402

PASS = "blue harbour seven lanterns"
FEATURES = ["age", "bmi", "systolic_bp", "cholestérol", "glucose", "heart_rate"]
# the site's own files as a French-locale spreadsheet saves them (issue #11): read and written back alike
FRENCH = {"encoding": "cp1252", "sep": ";", "decimal": ","}
CLASSES = ["healthy", "at risk", "disease"]


def _site_rows(rng: np.random.Generator, n: int, mix: list[float]) -> pd.DataFrame:
    y = rng.choice(len(CLASSES), size=n, p=mix)
    base = np.array([52, 26, 128, 195, 98, 72], float)
    shift = np.array([[0, 0, 0, 0, 0, 0], [6, 3, 12, 25, 14, 5], [12, 5, 24, 45, 30, 9]], float)
    spread = np.array([11, 4, 14, 30, 16, 9], float)
    X = base + shift[y] + rng.standard_normal((n, len(FEATURES))) * spread
    frame = pd.DataFrame(np.round(X, 1), columns=FEATURES)
    frame.insert(0, "patient_ref", [f"P{100000 + k}" for k in range(n)])
    frame["outcome"] = np.asarray(CLASSES)[y]
    return frame


def _make_project(work: Path) -> dict:
    rng = np.random.default_rng(7)
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    _site_rows(rng, 60, [0.34, 0.33, 0.33]).to_csv(data / "sample.csv", index=False)
    _site_rows(rng, 80, [0.34, 0.33, 0.33]).to_csv(data / "seed.csv", index=False)
    mine = _site_rows(rng, 240, [0.6, 0.3, 0.1])
    mine.to_csv(data / "cardiology-2024.csv", index=False, **FRENCH)
    bad = mine.copy()
    bad["cholestérol"] = bad["cholestérol"].map(lambda v: f"{v:.1f}".replace(".", ","))
    bad.loc[3, "cholestérol"] = "n/k"
    bad.to_csv(data / "cardiology-2024-draft.csv", index=False, **FRENCH)
    _site_rows(rng, 120, [0.6, 0.3, 0.1]).to_csv(data / "cardiology-2025.csv", index=False, **FRENCH)
    _site_rows(rng, 220, [0.1, 0.3, 0.6]).to_csv(data / "other-site.csv", index=False)
    analyst = Identity.generate("DC analyst, University Hospital")
    analyst.save(work / "analyst.dcid", PASS, log_n=14)
    schema, _ = infer_schema(data / "sample.csv", label="outcome")
    kit = Kit(name="Cardiac risk 2025", task="classification", schema=schema, method="dccfl",
              analyst=analyst.card, settings={"seed": 1, "t": 0.5},
              anchor={"kind": "smote", "rows": 500})
    kit.save(work / "cardiac.dckit", analyst)
    other = Identity.generate("Northside Clinic")
    other.save(work / "northside.dcid", PASS, log_n=14)
    other.card.save(work / "northside.dcpub")  # the other site's public card: the anchor is encrypted to it
    return {"data": data, "analyst": analyst, "kit_path": work / "cardiac.dckit", "other": other}


def _binary_round(work: Path) -> dict:
    """A binary outcome (died within a year: no / yes) over two wards, run through core up to the packages, for the
    results window's check on labelled rows: the site's identity, its package and its labelled 2025 rows."""
    rng = np.random.default_rng(11)
    data = work / "binary"
    data.mkdir(parents=True, exist_ok=True)
    base = np.array([64, 27, 132, 5.8, 1.1, 78], float)
    shift = np.array([9, 1.5, 10, 0.9, 0.5, 8], float)
    spread = np.array([12, 5, 18, 1.4, 0.5, 13], float)
    names = ["age", "bmi", "systolic_bp", "lactate", "creatinine", "heart_rate"]

    def rows(n: int, rate: float) -> pd.DataFrame:
        y = (rng.random(n) < rate).astype(int)
        frame = pd.DataFrame(np.round(base + np.outer(y, shift) + rng.standard_normal((n, 6)) * spread, 1),
                             columns=names)
        frame["died"] = np.where(y == 1, "yes", "no")
        return frame

    for file, n, rate in (("sample.csv", 60, 0.3), ("seed.csv", 80, 0.3), ("ward-2024.csv", 70, 0.25),
                          ("ward-2025.csv", 180, 0.25), ("other-ward.csv", 400, 0.3)):
        rows(n, rate).to_csv(data / file, index=False)
    analyst = Identity.generate("DC analyst, University Hospital")
    schema, _ = infer_schema(data / "sample.csv", label="died")
    kit = Kit(name="One-year mortality", task="classification", schema=schema, method="dccfl", analyst=analyst.card,
              settings={"seed": 1, "t": 0.5}, anchor={"kind": "smote", "rows": 500})
    kit_path = data / "mortality.dckit"
    kit.save(kit_path, analyst)
    anchor = anchor_for_kit(kit, seed_X=read_table(data / "seed.csv", schema, labels=False).X)
    bundles, idents = [], {}
    for name, csv in (("St Mary's Hospital, cardiology", "ward-2024.csv"), ("Northside Clinic", "other-ward.csv")):
        ident = Identity.generate(name)
        idents[name] = data / f"{name.split()[0].replace(chr(39), '')}.dcid"
        ident.save(idents[name], PASS, log_n=14)
        job = ParticipantRound(kit, kit_path, ident, SiteWorkspace(default_workspace(idents[name])), anchor=anchor,
                               site_settings={"seed": 2})
        job.confirm_analyst(kit.analyst, how="screenshots: the kit's own signer")
        job.accept_privacy_risk("screenshots: a simulated site accepts its poor verdicts")
        job.load(data / csv)
        bundles.append(job.seal(data / f"{idents[name].stem}.dcbundle").path)
    session = AnalystRound(kit, analyst, AnalystWorkspace(data / "analyst.workspace"))
    for _, card in session.unconfirmed(bundles):
        session.confirm(card)
    received = session.received([r.envelope_id for r in session.import_bundles(bundles)])
    outputs = session.export(session.run(received), data / "packages")
    package = next(s.path for s in outputs.packages if s.path.name.startswith("St_Mary"))
    return {"identity": idents["St Mary's Hospital, cardiology"], "package": package, "csv": data / "ward-2025.csv"}


def wait_for(app: QApplication, condition: Callable[[], bool], timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError("the window did not reach the expected state")
        app.processEvents()
        time.sleep(0.01)
    for _ in range(5):
        app.processEvents()


SCALE = 100  # the display scaling the shots are drawn at (main's --scale); other than 100 it names the files


def save_small(widget, path: Path) -> Path:
    """Grab ``widget`` and save it as an 8-bit palette PNG (a third of the size of a full-colour one)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage

    image = widget.grab().toImage().convertToFormat(QImage.Format_Indexed8, Qt.ThresholdDither | Qt.AvoidDither)
    image.save(str(path), "PNG", 9)
    return path


def save_shot(widget: QWidget, out_dir: Path, name: str, shots: list[Path]) -> None:
    for _ in range(10):  # let every pending layout and paint event run before the grab
        QApplication.processEvents()
    if SCALE == 100:
        path = out_dir / f"{name}.png"
        widget.grab().save(str(path))
    else:  # the scaled set: beside the others, 8-bit
        (out_dir / "scaled").mkdir(exist_ok=True)
        path = save_small(widget, out_dir / "scaled" / f"{name}-{SCALE}.png")
    shots.append(path)


def fill_new_identity(wizard, name: str, folder: Path):
    """Fill the wizard's identity page to create a new identity (fast scrypt); returns the page."""
    ip = wizard.identity_page
    ip.log_n = 14
    ip.create_radio.setChecked(True)
    ip.name_edit.setText(name)
    ip.pass_edit.setText(PASS)
    ip.pass2_edit.setText(PASS)
    ip.folder_field.set_path(folder, emit=False)
    return ip


def render(out_dir: Path, workdir: Path) -> list[Path]:
    """Write ``participant-<n>-<page>.png`` into ``out_dir``; scratch files go to ``workdir``."""
    from gui.participant.wizard import ParticipantWizard, ResultsWindow

    app = QApplication.instance() or QApplication(["dcstudio-shots"])
    out_dir, workdir = Path(out_dir), Path(workdir)
    out_dir.mkdir(parents=True, exist_ok=True)
    workdir.mkdir(parents=True, exist_ok=True)
    ini = str(workdir / "settings.ini")
    saved_settings = app_settings.settings
    app_settings.settings = lambda: QSettings(ini, QSettings.IniFormat)  # never touch the user's settings
    shots: list[Path] = []
    try:
        p = _make_project(workdir)
        data = p["data"]
        w = ParticipantWizard()
        w.show()

        ip = fill_new_identity(w, "St Mary's Hospital, cardiology", workdir / "site")
        save_shot(w, out_dir, "participant-1-identity-create", shots)
        ip.create_button.click()
        wait_for(app, ip.isComplete)
        save_shot(w, out_dir, "participant-2-identity", shots)

        w.next()
        kp = w.kit_page
        kp.kit_field.set_path(p["kit_path"])
        kp.fingerprint_edit.setText(kp.kit.analyst.fingerprint)
        save_shot(w, out_dir, "participant-3-kit", shots)

        w.next()
        ap = w.anchor_page
        ap.lead_radio.setChecked(True)
        ap.seed_csv_radio.setChecked(True)
        ap.source_field.set_path(data / "seed.csv")
        ap.add_cards([workdir / "northside.dcpub"])
        ap.save_field.set_path(workdir / "site" / "cardiac.dcanchor")
        ap.create_button.click()
        wait_for(app, ap.isComplete)
        save_shot(w, out_dir, "participant-4-anchor", shots)

        w.next()
        dp = w.data_page
        dp.set_csv(data / "cardiology-2024-draft.csv")
        wait_for(app, lambda: not dp.busy and dp.message.kind == "error")
        save_shot(w, out_dir, "participant-5-data-problem", shots)
        dp.set_csv(data / "cardiology-2024.csv")
        wait_for(app, dp.isComplete)
        save_shot(w, out_dir, "participant-6-data", shots)

        w.next()
        pp = w.privacy_page
        wait_for(app, pp.isComplete)
        save_shot(w, out_dir, "participant-7-privacy", shots)
        pp.scroll.ensureWidgetVisible(pp.check.findings_table, 0, 0)  # the disclosure check and its levers
        pp.scroll.ensureWidgetVisible(pp.check.levers_table if pp.check.levers_box.isVisibleTo(pp)
                                      else pp.check.numbers_table, 0, 0)
        if pp.check.needs_consent:  # a poor check the kit counts: the site accepts it (issue #35), ticked
            pp.check.consent_check.setChecked(True)
        save_shot(w, out_dir, "participant-7-privacy-check", shots)
        pp.scroll.verticalScrollBar().setValue(0)

        w.next()
        ep = w.export_page
        usb = workdir / "USB-STICK"
        usb.mkdir(exist_ok=True)
        ep.folder_field.set_path(usb)
        save_shot(w, out_dir, "participant-8-export", shots)
        ep.export_button.click()
        wait_for(app, lambda: w.page_name() == "done")
        save_shot(w, out_dir, "participant-9-done", shots)
        bundle = ep.sealed.path
        ident_path = w.identity_path
        w.close()

        # the analyst's half, by core: a second site, the run, the packages
        kit = Kit.load(p["kit_path"])
        anchor = AnchorFile.load(workdir / "site" / "cardiac.dcanchor", identity=p["other"])
        other = ParticipantRound(kit, p["kit_path"], p["other"],
                                 SiteWorkspace(default_workspace(workdir / "northside.dcid")), anchor=anchor,
                                 site_settings={"seed": 2})
        other.confirm_analyst(kit.analyst, how="screenshots: the kit's own signer")
        other.accept_privacy_risk("screenshots: a simulated site accepts its poor verdicts")
        other.load(data / "other-site.csv")
        other_bundle = other.seal(workdir / "northside.dcbundle").path
        session = AnalystRound(kit, p["analyst"], AnalystWorkspace(workdir / "analyst.workspace"))
        for _, card in session.unconfirmed([bundle, other_bundle]):  # fingerprints compared with each site
            session.confirm(card)
        ids = [r.envelope_id for r in session.import_bundles([bundle, other_bundle])]
        received = session.received(ids)
        outputs = session.export(session.run(received), workdir / "packages")
        package = next(s.path for s in outputs.packages if s.path.name.startswith("St_Mary"))

        r = ResultsWindow()
        r.show()
        r.identity_field.set_path(ident_path)
        r.passphrase_edit.setText(PASS)
        r.unlock_button.click()
        wait_for(app, lambda: r.identity is not None)
        r.package_field.set_path(package)
        r.csv_field.set_path(data / "cardiology-2025.csv")
        r.apply_button.click()
        wait_for(app, lambda: r.outcome is not None or r.message.kind == "error")
        save_shot(r, out_dir, "participant-10-results", shots)
        r.close()

        # a binary outcome checked on labelled rows: ROC and calibration beside the site's own model (issue #23)
        b = _binary_round(workdir)
        r = ResultsWindow()
        r.show()
        r.identity_field.set_path(b["identity"])
        r.passphrase_edit.setText(PASS)
        r.unlock_button.click()
        wait_for(app, lambda: r.identity is not None)
        r.package_field.set_path(b["package"])
        r.csv_field.set_path(b["csv"])
        r.validate_check.setChecked(True)
        r.apply_button.click()
        wait_for(app, lambda: (r.outcome is not None and not r.busy) or r.message.kind == "error")
        r.threshold_mode.setCurrentIndex(r.threshold_mode.findData("sensitivity"))
        r.threshold_spin.setValue(0.8)
        save_shot(r, out_dir, "participant-13-results-roc", shots)
        r.tabs.setCurrentWidget(r.figures_table)
        save_shot(r, out_dir, "participant-14-results-figures", shots)
        r.close()
    finally:
        app_settings.settings = saved_settings
    return shots


def main(render: Callable[[Path, Path], list[Path]]) -> None:
    """Run a screenshot script's ``render(out_dir, workdir)``: PNGs into argv[1] (default docs/screenshots);
    ``--scale 125`` draws at 125 % display scaling (logical DPI 120) into ``scaled/NAME-125.png``."""
    global SCALE
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--scale" in sys.argv:
        SCALE = int(sys.argv[sys.argv.index("--scale") + 1])
        args = [a for a in args if a != str(SCALE)]
    target = Path(args[0] if args else "docs/screenshots")
    from gui.screen import laptop_platform

    laptop_platform(dpi=round(96 * SCALE / 100))  # offscreen: a 1366×768 screen (a real display is kept)
    with tempfile.TemporaryDirectory() as tmp:
        for shot in render(target, Path(tmp)):
            print(shot)


if __name__ == "__main__":
    main(render)
