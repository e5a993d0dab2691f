"""FORMAT §7's shape/dtype/finite rules hold for every package kind, before allocation (issue #26, finding 2).

Packages are re-signed by the analyst's real key (an insider) and applied with the site's real
``participant apply`` path (:func:`core.participant.apply_package`).
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.fuzz import Corpus, npy_bytes, reseal
from core.errors import FormatError
from core.participant import apply_package


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    return Corpus(tmp_path_factory.mktemp("dc"), 0, "dc")


def _apply(corpus, path, tmp_path):
    return apply_package(path, corpus.sites[0], corpus.folder / "site0.csv", tmp_path / "RESULT.csv",
                         workspace=corpus.site_ws[0])


def _package(corpus, tmp_path, manifest_changes=None, arrays_changes=None):
    content = {**corpus.inner["package"].payload.manifest, **(manifest_changes or {})}
    arrays = {**corpus.inner["package"].payload.arrays, **(arrays_changes or {})}
    path = tmp_path / "forged.dcpkg"
    reseal(corpus, "package", path, content, [(f"{n}.npy", npy_bytes(arrays[n])) for n in sorted(arrays)])
    return path


def test_the_genuine_package_applies(dc, tmp_path):
    assert _apply(dc, dc.package_path, tmp_path).rows == 50


@pytest.mark.parametrize("model", ["own", "cluster"])
def test_a_wrong_shaped_map_matrix_is_refused_whatever_the_model(dc, tmp_path, model):
    G = dc.inner["package"].payload.arrays["map_matrix"]
    path = _package(dc, tmp_path, {"model": model, "own_kind": "linear"},
                    {"map_matrix": np.zeros((G.shape[0] + 1, G.shape[1]))})
    with pytest.raises(FormatError, match="map_matrix"):
        _apply(dc, path, tmp_path)
    assert not (tmp_path / "RESULT.csv").exists()


def test_a_float64_first_layer_is_refused_where_the_format_says_float32(dc, tmp_path):
    w = dc.inner["package"].payload.arrays["mlp_w0"]
    path = _package(dc, tmp_path, {"model": "cluster"}, {"mlp_w0": w.astype(np.float64)})
    with pytest.raises(FormatError, match="mlp_w0"):
        _apply(dc, path, tmp_path)


def test_a_huge_first_layer_is_refused_from_its_header_before_it_is_loaded(dc, tmp_path):
    arrays = dc.inner["package"].payload.arrays
    K = arrays["mlp_b0"].shape[0]
    huge = np.zeros((1, 3_000_000), np.float32)  # 12 MB: far beyond what the kit's columns and classes allow
    path = _package(dc, tmp_path, {"model": "own", "own_kind": "linear",
                                   "architecture": {"type": "mlp", "activation": "relu", "layers": [1, 3_000_000, K]}},
                    {"mlp_w0": huge, "mlp_b0": np.zeros(3_000_000, np.float32),
                     "mlp_w1": np.zeros((3_000_000, K), np.float32), "mlp_b1": np.zeros(K, np.float32)})
    with pytest.raises(FormatError, match="limit"):
        _apply(dc, path, tmp_path)


def test_an_extra_or_missing_layer_is_refused(dc, tmp_path):
    arrays = dc.inner["package"].payload.arrays
    path = _package(dc, tmp_path, {}, {"mlp_w9": np.zeros((2, 2), np.float32)})
    with pytest.raises(FormatError, match="unexpected"):
        _apply(dc, path, tmp_path)
    assert "mlp_b0" in arrays
