"""In-process simulations of the multi-round baselines of the DC-CFL experiments (paper §5.1).

Every client's local training of a round runs in one :class:`~core.learn.mlp.BatchedMLP` call (all clients in
parallel), with the same MLP as DC-CFL (``d → 64 → 32 → K``, ReLU, SGD, batch 32). Participation is
100 % in every round and aggregation is size-weighted, ``θ = Σ_i n_i θ_i / Σ_i n_i`` (McMahan et al.
2017, FedAvg).

Input scaling (a simulation convenience): raw-feature FL needs every site to scale its features the same
way (algorithms.md, general caveat), so each simulation fits one ``StandardScaler`` on the pooled
training rows of all clients and applies it to every client's train and test rows. In a deployment these
statistics would come from the kit.

Each client is ``(X_train, y_train, X_test, y_test)`` with labels in ``[0, K)``. Every function returns
an :class:`FLResult` whose ``curve[r]`` is the mean over clients of the test accuracy after round
``r + 1`` (each client weighs the same; clients without test rows are skipped).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import pdist
from sklearn.preprocessing import StandardScaler

from core.api import ConfigError, JobControl, ensure
from core.api.research import BatchedMLP, MLPWeights, average_weights, init_weights

ClientData = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


@dataclass
class FLResult:
    """Outcome of one simulated run.

    Attributes
    ----------
    method : "local", "fedavg", "fedprox", "ditto" or "fedclust".
    curve : mean-over-clients test accuracy after each round (``len(curve) == rounds``).
    final : ``curve[-1]``.
    per_client : final test accuracy of each client (NaN for a client without test rows).
    params : the settings of the run.
    cluster_labels : FedClust only: cluster id (1, 2, …) per client.
    """

    method: str
    curve: list[float]
    final: float
    per_client: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    cluster_labels: np.ndarray | None = None


@dataclass
class _Prepared:
    train: list[tuple[np.ndarray, np.ndarray]]
    test: list[tuple[np.ndarray, np.ndarray]]
    sizes: np.ndarray
    n_features: int
    n_classes: int


def _prepare(clients: Sequence[ClientData], n_classes: int | None) -> _Prepared:
    """Validate, then scale every client with one StandardScaler fitted on the pooled training rows."""
    if len(clients) == 0:
        raise ConfigError("a simulation needs at least one client")
    d = {np.asarray(c[0]).shape[1] if np.ndim(c[0]) == 2 else -1 for c in clients}
    if len(d) != 1 or -1 in d:
        raise ConfigError("raw-feature FL needs every client to have the same number of features")
    for i, (Xtr, ytr, Xte, yte) in enumerate(clients):
        if len(ytr) == 0 or len(ytr) != len(Xtr) or len(yte) != len(Xte):
            raise ConfigError(f"client {i} needs at least one training row and one label per row")
    K = n_classes if n_classes is not None else 1 + max(
        int(max(np.max(c[1]), np.max(c[3]) if len(c[3]) else 0)) for c in clients)
    scaler = StandardScaler().fit(np.concatenate([np.asarray(c[0], dtype=np.float64) for c in clients]))

    def scale(X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64).reshape(-1, scaler.n_features_in_)
        return scaler.transform(X).astype(np.float32)

    train = [(scale(c[0]), np.asarray(c[1], dtype=np.int64)) for c in clients]
    test = [(scale(c[2]), np.asarray(c[3], dtype=np.int64)) for c in clients]
    return _Prepared(train, test, np.array([len(c[1]) for c in clients], dtype=np.float64), d.pop(), int(K))


def _round_seed(seed: int, r: int, stream: int = 0) -> int:
    """A fresh training seed per round, so shuffles differ between rounds."""
    return int(np.random.SeedSequence([int(seed), int(r), int(stream)]).generate_state(1)[0] & 0x7FFFFFFF)


def _accuracies(models: Sequence[MLPWeights], test: Sequence[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    return np.array([np.mean(m.predict(X) == y) if len(y) else np.nan
                     for m, (X, y) in zip(models, test, strict=True)])


def _mean(acc: np.ndarray) -> float:
    return float(np.nanmean(acc)) if np.any(~np.isnan(acc)) else float("nan")


def _trainer(hidden: tuple[int, ...], lr: float, momentum: float, weight_decay: float, batch_size: int,
             epochs: int, seed: int, prox_mu: float = 0.0) -> BatchedMLP:
    return BatchedMLP(hidden, lr=lr, momentum=momentum, weight_decay=weight_decay, batch_size=batch_size,
                      epochs=epochs, random_state=seed, prox_mu=prox_mu)


def _check_rounds(rounds: int, local_epochs: int) -> None:
    if rounds < 1 or local_epochs < 1:
        raise ConfigError(f"rounds and local epochs must be at least 1, got {rounds} and {local_epochs}")


def local_only(clients: Sequence[ClientData], *, rounds: int = 1, local_epochs: int = 50, lr: float = 0.01,
               momentum: float = 0.5, weight_decay: float = 0.0, batch_size: int = 32,
               hidden: tuple[int, ...] = (64, 32), seed: int = 0, n_classes: int | None = None,
               control: JobControl | None = None) -> FLResult:
    """Each client trains its own model on its own rows only (the paper's "Local": rounds=1, 50 epochs).

    With ``rounds > 1`` training continues from the previous round's weights, evaluating after every
    ``local_epochs`` epochs; the momentum buffer restarts at each round, as for every FL client.
    """
    _check_rounds(rounds, local_epochs)
    control = ensure(control)
    data = _prepare(clients, n_classes)
    ids = list(range(len(clients)))
    models: list[MLPWeights] | None = None
    curve, acc = [], np.array([])
    for r in range(rounds):
        m = _trainer(hidden, lr, momentum, weight_decay, batch_size, local_epochs, _round_seed(seed, r))
        models = m.fit(data.train, data.n_classes, init=models, group_ids=ids,
                       control=control.sub(r / rounds, (r + 1) / rounds)).models_
        acc = _accuracies(models, data.test)
        curve.append(_mean(acc))
    return FLResult("local", curve, curve[-1], acc,
                    dict(rounds=rounds, local_epochs=local_epochs, lr=lr, momentum=momentum, seed=seed))


def _fedavg_core(method: str, clients: Sequence[ClientData], rounds: int, local_epochs: int, lr: float,
                 momentum: float, weight_decay: float, batch_size: int, hidden: tuple[int, ...], seed: int,
                 n_classes: int | None, mu: float, control: JobControl | None) -> FLResult:
    _check_rounds(rounds, local_epochs)
    control = ensure(control)
    data = _prepare(clients, n_classes)
    n = len(clients)
    ids = list(range(n))
    glob = init_weights([data.n_features, *hidden, data.n_classes], seed)
    curve, acc = [], np.array([])
    for r in range(rounds):
        m = _trainer(hidden, lr, momentum, weight_decay, batch_size, local_epochs, _round_seed(seed, r), mu)
        m.fit(data.train, data.n_classes, init=[glob] * n, group_ids=ids,
              control=control.sub(r / rounds, (r + 1) / rounds))
        glob = average_weights(m.models_, data.sizes)
        acc = _accuracies([glob] * n, data.test)
        curve.append(_mean(acc))
    params = dict(rounds=rounds, local_epochs=local_epochs, lr=lr, momentum=momentum, seed=seed)
    if method == "fedprox":
        params["mu"] = mu
    return FLResult(method, curve, curve[-1], acc, params)


def fedavg(clients: Sequence[ClientData], *, rounds: int = 5, local_epochs: int = 10, lr: float = 0.01,
           momentum: float = 0.5, weight_decay: float = 0.0, batch_size: int = 32,
           hidden: tuple[int, ...] = (64, 32), seed: int = 0, n_classes: int | None = None,
           control: JobControl | None = None) -> FLResult:
    """FedAvg (McMahan et al. 2017): every round each client runs ``local_epochs`` epochs of SGD from the
    global model θ^t, and ``θ^{t+1} = Σ_i n_i θ_i / Σ_i n_i``. Evaluated with the global model.
    (The paper selects lr ∈ {0.1, 0.01, 0.001} on validation data with momentum 0.9.)"""
    return _fedavg_core("fedavg", clients, rounds, local_epochs, lr, momentum, weight_decay, batch_size,
                        hidden, seed, n_classes, 0.0, control)


def fedprox(clients: Sequence[ClientData], *, mu: float, rounds: int = 5, local_epochs: int = 10,
            lr: float = 0.01, momentum: float = 0.5, weight_decay: float = 0.0, batch_size: int = 32,
            hidden: tuple[int, ...] = (64, 32), seed: int = 0, n_classes: int | None = None,
            control: JobControl | None = None) -> FLResult:
    """FedProx (Li et al. 2020): FedAvg whose local objective adds ``(μ/2)‖θ − θ^t‖²`` (Eq. 2).
    (The paper selects μ ∈ {1, 0.1, 0.01, 0.001}.)"""
    if not mu > 0:
        raise ConfigError(f"FedProx needs a positive μ, got {mu}")
    return _fedavg_core("fedprox", clients, rounds, local_epochs, lr, momentum, weight_decay, batch_size,
                        hidden, seed, n_classes, float(mu), control)


def ditto(clients: Sequence[ClientData], *, lam: float, rounds: int = 5, local_epochs: int = 10,
          lr: float = 0.01, momentum: float = 0.5, weight_decay: float = 0.0, batch_size: int = 32,
          hidden: tuple[int, ...] = (64, 32), seed: int = 0, n_classes: int | None = None,
          control: JobControl | None = None) -> FLResult:
    """Ditto (Li et al. 2021, Alg. 1): each round every client (a) runs FedAvg's local update of the
    global model θ^t and (b) updates its personal model v_i for ``local_epochs`` epochs on
    ``F_i(v) + (λ/2)‖v − θ^t‖²``; v_i starts from θ^0. Evaluated with the personal models.
    (The paper selects λ ∈ {2, 1, 0.1, 0.01}.)"""
    _check_rounds(rounds, local_epochs)
    if not lam > 0:
        raise ConfigError(f"Ditto needs a positive λ, got {lam}")
    control = ensure(control)
    data = _prepare(clients, n_classes)
    n = len(clients)
    ids = list(range(n))
    glob = init_weights([data.n_features, *hidden, data.n_classes], seed)
    personal = [glob] * n
    curve, acc = [], np.array([])
    for r in range(rounds):
        sub = control.sub(r / rounds, (r + 1) / rounds)
        g = _trainer(hidden, lr, momentum, weight_decay, batch_size, local_epochs, _round_seed(seed, r, 0))
        g.fit(data.train, data.n_classes, init=[glob] * n, group_ids=ids, control=sub.sub(0.0, 0.5))
        p = _trainer(hidden, lr, momentum, weight_decay, batch_size, local_epochs, _round_seed(seed, r, 1),
                     float(lam))
        p.fit(data.train, data.n_classes, init=personal, anchor=[glob] * n, group_ids=ids,
              control=sub.sub(0.5, 1.0))
        personal = p.models_
        glob = average_weights(g.models_, data.sizes)
        acc = _accuracies(personal, data.test)
        curve.append(_mean(acc))
    return FLResult("ditto", curve, curve[-1], acc,
                    dict(rounds=rounds, local_epochs=local_epochs, lr=lr, momentum=momentum, lam=lam,
                         seed=seed))


def fedclust_clusters(models: Sequence[MLPWeights], t: float) -> np.ndarray:
    """FedClust's one-shot clustering (algorithms.md §3, steps 2–4): final-layer weights and bias of each
    local model, flattened; pairwise Euclidean distances min–max normalised to [0, 1]; average-linkage
    agglomerative clustering cut at distance ``t``. Returns cluster ids 1, 2, … per model."""
    if len(models) < 2:
        return np.ones(len(models), dtype=np.int64)
    feats = np.stack([np.concatenate([m.weights[-1].ravel(), m.biases[-1]]) for m in models])
    feats = feats.astype(np.float64)
    dist = pdist(feats, metric="euclidean")
    span = dist.max() - dist.min()
    dist = (dist - dist.min()) / span if span > 0 else np.zeros_like(dist)
    return fcluster(linkage(dist, method="average"), t=float(t), criterion="distance").astype(np.int64)


def fedclust(clients: Sequence[ClientData], *, t: float, rounds: int = 5, local_epochs: int = 10,
             lr: float = 0.01, momentum: float = 0.5, weight_decay: float = 0.0, batch_size: int = 32,
             hidden: tuple[int, ...] = (64, 32), seed: int = 0, n_classes: int | None = None,
             control: JobControl | None = None) -> FLResult:
    """FedClust (Islam et al. 2024; reconstruction in algorithms.md §3). Round 1: every client trains the
    shared θ0 for ``local_epochs`` epochs and uploads it; the server clusters the clients by their
    final-layer weights (:func:`fedclust_clusters`) and averages the uploaded models per cluster. Rounds
    2…R: cluster-wise FedAvg. Each client is evaluated with its cluster's model."""
    _check_rounds(rounds, local_epochs)
    control = ensure(control)
    data = _prepare(clients, n_classes)
    n = len(clients)
    ids = list(range(n))
    start = [init_weights([data.n_features, *hidden, data.n_classes], seed)] * n
    labels = np.ones(n, dtype=np.int64)
    curve, acc = [], np.array([])
    for r in range(rounds):
        m = _trainer(hidden, lr, momentum, weight_decay, batch_size, local_epochs, _round_seed(seed, r))
        m.fit(data.train, data.n_classes, init=start, group_ids=ids,
              control=control.sub(r / rounds, (r + 1) / rounds))
        if r == 0:
            labels = fedclust_clusters(m.models_, t)
        cluster_model = {c: average_weights([m.models_[i] for i in np.flatnonzero(labels == c)],
                                            data.sizes[labels == c]) for c in np.unique(labels)}
        start = [cluster_model[c] for c in labels]
        acc = _accuracies(start, data.test)
        curve.append(_mean(acc))
    return FLResult("fedclust", curve, curve[-1], acc,
                    dict(rounds=rounds, local_epochs=local_epochs, lr=lr, momentum=momentum, t=t, seed=seed),
                    cluster_labels=labels)


def rounds_to_reach(curve: Sequence[float], target: float) -> int | None:
    """The first round (counting from 1) whose accuracy is ≥ ``target`` (paper Table 3), else None."""
    hits = np.flatnonzero(np.asarray(curve) >= target)
    return int(hits[0]) + 1 if hits.size else None


def validation_clients(clients: Sequence[ClientData], val_ratio: float = 0.2,
                       seed: int = 0) -> list[ClientData]:
    """Carve a validation split out of each client's TRAINING rows: returns clients
    ``(X_fit, y_fit, X_val, y_val)``; the test rows are never touched. A client keeps at least one
    fitting row (``min(⌈val_ratio·n⌉, n − 1)`` validation rows)."""
    if not 0 < val_ratio < 1:
        raise ConfigError(f"the validation ratio must lie in (0, 1), got {val_ratio}")
    rng = np.random.default_rng([int(seed), 0x7A1])
    out = []
    for Xtr, ytr, _Xte, _yte in clients:
        Xtr, ytr = np.asarray(Xtr), np.asarray(ytr)
        perm = rng.permutation(len(ytr))
        n_val = max(0, min(int(np.ceil(val_ratio * len(ytr))), len(ytr) - 1))
        va, fi = perm[:n_val], perm[n_val:]
        out.append((Xtr[fi], ytr[fi], Xtr[va], ytr[va]))
    return out


def select_hyperparameters(method: Callable[..., FLResult], clients: Sequence[ClientData],
                           grid: Mapping[str, Sequence[Any]], *, val_ratio: float = 0.2, seed: int = 0,
                           control: JobControl | None = None, **fixed: Any
                           ) -> tuple[dict[str, Any], list[tuple[dict[str, Any], float]]]:
    """Grid search on validation rows carved from each client's training rows (:func:`validation_clients`).

    Runs ``method(val_clients, **fixed, **combo, seed=seed)`` for every combination of ``grid`` (e.g.
    ``{"lr": [0.1, 0.01, 0.001], "mu": [1, 0.1, 0.01, 0.001]}`` for FedProx, ``{"t": [0.1, …, 0.9]}`` for
    FedClust) and scores it by the final mean validation accuracy. Returns the best combination (the
    first in grid order on ties) and the list of ``(combo, score)``. The caller then reruns the method
    with the best combination on the full training rows and the test rows.
    """
    if not grid:
        raise ConfigError("the hyper-parameter grid is empty")
    control = ensure(control)
    val = validation_clients(clients, val_ratio, seed)
    keys = list(grid)
    combos = [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]
    table: list[tuple[dict[str, Any], float]] = []
    for j, combo in enumerate(combos):
        res = method(val, **fixed, **combo, seed=seed,
                     control=control.sub(j / len(combos), (j + 1) / len(combos)))
        table.append((combo, res.final))
    scores = np.array([s for _, s in table])
    best = int(np.nanargmax(scores)) if np.any(~np.isnan(scores)) else 0
    return dict(table[best][0]), table
