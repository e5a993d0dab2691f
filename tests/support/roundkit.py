"""A small labelled problem split over sites with label skew, written as CSV files (for round tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification

FEATURES = [f"x{j}" for j in range(8)]
CLASSES = ["a", "b", "c", "d"]
# per-site class mix: two sites mostly a/b, two mostly c/d
MIXES = [[0.45, 0.45, 0.05, 0.05], [0.4, 0.5, 0.05, 0.05], [0.05, 0.05, 0.45, 0.45], [0.05, 0.05, 0.5, 0.4]]


def make_sites(folder: Path, *, rows: int = 220, seed: int = 0) -> dict[str, tuple[Path, Path]]:
    """Write sample.csv (schema sample), seed.csv (public anchor seed) and per site train/test CSVs."""
    X, y = make_classification(n_samples=4000, n_features=8, n_informative=6, n_redundant=1, n_classes=4,
                               n_clusters_per_class=2, class_sep=1.6, random_state=seed)
    X = X * np.array([1, 10, 100, 0.1, 1, 5, 50, 2]) + np.array([0, 50, -300, 1, 2, 0, 1000, 7])
    rng = np.random.default_rng(seed)
    pools = {k: list(rng.permutation(np.flatnonzero(y == k))) for k in range(4)}
    frame = pd.DataFrame(X, columns=FEATURES)
    frame["label"] = np.asarray(CLASSES)[y]
    folder.mkdir(parents=True, exist_ok=True)
    frame.iloc[[pools[k].pop() for k in range(4) for _ in range(5)]].to_csv(folder / "sample.csv", index=False)
    frame.iloc[[pools[k].pop() for k in range(4) for _ in range(25)]].to_csv(folder / "seed.csv", index=False)
    out = {}
    for s, mix in enumerate(MIXES):
        counts = rng.multinomial(rows, mix)
        idx = rng.permutation([pools[k].pop() for k in range(4) for _ in range(counts[k])])
        cut = int(0.7 * len(idx))
        train, test = folder / f"site{s}-train.csv", folder / f"site{s}-test.csv"
        frame.iloc[idx[:cut]].to_csv(train, index=False)
        frame.iloc[idx[cut:]].to_csv(test, index=False)
        out[f"site{s}"] = (train, test)
    return out


BINARY = {"a": "no", "b": "no", "c": "yes", "d": "yes"}  # sites 0 and 1 mostly 'no', sites 2 and 3 mostly 'yes'


def make_binary_sites(folder: Path, *, rows: int = 220, seed: int = 0) -> dict[str, tuple[Path, Path]]:
    """:func:`make_sites` with the four classes folded into a binary outcome 'no'/'yes' (the kit's second class
    'yes' is the positive one)."""
    out = make_sites(folder, rows=rows, seed=seed)
    for path in [folder / "sample.csv", folder / "seed.csv", *(p for pair in out.values() for p in pair)]:
        frame = pd.read_csv(path)
        frame["label"] = frame["label"].map(BINARY)
        frame.to_csv(path, index=False)
    return out


def small_dc_round(d: Path, name: str, *, rows: int, seed: int, epochs: int, anchor_rows: int):
    """An analyst, two site identities and a signed two-class ``dc`` kit (4 numeric columns; ``rows`` rows in
    ``frame``, the first 20 as ``sample.csv``) with a SMOTE anchor: the start of the trust tests' rounds. Returns a
    namespace with ``d``, ``frame``, ``analyst``, ``sites``, ``kit``, ``kit_path``, ``anchor``."""
    from types import SimpleNamespace

    from core.data.schema import infer_schema
    from core.data.tabular import read_table
    from core.formats.anchor import make_anchor
    from core.formats.identity import Identity
    from core.formats.kit import Kit

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"x{j}": rng.normal(size=rows) * (j + 1) for j in range(4)})
    frame["label"] = np.where(frame["x0"] + frame["x1"] > 0, "a", "b")
    frame.iloc[:20].to_csv(d / "sample.csv", index=False)
    r = SimpleNamespace(d=d, frame=frame, analyst=Identity.generate("analyst"),
                        sites=[Identity.generate(f"site{i}") for i in range(2)])
    schema, _ = infer_schema(d / "sample.csv", label="label")
    r.kit = Kit(name=name, task="classification", schema=schema, method="dc", analyst=r.analyst.card,
                settings={"epochs": epochs, "seed": 1})
    r.kit_path = d / "p.dckit"
    r.kit.save(r.kit_path, r.analyst)
    r.anchor = make_anchor(r.kit.project_id, schema.feature_names, kind="smote", rows=anchor_rows,
                           seed_rows=read_table(d / "sample.csv", schema, labels=False).X)
    return r
