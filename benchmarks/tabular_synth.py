"""Synthetic CSV files for benchmarks and tests, written in chunks so any size fits in memory."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from core.data.schema import FeatureColumn, Schema
from core.errors import ConfigError
from core.fileio import atomic_writer

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
