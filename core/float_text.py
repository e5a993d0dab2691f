"""Python's ``repr`` of many floats at once, as ASCII bytes (what ``to_csv`` writes for a float cell).

``repr(x)`` is the shortest decimal that reads back as x (Steele & White 1990; Gay 1990; Python's
``float_repr_style = 'short'``), written plainly when its leading digit's power e of ten is −4 ≤ e < 16 (``0.000123``,
``12.5``, ``1.0``) and as ``d.ddde±XX`` otherwise (``1.23e-05``, ``1e+16``). For D ≤ 15 significant digits at most one
D-digit decimal lies within half a double's spacing of x (their own spacing is wider). So if x's shortest form has at
most D digits, it is x rounded to D digits, N = rint(|x| · 10^(D−1−e)) (the product's error is far below ½ then), with
its trailing zeros dropped; and N reads back as |x| exactly when N / 10^(D−1−e) == |x| in float64 (a correctly rounded
division by an exact power of ten, or a correctly rounded product). Two such passes, D = 6 (a probability rounded to
six significant digits, :func:`core.fileio.significant`) then D = 15 for the rest; values that need 16 or 17 digits (a
float never rounded), whose power 10^(D−1−e) is not an exact double, and inf, are given to ``repr`` one by one.
"""

from __future__ import annotations

import numpy as np

WIDTH = 24  # the longest repr of a float64: "-1.2345678901234567e-308"
PASSES = (6, 15)  # significant digits tried, in this order


def repr_bytes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(chars, lengths): ``repr(float(x)).encode()`` of every value, left-aligned in the rows of an n × WIDTH uint8
    matrix padded with zero bytes, and each one's length. NaN gives ``nan`` as ``repr`` does."""
    v = np.asarray(values, np.float64).ravel()
    chars = np.zeros((len(v), WIDTH), np.uint8)
    lengths = np.zeros(len(v), np.int64)
    zero = np.flatnonzero(v == 0)
    _put(chars, lengths, zero[~np.signbit(v[zero])], b"0.0")
    _put(chars, lengths, zero[np.signbit(v[zero])], b"-0.0")
    left = np.flatnonzero(np.isfinite(v) & (v != 0))
    for D in PASSES:
        if not len(left):
            break
        a = np.abs(v[left])
        e = np.floor(np.log10(a)).astype(np.int64)
        d = D - 1 - e  # N · 10^-d
        usable = np.abs(d) <= 22  # 10^|d| is an exact double
        p = 10.0 ** np.where(usable, np.abs(d), 0)
        N = np.rint(np.where(d >= 0, a * p, a / p))
        hit = usable & (np.where(d >= 0, N / p, N * p) == a) & (N >= 10.0 ** (D - 1)) & (N < 10.0 ** D)
        _write(chars, lengths, left[hit], N[hit].astype(np.int64), e[hit], D, np.signbit(v[left[hit]]))
        left = left[~hit]
    rest = np.concatenate([np.flatnonzero(~np.isfinite(v)), left])
    for i, x in zip(rest.tolist(), v[rest].tolist(), strict=True):
        _put(chars, lengths, np.array([i]), repr(x).encode("ascii"))
    return chars, lengths


def _write(chars: np.ndarray, lengths: np.ndarray, rows: np.ndarray, N: np.ndarray, e: np.ndarray, D: int,
           negative: np.ndarray) -> None:
    """The reprs of ±N · 10^(e − D + 1) (N of D digits; its trailing zeros are not written) into ``rows``, grouped by
    sign, exponent and digit count (one layout each)."""
    if not len(N):
        return
    digits = _digit_chars(N, D)
    zeros = digits[:, ::-1] == ord("0")
    kept = D - np.argmin(zeros, axis=1)  # significant digits: the first nonzero from the right (N ≥ 10^(D−1))
    key = (negative.astype(np.int32) << 16) | ((e + 400).astype(np.int32) << 4) | kept  # e ≥ −324, ≤ 308
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    by_row = _rows_as_items(digits)  # a row's digits as one item: gathering rows is one copy each
    out = _rows_as_items(chars)
    for lo, hi in zip(starts.tolist(), np.r_[starts[1:], len(order)].tolist(), strict=True):
        sel = order[lo:hi]
        k = int(sorted_key[lo])
        group = by_row[sel].view(np.uint8).reshape(len(sel), D)
        text = _layout(group, bool(k >> 16), ((k >> 4) & 0xFFF) - 400, k & 0xF, chars.shape[1])
        at = rows[sel]
        out[at] = _rows_as_items(text)
        lengths[at] = _width(group, bool(k >> 16), ((k >> 4) & 0xFFF) - 400, k & 0xF)


def _rows_as_items(a: np.ndarray) -> np.ndarray:
    """A C-contiguous n × w uint8 matrix as n items of w bytes (a view)."""
    return np.ascontiguousarray(a).view(np.dtype((np.void, a.shape[1]))).reshape(len(a))


_PAIRS = np.array([int.from_bytes(f"{i:02d}".encode("ascii"), "little") for i in range(100)], np.uint16)  # "00"…"99"


def _digit_chars(N: np.ndarray, D: int) -> np.ndarray:
    """The D decimal digits of each N < 10^D (zero-padded on the left) as ASCII, an n × D uint8 matrix (two digits
    at a time from a table of the pairs' two bytes)."""
    groups = -(-D // 2)
    out = np.empty((len(N), groups), np.uint16)
    rest = N.astype(np.int32 if D <= 9 else np.int64)
    for g in range(groups - 1, -1, -1):
        rest, low = np.divmod(rest, 100)
        out[:, g] = _PAIRS[low]
    return out.view(np.uint8)[:, 2 * groups - D:]


def _put(chars: np.ndarray, lengths: np.ndarray, rows: np.ndarray, text: bytes) -> None:
    chars[rows, :len(text)] = np.frombuffer(text, np.uint8)
    lengths[rows] = len(text)


def _width(digits: np.ndarray, negative: bool, e: int, k: int) -> int:
    """The length of :func:`_layout`'s text."""
    return sum(len(p) if isinstance(p, str) else p.shape[1] for p in _parts(digits, negative, e, k))


def _layout(digits: np.ndarray, negative: bool, e: int, k: int, width: int) -> np.ndarray:
    """The repr characters of the values whose first k digits are ``digits[:, :k]`` and whose leading digit's power of
    ten is e, one row each (module doc's forms), left-aligned in ``width`` bytes padded with zero bytes."""
    out = np.zeros((len(digits), width), np.uint8)
    at = 0
    for p in _parts(digits, negative, e, k):
        if isinstance(p, str):
            out[:, at:at + len(p)] = np.frombuffer(p.encode("ascii"), np.uint8)
            at += len(p)
        else:
            out[:, at:at + p.shape[1]] = p
            at += p.shape[1]
    return out


def _parts(digits: np.ndarray, negative: bool, e: int, k: int) -> list:
    """The pieces of the repr, in order: constant text (str) and digit columns (uint8 matrices)."""
    d = digits[:, :k]
    if -4 <= e < 16:
        if e < 0:
            parts = ["0." + "0" * (-e - 1), d]
        elif k <= e + 1:
            parts = [d, "0" * (e + 1 - k) + ".0"]
        else:
            parts = [d[:, :e + 1], ".", d[:, e + 1:]]
    else:
        parts = [d[:, :1], *([".", d[:, 1:]] if k > 1 else []), f"e{'-' if e < 0 else '+'}{abs(e):02d}"]
    return ["-", *parts] if negative else parts
