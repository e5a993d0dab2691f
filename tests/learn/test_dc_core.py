"""DC core: private reductions, alignment, anchors, label-distribution clustering."""

import numpy as np
import pytest

from core.errors import ConfigError, FormatError
from core.formats.anchor import AnchorFile, extended_smote, make_anchor
from core.learn.alignment import DCAlignment
from core.learn.client_clustering import LabelDistributionClustering, tv_distances
from core.learn.reduction import AffineMap, PrivateReduction


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    latent = rng.standard_normal((400, 4))
    X = latent @ rng.standard_normal((4, 8)) + 0.01 * rng.standard_normal((400, 8)) + rng.uniform(-5, 5, 8)
    return X


@pytest.mark.parametrize("method", ["pca", "lpp", "random"])
def test_reduction_is_affine_and_stored_as_two_arrays(data, method):
    red = PrivateReduction(method, random_state=1).fit(data)
    assert red.map_.n_components == data.shape[1]  # 8 ≤ 15 columns: every dimension (default_dimension)
    again = AffineMap.from_arrays(red.map_.to_arrays())
    np.testing.assert_allclose(again.transform(data), red.transform(data))
    # affine: f(a x + (1-a) z) = a f(x) + (1-a) f(z)
    a = 0.3
    np.testing.assert_allclose(red.transform(a * data[:5] + (1 - a) * data[5:10]),
                               a * red.transform(data[:5]) + (1 - a) * red.transform(data[5:10]), atol=1e-9)


def test_pca_default_keeps_variance_and_checks_dimension(data):
    red = PrivateReduction("pca").fit(data)
    Z = red.transform(data)
    assert np.allclose(Z.mean(axis=0), 0, atol=1e-9)  # standardised then centred
    with pytest.raises(ConfigError):
        PrivateReduction("pca", n_components=20).fit(data)
    with pytest.raises(ConfigError):
        PrivateReduction("nope").fit(data)


@pytest.mark.parametrize("standardise", [True, False])
def test_pca_reports_the_share_of_variance_it_keeps(standardise):
    """variance_kept_ = 1 − (smallest eigenvalue / trace) of the correlation (or, unstandardised, the
    covariance) matrix for m̃ = m − 1, and the kept rows' variance really is that share."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((500, 4)) * [1.0, 3.0, 0.5, 10.0] + [1, 2, 3, 4]
    red = PrivateReduction("pca", n_components=3, standardise=standardise).fit(X)
    Xs = (X - X.mean(0)) / (X.std(0) if standardise else 1.0)
    lam = np.linalg.eigvalsh(np.cov(Xs, rowvar=False, bias=True))
    assert red.variance_kept_ == pytest.approx(1 - lam.min() / lam.sum(), rel=1e-9)
    assert red.variance_kept_ == pytest.approx(red.transform(X).var(axis=0).sum() / Xs.var(axis=0).sum(), rel=1e-9)
    assert PrivateReduction("random", random_state=0).fit(X).variance_kept_ is None


def test_linear_alignment_recovers_common_space_from_different_private_maps(data):
    """Two sites with different PCA maps of the same kind of data: after alignment their images of the
    same points coincide (Imakura & Sakurai: exact when the maps share their range)."""
    rng = np.random.default_rng(3)
    anchor = rng.uniform(data.min(0), data.max(0), size=(300, data.shape[1]))
    maps = [PrivateReduction("pca").fit(data[:200]), PrivateReduction("pca").fit(data[200:])]
    al = DCAlignment(affine=True).fit([m.transform(anchor) for m in maps])
    probe = data[:50]
    h0 = al.transform(0, maps[0].transform(probe))
    h1 = al.transform(1, maps[1].transform(probe))
    rel = np.linalg.norm(h0 - h1) / np.linalg.norm(h0)
    assert rel < 0.05
    # linear alignment on centred maps is worse but still brings them together
    lin = DCAlignment(affine=False).fit([m.transform(anchor) for m in maps])
    assert lin.dim_ >= 1 and all(m.g.sum() == 0 for m in lin.mappings_)


def test_alignment_threshold_and_scale():
    rng = np.random.default_rng(0)
    A = [rng.standard_normal((50, 3)) for _ in range(3)]
    full = DCAlignment(threshold=1e-2).fit(A)
    cut = DCAlignment(threshold=0.5, relative=True).fit(A)
    assert cut.dim_ <= full.dim_ and np.all(full.singular_values_[: full.dim_] >= 1e-2)
    sv = DCAlignment(scale="singular").fit(A)
    # C = Σ₁ rescales the target columns by the singular values
    np.testing.assert_allclose(np.linalg.norm(A[0] @ sv.mappings_[0].G, axis=0)[0] /
                               np.linalg.norm(A[0] @ full.mappings_[0].G, axis=0)[0],
                               full.singular_values_[0], rtol=0.2)
    with pytest.raises(FormatError):
        DCAlignment().fit([A[0], A[1][:10]])


def test_extended_smote_stays_near_seeds_and_is_deterministic():
    rng = np.random.default_rng(0)
    P = rng.standard_normal((20, 3)) * [1, 10, 100]
    out = extended_smote(P, 100, k=5, a=1.5, rng=np.random.default_rng(1))
    assert out.shape == (100, 3)
    again = extended_smote(P, 100, k=5, a=1.5, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(out, again)
    assert np.all(np.abs(out.mean(0) - P.mean(0)) < 3 * P.std(0))


def test_anchor_file_round_trip_and_generation(tmp_path):
    names = ["a", "b", "c"]
    X = np.random.default_rng(0).standard_normal((30, 3))
    for kind in ("uniform", "gaussian", "smote"):
        anc = make_anchor("f" * 32, names, kind=kind, rows=60, local_X=X, seed_rows=X[:10])
        anc.save(tmp_path / f"{kind}.dcanchor")
        back = AnchorFile.load(tmp_path / f"{kind}.dcanchor", expect_project="f" * 32)
        np.testing.assert_array_equal(back.generate(), anc.generate())
        assert back.generate().shape[1] == 3
    with pytest.raises(FormatError):
        AnchorFile.load(tmp_path / "smote.dcanchor", expect_project="e" * 32)
    other = make_anchor("f" * 32, names, kind="uniform", rows=60, local_X=X)
    assert not np.array_equal(other.generate(), AnchorFile.load(tmp_path / "uniform.dcanchor").generate())
    assert other.id_hash_key() != AnchorFile.load(tmp_path / "uniform.dcanchor").id_hash_key()


def test_tv_complete_linkage_cut_keeps_every_within_cluster_pair_below_t():
    rng = np.random.default_rng(5)
    counts = rng.integers(0, 50, size=(30, 5))
    counts[:, 0] += 1
    for t in (0.1, 0.3, 0.5, 0.7):
        clus = LabelDistributionClustering(t=t).fit(counts)
        D = clus.distances_
        for c in np.unique(clus.labels_):
            members = np.flatnonzero(clus.labels_ == c)
            assert D[np.ix_(members, members)].max() <= t + 1e-12
    P = counts / counts.sum(1, keepdims=True)
    D = tv_distances(P)
    assert np.allclose(D, D.T) and np.all(D >= 0) and np.all(D <= 1) and np.allclose(np.diag(D), 0)


def test_label_clustering_separates_opposite_groups():
    counts = np.array([[90, 10], [85, 15], [80, 20], [10, 90], [15, 85]])
    clus = LabelDistributionClustering(t=0.3).fit(counts)
    assert len(set(clus.labels_[:3])) == 1 and len(set(clus.labels_[3:])) == 1
    assert clus.labels_[0] != clus.labels_[3]


def test_pca_matches_scikit_learn_on_standardised_data(data):
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    Z = StandardScaler().fit_transform(data)
    ref = PCA(n_components=5).fit(Z)
    ours = PrivateReduction("pca", n_components=5).fit(data).transform(data)
    expected = ref.transform(Z)
    # the same subspace and coordinates up to the sign of each component
    for j in range(5):
        assert min(np.abs(ours[:, j] - expected[:, j]).max(), np.abs(ours[:, j] + expected[:, j]).max()) < 1e-8


def test_reduction_in_row_blocks_on_threads_matches_one_product(monkeypatch):
    """The moments and the reduction run over row blocks on two threads: the same numbers as one product
    over all rows, the same bytes on every call, and ``rows`` = a permutation scatters rather than gathers."""
    from core.learn import reduction

    monkeypatch.setattr(reduction, "_CHUNK", 64)  # 1,000 rows: 16 blocks shared by the threads
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1000, 6)) * rng.uniform(0.5, 20, 6) + rng.uniform(-50, 50, 6)
    red = PrivateReduction(n_components=5, random_state=0).fit(X)
    mean = X.mean(axis=0)
    np.testing.assert_allclose(red.map_.offset, mean, rtol=1e-12)
    Z = (X - mean) / X.std(axis=0)
    assert red.variance_kept_ == pytest.approx(
        np.sort(np.linalg.eigvalsh(np.cov(Z.T, bias=True)))[1:].sum() / 6, rel=1e-10)
    direct = (X - red.map_.offset) @ red.map_.matrix
    perm = rng.permutation(1000)
    shuffled = red.transform(X, rows=perm)
    np.testing.assert_allclose(shuffled, direct[perm], rtol=1e-12, atol=1e-12)
    assert red.transform(X, rows=perm).tobytes() == shuffled.tobytes()
    subset = np.array([5, 5, 999, 0])  # not a permutation: the rows are gathered
    np.testing.assert_allclose(red.transform(X, rows=subset), direct[subset], rtol=1e-12, atol=1e-12)
    again = PrivateReduction(n_components=5, random_state=0).fit(X)
    assert again.map_.matrix.tobytes() == red.map_.matrix.tobytes()  # block order, not thread timing


def test_default_dimension_keeps_small_tables_whole():
    from core.learn.reduction import FULL_DIMENSION_MAX, default_dimension

    assert [default_dimension(m) for m in (1, 2, 4, FULL_DIMENSION_MAX)] == [1, 2, 4, FULL_DIMENSION_MAX]
    assert default_dimension(FULL_DIMENSION_MAX + 1) == FULL_DIMENSION_MAX and default_dimension(54) == 53
    X = np.random.default_rng(2).normal(size=(6, 10))  # fewer rows than columns: the PCA keeps n − 1 …
    red = PrivateReduction("pca").fit(X)
    assert red.map_.n_components == 5 and red.variance_kept_ == pytest.approx(1.0)  # … and loses no variance
    full = PrivateReduction("pca").fit(np.random.default_rng(3).normal(size=(50, 4)))
    assert full.map_.n_components == 4 and full.variance_kept_ == pytest.approx(1.0)
