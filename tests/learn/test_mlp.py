"""Tests for core.learn.mlp: batched training of independent MLPs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.control import JobControl
from core.errors import Cancelled, ConfigError, FormatError
from core.learn.mlp import BatchedMLP, MLPWeights, average_weights, init_weights


def _blobs(n: int, d: int, k: int, seed: int, sep: float = 4.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(1234).normal(size=(k, 16))[:, :d] * sep
    y = rng.integers(0, k, size=n)
    return (centres[y] + rng.normal(size=(n, d))).astype(np.float32), y


def _groups(sizes: list[int], dims: list[int] | None = None, k: int = 3) -> list[tuple]:
    dims = dims or [5] * len(sizes)
    return [_blobs(n, d, k, seed=10 + g) for g, (n, d) in enumerate(zip(sizes, dims, strict=True))]


def test_learns_separable_problem():
    X, y = _blobs(400, 4, 3, seed=0)
    Xt, yt = _blobs(300, 4, 3, seed=1)
    m = BatchedMLP(hidden=(16,), lr=0.05, momentum=0.5, epochs=20, random_state=0).fit([(X, y)], 3)
    assert (m.predict(0, Xt) == yt).mean() > 0.95
    assert m.loss_curve_.shape == (20, 1)
    assert m.loss_curve_[-1, 0] < m.loss_curve_[0, 0]


def test_group_independent_of_batch():
    groups = _groups([37, 90, 15, 64, 41], dims=[5, 3, 5, 4, 5])
    kw = dict(hidden=(8, 6), lr=0.05, momentum=0.5, batch_size=8, epochs=6, random_state=3)
    together = BatchedMLP(**kw).fit(groups, 3)
    alone = BatchedMLP(**kw).fit([groups[3]], 3, group_ids=[3])
    others = _groups([5, 200, 1], dims=[2, 5, 1])
    mixed = BatchedMLP(**kw).fit([groups[3], *others], 3, group_ids=[3, 0, 1, 2])
    a = together.models_[3]
    assert a.layers == [4, 8, 6, 3]
    for other in (alone.models_[0], mixed.models_[0]):
        for wa, wb in zip(a.weights + a.biases, other.weights + other.biases, strict=True):
            np.testing.assert_allclose(wa, wb, atol=1e-5)
    np.testing.assert_allclose(together.loss_curve_[:, 3], alone.loss_curve_[:, 0], rtol=1e-5)
    # Default ids are positions: group 0 alone equals group 0 in the batch.
    first = BatchedMLP(**kw).fit(groups[:1], 3)
    np.testing.assert_allclose(first.models_[0].weights[0], together.models_[0].weights[0], atol=1e-5)


def test_deterministic_and_seed_matters():
    groups = _groups([50, 20])
    kw = dict(hidden=(8,), lr=0.05, batch_size=16, epochs=3)
    a = BatchedMLP(**kw, random_state=1).fit(groups, 3)
    b = BatchedMLP(**kw, random_state=1).fit(groups, 3)
    c = BatchedMLP(**kw, random_state=2).fit(groups, 3)
    for g in range(2):
        for wa, wb in zip(a.models_[g].weights, b.models_[g].weights, strict=True):
            np.testing.assert_array_equal(wa, wb)
    assert not np.allclose(a.models_[0].weights[0], c.models_[0].weights[0])


def test_masking_with_unequal_sizes():
    """A 3-row group gets exactly one update per epoch even when another group needs 40 batches."""
    groups = _groups([3, 1280])
    kw = dict(hidden=(4,), lr=0.1, momentum=0.9, batch_size=32, epochs=2, random_state=0)
    both = BatchedMLP(**kw).fit(groups, 3)
    init = init_weights([5, 4, 3], random_state=0, group_id=0)

    # Reference: plain torch, full-batch on the 3 rows (order inside a batch is irrelevant), 2 steps.
    net = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))
    with torch.no_grad():
        for lin, w, b in zip((net[0], net[2]), init.weights, init.biases, strict=True):
            lin.weight.copy_(torch.from_numpy(w.T))
            lin.bias.copy_(torch.from_numpy(b))
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    X, y = torch.from_numpy(groups[0][0]), torch.from_numpy(groups[0][1])
    for _ in range(2):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(X), y).backward()
        opt.step()
    np.testing.assert_allclose(both.models_[0].weights[0], net[0].weight.detach().numpy().T, atol=1e-5)
    np.testing.assert_allclose(both.models_[0].biases[1], net[2].bias.detach().numpy(), atol=1e-5)


def test_update_matches_torch_sgd_with_weight_decay_and_prox():
    """One full batch per epoch: our update equals torch.optim.SGD on loss + (mu/2)||θ − θ0||²."""
    (X, y), = _groups([24])
    kw = dict(hidden=(6,), lr=0.05, momentum=0.5, weight_decay=0.01, batch_size=24, epochs=5)
    init = [init_weights([5, 6, 3], random_state=0)]
    mu = 0.3
    ours = BatchedMLP(**kw, prox_mu=mu).fit([(X, y)], 3, init=init)

    net = torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3))
    with torch.no_grad():
        for lin, w, b in zip((net[0], net[2]), init[0].weights, init[0].biases, strict=True):
            lin.weight.copy_(torch.from_numpy(w.T))
            lin.bias.copy_(torch.from_numpy(b))
    anchor = [p.detach().clone() for p in net.parameters()]
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.5, weight_decay=0.01)
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    for _ in range(5):
        opt.zero_grad()
        prox = sum(((p - a) ** 2).sum() for p, a in zip(net.parameters(), anchor, strict=True))
        (torch.nn.functional.cross_entropy(net(Xt), yt) + mu / 2 * prox).backward()
        opt.step()
    m = ours.models_[0]
    np.testing.assert_allclose(m.weights[0], net[0].weight.detach().numpy().T, atol=1e-5)
    np.testing.assert_allclose(m.weights[1], net[2].weight.detach().numpy().T, atol=1e-5)
    np.testing.assert_allclose(m.biases[1], net[2].bias.detach().numpy(), atol=1e-5)


def test_arrays_round_trip_and_numpy_forward_matches_torch():
    groups = _groups([40, 30], dims=[5, 3])
    m = BatchedMLP(hidden=(7, 4), epochs=2, batch_size=8).fit(groups, 3)
    w = m.models_[1]
    assert w.architecture() == {"type": "mlp", "activation": "relu", "layers": [3, 7, 4, 3]}
    arrays = w.to_arrays("clf")
    assert sorted(arrays) == ["clf_b0", "clf_b1", "clf_b2", "clf_w0", "clf_w1", "clf_w2"]
    back = MLPWeights.from_arrays({**arrays, "other": np.zeros(2)}, prefix="clf")
    X = groups[1][0]
    np.testing.assert_array_equal(back.predict_proba(X), w.predict_proba(X))

    net = torch.nn.Sequential(torch.nn.Linear(3, 7), torch.nn.ReLU(), torch.nn.Linear(7, 4), torch.nn.ReLU(),
                              torch.nn.Linear(4, 3))
    with torch.no_grad():
        for lin, ww, bb in zip((net[0], net[2], net[4]), w.weights, w.biases, strict=True):
            lin.weight.copy_(torch.from_numpy(ww.T))
            lin.bias.copy_(torch.from_numpy(bb))
        p = torch.softmax(net(torch.from_numpy(X)), dim=1).numpy()
    np.testing.assert_allclose(w.predict_proba(X), p, atol=1e-6)
    np.testing.assert_allclose(m.predict_proba(1, X).sum(axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("mutate", [
    lambda a: a.pop("mlp_b1"),
    lambda a: a.update(mlp_w5=np.zeros((2, 2), np.float32)),
    lambda a: a.update(mlp_w1=np.zeros((9, 3), np.float32)),
    lambda a: a.update(mlp_b0=np.zeros(3, np.int64)),
    lambda a: a.update(mlp_w0=np.full((4, 5), np.nan, np.float32)),
    lambda a: a.clear(),
])
def test_from_arrays_rejects_broken_chains(mutate):
    rng = np.random.default_rng(0)
    arrays = MLPWeights([rng.normal(size=(4, 5)), rng.normal(size=(5, 3))],
                        [rng.normal(size=5), rng.normal(size=3)]).to_arrays()
    mutate(arrays)
    with pytest.raises(FormatError):
        MLPWeights.from_arrays(arrays)


def test_init_and_callbacks():
    groups = _groups([30, 30])
    first = BatchedMLP(hidden=(8,), epochs=2).fit(groups, 3)
    seen = []
    second = BatchedMLP(hidden=(8,), epochs=3).fit(groups, 3, init=first.models_,
                                                   on_epoch=lambda e, losses: seen.append((e, losses.shape)))
    assert seen == [(0, (2,)), (1, (2,)), (2, (2,))]
    # Continuing from trained weights starts at a lower loss than a fresh start.
    assert second.loss_curve_[0].mean() < first.loss_curve_[0].mean()
    with pytest.raises(ConfigError):
        BatchedMLP(hidden=(9,)).fit(groups, 3, init=first.models_)
    with pytest.raises(ConfigError):
        BatchedMLP(prox_mu=0.1).fit(groups, 3)


def test_bad_inputs():
    X, y = _blobs(20, 3, 3, seed=0)
    with pytest.raises(ConfigError):
        BatchedMLP().fit([(X, y)], 2)
    with pytest.raises(ConfigError):
        BatchedMLP().fit([(X[:0], y[:0])], 3)
    with pytest.raises(ConfigError):
        BatchedMLP(random_state=None).fit([(X, y)], 3)
    with pytest.raises(ConfigError):
        BatchedMLP().predict_proba(0, X)


def test_cancel_raises():
    groups = _groups([50])
    control = JobControl()
    fractions = []

    def on_epoch(epoch, losses):
        fractions.append(epoch)
        if epoch == 1:
            control.cancel()

    with pytest.raises(Cancelled):
        BatchedMLP(epochs=10).fit(groups, 3, control=control, on_epoch=on_epoch)
    assert fractions == [0, 1]


def test_average_weights():
    a, b = init_weights([3, 4, 2], 0), init_weights([3, 4, 2], 0, group_id=1)
    avg = average_weights([a, b], [1, 3])
    np.testing.assert_allclose(avg.weights[0], 0.25 * a.weights[0] + 0.75 * b.weights[0], atol=1e-7)
    np.testing.assert_allclose(avg.biases[1], 0.25 * a.biases[1] + 0.75 * b.biases[1], atol=1e-7)
    with pytest.raises(ConfigError):
        average_weights([a, init_weights([3, 5, 2], 0)], [1, 1])
    with pytest.raises(ConfigError):
        average_weights([a, b], [0, 0])
