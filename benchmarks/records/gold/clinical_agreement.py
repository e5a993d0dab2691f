"""GOLD's server steps on real clinical tables split by their natural sites, where no true clusters exist: how
closely each federated round agrees (ARI) with standardised k-means (n_init 10) of all rows pooled, k = 3; and
the silhouette of the rows (standardised with the pooled rows, the same sample of at most 4 000 rows for every
labelling), which says how well separated each labelling is whatever pooled k-means found.

``python -m benchmarks.records.gold.clinical_agreement [DATA_DIR]`` (default ``/work/shared/datasets``).
Tables: ``clinical_lung`` (sites = the 18 institutions, sites of < 5 rows left out; age, sex, ph.ecog,
ph.karno, pat.karno, meal.cal, wt.loss; rows with a missing cell dropped) and ``clinical_flchain`` (sites = the
9 sample years; age, kappa, lambda, flc.grp, mgus; sex as 0/1). GOLD rounds as ``benchmarks.gold_server``
(product defaults but the server step); DC-Clustering as there. Seeds 0–4 of the analyst (GOLD's site seeds
= the site's index; DC-Clustering's partition-free seed = the same)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score, silhouette_score
from threadpoolctl import threadpool_limits

from benchmarks.gold_server import dc_round, gold_round

TABLES = {"clinical_lung": ("inst", ["age", "sex", "ph.ecog", "ph.karno", "pat.karno", "meal.cal", "wt.loss"]),
          "clinical_flchain": ("sample.yr", ["age", "sex", "kappa", "lambda", "flc.grp", "mgus"])}
K = 3


def table(name: str, data_dir: Path) -> tuple[np.ndarray, list[np.ndarray]]:
    site_col, cols = TABLES[name]
    df = pd.read_csv(data_dir / f"{name}.csv")
    if "sex" in df and not pd.api.types.is_numeric_dtype(df["sex"]):
        df["sex"] = (df["sex"] == "F").astype(float)
    df = df[[site_col, *cols]].dropna().reset_index(drop=True)
    X = df[cols].to_numpy(np.float64)
    parts = [np.flatnonzero(df[site_col].to_numpy() == v) for v in sorted(df[site_col].unique())]
    return X, [p for p in parts if len(p) >= 5]


def row_silhouette(Z: np.ndarray, lab: np.ndarray) -> float:
    """Silhouette of the standardised rows under a labelling (a fixed sample of at most 4 000 rows)."""
    if len(np.unique(lab)) < 2:
        return float("nan")
    return float(silhouette_score(Z, lab, sample_size=min(len(Z), 4000), random_state=0))


def main(data_dir: Path) -> None:
    with threadpool_limits(1):
        for name in TABLES:
            X, parts = table(name, data_dir)
            rows = np.concatenate(parts)
            U = X[rows]
            Z = (U - U.mean(0)) / U.std(0)
            pooled = KMeans(K, n_init=10, random_state=0).fit_predict(Z)

            out: dict[str, list[float]] = {"GOLD k-means (new default)": [], "GOLD MCPL + REMC (old default)": [],
                                           "DC-Clustering": []}
            sils: dict[str, list[float]] = {label: [] for label in out}
            for seed in range(5):
                for label, step in (("GOLD k-means (new default)", "kmeans"),
                                    ("GOLD MCPL + REMC (old default)", "mcpl")):
                    lab, _, _ = gold_round(X, parts, {"server_step": step, "k": K, "seed": seed})
                    out[label].append(adjusted_rand_score(pooled, lab))
                    sils[label].append(row_silhouette(Z, lab))
                lab = dc_round(X, parts, K, seed)
                out["DC-Clustering"].append(adjusted_rand_score(pooled, lab))
                sils["DC-Clustering"].append(row_silhouette(Z, lab))
            sizes = sorted(len(p) for p in parts)
            print(f"{name}: {len(rows)} rows at {len(parts)} sites of {sizes[0]}–{sizes[-1]} rows; ARI against pooled "
                  "k-means, mean (min–max) over analyst seeds 0–4; silhouette of the rows (pooled k-means "
                  f"{row_silhouette(Z, pooled):.3f}):")
            for label, v in out.items():
                print(f"  {label}: {np.mean(v):.3f} ({min(v):.3f}–{max(v):.3f}); silhouette {np.mean(sils[label]):.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/work/shared/datasets"))
