"""Clustering round data: three blobs over two feature blocks, on 2 row groups × 2 blocks, as CSV files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_blobs

BLOCKS = {"clinical": ["age", "bp", "chol"], "lifestyle": ["steps", "sleep", "diet"]}
CENTRES = np.array([[0, 0, 0, 0, 0, 0], [6, 4, 5, 0, 1, -6], [0, 6, -4, 6, 5, 4]], dtype=float)
SCALES = np.array([10, 1, 30, 1000, 1, 0.1])  # columns in very different units
OFFSETS = np.array([50, 120, 200, 8000, 7, 2])


def make_grid(folder: Path, *, per_cluster: int = 60, seed: int = 0, non_iid: bool = True,
              drop: int = 0) -> tuple[dict[str, Path], pd.DataFrame]:
    """Write sample.csv (schema sample, all columns) and one CSV per site (group g ∈ {1, 2} × block), each with
    its own ``pid`` column and its rows in its own random order. Non-IID: group 1 holds cluster 0 and half of
    cluster 1, group 2 the rest. ``drop`` rows of each lifestyle site are left out (people missing from
    one block). Returns the site files and the full table (``pid``, features, ``truth``, ``group``)."""
    rng = np.random.default_rng(seed)
    X, y = make_blobs(n_samples=[per_cluster] * 3, centers=CENTRES, cluster_std=1.0, random_state=seed)
    X = X * SCALES + OFFSETS
    cols = [c for b in BLOCKS.values() for c in b]
    df = pd.DataFrame(X, columns=cols)
    df.insert(0, "pid", [f"p{i:04d}" for i in range(len(df))])
    df["truth"] = y
    group = np.where(y == 0, 1, np.where(y == 2, 2, 0))
    mid = rng.permutation(np.flatnonzero(y == 1))
    group[mid[: len(mid) // 2]], group[mid[len(mid) // 2:]] = 1, 2
    if not non_iid:
        group = 1 + (rng.permutation(len(y)) % 2)
    df["group"] = group
    folder.mkdir(parents=True, exist_ok=True)
    df[["pid", *cols]].iloc[::7].to_csv(folder / "sample.csv", index=False)
    out = {}
    for g in (1, 2):
        rows = np.flatnonzero(df["group"] == g)
        for block, bcols in BLOCKS.items():
            order = rng.permutation(rows)
            if block == "lifestyle" and drop:
                order = order[drop:]
            path = folder / f"g{g}-{block}.csv"
            df.iloc[order][["pid", *bcols]].to_csv(path, index=False)
            out[f"g{g}-{block}"] = path
    return out, df
