"""The kit's encoding: a known frame gives a known matrix, the inverse recovers the levels, and fill values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.data.encoding import (
    MISSING,
    UNKNOWN,
    LevelCoder,
    decode,
    encode,
    encode_frame,
    encoded_ranges,
    level_shares,
)
from core.data.missing import site_fill_value
from core.data.schema import FeatureColumn, Schema
from core.errors import DataError

SCHEMA = Schema([FeatureColumn("age", 20.0, 90.0, missing="impute", indicator=True),
                 FeatureColumn("sex", type="binary", levels=["F", "M"], missing="impute"),
                 FeatureColumn("rx", type="categorical", levels=["Obs", "Lev", "Lev+5FU"]),
                 FeatureColumn("grade", type="ordinal", levels=["low", "mid", "high"], other=True),
                 FeatureColumn("nodes", type="binary", levels=["0", "1"])])


def test_a_known_frame_encodes_to_a_known_matrix():
    frame = pd.DataFrame({"age": [50, None, 70, 64], "sex": ["F", " M ", "NA", "M"],
                          "rx": ["Lev", "Obs", "Lev+5FU", "Lev"], "grade": ["low", "high", "??", "mid"],
                          "nodes": ["1", "0.0", 1, 0]})
    X, filled, used = encode_frame(SCHEMA, frame)
    assert SCHEMA.encoded_names == ["age", "age (missing)", "sex=M", "rx=Obs", "rx=Lev", "rx=Lev+5FU", "grade",
                                    "grade=other", "nodes=1"]
    expected = np.array([[50, 0, 0, 0, 1, 0, 0, 0, 1],
                         [64, 1, 1, 1, 0, 0, 2, 0, 0],
                         [70, 0, 1, 0, 0, 1, 1, 1, 1],  # "??" is "other": the middle rank (L-1)/2 = 1
                         [64, 0, 1, 0, 1, 0, 1, 0, 0]], dtype=float)
    assert np.array_equal(X, expected)
    assert filled == {"age": 1, "sex": 1} and used == {"age": 64.0, "sex": "M"}
    X2, _, used2 = encode_frame(SCHEMA, frame, fill_values={"age": 99.0, "sex": "F"})  # reused, not computed
    assert X2[1, 0] == 99 and X2[2, 2] == 0 and used2 == {"age": 99.0, "sex": "F"}


def test_level_coder_codes_missing_unknown_and_numbers_written_otherwise():
    coder = LevelCoder(FeatureColumn("nodes", type="binary", levels=["0", "1"]), ("", "NA"))
    assert coder.codes(["1", " 0 ", "1.0", "NA", None, "2", "x"]).tolist() == [1, 0, 1, MISSING, MISSING,
                                                                               UNKNOWN, UNKNOWN]
    assert coder.numeric_levels
    other = LevelCoder(FeatureColumn("rx", type="categorical", levels=["a", "b"], other=True), ())
    assert other.codes(["b", "zzz", "a"]).tolist() == [1, 2, 0] and not other.numeric_levels


def test_fill_values_median_and_most_frequent_level_with_ties_to_the_kit_order():
    assert site_fill_value(FeatureColumn("a"), np.array([1.0, np.nan, 3.0, 10.0])) == 3.0
    rx = SCHEMA.features[2]
    assert site_fill_value(rx, np.array([2, 1, MISSING, 1, 2])) == "Lev"  # a tie between Lev and Lev+5FU
    with pytest.raises(DataError, match="'rx' has no values at all"):
        site_fill_value(rx, np.array([MISSING, MISSING]))


def test_encode_frame_sends_unknown_levels_to_the_bucket_and_refuses_missing_cells_the_kit_refuses():
    frame = pd.DataFrame({"age": [1.0], "sex": ["F"], "rx": ["Lev+5fu"], "grade": ["low"], "nodes": ["1"]})
    X, _, _ = encode_frame(SCHEMA, frame)
    assert X[0, 3:6].tolist() == [0, 0, 0] and decode(SCHEMA, X)["rx"].tolist() == ["(unseen)"]
    frame["rx"], frame["nodes"] = "Obs", None
    with pytest.raises(DataError, match="'nodes' has 1 missing cell"):
        encode_frame(SCHEMA, frame)


def test_public_ranges_and_level_shares_in_encoded_space():
    lo, hi = encoded_ranges(SCHEMA)
    assert lo.tolist() == [20, 0, 0, 0, 0, 0, 0, 0, 0] and hi.tolist() == [90, 1, 1, 1, 1, 1, 2, 1, 1]
    assert encoded_ranges(Schema([FeatureColumn("a")])) is None
    X = encode(SCHEMA, [np.array([1.0, 2, 3, 4]), np.array([0, 1, 1, 1]), np.array([0, 0, 2, 1]),
                        np.array([0, 3, 2, 2]), np.array([0, 0, 0, 1])], [np.zeros(4, bool)] + [None] * 4)
    shares = level_shares(SCHEMA, X)
    assert shares["sex"].tolist() == [0.25, 0.75] and shares["rx"].tolist() == [0.5, 0.25, 0.25]
    assert shares["grade"].tolist() == [0.25, 0, 0.5, 0.25]  # low, mid, high, other
    fallback = level_shares(Schema([FeatureColumn("s", type="binary", levels=["a", "b"], frequencies=[0.2, 0.8])]),
                            np.empty((0, 1)))
    assert fallback["s"].tolist() == [0.2, 0.8]


def random_typed_table(rng: np.random.Generator):
    """A random typed schema and filled raw columns for it (level codes for typed columns)."""
    n = int(rng.integers(1, 13))
    features, columns, masks = [], [], []
    for j in range(int(rng.integers(1, 6))):
        kind = str(rng.choice(["numeric", "binary", "categorical", "ordinal"]))
        indicator = bool(rng.integers(2))
        policy = "impute" if indicator else "refuse"
        if kind == "numeric":
            f = FeatureColumn(f"c{j}", missing=policy, indicator=indicator)
            values = rng.uniform(-1e6, 1e6, n)
        else:
            k = 2 if kind == "binary" else int(rng.integers(2, 6))
            other = kind != "binary" and bool(rng.integers(2))
            f = FeatureColumn(f"c{j}", type=kind, levels=[f"L{i}" for i in range(k)], other=other, missing=policy,
                              indicator=indicator)
            values = rng.integers(0, k + other, n)
        features.append(f)
        columns.append(values)
        masks.append(rng.random(n) < 0.3 if indicator else None)
    return Schema(features), columns, masks


@pytest.mark.parametrize("seed", range(40))
def test_decode_inverts_encode(seed):
    """A property over random typed schemas (hypothesis is not installed): encode then decode is the identity."""
    schema, columns, masks = random_typed_table(np.random.default_rng(seed))
    X = encode(schema, columns, masks)
    assert X.shape == (len(columns[0]), schema.width) and np.isfinite(X).all()
    back = decode(schema, X)
    positions = schema.encoded_positions()
    for f, values, mask in zip(schema.features, columns, masks, strict=True):
        if f.typed:
            assert back[f.name].tolist() == [f.known_levels[c] for c in values]
            block = X[:, positions[f.name]]
            if f.type == "categorical":  # exactly one 1 per row over the level columns
                assert (block[:, :len(f.known_levels)].sum(axis=1) == 1).all()
        else:
            assert np.array_equal(back[f.name], values)
        if f.indicator:
            assert np.array_equal(X[:, positions[f.name][-1]], mask.astype(float))
