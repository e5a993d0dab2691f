"""Tests for benchmarks.simulation: partitions, benchmark CSV loading and the FL baselines."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.baselines.fl import (
    FLResult,
    ditto,
    fedavg,
    fedclust,
    fedclust_clusters,
    fedprox,
    local_only,
    rounds_to_reach,
    select_hyperparameters,
    validation_clients,
)
from benchmarks.simulation.datasets import load_benchmark_csv, resolve_benchmark_path
from benchmarks.simulation.partition import class_based_split, dirichlet_split, train_test_split_clients
from core.control import JobControl
from core.errors import Cancelled, ConfigError, DataError


# --------------------------------------------------------------------------- partitions
def _labels(K: int = 7, per_class: int = 300) -> np.ndarray:
    return np.random.default_rng(0).permutation(np.repeat(np.arange(K), per_class))


def _assert_disjoint(parts: list[np.ndarray], n: int) -> None:
    allrows = np.concatenate(parts)
    assert allrows.size == np.unique(allrows).size
    assert allrows.min() >= 0 and allrows.max() < n


@pytest.mark.parametrize("k", [1, 2, 3])
def test_class_based_exactly_k_classes(k):
    y = _labels()
    parts = class_based_split(y, 100, k, rng=1)
    assert 90 <= len(parts) <= 100
    assert all(np.unique(y[p]).size == k for p in parts)
    assert all(p.size >= 5 for p in parts)
    _assert_disjoint(parts, y.size)


def test_class_based_drops_small_clients_and_is_deterministic():
    y = np.repeat(np.arange(4), [200, 200, 200, 6])        # class 3 is tiny
    parts = class_based_split(y, 40, 2, rng=np.random.default_rng(5), min_samples=5)
    again = class_based_split(y, 40, 2, rng=np.random.default_rng(5), min_samples=5)
    assert len(parts) < 40
    assert all(np.unique(y[p]).size == 2 for p in parts)
    assert all(np.array_equal(a, b) for a, b in zip(parts, again, strict=True))
    with pytest.raises(ConfigError):
        class_based_split(y, 10, 5, rng=0)


def _mean_max_share(y: np.ndarray, parts: list[np.ndarray], K: int) -> float:
    return float(np.mean([np.bincount(y[p], minlength=K).max() / p.size for p in parts]))


def test_dirichlet_concentration():
    y = _labels()
    small = dirichlet_split(y, 50, 0.1, rng=0)
    large = dirichlet_split(y, 50, 1000.0, rng=0)
    for parts in (small, large):
        _assert_disjoint(parts, y.size)
        assert len(parts) == 50 and all(p.size == y.size // 50 for p in parts)
    assert _mean_max_share(y, small, 7) > 0.7
    assert _mean_max_share(y, large, 7) < 0.3
    again = dirichlet_split(y, 50, 0.1, rng=0)
    assert all(np.array_equal(a, b) for a, b in zip(small, again, strict=True))


def test_dirichlet_terminates_with_exhausted_classes():
    y = np.repeat(np.arange(3), [5, 5, 290])
    parts = dirichlet_split(y, 10, 0.05, rng=3, client_size=30)
    _assert_disjoint(parts, y.size)
    assert sum(p.size for p in parts) == 300


def test_train_test_split_clients():
    parts = [np.arange(10), np.arange(10, 13), np.arange(13, 14)]
    split = train_test_split_clients(parts, rng=0, test_ratio=0.2)
    assert [(tr.size, te.size) for tr, te in split] == [(8, 2), (2, 1), (1, 0)]
    for (tr, te), p in zip(split, parts, strict=True):
        assert np.array_equal(np.sort(np.concatenate([tr, te])), p)


# --------------------------------------------------------------------------- datasets
def test_load_benchmark_csv(tmp_path):
    (tmp_path / "dry_bean.csv").write_text("a,b,label\n1,2.5,SIRA\n3,4,BOMBAY\n5,6,SIRA\n")
    X, y, names = load_benchmark_csv("drybean", tmp_path)
    assert X.dtype == np.float64 and X.shape == (3, 2)
    assert names == ["BOMBAY", "SIRA"] and y.tolist() == [1, 0, 1]
    (tmp_path / "num.csv").write_text("a,label\n1,7\n2,1\n3,10\n")
    _, y, names = load_benchmark_csv(tmp_path / "num.csv")
    assert names == ["1", "7", "10"] and y.tolist() == [1, 0, 2]
    (tmp_path / "bad.csv").write_text("a,target\n1,2\n")
    with pytest.raises(DataError):
        load_benchmark_csv("bad", tmp_path)
    with pytest.raises(DataError):
        resolve_benchmark_path("covertype", tmp_path)


# --------------------------------------------------------------------------- FL baselines
def _toy_clients(label_sets: list[tuple[int, ...]], n: int = 80, seed: int = 0, d: int = 6,
                 K: int = 4) -> list[tuple]:
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).normal(size=(K, d)) * 3.0
    clients = []
    for labels in label_sets:
        y = rng.choice(np.array(labels), size=n)
        X = centres[y] + rng.normal(size=(n, d))
        clients.append((X[: n * 3 // 4] * 10 + 5, y[: n * 3 // 4], X[n * 3 // 4:] * 10 + 5, y[n * 3 // 4:]))
    return clients


FAST = dict(hidden=(16,), lr=0.05, momentum=0.5, batch_size=16)


def test_fedavg_iid_reaches_centralised_accuracy():
    clients = _toy_clients([(0, 1, 2, 3)] * 4)
    res = fedavg(clients, rounds=4, local_epochs=3, n_classes=4, **FAST)
    assert isinstance(res, FLResult) and len(res.curve) == 4 and res.final == res.curve[-1]
    central = local_only([tuple(np.concatenate([c[j] for c in clients]) for j in range(4))],
                         rounds=1, local_epochs=12, n_classes=4, **FAST)
    assert central.final > 0.9
    assert res.final >= central.final - 0.05
    assert res.per_client.shape == (4,)


def test_baselines_curves_and_personalisation():
    clients = _toy_clients([(0, 1)] * 3 + [(2, 3)] * 3, n=60)
    kw = dict(rounds=3, local_epochs=2, n_classes=4, **FAST)
    for res in (local_only(clients, **kw), fedprox(clients, mu=0.01, **kw), ditto(clients, lam=0.1, **kw)):
        assert len(res.curve) == 3 and 0.0 <= res.final <= 1.0
    assert ditto(clients, lam=0.1, **kw).final > 0.8
    assert rounds_to_reach([0.2, 0.5, 0.9], 0.5) == 2 and rounds_to_reach([0.1], 0.5) is None


def test_fedclust_finds_two_groups():
    clients = _toy_clients([(0, 1)] * 4 + [(2, 3)] * 4, n=60, seed=1)
    res = fedclust(clients, t=0.5, rounds=3, local_epochs=3, n_classes=4, **FAST)
    labels = res.cluster_labels
    assert np.unique(labels).size == 2
    assert np.unique(labels[:4]).size == 1 and np.unique(labels[4:]).size == 1
    assert len(res.curve) == 3 and res.final > 0.9
    assert fedclust_clusters([], 0.5).size == 0


def test_select_hyperparameters_uses_training_rows_only():
    clients = _toy_clients([(0, 1, 2, 3)] * 3, n=40)
    # Poison the test rows: a selection that looked at them would crash on the NaNs.
    clients = [(a, b, np.full_like(c, np.nan), d) for a, b, c, d in clients]
    val = validation_clients(clients, 0.25, seed=0)
    assert [len(v[3]) for v in val] == [8, 8, 8] and all(np.all(np.isfinite(v[2])) for v in val)
    best, table = select_hyperparameters(fedavg, clients, {"lr": [1e-5, 0.05]}, rounds=2, local_epochs=2,
                                         n_classes=4, hidden=(8,), batch_size=16)
    assert best == {"lr": 0.05} and len(table) == 2


def test_baseline_cancel_and_bad_input():
    clients = _toy_clients([(0, 1)] * 2, n=40)
    control = JobControl()
    control.cancel()
    with pytest.raises(Cancelled):
        fedavg(clients, rounds=2, local_epochs=1, control=control, **FAST)
    with pytest.raises(ConfigError):
        fedavg([clients[0], (clients[1][0][:, :3], *clients[1][1:])], rounds=1, local_epochs=1)
    with pytest.raises(ConfigError):
        fedprox(clients, mu=0.0)
