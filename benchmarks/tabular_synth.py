"""Synthetic CSV files for benchmarks and tests, written in chunks so any size fits in memory."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from core.api import ConfigError, atomic_writer
from core.api.common import FeatureColumn, Schema

_BLOCK_ROWS = 20_000


def write_synthetic_csv(
    path: str | Path,
    n_rows: int,
    n_features: int,
    n_classes: int,
    seed: int,
    *,
    delimiter: str = ",",
    decimal: str = ".",
    encoding: str = "utf-8",
    with_ids: bool = False,
    missing_rate: float = 0.0,
) -> Schema:
    """Write a Gaussian-mixture CSV and return the schema that reads it.

    Columns: ``id`` (if ``with_ids``), ``x0`` … ``x{n_features-1}`` (6 significant digits), then ``label``
    (class names "0" … "{n_classes-1}"; no label column when ``n_classes`` is 0). Each class has its own
    random centre, so the labels are learnable. A fraction ``missing_rate`` of feature cells is left empty.
    Rows are generated and written in blocks of ``_BLOCK_ROWS``, each from its own seeded generator, so a
    longer file starts with the rows of a shorter one. The file appears only once complete.
    """
    if n_rows < 0 or n_features < 1 or n_classes < 0:
        raise ConfigError("a synthetic table needs n_rows >= 0, n_features >= 1 and n_classes >= 0")
    if decimal == delimiter or decimal not in (".", ","):
        raise ConfigError("the decimal mark must be '.' or ',' and differ from the column separator")
    if not 0.0 <= missing_rate < 1.0:
        raise ConfigError("missing_rate must be in [0, 1)")
    rng = np.random.default_rng(seed)
    k = max(n_classes, 1)
    centres = rng.normal(0.0, 2.0, size=(k, n_features))
    scales = rng.uniform(0.5, 5.0, size=n_features)
    offsets = rng.uniform(-10.0, 50.0, size=n_features)
    names = [f"x{j}" for j in range(n_features)]
    header = (["id"] if with_ids else []) + names + (["label"] if n_classes else [])
    fields = (["%s"] if with_ids else []) + ["%.6g"] * n_features + (["%s"] if n_classes else [])
    row_fmt = delimiter.join(fields) + "\n"
    labels = [str(c) for c in range(k)]
    with atomic_writer(path, "wb") as raw:
        fh = io.TextIOWrapper(raw, encoding=encoding, newline="")
        fh.write(delimiter.join(header) + "\n")
        for start in range(0, n_rows, _BLOCK_ROWS):
            m = min(_BLOCK_ROWS, n_rows - start)
            rng = np.random.default_rng([seed, start // _BLOCK_ROWS])
            # whole-block draws, so the rows do not depend on n_rows
            y = rng.integers(0, k, size=_BLOCK_ROWS)[:m]
            X = (centres[y] + rng.normal(size=(_BLOCK_ROWS, n_features))[:m]) * scales + offsets
            if missing_rate:
                X[rng.random((_BLOCK_ROWS, n_features))[:m] < missing_rate] = np.nan
            cols: list[list] = []
            if with_ids:
                cols.append([f"r{start + i:09d}" for i in range(m)])
            cols.extend(X.T.tolist())
            if n_classes:
                cols.append([labels[c] for c in y.tolist()])
            text = "".join([row_fmt % row for row in zip(*cols, strict=True)])
            if missing_rate:
                text = text.replace("nan", "")
            if decimal == ",":
                text = text.replace(".", ",")
            fh.write(text)
        fh.flush()
        fh.detach()
    return Schema(
        features=[FeatureColumn(n) for n in names],
        label="label" if n_classes else None,
        classes=labels if n_classes else [],
        id_column="id" if with_ids else None,
    )


TEXT_LEVELS = (("female", "male"), ("stage I", "stage II", "stage III", "stage IV"), ("never", "former", "current"),
               ("A", "B", "AB", "O"), ("north", "south", "east", "west", "centre"), ("no", "yes"),
               ("low", "medium", "high"), ("surgery", "chemo", "radio", "combined"),
               ("married", "single", "divorced", "widowed"), ("urban", "rural"))


def write_clinical_like_csv(path: str | Path, n_rows: int, seed: int, *, numeric: int = 6, text: int = 10,
                            missing_rate: float = 0.02) -> None:
    """Write a table like a hospital's: ``numeric`` number columns (``age``, ``lab1`` …, 4 significant digits), ``text``
    columns of words (``TEXT_LEVELS``: sex, stage, smoking …), a share ``missing_rate`` of cells of either kind left
    empty, and a yes/no ``outcome`` that depends on both. Written in blocks like :func:`write_synthetic_csv`; every
    level occurs in the first few hundred rows, so a kit made from the first rows knows them all."""
    if not 1 <= text <= len(TEXT_LEVELS) or numeric < 1 or n_rows < 0:
        raise ConfigError(f"a clinical-like table has 1-{len(TEXT_LEVELS)} text columns and at least one number")
    names = ["age"] + [f"lab{j}" for j in range(1, numeric)]
    words = list(_TEXT_NAMES[:text])
    with atomic_writer(path, "wb") as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        fh.write(",".join(names + words + ["outcome"]) + "\n")
        for start in range(0, n_rows, _BLOCK_ROWS):
            m = min(_BLOCK_ROWS, n_rows - start)
            rng = np.random.default_rng([seed, 7, start // _BLOCK_ROWS])
            X = rng.normal(size=(_BLOCK_ROWS, numeric))[:m] * 12 + 50
            codes = [rng.integers(0, len(TEXT_LEVELS[j]), _BLOCK_ROWS)[:m] for j in range(text)]
            risk = X[:, 0] / 25 - 2 + sum(c == 1 for c in codes[:3]) * 0.7 + rng.normal(size=_BLOCK_ROWS)[:m]
            cols: list[list[str]] = [[f"{v:.4g}" for v in X[:, j].tolist()] for j in range(numeric)]
            cols += [[TEXT_LEVELS[j][c] for c in codes[j].tolist()] for j in range(text)]
            for col in cols:
                gone = np.flatnonzero(rng.random(_BLOCK_ROWS)[:m] < missing_rate)
                for i in gone.tolist():
                    col[i] = ""
            cols.append(["yes" if r > 0 else "no" for r in risk.tolist()])
            fh.write("".join(",".join(row) + "\n" for row in zip(*cols, strict=True)))
        fh.flush()
        fh.detach()


_TEXT_NAMES = ("sex", "stage", "smoking", "blood_group", "region", "diabetes", "income", "treatment", "marital",
               "residence")
