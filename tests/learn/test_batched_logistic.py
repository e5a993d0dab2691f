"""Many small logistic regressions at once (issue #36, core/learn/batched_logistic.py).

The module's claims, tested here: :func:`lbfgs_batch` is :func:`core.learn.local_model.lbfgs` run for every problem
at once — each problem takes the steps it would take alone and leaves the batch when it stops — and
:func:`fit_local_models` is :func:`core.learn.local_model.fit_local_model` with ``standardise=False`` on every row
of each problem (rows padded with weight 0, batches of :data:`BATCH`, grouped by width), the same models to rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

from core.learn.batched_logistic import BATCH, fit_local_models, lbfgs_batch
from core.learn.local_model import fit_local_model, lbfgs, local_predict_proba

TOL = 1e-8


# ------------------------------------------------------------------------------------------ lbfgs_batch alone
class _Problems:
    """P independent smooth problems; ``single(p)`` is problem p's ``fun(x) → (f, ∇f)`` for :func:`lbfgs`, and
    the instance is the batched ``fun(idx, X)`` for :func:`lbfgs_batch` (each problem evaluated by the very same
    single function, so any difference comes from the batched L-BFGS). It counts each problem's evaluations."""

    def __init__(self, funs):
        self.funs = funs
        self.calls = np.zeros(len(funs), np.int64)

    def single(self, p):
        return self.funs[p]

    def __call__(self, idx, X):
        assert X.shape == (len(idx), X.shape[1])
        assert np.all(np.diff(idx) > 0), "problems of a batch call come in order, each once"
        f = np.empty(len(idx))
        g = np.empty_like(X)
        for r, p in enumerate(idx):
            self.calls[p] += 1
            f[r], g[r] = self.funs[p](X[r].copy())
        return f, g


def _quadratic(A, b, c=0.0):
    def fun(x):
        Ax = A @ x
        return float(0.5 * x @ Ax - b @ x + c), Ax - b
    return fun


def _logistic(Z, y, lam):
    """Binary logistic loss with a ridge: Σ log(1 + e^{−y z·x}) + (λ/2)‖x‖², y ∈ {−1, 1}."""
    def fun(x):
        m = y * (Z @ x)
        f = float(np.logaddexp(0.0, -m).sum() + 0.5 * lam * x @ x)
        s = -y * np.exp(-np.logaddexp(0.0, m))
        return f, Z.T @ s + lam * x
    return fun


def _rosenbrock(scale):
    def fun(x):
        a, b = x[:-1], x[1:]
        f = float(scale * ((1 - a) ** 2 + 100 * (b - a * a) ** 2).sum())
        g = np.zeros_like(x)
        g[:-1] += scale * (-2 * (1 - a) - 400 * a * (b - a * a))
        g[1:] += scale * 200 * (b - a * a)
        return f, g
    return fun


def _mixed_problems(m=6, seed=0):
    """Problems that stop at very different iterations: a well-conditioned quadratic (a few steps), an
    ill-conditioned one (more steps than the memory of 10), logistic regressions, Rosenbrock valleys (many
    backtracking steps) and one problem that starts at its minimum."""
    rng = np.random.default_rng(seed)
    funs, starts = [], []
    for cond in (1.0, 3.0, 1e3, 1e5):
        Q = np.linalg.qr(rng.normal(size=(m, m)))[0]
        A = Q @ np.diag(np.geomspace(1.0, cond, m)) @ Q.T
        funs.append(_quadratic(A, rng.normal(size=m)))
        starts.append(rng.normal(size=m))
    for n in (20, 80):
        Z = rng.normal(size=(n, m))
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        funs.append(_logistic(Z, y, 1.0))
        starts.append(np.zeros(m))
    for scale in (1.0, 0.01):
        funs.append(_rosenbrock(scale))
        starts.append(np.full(m, -1.2) + 0.1 * rng.normal(size=m))
    # already converged: the start is the quadratic's minimiser (gradient exactly 0)
    A = np.diag(np.arange(1.0, m + 1))
    x_star = rng.normal(size=m)
    funs.append(_quadratic(A, A @ x_star))
    starts.append(x_star.copy())
    return funs, np.array(starts)


def _alone(funs, starts, **kw):
    return np.array([lbfgs(f, s.copy(), **kw) for f, s in zip(funs, starts, strict=True)])


def test_lbfgs_batch_gives_every_problem_its_own_answer():
    funs, starts = _mixed_problems()
    batch = _Problems(funs)
    got = lbfgs_batch(batch, starts)
    want = _alone(funs, starts)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    # the problems did stop at different iterations (else the test would not test leaving the batch)
    assert len(set(batch.calls.tolist())) >= 4, batch.calls
    assert batch.calls.max() > 30  # some problem ran past the memory of 10 pairs


def test_lbfgs_batch_leaves_a_converged_start_untouched_and_stops_evaluating_it():
    funs, starts = _mixed_problems()
    batch = _Problems(funs)
    got = lbfgs_batch(batch, starts)
    assert np.array_equal(got[-1], starts[-1])
    assert batch.calls[-1] == 1  # only the first evaluation of every problem
    assert batch.calls[:-1].min() > 1


def test_lbfgs_batch_does_not_modify_its_start():
    funs, starts = _mixed_problems()
    before = starts.copy()
    lbfgs_batch(_Problems(funs), starts)
    assert np.array_equal(starts, before)


@pytest.mark.parametrize("max_iter", [1, 2, 5, 13])
def test_lbfgs_batch_stops_after_max_iter_steps_as_alone(max_iter):
    funs, starts = _mixed_problems(seed=1)
    got = lbfgs_batch(_Problems(funs), starts, max_iter=max_iter)
    np.testing.assert_allclose(got, _alone(funs, starts, max_iter=max_iter), rtol=0, atol=TOL)


@pytest.mark.parametrize(("memory", "gtol"), [(1, 1e-5), (3, 1e-8), (10, 1e-3)])
def test_lbfgs_batch_memory_and_tolerance_as_alone(memory, gtol):
    """Step for step on every problem (the first 15 steps, before rounding is amplified by the ill-conditioned
    ones), and to the end on the well-conditioned ones (the quadratics of condition ≤ 3, the ridge logistic
    regressions and the converged start)."""
    funs, starts = _mixed_problems(seed=2)
    for max_iter in (1, 4, 15):
        got = lbfgs_batch(_Problems(funs), starts, memory=memory, gtol=gtol, max_iter=max_iter)
        want = _alone(funs, starts, memory=memory, gtol=gtol, max_iter=max_iter)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)
    easy = [0, 1, 4, 5, 8]
    funs, starts = [funs[p] for p in easy], starts[easy]
    got = lbfgs_batch(_Problems(funs), starts, memory=memory, gtol=gtol)
    np.testing.assert_allclose(got, _alone(funs, starts, memory=memory, gtol=gtol), rtol=0, atol=TOL)


def test_lbfgs_batch_answer_of_a_problem_does_not_depend_on_its_company():
    funs, starts = _mixed_problems(seed=3)
    full = lbfgs_batch(_Problems(funs), starts)
    for p in (0, 3, 6):
        alone = lbfgs_batch(_Problems([funs[p]]), starts[p:p + 1])
        np.testing.assert_allclose(alone[0], full[p], rtol=0, atol=TOL)


def test_lbfgs_batch_reaches_the_minimum():
    """Not only equal to lbfgs: both actually minimise (the quadratics' minimisers are known)."""
    rng = np.random.default_rng(4)
    funs, starts, sols = [], [], []
    for _ in range(5):
        M = rng.normal(size=(5, 5))
        A = M @ M.T + np.eye(5)
        b = rng.normal(size=5)
        funs.append(_quadratic(A, b))
        starts.append(rng.normal(size=5))
        sols.append(np.linalg.solve(A, b))
    got = lbfgs_batch(_Problems(funs), np.array(starts), gtol=1e-12)
    np.testing.assert_allclose(got, np.array(sols), atol=1e-8)


# ------------------------------------------------------------------------------------------ fit_local_models
def _data(rng, n, m, K, shift=1.0, classes=None):
    classes = np.arange(K) if classes is None else np.asarray(classes)
    y = rng.choice(classes, n)
    centres = rng.normal(0, shift, size=(K, m))
    X = centres[y] + rng.normal(size=(n, m)) + rng.normal(0, 3, size=m)  # off-centre: the centring matters
    return X, y


def _reference(Xs, ys, K, **kw):
    return [fit_local_model(X, y, K, standardise=False, max_rows=10**9, **kw) for X, y in zip(Xs, ys, strict=True)]


def _assert_models_equal(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert set(g) == {"local_w", "local_b", "local_mean", "local_scale"}
        for k in ("local_w", "local_b", "local_mean", "local_scale"):
            assert g[k].shape == w[k].shape, k
            np.testing.assert_allclose(g[k], w[k], rtol=TOL, atol=TOL, err_msg=k)


@pytest.mark.parametrize("K", [2, 3, 5])
def test_fit_local_models_equals_fit_local_model_unstandardised(K):
    rng = np.random.default_rng(K)
    sizes = [7, 30, 31, 60, 120, 45, 12, 200]     # unequal: every problem but the longest is padded
    Xs, ys = zip(*(_data(rng, n, 4, K) for n in sizes), strict=True)
    got = fit_local_models(list(Xs), list(ys), K)
    _assert_models_equal(got, _reference(Xs, ys, K))
    assert all(np.array_equal(g["local_scale"], np.ones(4)) for g in got)


def test_the_two_class_penalty_is_doubled_as_in_fit_local_model():
    """With two classes λ is doubled; checked against the reference and against the halved fit being different."""
    rng = np.random.default_rng(10)
    Xs, ys = zip(*(_data(rng, n, 3, 2) for n in (25, 40)), strict=True)
    got = fit_local_models(list(Xs), list(ys), 2, lam=0.7)
    _assert_models_equal(got, _reference(Xs, ys, 2, lam=0.7))
    other = _reference(Xs, ys, 2, lam=0.35)
    assert not np.allclose(got[0]["local_w"], other[0]["local_w"], atol=1e-4)


@pytest.mark.parametrize("lam", [0.01, 5.0])
def test_fit_local_models_passes_the_penalty(lam):
    rng = np.random.default_rng(11)
    Xs, ys = zip(*(_data(rng, n, 5, 3) for n in (30, 50, 80)), strict=True)
    _assert_models_equal(fit_local_models(list(Xs), list(ys), 3, lam=lam), _reference(Xs, ys, 3, lam=lam))


@pytest.mark.parametrize("max_iter", [1, 3, 8])
def test_fit_local_models_stops_each_problem_after_max_iter_as_alone(max_iter):
    rng = np.random.default_rng(12)
    Xs, ys = zip(*(_data(rng, n, 6, 4, shift=2.0) for n in (20, 90, 150)), strict=True)
    _assert_models_equal(fit_local_models(list(Xs), list(ys), 4, max_iter=max_iter),
                         _reference(Xs, ys, 4, max_iter=max_iter))


def test_padding_rows_do_not_change_a_problem():
    """A short problem fitted beside a long one (so padded with rows of weight 0) gets what it gets alone."""
    rng = np.random.default_rng(13)
    Xs_short, y_short = _data(rng, 9, 4, 3)
    X_long, y_long = _data(rng, 400, 4, 3)
    together = fit_local_models([Xs_short, X_long], [y_short, y_long], 3)
    alone = fit_local_models([Xs_short], [y_short], 3)
    _assert_models_equal(together[:1], alone)
    _assert_models_equal(together[:1], _reference([Xs_short], [y_short], 3))


def test_problems_stopping_at_different_iterations_and_one_already_converged():
    """An easy problem (few steps), hard ones (separable-ish classes, many steps) and one whose zero start is the
    optimum: balanced classes, each class's centred rows summing to zero, so the gradient at 0 is exactly 0."""
    rng = np.random.default_rng(14)
    m, K = 3, 3
    easy = _data(rng, 50, m, K, shift=0.05)
    hard = _data(rng, 60, m, K, shift=4.0)
    hard2 = _data(rng, 15, m, K, shift=6.0)
    v = rng.normal(size=(4, m))
    Xc = np.vstack([np.vstack([v, -v]) for _ in range(K)]) + 2.5   # every class: ±v around the same mean
    yc = np.repeat(np.arange(K), 8)
    Xs, ys = [easy[0], hard[0], Xc, hard2[0]], [easy[1], hard[1], yc, hard2[1]]
    got = fit_local_models(Xs, ys, K)
    _assert_models_equal(got, _reference(Xs, ys, K))
    assert np.array_equal(got[2]["local_w"], np.zeros((m, K))) and np.array_equal(got[2]["local_b"], np.zeros(K))


def test_more_problems_than_a_batch_of_mixed_widths_in_input_order():
    """More than BATCH problems of one width (several batches), problems of other widths between them, and the
    answers returned in the order asked, whatever order the batches were formed in."""
    rng = np.random.default_rng(15)
    widths = [3] * (2 * BATCH + 5) + [5] * 7 + [2] * 3
    order = rng.permutation(len(widths))
    Xs, ys = [], []
    for p in order:
        X, y = _data(rng, int(rng.integers(8, 60)), widths[p], 3)
        Xs.append(X)
        ys.append(y)
    got = fit_local_models(Xs, ys, 3)
    _assert_models_equal(got, _reference(Xs, ys, 3))
    assert [g["local_w"].shape[0] for g in got] == [widths[p] for p in order]


def test_a_class_absent_from_a_problem():
    rng = np.random.default_rng(16)
    X1, y1 = _data(rng, 40, 4, 4, classes=[0, 2, 3])
    X3, y3 = _data(rng, 70, 4, 4)
    Xs, ys = [X1, X3], [y1, y3]
    got = fit_local_models(Xs, ys, 4)
    _assert_models_equal(got, _reference(Xs, ys, 4))
    assert got[0]["local_b"][1] < got[0]["local_b"][[0, 2, 3]].min() - 5


def test_a_single_class_problem_predicts_as_alone():
    """One class only: the loss has no minimum (the unpenalised intercepts run off), so the two runs' rounding
    ends them at different points of a flat valley; what they predict must still agree."""
    rng = np.random.default_rng(16)
    X1, y1 = _data(rng, 40, 4, 4, classes=[0, 2, 3])
    X2, y2 = _data(rng, 25, 4, 4, classes=[1])
    got = fit_local_models([X1, X2], [y1, y2], 4)[1]
    want = _reference([X2], [y2], 4)[0]
    Xt = rng.normal(0, 3, size=(50, 4))
    np.testing.assert_allclose(local_predict_proba(got, Xt), local_predict_proba(want, Xt), rtol=0, atol=1e-6)
    assert local_predict_proba(got, Xt)[:, 1].min() > 1 - 1e-5


def test_fit_local_models_minimises_the_documented_objective():
    """Independently of local_model: the answer is a stationary point of the module docstring's f_p."""
    rng = np.random.default_rng(17)
    K, m = 3, 4
    X, y = _data(rng, 80, m, K)
    got = fit_local_models([X], [y], K, max_iter=500)[0]
    Z = X - X.mean(axis=0)
    W, b = got["local_w"], got["local_b"]
    s = Z @ W + b
    P = np.exp(s - s.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    G = P - np.eye(K)[y]
    gW, gb = Z.T @ G + 1.0 * W, G.sum(axis=0)
    f = -np.log(P[np.arange(len(y)), y]).sum() + 0.5 * (W * W).sum()
    assert np.abs(np.concatenate([gW.ravel(), gb])).max() <= 1e-5 * max(1.0, f) * 1.0001
    np.testing.assert_allclose(got["local_mean"], X.mean(axis=0), rtol=0, atol=1e-12)
