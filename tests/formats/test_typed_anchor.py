"""The anchor of a typed kit lives in the encoded matrix space and copies no real row (issue #22)."""

from __future__ import annotations

import numpy as np

from core.data.encoding import level_shares
from core.data.schema import infer_schema
from core.data.tabular import read_table
from core.formats.anchor import anchor_for_kit
from core.formats.identity import Identity
from core.formats.kit import Kit
from tests.support.typedkit import clinical_frame


def test_a_typed_kits_anchor_is_encoded_and_draws_levels_from_the_lead_sites_shares(tmp_path):
    csv = tmp_path / "lead.csv"
    clinical_frame(400, seed=1, missing=0.2).to_csv(csv, index=False, na_rep="NA")
    schema, _ = infer_schema(csv, label="outcome")
    kit = Kit(name="P", task="classification", schema=schema, method="dccfl",
              analyst=Identity.generate("a").card)
    X = read_table(csv, schema, labels=False).X
    anchor = anchor_for_kit(kit, kind="smote", rows=200, local_X=X, seed_rows=300, rng=np.random.default_rng(0))
    assert anchor.params["features"] == schema.encoded_names
    seeds = np.asarray(anchor.params["seed_rows"])
    assert seeds.shape == (300, schema.width)
    # no seed row is a real row
    assert not any(np.isclose(seeds[:, None, :], X[None, :, :]).all(axis=2).any(axis=1))
    # level columns hold proper levels (one-hot, 0/1) with about the lead site's shares
    pos = schema.encoded_positions()
    rx = seeds[:, pos["rx"]]
    assert set(np.unique(rx)) <= {0.0, 1.0} and (rx.sum(axis=1) == 1).all()
    assert np.allclose(level_shares(schema, seeds)["rx"], level_shares(schema, X)["rx"], atol=0.1)
    sex_missing = seeds[:, schema.encoded_names.index("sex (missing)")]
    assert set(np.unique(sex_missing)) <= {0.0, 1.0} and abs(sex_missing.mean() - 0.2) < 0.1
    assert anchor.generate().shape[1] == schema.width
    uniform = anchor_for_kit(kit, kind="gaussian", rows=50, local_X=X)
    assert uniform.generate().shape == (50, schema.width)


def test_the_nearest_seed_rows_are_those_a_full_stable_sort_gives():
    """Every site draws the same anchor: the partial sort of core/formats/anchor.py picks each row's k nearest exactly
    as a full stable sort does, ties broken by index (integer distances tie often)."""
    import numpy as np

    from core.formats.anchor import _k_smallest

    rng = np.random.default_rng(36)
    for trial in range(300):
        n = int(rng.integers(2, 80))
        k = int(rng.integers(1, n + 2))
        D = rng.integers(0, 5, size=(n, n)).astype(float) if trial % 2 else rng.random((n, n))
        D[np.arange(n), np.arange(n)] = np.inf
        assert np.array_equal(_k_smallest(D, k), np.argsort(D, axis=1, kind="stable")[:, :k]), (n, k)
