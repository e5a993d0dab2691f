"""The vectorised float text of RESULT.csv (core/float_text.py): every value's text is Python's ``repr`` (what
``to_csv`` writes for a float cell) — random doubles of any exponent, subnormal, huge, negative, zero, rounded to six
significant digits as apply rounds probabilities, and float32 columns written as float64."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.fileio import significant
from core.float_text import WIDTH, repr_bytes


def texts(values) -> list[str]:
    chars, lengths = repr_bytes(np.asarray(values))
    return [bytes(chars[i, :lengths[i]]).decode("ascii") for i in range(len(lengths))]


def reprs(values) -> list[str]:
    return [repr(x) for x in np.asarray(values, np.float64).tolist()]


EDGES = [0.0, -0.0, math.nan, math.inf, -math.inf, 5e-324, -5e-324, 2.2250738585072014e-308,
         2.225073858507201e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1e16, 1e15, 9999999999999998.0,
         999999999999999.9, 0.0001, 0.00009999999999999999, 1e-05, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 1.0, -1.0, 10.0,
         123456.0, 1234567.0, 1e22, 1e23, 1e-22, 1e-23, 0.5, 0.999999, 0.9999995, 1e-7, 123456789012345.6,
         1.2345678901234567, 100.0, 1e100, 1e-100, 4.35e-05]


def test_edge_values_are_written_as_repr_writes_them():
    assert texts(EDGES) == reprs(EDGES)
    assert max(map(len, reprs(EDGES))) <= WIDTH


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=200))
def test_any_double_is_written_as_repr_writes_it(values):
    assert texts(values) == reprs(values)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=200),
       st.integers(min_value=1, max_value=15))
def test_values_rounded_to_few_significant_digits_are_written_as_repr_writes_them(values, digits):
    rounded = [float(f"{v:.{digits}g}") for v in values]
    assert texts(rounded) == reprs(rounded)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=-320, max_value=300))
def test_random_bits_at_any_exponent_and_subnormals(seed, exponent):
    rng = np.random.default_rng(seed)
    v = np.concatenate([rng.standard_normal(300) * 10.0 ** exponent,
                        np.frombuffer(rng.bytes(8 * 300), np.float64),  # any bit pattern: NaNs, subnormals, huge
                        rng.random(50) * 5e-310])
    assert texts(v) == reprs(v)


def test_probabilities_as_apply_rounds_them_and_float32_columns():
    rng = np.random.default_rng(7)
    p = rng.dirichlet([0.3, 1, 3], 20000)
    rounded = significant(p[:, 1])  # what apply writes (core/participant.py, rounded_probabilities)
    assert texts(rounded) == reprs(rounded)
    f32 = rng.random(5000).astype(np.float32)
    assert texts(f32) == reprs(f32.astype(np.float64))  # to_csv writes a float32 cell as the float64 it is


def test_the_text_is_what_to_csv_writes_for_a_float_column():
    rng = np.random.default_rng(3)
    v = np.concatenate([significant(rng.random(2000)), rng.standard_normal(2000) * 1e-6, [1e16, 0.0, -0.0]])
    written = pd.DataFrame({"x": v}).to_csv(index=False, lineterminator="\n").split("\n")[1:-1]
    assert texts(v) == written
