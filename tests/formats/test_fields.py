"""Every manifest field of every bundle and package kind is typed before use (issue #26, findings 1 and 2).

An insider holds a valid key, so the mutated files here are re-signed and re-encrypted by the real sender
(:func:`benchmarks.fuzz.reseal`) and fed to the real entry points: the analyst's ``open_bundle`` + fit (what
``analyst run`` does) and the site's ``check_package`` + ``apply_checked`` (what ``participant apply`` does).
Only the product's errors (:class:`core.errors.DCError`) may come out.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.fuzz import Corpus, npy_bytes, read_package, reseal, run_bundle
from core.errors import DCError, FormatError

GARBAGE = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2 ** 80), max_value=2 ** 80),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=20),
    st.lists(st.one_of(st.integers(), st.text(max_size=3), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=4), st.one_of(st.integers(), st.none(), st.dictionaries(st.text(max_size=2),
                                                                                               st.integers())),
                    max_size=3))
METHODS = ("dc", "dccfl", "feddag", "hfldd", "meta-lr", "dcclustering", "gold")  # every built-in method


@pytest.fixture(scope="module", params=METHODS)
def corpus(request, tmp_path_factory):
    return Corpus(tmp_path_factory.mktemp(request.param.replace("-", "")), 0, request.param)


def _only_product_errors(read, corpus, path) -> None:
    try:
        read(corpus, path)
    except DCError:
        pass


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_typed_garbage_in_any_bundle_field_is_refused_in_one_sentence(corpus, tmp_path_factory, data):
    content = corpus.inner["bundle"].payload.manifest
    key = data.draw(st.sampled_from(sorted(content) + ["n_rows", "own_cv", "variance_kept"]))
    value = data.draw(GARBAGE)
    path = tmp_path_factory.getbasetemp() / f"bundle-{corpus.method}.dcbundle"
    reseal(corpus, "bundle", path, {**content, key: value})
    _only_product_errors(run_bundle, corpus, path)


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_typed_garbage_in_any_package_field_is_refused_in_one_sentence(corpus, tmp_path_factory, data):
    content = corpus.inner["package"].payload.manifest
    key = data.draw(st.sampled_from(sorted(content) + ["model", "own_kind", "encoder"]))
    value = data.draw(GARBAGE)
    path = tmp_path_factory.getbasetemp() / f"package-{corpus.method}.dcpkg"
    reseal(corpus, "package", path, {**content, key: value})
    _only_product_errors(read_package, corpus, path)


HEADERS = st.builds(
    lambda descr, fortran, shape: f"{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}",
    st.sampled_from(["'<f8'", "'<f4'", "'|O'", "'<i4'", "'>f8'", "'<U3'", "[('a', '<f8')]", "None", "1"]),
    st.sampled_from(["False", "True", "None", "0", "'no'"]),
    st.one_of(st.sampled_from(["(-1,)", "(True,)", "(2**62, 2**62)", "(1e3,)", "('a',)", "()", "[2]", "(3,",
                               f"({2 ** 40}, {2 ** 40})", "(" + "1," * 40 + ")"]),
              st.lists(st.integers(-3, 70), max_size=3).map(lambda s: str(tuple(s)))))


def _npy(header: str, data: bytes) -> bytes:
    head = header.encode("latin1")
    head += b" " * (-(len(head) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head + data


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_resigned_npy_headers_are_refused_in_one_sentence(corpus, tmp_path_factory, data):
    kind = data.draw(st.sampled_from(["bundle", "package"]))
    arrays = corpus.inner[kind].payload.arrays
    target = data.draw(st.sampled_from(sorted(arrays)))
    header = data.draw(HEADERS)
    members = [(f"{n}.npy", _npy(header, np.ascontiguousarray(arrays[n]).tobytes()) if n == target
                else npy_bytes(arrays[n])) for n in sorted(arrays)]
    path = tmp_path_factory.getbasetemp() / f"npy-{corpus.method}.{kind}"
    reseal(corpus, kind, path, members=members)
    _only_product_errors(run_bundle if kind == "bundle" else read_package, corpus, path)


def test_a_null_row_count_is_refused_naming_the_field(corpus, tmp_path):
    content = corpus.inner["bundle"].payload.manifest
    path = tmp_path / "b.dcbundle"
    reseal(corpus, "bundle", path, {**content, "n_rows": None})
    with pytest.raises(FormatError, match="n_rows"):
        run_bundle(corpus, path)


def test_every_registered_schema_refuses_typed_garbage_naming_field_and_expectation():
    from core.formats.fields import SCHEMAS, check_fields, register_fields

    for kind, fields in list(SCHEMAS.items()):
        for f in fields:
            register_fields("test:one", (f,))
            for bad in (object(), math.nan, [object()], {1, 2}):
                with pytest.raises(FormatError, match=f"'{f.name}'") if f.type != "any" else _nothing():
                    check_fields("test:one", {f.name: bad}, f"the test's {kind}")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_check_fields_words():
    from core.formats.fields import Field, check_fields, register_fields

    check_fields_kind = "test:words"

    register_fields(check_fields_kind, (Field("k", "int", required=True, low=1, high=9),))
    with pytest.raises(FormatError, match=r"the package's manifest gives 'k' as true, not a whole number from 1 to 9"):
        check_fields(check_fields_kind, {"k": True}, "the package's manifest")
    with pytest.raises(FormatError, match=r"lacks 'k'"):
        check_fields(check_fields_kind, {}, "the package's manifest")
    assert check_fields(check_fields_kind, {"k": 3, "other": None}, "x") == {"k": 3, "other": None}
