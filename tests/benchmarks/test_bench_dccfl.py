"""Tiny, synthetic tests of ``python -m benchmarks dccfl`` (benchmarks/dccfl.py); no file from ../shared."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from benchmarks.dccfl import PAPER_DC_SETTINGS, VARIANT, Cell, Protocol, make_cell, markdown, run, run_dc, site_bundles
from core.methods import FitContext
from core.methods.dccfl import DC, DCCFL


def _blobs(n: int = 900, m: int = 6, K: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, size=n)
    centres = rng.normal(scale=3.0, size=(K, m))
    return centres[y] + rng.normal(size=(n, m)), y, [f"c{k}" for k in range(K)]


TINY = Protocol(n_clients=8, public_rows=20, anchor_rows=40, smote_k=5, hidden=(8,), alt_hidden=None, epochs=2,
                local_epochs=1, rounds=2, max_rounds=3, lr_grid=(0.1,), mu_grid=(0.1,), lam_grid=(1.0,),
                t_grid=(0.3, 0.9), splits=("C2", "Dir0.1"),
                product_settings={"epochs": 2, "hidden": [8], "t_grid": [0.3, 0.9]},
                variant_settings={"prior_in_selection": False, "t_grid": [0.3, 0.9]})


@pytest.mark.parametrize("split", ["C2", "Dir0.1"])
def test_cell_rows_are_used_once_and_public_rows_held_out(split):
    X, y, classes = _blobs()
    cell = make_cell("synthetic", X, y, classes, split, 3, TINY)
    ids = np.concatenate([cell.public] + [np.concatenate(r) for r in cell.rows])
    assert ids.size == np.unique(ids).size                      # no row twice, public rows never at a client
    assert cell.public.size == TINY.public_rows and cell.anchor.shape == (TINY.anchor_rows, X.shape[1])
    assert len(cell.clients) + cell.dropped_partition + cell.dropped_pca == TINY.n_clients
    if split == "C2":
        assert all(np.unique(np.concatenate([c[1], c[3]])).size == 2 for c in cell.clients)
    again = make_cell("synthetic", X, y, classes, split, 3, TINY)
    np.testing.assert_array_equal(again.anchor, cell.anchor)


@pytest.mark.slow
def test_tiny_end_to_end_record(tmp_path):
    """The record's every part, from four sites a cell (the record's shape does not depend on how many; the
    other tests' eight made this the suite's third-costliest test)."""
    data = _blobs()
    lines: list[str] = []
    out = tmp_path / "dccfl.json"
    result = run(["synthetic"], 2, loader=lambda name: data, protocol=dataclasses.replace(TINY, n_clients=4),
                 json_path=out, say=lines.append, command="test")
    doc = json.loads(out.read_text())
    assert doc["experiment"] == "dccfl" and doc["version"] and doc["machine"]
    methods = {r["method"] for r in doc["rows"]}
    assert methods == {"Local", "DC", "FedAvg", "FedProx", "Ditto", "FedClust", "DC-CFL", "DC-CFL (product defaults)",
                       VARIANT}
    for r in doc["rows"]:
        assert {"dataset", "split", "method", "metric", "mean", "std", "seeds", "paper"} <= set(r)
        assert r["metric"] == "accuracy" and r["seeds"] == 2 and 0.0 <= r["mean"] <= 1.0
        assert r["paper"] is None                                # no paper value for a synthetic data set
    assert {(r["split"], r["method"]) for r in doc["table3"]} == {("C2", m) for m in ("FedAvg", "FedProx", "Ditto",
                                                                                        "FedClust")}
    curve = doc["curves"]["synthetic/C2"]
    assert curve["rounds"] == [1, 2, 3] and len(curve["series"]["FedClust"]["mean"]) == 3
    assert doc["timing"]["analyst_seconds"] > 0 and doc["timing"]["participant_seconds"] > 0
    assert len(out.with_name("dccfl_cells.jsonl").read_text().splitlines()) == 4
    assert out.with_suffix(".md").read_text().startswith("# DC-CFL benchmark")
    assert out.with_name("dccfl_rounds.svg").read_text().startswith("<svg")
    assert len(lines) == 4 and "Table 2" in markdown(result)
    product = [r for r in doc["rows"] if r["method"] == "DC-CFL (product defaults)"]
    assert all(r["figures"]["checked"] > 0 and r["figures"]["mismatches"] == 0 for r in product)  # issue #23
    assert "mismatches: 0" in out.with_suffix(".md").read_text()


def _opposite_groups(seed: int = 0) -> Cell:
    """Eight sites in two groups with opposite label distributions (90 % class 0 vs 90 % class 1) on weakly
    informative features: one model for all cannot use the sites' priors, per-group models can."""
    rng = np.random.default_rng(seed)
    m, n = 5, 160
    clients = []
    for i in range(8):
        share = 0.9 if i < 4 else 0.1
        y = (rng.random(n) > share).astype(np.int64)
        X = rng.normal(size=(n, m)) + 0.4 * y[:, None]
        clients.append((X[:120], y[:120], X[120:], y[120:]))
    anchor = rng.normal(size=(60, m)) + 0.2
    return Cell("opposite", "groups", seed, ["a", "b"], clients, anchor, 0, 0)


def test_dccfl_finds_the_two_groups_and_beats_dc():
    cell = _opposite_groups()
    bundles, private, _ = site_bundles(cell)
    settings = {**PAPER_DC_SETTINGS, "t_grid": [0.3, 0.9], "hidden": [8], "epochs": 8, "seed": 0}
    fitted = DCCFL(**settings).fit(bundles, FitContext(cell.classes))
    order = fitted.details["site_order"]  # clusters are in the canonical (content-digest) order of the sites
    assert sorted(sorted(int(order[i]) for i in c) for c in fitted.details["clusters"]) == [[0, 1, 2, 3],
                                                                                            [4, 5, 6, 7]]
    assert fitted.summary["t"] == 0.3
    dccfl = run_dc(DCCFL(**settings), cell, bundles, private)["accuracy"]
    dc = run_dc(DC.with_known(settings), cell, bundles, private)["accuracy"]
    assert dccfl > dc + 0.1 and dccfl > 0.8
    # The product's per-site prior correction recovers most of that gap even for one shared model.
    dc_prior = run_dc(DC.with_known({**settings, "prior_correction": True}), cell, bundles, private)["accuracy"]
    assert dc_prior > dc + 0.1


@pytest.mark.parametrize("affine", [False, True])
def test_anchor_basis_matches_plain_alignment(affine):
    """AnchorBasis (shared factorisation, reused across clusters) gives DCAlignment's maps: the aligned
    anchors agree up to the sign of each singular vector, so their Gram matrices agree."""
    from core.learn.alignment import AnchorBasis, DCAlignment

    rng = np.random.default_rng(0)
    anchor = rng.normal(size=(60, 6))
    reps = []
    for _ in range(5):
        X = rng.normal(size=(40, 6)) * rng.uniform(0.5, 3, size=6) + rng.normal(size=6)
        mu, sd = X.mean(0), X.std(0)
        W = np.linalg.svd((X - mu) / sd, full_matrices=False)[2][:5].T / sd[:, None]
        reps.append(((anchor - mu) @ W).astype(np.float32))
    settings = {"threshold": 1e-2, "relative_threshold": False, "scale": "identity"}
    basis = AnchorBasis(reps, affine=affine)
    for members in [(0, 1, 2, 3, 4), (1, 3)]:
        fast = basis.align(members, settings)
        ref = DCAlignment(affine=affine).fit([reps[i] for i in members])
        for k, i in enumerate(members):
            A = reps[i].astype(np.float64)
            Zf, Zr = fast[i].transform(A), ref.mappings_[k].transform(A)
            assert Zf.shape == Zr.shape
            np.testing.assert_allclose(Zf @ Zf.T, Zr @ Zr.T, atol=1e-6)
