"""Benchmark CSVs: header row, feature columns first, class in the last column ``label``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from core.api import ConfigError, DataError

SHORT_NAMES: dict[str, str] = {
    "covertype": "covertype_kaggle_train.csv",
    "drybean": "dry_bean.csv",
    "dry_bean": "dry_bean.csv",
    "gesture": "gesture_phase_processed.csv",
}


def default_data_dir() -> Path | None:
    """``../shared/datasets`` next to the repository root, if that folder exists."""
    root = Path(__file__).resolve().parents[2]
    d = (root.parent / "shared" / "datasets").resolve()
    return d if d.is_dir() else None


def resolve_benchmark_path(name_or_path: str | Path, data_dir: str | Path | None = None) -> Path:
    """A CSV path from a file path, a short name ("covertype", "drybean", "gesture") or a file stem."""
    p = Path(name_or_path)
    if p.suffix.lower() == ".csv" and p.is_file():
        return p
    if p.is_absolute() or len(p.parts) > 1:
        raise DataError("this benchmark file does not exist", path=p)
    base = Path(data_dir) if data_dir is not None else default_data_dir()
    if base is None:
        raise ConfigError(f"no data folder was given and none was found for the data set '{name_or_path}'")
    name = str(name_or_path)
    path = base / SHORT_NAMES.get(name.lower(), name if name.lower().endswith(".csv") else f"{name}.csv")
    if not path.is_file():
        raise DataError(f"there is no benchmark data set '{name}' here", path=path)
    return path


def load_benchmark_csv(name_or_path: str | Path, data_dir: str | Path | None = None
                       ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read a benchmark CSV into ``(X float64 (n, m), y int64 in [0, K), class_names)``.

    ``class_names[k]`` is the original label of code ``k``; labels are ordered numerically when they are
    all numbers (so covertype's 1..7 become 0..6) and as strings otherwise.
    """
    path = resolve_benchmark_path(name_or_path, data_dir)
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError) as exc:
        raise DataError(f"this file cannot be read as CSV ({exc})", path=path) from exc
    if df.shape[1] < 2 or df.columns[-1] != "label":
        raise DataError("the last column of a benchmark CSV must be named 'label'", path=path)
    if df.shape[0] == 0:
        raise DataError("this benchmark CSV has no rows", path=path)
    feats = df.iloc[:, :-1]
    bad = [c for c in feats.columns if not pd.api.types.is_numeric_dtype(feats[c])]
    if bad:
        raise DataError(f"feature column '{bad[0]}' is not numeric", path=path)
    X = feats.to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise DataError("the features hold missing or infinite values", path=path)
    labels = df["label"]
    if labels.isna().any():
        raise DataError("some rows have no label", path=path)
    if pd.api.types.is_numeric_dtype(labels):
        uniq = np.unique(labels.to_numpy())
        names = [str(int(v)) if float(v).is_integer() else str(v) for v in uniq]
        y = np.searchsorted(uniq, labels.to_numpy())
    else:
        as_str = labels.astype(str).to_numpy()
        uniq = np.unique(as_str)
        names = [str(v) for v in uniq]
        y = np.searchsorted(uniq, as_str)
    return X, y.astype(np.int64), names


_CACHE: dict[tuple[str, str | None], tuple[np.ndarray, np.ndarray, list[str]]] = {}


def load_cached(name: str, data_dir: str | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """:func:`load_benchmark_csv`, read once per process (a benchmark's worker runs many cells of one set)."""
    key = (name, data_dir)
    if key not in _CACHE:
        _CACHE[key] = load_benchmark_csv(name, data_dir)
    return _CACHE[key]
