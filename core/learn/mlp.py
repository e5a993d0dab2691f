"""A ReLU MLP classifier that trains G independent models in one batched computation.

The analyst trains every cluster model of DC-CFL at once and the benchmarks train all clients' local
models at once (algorithms.md §2.2: layers ``d_in → 64 → 32 → K``, ReLU, cross-entropy, SGD with lr 0.01,
momentum 0.5, batch 32, 50 epochs). Group ``g`` owns parameters ``W_l[g] ∈ R^{fan_in×fan_out}``, stacked
into tensors of shape ``(G, fan_in, fan_out)``; one ``torch.baddbmm`` per layer runs all groups together.

Per group and per step the objective is

    L_g(θ_g) = (1/|B_g|) Σ_{s∈B_g} CE(h_{θ_g}(x_s), y_s) + (μ/2)‖θ_g − θ_g^anchor‖²

(the proximal term only when ``prox_mu > 0``: FedProx, Li et al. 2020, Eq. 2; Ditto's personal step,
Li et al. 2021, Eq. 2), and the update is PyTorch's SGD with momentum and dampening 0:

    d = ∇L_g + λ θ_g ;  b ← m b + d ;  θ_g ← θ_g − η b

Groups are fully independent: each has its own seeded initialisation and its own shuffle, both derived
from ``(random_state, g)``, so a group's result does not depend on the other groups in the batch. A
group that has no rows left in a step of an epoch (it has fewer batches than the largest group) sits
that step out: neither its parameters nor its momentum change. Groups are ordered largest first, so the
groups still active in a step are a prefix and each step computes on tensor slices only; the backward pass
is written out by hand (no autograd), and training runs on one intra-op thread (many tiny products).

The trained models are exported as :class:`MLPWeights`: plain float32 numpy arrays with a numpy forward
pass, so using a model needs no torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..control import JobControl, ensure
from ..errors import ConfigError, FormatError

if TYPE_CHECKING:  # torch is imported only where a model is trained: sites never pay for it
    import torch


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


@dataclass
class MLPWeights:
    """One trained MLP: ``h(x) = softmax(ReLU(…ReLU(x W_0 + b_0)…) W_L + b_L)``.

    Attributes
    ----------
    weights : list of float32 arrays, layer ``l`` has shape ``(fan_in, fan_out)``.
    biases : list of float32 arrays, layer ``l`` has shape ``(fan_out,)``.
    """

    weights: list[np.ndarray]
    biases: list[np.ndarray]

    def __post_init__(self) -> None:
        self.weights = [np.ascontiguousarray(w, dtype=np.float32) for w in self.weights]
        self.biases = [np.ascontiguousarray(b, dtype=np.float32) for b in self.biases]
        _check_chain(self.weights, self.biases, ConfigError)

    @property
    def layers(self) -> list[int]:
        """Layer widths ``[d_in, hidden…, K]``."""
        return [int(self.weights[0].shape[0])] + [int(w.shape[1]) for w in self.weights]

    @property
    def n_features(self) -> int:
        return int(self.weights[0].shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.weights[-1].shape[1])

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """Class probabilities ``(n, K)``, computed in float32 like the torch forward pass."""
        h = np.asarray(X, dtype=np.float32)
        if h.ndim != 2 or h.shape[1] != self.n_features:
            raise ConfigError(
                f"the model expects {self.n_features} features, the data has shape {np.shape(X)}"
            )
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = h @ w + b
            if i < last:
                np.maximum(h, 0.0, out=h)
        return _softmax(h)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Most probable class index per row."""
        return self.predict_proba(X).argmax(axis=1)

    def to_arrays(self, prefix: str = "mlp") -> dict[str, np.ndarray]:
        """``{f"{prefix}_w{l}": W_l, f"{prefix}_b{l}": b_l}`` for storing in a bundle."""
        out: dict[str, np.ndarray] = {}
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            out[f"{prefix}_w{i}"] = w.copy()
            out[f"{prefix}_b{i}"] = b.copy()
        return out

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str = "mlp") -> MLPWeights:
        """Inverse of :meth:`to_arrays`; rejects missing or extra layers, a broken shape chain,
        non-float or non-finite values (:class:`~core.errors.FormatError`)."""
        mine = {k for k in arrays if k.startswith(f"{prefix}_")}
        n_layers = 0
        while f"{prefix}_w{n_layers}" in arrays:
            n_layers += 1
        if n_layers == 0:
            raise FormatError(f"no MLP layers named '{prefix}_w0', '{prefix}_b0', ... were found")
        expected = {f"{prefix}_{kind}{i}" for i in range(n_layers) for kind in ("w", "b")}
        if mine != expected:
            odd = sorted(mine.symmetric_difference(expected))
            raise FormatError(f"the MLP arrays do not form a layer chain: unexpected or missing {odd}")
        weights, biases = [], []
        for i in range(n_layers):
            for kind, dest in (("w", weights), ("b", biases)):
                a = np.asarray(arrays[f"{prefix}_{kind}{i}"])
                if a.dtype.kind != "f":
                    raise FormatError(f"MLP array '{prefix}_{kind}{i}' is not floating point ({a.dtype})")
                if not np.all(np.isfinite(a)):
                    raise FormatError(f"MLP array '{prefix}_{kind}{i}' holds NaN or infinite values")
                dest.append(a.astype(np.float32))
        _check_chain(weights, biases, FormatError)
        return cls(weights, biases)

    def architecture(self) -> dict:
        """``{"type": "mlp", "activation": "relu", "layers": [d_in, hidden…, K]}``."""
        return {"type": "mlp", "activation": "relu", "layers": self.layers}


def _check_chain(weights: list[np.ndarray], biases: list[np.ndarray], err: type[Exception]) -> None:
    if len(weights) == 0 or len(weights) != len(biases):
        raise err(f"an MLP needs as many weight matrices as bias vectors, got {len(weights)} and "
                  f"{len(biases)}")
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        if w.ndim != 2 or b.ndim != 1 or b.shape[0] != w.shape[1] or min(w.shape) < 1:
            raise err(f"MLP layer {i} has weight shape {w.shape} and bias shape {b.shape}, which do not fit")
        if i > 0 and w.shape[0] != weights[i - 1].shape[1]:
            raise err(f"MLP layer {i} takes {w.shape[0]} inputs but layer {i - 1} gives "
                      f"{weights[i - 1].shape[1]}")


def _group_rng(random_state: int, g: int, stream: int) -> np.random.Generator:
    """Independent generator for group ``g``: stream 0 = initialisation, stream 1 = shuffling."""
    return np.random.default_rng([int(random_state), int(g), int(stream)])


def init_weights(layers: list[int], random_state: int, group_id: int = 0) -> MLPWeights:
    """Fresh weights as ``torch.nn.Linear``: W_l, b_l ~ U(−1/√fan_in, 1/√fan_in), drawn from
    ``default_rng([random_state, group_id, 0])``: exactly the initialisation :class:`BatchedMLP` gives
    group ``group_id`` (so a shared global model θ0 can be made without torch)."""
    rng = _group_rng(random_state, group_id, 0)
    ws, bs = [], []
    for fi, fo in zip(layers[:-1], layers[1:], strict=True):
        bound = 1.0 / math.sqrt(fi)
        ws.append(rng.uniform(-bound, bound, size=(fi, fo)).astype(np.float32))
        bs.append(rng.uniform(-bound, bound, size=fo).astype(np.float32))
    return MLPWeights(ws, bs)


def average_weights(models: list[MLPWeights], weights: np.ndarray | list[float]) -> MLPWeights:
    """``Σ_i w_i θ_i / Σ_i w_i`` layer by layer (FedAvg aggregation with ``w_i = n_i``)."""
    w = np.asarray(weights, dtype=np.float64)
    if len(models) == 0 or w.shape != (len(models),) or np.any(w < 0) or not w.sum() > 0:
        raise ConfigError("averaging needs one non-negative weight per model and a positive total")
    w = w / w.sum()
    layers = models[0].layers
    if any(m.layers != layers for m in models):
        raise ConfigError("only models with the same layers can be averaged")
    ws = [np.tensordot(w, np.stack([m.weights[i] for m in models]), axes=1) for i in range(len(layers) - 1)]
    bs = [np.tensordot(w, np.stack([m.biases[i] for m in models]), axes=1) for i in range(len(layers) - 1)]
    return MLPWeights(ws, bs)


def _loss_and_gradients(P: list, x, onehot, w) -> tuple:
    """One minibatch step's forward and backward pass for the batch's a groups at once: ``P`` the groups'
    parameters [W_1, b_1, …] (a, fan_in, fan_out) / (a, 1, fan_out), ``x`` their rows (a, B, D), ``onehot`` their
    labels (a, B, K), ``w`` each slot's weight 1/count (0 for padding) as (a, B, 1). Returns the cross-entropy of
    each slot (a, B) and the gradients of the weighted mean loss, in ``P``'s order. The gradient w.r.t. the logits
    is (softmax − onehot) · w (log_softmax over a 7-wide last axis is slow on CPU; this form is ~2× faster)."""
    import torch

    n_layers = len(P) // 2
    acts = [x]
    for i in range(n_layers):
        h = torch.baddbmm(P[2 * i + 1], acts[-1], P[2 * i])
        if i < n_layers - 1:
            h.clamp_(min=0.0)
        acts.append(h)
    z = acts[-1]
    z = z - z.amax(dim=2, keepdim=True)
    e = z.exp()
    tot = e.sum(dim=2, keepdim=True)
    ce = tot.squeeze(2).log() - (z * onehot).sum(dim=2)
    dz = (e.div_(tot) - onehot).mul_(w)
    grads: list = [None] * (2 * n_layers)
    for i in range(n_layers - 1, -1, -1):
        grads[2 * i] = torch.bmm(acts[i].transpose(1, 2), dz)
        grads[2 * i + 1] = dz.sum(dim=1, keepdim=True)
        if i > 0:
            dz = torch.ops.aten.threshold_backward(torch.bmm(dz, P[2 * i].transpose(1, 2)), acts[i], 0.0)
    return ce, grads


def _sgd_update(P: list, V: list, grads: list, anchors: list | None, *, lr: float, momentum: float,
                weight_decay: float, prox_mu: float) -> None:
    """SGD with momentum in place, as ``torch.optim.SGD`` (dampening 0): g += λθ + μ(θ − θ^anchor);
    v ← m·v + g; θ ← θ − η·v."""
    import torch

    if weight_decay > 0:
        torch._foreach_add_(grads, P, alpha=weight_decay)
    if prox_mu > 0:
        torch._foreach_add_(grads, torch._foreach_sub(P, anchors), alpha=prox_mu)
    torch._foreach_mul_(V, momentum)
    torch._foreach_add_(V, grads)
    torch._foreach_add_(P, V, alpha=-lr)


class BatchedMLP:
    """Train G independent MLP classifiers at once (see the module docstring for the maths).

    Parameters
    ----------
    hidden : hidden-layer widths (DC-CFL default ``(64, 32)``).
    lr, momentum, weight_decay : SGD settings ``η``, ``m``, ``λ`` (dampening 0, no Nesterov).
    batch_size : minibatch size; each group's last partial batch is kept.
    epochs : passes over each group's data.
    random_state : non-negative int; group ``g`` draws from ``default_rng([random_state, group_ids[g], ·])``.
    prox_mu : ``μ`` of the proximal term ``(μ/2)‖θ_g − anchor_g‖²``; 0 disables it.
    max_epoch_rows : when set, a group with more rows sees a fresh random subset of this many per epoch
        (bounds the SGD steps of a very large group; ``None`` = every row every epoch).

    Attributes
    ----------
    models_ : list of :class:`MLPWeights`, one per group, input padding stripped.
    loss_curve_ : array ``(epochs, G)``, mean cross-entropy over each group's rows per epoch
        (the proximal term excluded), measured during the epoch.
    n_classes_ : K.
    """

    def __init__(self, hidden: tuple[int, ...] = (64, 32), *, lr: float = 0.01, momentum: float = 0.5,
                 weight_decay: float = 0.0, batch_size: int = 32, epochs: int = 50, random_state: int = 0,
                 prox_mu: float = 0.0, max_epoch_rows: int | None = None):
        self.max_epoch_rows = max_epoch_rows
        self.hidden = hidden
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.batch_size = batch_size
        self.epochs = epochs
        self.random_state = random_state
        self.prox_mu = prox_mu

    # ------------------------------------------------------------------ validation
    def _check_settings(self) -> None:
        if any(int(h) < 1 for h in self.hidden):
            raise ConfigError(f"hidden layer widths must be positive, got {tuple(self.hidden)}")
        if not self.lr > 0:
            raise ConfigError(f"the learning rate must be positive, got {self.lr}")
        if not 0 <= self.momentum < 1:
            raise ConfigError(f"momentum must lie in [0, 1), got {self.momentum}")
        if self.weight_decay < 0 or self.prox_mu < 0:
            raise ConfigError("weight decay and the proximal coefficient must be non-negative")
        if int(self.batch_size) < 1 or int(self.epochs) < 1:
            raise ConfigError(f"batch size and epochs must be at least 1, got {self.batch_size} and "
                              f"{self.epochs}")
        if not isinstance(self.random_state, int | np.integer) or self.random_state < 0:
            raise ConfigError(f"random_state must be a non-negative integer, got {self.random_state!r}")

    @staticmethod
    def _check_models(models: list[MLPWeights], layers: list[list[int]], what: str) -> None:
        if len(models) != len(layers):
            raise ConfigError(f"{what} has {len(models)} models for {len(layers)} groups")
        for g, (m, want) in enumerate(zip(models, layers, strict=True)):
            if m.layers != want:
                raise ConfigError(f"{what} model {g} has layers {m.layers}, the group needs {want}")

    # ------------------------------------------------------------------ training
    def fit(self, groups: list[tuple[np.ndarray, np.ndarray]], n_classes: int, *,
            init: list[MLPWeights] | None = None, anchor: list[MLPWeights] | None = None,
            control: JobControl | None = None,
            on_epoch: Callable[[int, np.ndarray], None] | None = None,
            group_ids: list[int] | None = None) -> BatchedMLP:
        """Train one model per ``groups[g] = (X_g (n_g, d_g), y_g ∈ [0, K))``.

        ``init`` starts group g from the given weights (e.g. the global model of a FedAvg round);
        otherwise layer weights and biases are drawn from U(−1/√fan_in, 1/√fan_in) with the group's true
        fan_in (as ``torch.nn.Linear``). ``anchor`` is ``θ^anchor`` of the proximal term and defaults to
        ``init``. ``on_epoch(epoch, losses)`` is called after each epoch (``epoch`` counts from 0,
        ``losses`` has shape (G,)); ``control.step`` is called each epoch and raises
        :class:`~core.errors.Cancelled` when the job was cancelled. ``group_ids[g]`` (default ``g``) is
        the id that seeds group g's initialisation and shuffle, so group 3 trained alone with
        ``group_ids=[3]`` gives the same model as group 3 inside a batch.
        """
        import torch

        # One intra-op thread: these are many tiny matrix products, for which OpenMP workers only add
        # synchronisation, and on a busy machine spinning workers slow a fit down by an order of magnitude.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self._fit(groups, n_classes, init, anchor, control, on_epoch, group_ids)
        finally:
            torch.set_num_threads(threads)

    @staticmethod
    def _checked_groups(groups, K: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Each group's rows as float32 and labels as int64, refused (one sentence naming the group) when empty,
        not one integer label in [0, K) per row, or not finite."""
        if len(groups) == 0:
            raise ConfigError("there is nothing to train: no groups were given")
        Xs, ys = [], []
        for g, (X, y) in enumerate(groups):
            X = np.asarray(X, dtype=np.float32)
            y = np.asarray(y)
            if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
                raise ConfigError(f"group {g} has data of shape {X.shape}; it needs at least one row and "
                                  "one feature")
            if y.shape != (X.shape[0],) or (y.size and y.dtype.kind not in "iu"):
                raise ConfigError(f"group {g} needs one integer label per row")
            if y.min() < 0 or y.max() >= K:
                raise ConfigError(f"group {g} has labels outside [0, {K})")
            if not np.all(np.isfinite(X)):
                raise ConfigError(f"group {g} has NaN or infinite feature values")
            Xs.append(X)
            ys.append(y.astype(np.int64))
        return Xs, ys

    @staticmethod
    def _seed_ids(group_ids, G: int) -> list[int]:
        """The id that seeds each group's initialisation and shuffle (default: its position)."""
        ids = list(range(G)) if group_ids is None else [int(i) for i in group_ids]
        if len(ids) != G or min(ids) < 0:
            raise ConfigError(f"group_ids needs {G} non-negative integers, got {group_ids!r}")
        return ids

    def _checked_start(self, init, anchor, layers_g: list[list[int]]):
        """``init`` checked against each group's layers, and the proximal term's anchor (default ``init``)."""
        if init is not None:
            self._check_models(init, layers_g, "init")
        if anchor is None:
            anchor = init
        if self.prox_mu > 0:
            if anchor is None:
                raise ConfigError("a proximal term (prox_mu > 0) needs anchor or init weights")
            self._check_models(anchor, layers_g, "anchor")
        return anchor

    def _fit(self, groups, n_classes, init, anchor, control, on_epoch, group_ids) -> BatchedMLP:
        import torch

        self._check_settings()
        control = ensure(control)
        K = int(n_classes)
        if K < 2:
            raise ConfigError(f"a classifier needs at least 2 classes, got {n_classes}")
        Xs, ys = self._checked_groups(groups, K)
        G = len(Xs)
        ids = self._seed_ids(group_ids, G)
        hidden = [int(h) for h in self.hidden]
        layers_g = [[X.shape[1], *hidden, K] for X in Xs]
        D = max(X.shape[1] for X in Xs)
        dims = [D, *hidden, K]
        anchor = self._checked_start(init, anchor, layers_g)

        # Groups are processed largest first, so the groups that still have rows in step b of an epoch
        # are always a prefix 0..a_b−1 of that order and every step computes on slices (views) only:
        # no padded work for groups that are done, and a done group's parameters and momentum are not
        # touched. Position p in this order holds the caller's group ``perm[p]``.
        n_orig = np.array([X.shape[0] for X in Xs])
        perm = np.argsort(-n_orig, kind="stable")
        Xs, ys = [Xs[g] for g in perm], [ys[g] for g in perm]
        ids_sorted = [ids[g] for g in perm]
        start = init if init is not None else self._fresh_init(layers_g, ids)
        # Parameters (G, fan_in, fan_out) and (G, 1, fan_out); the input rows beyond d_g stay zero.
        params = self._stack([start[g] for g in perm], dims)
        anchors = self._stack([anchor[g] for g in perm], dims) if self.prox_mu > 0 else None
        bufs = [torch.zeros_like(p) for p in params]

        # All rows, zero-padded to D columns, plus one dummy row that padded batch slots point to.
        n = np.array([X.shape[0] for X in Xs])
        offsets = np.concatenate([[0], np.cumsum(n)[:-1]])
        dummy = int(n.sum())
        Xflat = torch.zeros((dummy + 1, D), dtype=torch.float32)
        for X, o in zip(Xs, offsets, strict=True):
            Xflat[o: o + X.shape[0], : X.shape[1]] = torch.from_numpy(X)
        yflat = torch.from_numpy(np.concatenate([*ys, [0]]))
        del Xs

        B = int(self.batch_size)
        cap = None if not self.max_epoch_rows else int(self.max_epoch_rows)
        n_ep = n if cap is None else np.minimum(n, cap)      # rows a group sees per epoch
        nb = -(-n_ep // B)                                   # batches per group per epoch (non-increasing)
        max_nb = int(nb.max())
        n_active = (nb[None, :] > np.arange(max_nb)[:, None]).sum(axis=1)           # a_b: groups in step b
        # Step-major ragged layout: step b holds a_b blocks of B slots (group p's block at p·B), so memory is
        # Σ_g nb_g·B slots, not max_nb·G·B (which is huge when one big group meets many small ones).
        step_off = np.concatenate([[0], np.cumsum(n_active * B)[:-1]])
        total = int(n_active.sum() * B)
        pos = [(step_off[: nb[p]] + p * B)[:, None] + np.arange(B)[None, :] for p in range(G)]
        w_np = np.zeros(total, dtype=np.float32)
        for p in range(G):
            c = np.clip(n_ep[p] - B * np.arange(nb[p]), 0, B)                           # rows in each step
            w_np[pos[p].ravel()] = np.where(np.arange(B)[None, :] < c[:, None], 1.0 / c[:, None], 0.0).ravel()
        step_w = torch.from_numpy(w_np)
        full = torch.from_numpy((w_np > 0).astype(np.float32))
        shuffles = [_group_rng(self.random_state, i, 1) for i in ids_sorted]
        lr, mom, wd, mu = float(self.lr), float(self.momentum), float(self.weight_decay), float(self.prox_mu)
        epochs = int(self.epochs)
        curve = np.zeros((epochs, G))
        eye = torch.eye(K, dtype=torch.float32)

        control.step(0.0, "training")
        with torch.no_grad():
            for epoch in range(epochs):
                # This epoch's slots: group p's shuffled rows (a fresh cap-sized subset when capped), then the
                # dummy row in its last batch's padding.
                order = np.full(total, dummy, dtype=np.int64)
                for p in range(G):
                    rows = shuffles[p].permutation(n[p])[: n_ep[p]]
                    order[pos[p].ravel()[: n_ep[p]]] = offsets[p] + rows
                idx = torch.from_numpy(order)
                epoch_loss = torch.zeros(G)
                for b in range(max_nb):
                    a = int(n_active[b])
                    lo, hi = int(step_off[b]), int(step_off[b]) + a * B
                    ib = idx[lo:hi]
                    P = [p[:a] for p in params]
                    onehot = eye.index_select(0, yflat.index_select(0, ib)).view(a, B, K)
                    ce, grads = _loss_and_gradients(P, Xflat.index_select(0, ib).view(a, B, D), onehot,
                                                    step_w[lo:hi].view(a, B, 1))
                    epoch_loss[:a] += (ce * full[lo:hi].view(a, B)).sum(dim=1)
                    _sgd_update(P, [v[:a] for v in bufs], grads, None if anchors is None else [q[:a] for q in anchors],
                                lr=lr, momentum=mom, weight_decay=wd, prox_mu=mu)
                curve[epoch, perm] = epoch_loss.numpy() / n_ep
                if on_epoch is not None:
                    on_epoch(epoch, curve[epoch].copy())
                control.step((epoch + 1) / epochs, f"epoch {epoch + 1} of {epochs}")

        self.n_classes_ = K
        self.loss_curve_ = curve
        exported = self._export(params, [layers_g[g] for g in perm])
        models: list[MLPWeights] = [None] * G  # type: ignore[list-item]
        for p, g in enumerate(perm):
            models[g] = exported[p]
        self.models_ = models
        return self

    def _fresh_init(self, layers_g: list[list[int]], ids: list[int] | None = None) -> list[MLPWeights]:
        """U(−1/√fan_in, 1/√fan_in) for weights and biases, group g seeded by (random_state, ids[g], 0)."""
        ids = list(range(len(layers_g))) if ids is None else ids
        return [init_weights(layers, self.random_state, g) for g, layers in zip(ids, layers_g, strict=True)]

    @staticmethod
    def _stack(models: list[MLPWeights], dims: list[int]) -> list[torch.Tensor]:
        """[W_0, b_0, W_1, b_1, …] as (G, fan_in, fan_out) / (G, 1, fan_out) tensors, W_0 zero-padded."""
        import torch

        G = len(models)
        out = []
        for i, (fi, fo) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
            W = np.zeros((G, fi, fo), dtype=np.float32)
            bias = np.zeros((G, 1, fo), dtype=np.float32)
            for g, m in enumerate(models):
                W[g, : m.weights[i].shape[0]] = m.weights[i]
                bias[g, 0] = m.biases[i]
            out += [torch.from_numpy(W), torch.from_numpy(bias)]
        return out

    @staticmethod
    def _export(params: list[torch.Tensor], layers_g: list[list[int]]) -> list[MLPWeights]:

        arrays = [p.detach().numpy() for p in params]
        models = []
        for g, layers in enumerate(layers_g):
            ws = [arrays[2 * i][g].copy() for i in range(len(layers) - 1)]
            ws[0] = ws[0][: layers[0]]
            bs = [arrays[2 * i + 1][g, 0].copy() for i in range(len(layers) - 1)]
            models.append(MLPWeights(ws, bs))
        return models

    # ------------------------------------------------------------------ use
    def _fitted(self) -> list[MLPWeights]:
        if not hasattr(self, "models_"):
            raise ConfigError("this BatchedMLP is not fitted yet; call fit() first")
        return self.models_

    def predict_proba(self, g: int, X: np.ndarray) -> np.ndarray:
        """Class probabilities of group ``g``'s model, shape ``(n, K)``."""
        return self._fitted()[g].predict_proba(X)

    def predict(self, g: int, X: np.ndarray) -> np.ndarray:
        """Predicted class indices of group ``g``'s model."""
        return self._fitted()[g].predict(X)
