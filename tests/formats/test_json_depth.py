"""The JSON nesting cap checked before parsing (core/fileio.py ``json_depth_ok``): its vectorised path for texts
without escapes gives the byte-by-byte scan's answer."""

from __future__ import annotations

import json
import random

import pytest

from core.errors import FormatError
from core.fileio import MAX_JSON_DEPTH, json_depth_ok, loads_checked


def scanned(text: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """The byte-by-byte scan: brackets outside strings, strings ended by an unescaped quote."""
    depth, in_string, escaped = 0, False, False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return False
        elif c in (0x5D, 0x7D):
            depth -= 1
    return True


def test_the_fast_path_agrees_with_the_scan():
    rng = random.Random(36)
    for _ in range(3000):
        text = "".join(rng.choice('[]{}",:ab1 ') for _ in range(rng.randint(0, 120))).encode()
        assert json_depth_ok(text, 5) == scanned(text, 5), text


def test_deep_nesting_is_refused_and_brackets_in_strings_do_not_count():
    assert not json_depth_ok(b"[" * 40 + b"]" * 40)
    assert json_depth_ok(json.dumps({"a": ["[" * 100, "{" * 100], "b": [[1, 2]] * 50}).encode())
    with pytest.raises(FormatError, match="nests JSON deeper"):
        loads_checked(json.dumps([[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]).encode())
    rows = {"rows": [[float(i), float(-i)] for i in range(5000)]}
    assert loads_checked(json.dumps(rows).encode()) == rows
