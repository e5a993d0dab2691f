"""Screenshots of typed columns for the docs (issue #22), on synthetic clinical-like rows: the analyst's schema
grid with a changed type and merged spellings (``analyst-9-schema-types.png``), a site's data page naming a
column in another unit (``participant-11-units.png``) and its privacy page with the technical details open
(``participant-12-privacy-typed.png``).

    QT_QPA_PLATFORM=offscreen python docs/tools/typed_screens.py docs/screenshots
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from participant_screens import PASS, fill_new_identity, main, save_shot, wait_for  # noqa: E402  (this folder is on sys.path)

from core.data.schema import ColumnChoices, infer_schema  # noqa: E402
from core.data.tabular import read_table  # noqa: E402
from core.formats.anchor import anchor_for_kit  # noqa: E402
from core.formats.identity import Identity  # noqa: E402
from core.formats.kit import Kit  # noqa: E402
from gui import settings as app_settings  # noqa: E402

SMOKING = ["never", "former", "current"]
SEX_MERGED = "F=female, M=male"  # the sample's registry spells sex both ways


def clinical_rows(n: int, seed: int) -> pd.DataFrame:
    """Synthetic patients: an id, age, sex F/M, smoking (3 text levels), height in cm, creatinine with missing
    cells, and a yes/no outcome that depends on them."""
    rng = np.random.default_rng(seed)
    age = rng.normal(62, 11, n).round(0)
    sex = rng.choice(["F", "M"], n)
    smoking = rng.choice(SMOKING, n, p=[0.5, 0.3, 0.2])
    height = np.where(sex == "M", rng.normal(176, 7, n), rng.normal(163, 6, n)).round(1)
    creat = rng.gamma(4, 0.25, n).round(2)
    score = 0.05 * (age - 62) + 0.6 * (sex == "M") + 0.9 * (smoking == "current") + 0.7 * (creat - 1)
    outcome = np.where(score + rng.logistic(0, 0.7, n) > 0.3, "yes", "no")
    frame = pd.DataFrame({"patient_id": [f"H{seed:02d}-{k:05d}" for k in range(n)], "age": age, "sex": sex,
                          "smoking": smoking, "height_cm": height, "creatinine": creat, "outcome": outcome})
    frame["creatinine"] = frame["creatinine"].astype(object)
    frame.loc[rng.random(n) < 0.15, "creatinine"] = None
    return frame


def render(out_dir: Path, workdir: Path) -> list[Path]:
    from gui.analyst.window import AnalystWindow
    from gui.participant.wizard import ParticipantWizard

    app = QApplication.instance() or QApplication(["dcstudio-shots"])
    out_dir, workdir = Path(out_dir), Path(workdir)
    out_dir.mkdir(parents=True, exist_ok=True)
    data = workdir / "data"
    data.mkdir(parents=True, exist_ok=True)
    ini = str(workdir / "settings.ini")
    saved_settings = app_settings.settings
    app_settings.settings = lambda: QSettings(ini, QSettings.IniFormat)  # never touch the user's settings
    shots: list[Path] = []
    try:
        sample = clinical_rows(150, 1)
        sample.loc[sample.index % 4 == 0, "sex"] = sample["sex"].map({"F": "female", "M": "male"})
        sample.to_csv(data / "registry-sample.csv", index=False, na_rep="NA")
        site = clinical_rows(220, 2)
        site["height_cm"] = (site["height_cm"] / 2.54).round(1)  # this site measured in inches
        site.to_csv(data / "north-ward.csv", index=False, na_rep="NA")

        # the analyst's schema grid, identity unlocked (a kit is signed with it): detected types, one changed
        # (smoking made ordinal, low to high), and sex's spellings merged into its two levels
        analyst = Identity.generate("DC analyst, University Hospital")
        analyst.save(workdir / "analyst.dcid", PASS, log_n=14)
        aw = AnalystWindow()
        aw.show()
        page, grid = aw.project_page, aw.project_page.schema_table
        page.identity_tabs.setCurrentIndex(0)
        page.identity_path_edit.setText(str(workdir / "analyst.dcid"))
        page.open_passphrase.setText(PASS)
        page.unlock_identity()
        wait_for(app, lambda: page.identity is not None)
        page.load_sample(str(data / "registry-sample.csv"))
        wait_for(app, lambda: page.schema is not None)
        combo = grid.type_combo("smoking")
        combo.setCurrentIndex(combo.findData("ordinal"))
        wait_for(app, lambda: not page.schema_job.running and page.schema is not None)
        grid.levels_item("smoking").setText(", ".join(SMOKING))
        wait_for(app, lambda: not page.schema_job.running and page.schema is not None
              and page.schema.features[2].levels == SMOKING)
        grid.levels_item("sex").setText(SEX_MERGED)
        wait_for(app, lambda: not page.schema_job.running and page.schema is not None
              and page.schema.features[1].type == "binary")
        page.project_name.setText("Cardiac registry")
        save_shot(aw, out_dir, "analyst-9-schema-types", shots)
        aw.close()

        # a site whose heights are in inches: the data page names the column before anything leaves
        choices = ColumnChoices()
        choices.set_levels("sex", SEX_MERGED)
        schema, _ = infer_schema(data / "registry-sample.csv", label="outcome", with_statistics=True,
                                 choices=choices)
        kit = Kit(name="Cardiac registry", task="classification", schema=schema, method="dccfl",
                  analyst=analyst.card, settings={"seed": 1, "t": 0.5}, anchor={"kind": "smote", "rows": 500})
        kit.save(workdir / "registry.dckit", analyst)
        seed = read_table(data / "registry-sample.csv", schema, labels=False).X
        anchor_for_kit(kit, seed_X=seed).save(workdir / "registry.dcanchor")
        w = ParticipantWizard()
        w.show()
        ip = fill_new_identity(w, "North ward", workdir / "site")
        ip.create_button.click()
        wait_for(app, ip.isComplete)
        w.next()
        w.kit_page.kit_field.set_path(workdir / "registry.dckit")
        w.kit_page.fingerprint_edit.setText(w.kit_page.kit.analyst.fingerprint)
        w.next()
        ap = w.anchor_page
        ap.import_radio.setChecked(True)
        ap.anchor_field.set_path(workdir / "registry.dcanchor")
        wait_for(app, ap.isComplete)
        w.next()
        dp = w.data_page
        dp.set_csv(data / "north-ward.csv")
        wait_for(app, lambda: not dp.busy and dp.table is not None)
        save_shot(w, out_dir, "participant-11-units", shots)
        dp.units_check.setChecked(True)
        w.next()
        pp = w.privacy_page
        wait_for(app, pp.isComplete)
        pp.details_button.click()
        save_shot(w, out_dir, "participant-12-privacy-typed", shots)
        w.close()
    finally:
        app_settings.settings = saved_settings
    return shots


if __name__ == "__main__":
    main(render)
