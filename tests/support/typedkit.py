"""A small clinical-like table with text columns, a 0/1 column, an id, free text and missing cells, split over
sites (for the typed-column tests and rounds)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

RX = ["Obs", "Lev", "Lev+5FU"]


def clinical_frame(n: int, *, seed: int = 0, missing: float = 0.1) -> pd.DataFrame:
    """Rows with ``pid`` (identifier), ``age``, ``sex`` (F/M), ``rx`` (3 levels), ``nodes`` (0/1), ``creat``
    (numeric), ``note`` (free text) and the label ``outcome`` (yes/no) that depends on all of them;
    ``missing`` of the age, sex and creat cells are NA."""
    rng = np.random.default_rng(seed)
    age = rng.normal(60, 10, n).round(0)
    sex = rng.choice(["F", "M"], n)
    rx = rng.choice(RX, n)
    nodes = rng.integers(0, 2, n)
    creat = rng.gamma(4, 0.25, n).round(2)
    score = 0.06 * (age - 60) + 1.2 * (sex == "M") - 1.5 * (rx == "Lev+5FU") + 1.8 * nodes + 0.8 * (creat - 1)
    outcome = np.where(score + rng.logistic(0, 0.6, n) > 0.6, "yes", "no")
    frame = pd.DataFrame({"pid": [f"P{seed:02d}-{i:05d}" for i in range(n)], "age": age, "sex": sex, "rx": rx,
                          "nodes": nodes, "creat": creat, "note": [f"seen on day {i} by {rng.integers(1e6)}"
                                                                     for i in range(n)], "outcome": outcome})
    for col in ("age", "sex", "creat"):
        frame[col] = frame[col].astype(object)
        frame.loc[rng.random(n) < missing, col] = None
    return frame


def make_typed_sites(folder: Path, *, sites: int = 3, rows: int = 160,
                     spellings: dict[str, dict[str, dict[str, str]]] | None = None) -> dict[str, tuple[Path, Path]]:
    """Write sample.csv and per site train/test CSVs (NA for missing cells); returns name → (train, test).
    ``spellings``: site name → column → {value: how that site writes it} (e.g. "male" for "M")."""
    folder.mkdir(parents=True, exist_ok=True)
    clinical_frame(120, seed=99).to_csv(folder / "sample.csv", index=False, na_rep="NA")
    out = {}
    for s in range(sites):
        frame = clinical_frame(rows, seed=s)
        for col, respelt in (spellings or {}).get(f"site{s}", {}).items():
            frame[col] = frame[col].replace(respelt)
        cut = int(0.7 * rows)
        train, test = folder / f"site{s}-train.csv", folder / f"site{s}-test.csv"
        frame.iloc[:cut].to_csv(train, index=False, na_rep="NA")
        frame.iloc[cut:].to_csv(test, index=False, na_rep="NA")
        out[f"site{s}"] = (train, test)
    return out
