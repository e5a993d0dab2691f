"""GOLD as a clustering method (``core/methods/gold.py``): a whole CLI round without an anchor, a GUI round
(both roles, by clicking), the guard on what ships, and the analyst's refusals of malformed bundles."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from benchmarks.clustering_metrics import ari
from core.errors import ConfigError, FormatError
from core.methods import FitContext, get_method, method_class
from core.methods.base import ReceivedBundle, SiteInput
from tests.support.cli import WF, analyst_of, apply_packages, confirm, run

NAME = "gold"
COLS = ["age", "bp", "chol"]
SIZES = [240, 160, 100, 60]  # four blobs of unequal size
SCALES, OFFSETS = np.array([10.0, 1.0, 100.0]), np.array([50.0, 5.0, 1000.0])  # very different units
PASS = "pass phrase 1"


@pytest.fixture(autouse=True)
def one_thread():
    with threadpool_limits(1):
        yield


def blobs(seed: int, sizes=SIZES) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0, 0], [12, 0, 0], [0, 12, 0], [12, 12, 12]], dtype=float)
    X = np.vstack([c + rng.standard_normal((n, 3)) for c, n in zip(centres, sizes, strict=True)])
    return X * SCALES + OFFSETS, np.repeat(np.arange(len(sizes)), sizes)


def write_sites(folder: Path, seed: int = 0) -> tuple[dict[str, Path], dict[str, np.ndarray]]:
    """Three non-IID sites (blob 1 only at site 0, blob 4 only at site 2), each CSV in its own row order;
    sample.csv for the schema. Returns the files and each site's true blob per row, in file order."""
    X, y = blobs(seed)
    rng = np.random.default_rng(seed + 100)
    site = np.where(y == 0, 0, np.where(y == 3, 2, rng.integers(0, 3, len(y))))
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(X[::9], columns=COLS).to_csv(folder / "sample.csv", index=False)
    files, truth = {}, {}
    for i in range(3):
        rows = rng.permutation(np.flatnonzero(site == i))
        files[f"site{i}"] = folder / f"site{i}.csv"
        pd.DataFrame(X[rows], columns=COLS).to_csv(files[f"site{i}"], index=False)
        truth[f"site{i}"] = y[rows]
    return files, truth


def make_kit(d: Path, *sets: str) -> Path:
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Blobs", "--task", "clustering",
               "--method", NAME, "--schema-from", d / "data/sample.csv", *sets, "--out", d / "g.dckit") == 0
    return d / "g.dckit"


def export(d: Path, name: str, csv: Path, *extra: str) -> None:
    assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
    # no --anchor: GOLD needs none
    assert run("participant", "export", "--kit", d / "g.dckit", "--identity", d / name / f"{name}.dcid",
               "--analyst-fingerprint", analyst_of(d / "g.dckit"), "--accept-poor-privacy",
               "--csv", csv, "--out", d / "bundles" / f"{name}.dcbundle", *extra) == 0


@pytest.fixture(scope="module")
def ground(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", PASS)
    d = tmp_path_factory.mktemp("ground")
    files, truth = write_sites(d / "data")
    t0 = time.perf_counter()
    with threadpool_limits(1):
        make_kit(d)
        for i, (name, path) in enumerate(files.items()):
            export(d, name, path, "--seed", str(i))
        assert run("analyst", "run", "--kit", d / "g.dckit", "--identity", d / "analyst/analyst.dcid",
                   "--bundles", d / "bundles", "--out", d / "out", *confirm(d, files)) == 0
        apply_packages(d, files)
    seconds = time.perf_counter() - t0
    yield SimpleNamespace(d=d, files=files, truth=truth, seconds=seconds)
    mp.undo()


def test_cli_round_without_anchor_labels_each_sites_rows_in_its_own_order(ground, capsys):
    d, files, truth = ground.d, ground.files, ground.truth
    summary = json.loads((d / "out/summary.json").read_text())
    assert summary["method"] == NAME and summary["k_auto"] and summary["settings"]["scaling"] == "standardised"
    k = summary["k"]
    assert len(summary["sizes"]) == k and sum(summary["sizes"]) == summary["rows_clustered"] == sum(SIZES)
    assert summary["server_step"] == "kmeans" and summary["level_sizes"] == []  # the product's default step
    assert k in summary["auto"]["candidates"] and summary["remc_failures"] == 0
    assert sorted(x["site"] for x in summary["sites"]) == list(files)
    assert all(x["micro_clusters"] >= 1 and "guard_rows" in x for x in summary["sites"])
    pred, true = [], []
    for name, path in files.items():
        src = pd.read_csv(path, dtype=str)
        res = pd.read_csv(d / name / "result.csv", dtype=str, keep_default_na=False)
        assert list(res.columns) == [*COLS, "cluster"]
        assert res[COLS].equals(src[COLS])  # the site's own order, row for row, cells unchanged
        c = res["cluster"].astype(int).to_numpy()
        assert c.min() >= 1 and c.max() <= k  # numbered from 1 for people
        counts = np.bincount(c - 1, minlength=k)
        assert counts.tolist() == next(x for x in summary["sites"] if x["site"] == name)["cluster_counts"]
        pred.append(c)
        true.append(truth[name])
    score = ari(np.concatenate(true), np.concatenate(pred))
    print(f"GOLD CLI round: k = {k}, ARI {score:.3f}, {ground.seconds:.1f} s")
    assert 4 <= k <= 6 and score >= 0.8  # the four planted blobs, at most split in two
    report = (d / "out/report.html").read_text()
    assert "coarse-to-fine grouping" not in report and "Rows per cluster" in report
    assert "Small groups' averages" in report


def test_new_rows_are_labelled_by_the_nearest_global_centroid(ground):
    d = ground.d
    X, y = blobs(seed=7, sizes=[30, 30, 30, 30])
    pd.DataFrame(X, columns=COLS).to_csv(d / "new.csv", index=False)
    assert run("participant", "apply", "--package", d / "out/site1.dcpkg", "--identity", d / "site1/site1.dcid",
               "--csv", d / "new.csv", "--out", d / "new-result.csv") == 0
    res = pd.read_csv(d / "new-result.csv")
    assert len(res) == 120 and np.allclose(res[COLS].to_numpy(), X)
    assert ari(y, res["cluster"].to_numpy()) >= 0.8


def test_the_bundle_holds_only_micro_cluster_averages_counts_and_column_totals(ground):
    from core.formats.envelope import open_sealed
    from core.formats.identity import Identity

    d = ground.d
    ident = Identity.load(d / "analyst/analyst.dcid", PASS)
    opened = open_sealed(d / "bundles/site0.dcbundle", ident, expect_kind="bundle")
    arrays, m = opened.payload.arrays, opened.payload.manifest
    assert set(arrays) == {"centroids", "counts", "col_sum", "col_sumsq"}
    n = len(ground.truth["site0"])
    assert m["n_rows"] == n and arrays["centroids"].shape == (m["micro_clusters"], 3) < (n, 3)
    assert arrays["counts"].min() >= 5 and arrays["counts"].sum() == n
    X = pd.read_csv(ground.files["site0"]).to_numpy()
    assert np.allclose(arrays["col_sum"], X.sum(axis=0)) and np.allclose(arrays["col_sumsq"], (X * X).sum(axis=0))


# ---- the guard ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("minimum", [5, 12])
def test_guard_no_shipped_centroid_is_the_mean_of_fewer_than_the_minimum_rows(minimum):
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(150, 4)) * 3)  # integer columns: a 2-row mean would reveal its rows
    m = get_method(NAME, {"min_cluster_rows": minimum})
    ex = m.site_compute(SiteInput(X, None, [], None, settings=m.check_site_settings({"seed": 1})))
    C, counts, own = ex.arrays["centroids"], ex.arrays["counts"], ex.private_arrays["micro_labels"]
    assert counts.min() >= minimum and counts.sum() == 150
    for j in range(len(counts)):  # each shipped centroid is exactly the mean of its (≥ minimum) rows
        assert (own == j).sum() == counts[j] and np.allclose(C[j], X[own == j].mean(axis=0))
    touched = ex.manifest["guard_rows"]
    assert touched > 0 and ex.manifest["found"] > len(counts)  # FCPL found small groups; the guard merged them
    assert f"holding {touched:,} row" in ex.plain and f"at least {minimum} rows" in ex.plain
    assert any(f"holding {touched:,} row" in x.meaning for x in ex.disclosures)


def test_a_site_with_fewer_rows_than_the_minimum_is_refused():
    m = get_method(NAME)
    with pytest.raises(ConfigError, match="at least 5"):
        m.site_compute(SiteInput(np.ones((4, 3)), None, [], None, settings=m.check_site_settings({})))


# ---- check_bundle and fit in process ------------------------------------------------------------------------
KIT = SimpleNamespace(schema=SimpleNamespace(features=COLS, width=len(COLS), block_names=["all"]))


def _bundles(m, scaling_seed=0):
    X, y = blobs(scaling_seed)
    parts = np.array_split(np.random.default_rng(0).permutation(len(X)), 3)
    out, exports = [], []
    for i, p in enumerate(parts):
        ex = m.site_compute(SiteInput(X[p], None, [], None, settings=m.check_site_settings({"seed": i})))
        man = {**ex.manifest, "method": NAME, "family": m.family}
        out.append(ReceivedBundle(f"s{i}", f"fp{i}", "d", f"e{i}", man, dict(ex.arrays)))
        exports.append(ex)
    return out, exports, [(X[p], y[p]) for p in parts]


def test_check_bundle_refuses_malformed_bundles():
    m = get_method(NAME)
    bundles, _, _ = _bundles(m)
    good = bundles[0]
    m.check_bundle(good, KIT)

    def bad(expect, arrays=None, manifest=None, kit=KIT, method=m):
        b = ReceivedBundle(good.site, good.fingerprint, good.digest, good.envelope_id,
                           {**good.manifest, **(manifest or {})}, {**good.arrays, **(arrays or {})})
        with pytest.raises(FormatError, match=expect):
            method.check_bundle(b, kit)

    C, counts = good.arrays["centroids"], good.arrays["counts"]
    bad("shape \\(micro-clusters, 3\\)", {"centroids": C[:, :2]})
    bad("shape \\(micro-clusters, 3\\)", {"centroids": C.astype(np.int64)})
    bad("one whole number per centroid", {"counts": counts[:-1]})
    bad("one whole number per centroid", {"counts": counts.astype(np.float64)})
    bad("centroid of 4 row", {"counts": np.r_[counts[:-1], 4]})
    bad("'col_sum' of shape", {"col_sum": good.arrays["col_sum"][:2]})
    bad("'col_sumsq' of shape", {"col_sumsq": np.zeros(2)})
    bad("non-finite", {"centroids": np.where(np.arange(C.size).reshape(C.shape) == 0, np.nan, C)})
    bad("sums of squares", {"col_sumsq": np.zeros(3)})
    bad("row count", {}, {"n_rows": int(counts.sum()) - 1})
    bad("3", {}, {"n_features": 4})
    bad("without standardisation", {}, {"standardised": False})
    bad("not for this kit's method", {}, {"family": "other"})
    blocks = SimpleNamespace(schema=SimpleNamespace(features=COLS, block_names=["a", "b"]))
    bad("splits the columns into blocks", kit=blocks)
    bad("the kit's minimum is 10", method=get_method(NAME, {"min_cluster_rows": 10}),
        arrays={"counts": np.r_[counts[:-1], 9]})


def test_fit_packages_and_apply_in_process_with_raw_distances_a_fixed_k_and_the_papers_step():
    m = get_method(NAME, {"k": 4, "scaling": "raw", "server_step": "mcpl"})
    bundles, exports, data = _bundles(m)
    res = m.fit(bundles, FitContext([]))
    s = res.summary
    assert s["k"] == 4 and not s["k_auto"] and s["scaling"] == "raw" and len(s["centroids"]) == 4
    for (man, arr), b, ex, (X, _) in zip(res.packages, bundles, exports, data, strict=True):
        assert arr["micro_cluster"].shape == b.arrays["counts"].shape and arr["micro_cluster"].max() < 4
        assert arr["levels"].shape == (len(b.arrays["counts"]), len(s["level_sizes"]))
        assert arr["centroids"].shape == (4, 3) and np.all(arr["scale_std"] == 1)
        cl = m.apply(man, arr, ex.private_arrays, X)["cluster"]
        own = ex.private_arrays["micro_labels"]
        assert np.array_equal(cl.astype(int) - 1, arr["micro_cluster"][own])  # own rows: by micro-cluster
        shuffled = X[::-1].copy()  # other rows (here: the same rows reordered) by the nearest centroid
        near = m.apply(man, arr, ex.private_arrays, shuffled)["cluster"].astype(int) - 1
        d2 = ((shuffled[:, None, :] - arr["centroids"][None]) ** 2).sum(-1)
        assert np.array_equal(near, d2.argmin(axis=1))
        with pytest.raises(FormatError, match="micro-cluster labels"):
            m.apply(man, {**arr, "micro_cluster": arr["micro_cluster"][:-1]}, ex.private_arrays, X)
    kinds = [type(v).__name__ for v in m.views(res)]
    assert {"Table", "Bars", "Scatter"} <= set(kinds) and kinds.count("Bars") == 2
    with pytest.raises(ConfigError, match="shipped only"):
        get_method(NAME, {"k": 1000}).fit(bundles, FitContext([]))
    total = sum(len(b.arrays["counts"]) for b in bundles)  # more clusters than MCPL's levels can tell apart
    with pytest.raises(ConfigError, match="REMC could not form k = .* in 3 attempts"):
        get_method(NAME, {"k": total, "max_retries": 2, "server_step": "mcpl"}).fit(bundles, FitContext([]))


def _wine_sites(seed: int, sites: int = 4) -> list[tuple[np.ndarray, np.ndarray]]:
    """sklearn's wine table (178 rows, 3 kinds) over four small sites, site i lacking kind i mod 3."""
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    rng = np.random.default_rng(seed)
    site = np.empty(len(y), np.int64)
    for c in range(3):
        rows = np.flatnonzero(y == c)
        site[rows] = rng.choice([i for i in range(sites) if i % 3 != c], len(rows))
    return [(X[site == i], y[site == i]) for i in range(sites)]


def _round(settings: dict, data: list[tuple[np.ndarray, np.ndarray]]):
    """Every site exports (site seed = its index), the analyst fits; (method, bundles, exports, result)."""
    m = get_method(NAME, settings)
    bundles, exports = [], []
    for i, (X, _) in enumerate(data):
        ex = m.site_compute(SiteInput(X, None, [], None, settings=m.check_site_settings({"seed": i})))
        bundles.append(ReceivedBundle(f"s{i}", f"fp{i}", f"d{i}", f"e{i}", {**ex.manifest, "method": NAME,
                                                                             "family": m.family}, dict(ex.arrays)))
        exports.append(ex)
    return m, bundles, exports, m.fit(bundles, FitContext([]))


def _site_labels(res, exports) -> np.ndarray:
    return np.concatenate([arr["micro_cluster"][ex.private_arrays["micro_labels"]]
                           for (_, arr), ex in zip(res.packages, exports, strict=True)])


def test_the_default_server_step_beats_mcpl_remc_on_small_sites_each_lacking_a_kind():
    """Wine over four sites of 30–60 rows (seed 2, where the paper's step loses): with k = 3 given, MCPL + REMC
    puts the level clusters that match no mode into one cluster; count-weighted k-means groups by distance."""
    data = _wine_sites(2)
    y = np.concatenate([t for _, t in data])
    scores = {}
    for step in ("kmeans", "mcpl"):
        _, _, exports, res = _round({"k": 3, "server_step": step}, data)
        assert res.summary["server_step"] == step and res.summary["k"] == 3
        scores[step] = ari(y, _site_labels(res, exports))
    assert scores["kmeans"] >= 0.7 and scores["kmeans"] >= scores["mcpl"] + 0.15, scores
    assert get_method(NAME).settings["server_step"] == "kmeans"


def test_the_mcpl_setting_runs_the_papers_mcpl_and_remc():
    from core.methods.dc_analysis import site_order
    from core.methods.gold import cpl as G

    data = _wine_sites(1)
    _, bundles, _, res = _round({"k": 3, "server_step": "mcpl", "centroids": "micro"}, data)
    order = site_order(bundles)  # the analyst takes sites by content digest
    bundles, packages = [bundles[i] for i in order], [res.packages[i] for i in order]
    sites = [G.SiteResult(b.arrays["centroids"], b.arrays["counts"], np.zeros(0, np.int64),
                          {"n": np.array([float(b.manifest["n_rows"])]), "sum": b.arrays["col_sum"],
                           "sumsq": b.arrays["col_sumsq"]}, 0, 0, 0, 0, 0, 0) for b in bundles]
    paper = G.gold_fit(sites, 3, seed=0)  # the engine's default: MCPL + REMC, the authors' settings
    assert res.summary["level_sizes"] == paper.level_sizes and len(paper.level_sizes) >= 1
    got = np.concatenate([arr["micro_cluster"] for _, arr in packages])
    want = np.concatenate(paper.micro_global)
    assert ari(want, got) == 1.0  # the same partition (numbered by size in the product)
    for (_, arr), lev in zip(packages, paper.micro_levels, strict=True):
        assert np.array_equal(arr["levels"], lev)


@pytest.mark.parametrize("step", ["kmeans", "mcpl"])
def test_fit_is_the_same_whatever_the_bundles_order_and_names(step):
    data = _wine_sites(0)
    m, bundles, _, res = _round({"k": "auto", "server_step": step}, data)
    order = [2, 0, 3, 1]
    renamed = [ReceivedBundle(f"other{j}", f"x{j}", f"z{j}", f"y{j}", bundles[i].manifest, bundles[i].arrays)
               for j, i in enumerate(order)]
    again = m.fit(renamed, FitContext([]))
    assert again.summary["k"] == res.summary["k"] and again.summary["sizes"] == res.summary["sizes"]
    for j, i in enumerate(order):
        (man_a, arr_a), (man_b, arr_b) = res.packages[i], again.packages[j]
        assert man_a == man_b and arr_a.keys() == arr_b.keys()
        assert all(np.array_equal(arr_a[key], arr_b[key]) for key in arr_a)
    assert res.summary["sizes"] == sorted(res.summary["sizes"], reverse=True)  # clusters numbered by size


def test_declarations():
    cls = method_class(NAME)
    assert not cls.needs_anchor and cls.labels_leave == "none" and cls.family == NAME and cls.task == "clustering"
    assert [s.name for s in cls.site_settings_spec()] == ["noise", "max_candidates", "seed"]
    assert cls.default_settings()["scaling"] == "standardised" and cls.default_settings()["min_cluster_rows"] == 5
    assert cls.default_settings()["server_step"] == "kmeans" and cls.setting("server_step").choices == ("kmeans",
                                                                                                         "mcpl")
    assert "silhouette" in cls.setting("k").auto_help
    for bad in ({"k": 1}, {"scaling": "range"}, {"min_cluster_rows": 0}, {"server_step": "remc"}):
        with pytest.raises(ConfigError):
            get_method(NAME, bad)


# ---- GUI round ----------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.usefixtures("private_settings")
def test_a_gold_round_by_clicking(qtbot, tmp_path, monkeypatch):
    pytest.importorskip("pytestqt")
    from tests.support.gui import (
        accept_kit,
        analyst_window_with_bundles,
        export_bundle,
        export_packages,
        read_csv,
        train_models,
        wait_metrics,
        wait_page,
        wizard_with_new_identity,
    )

    d = tmp_path
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", PASS)
    files, _ = write_sites(d / "data", seed=1)
    make_kit(d)
    names = list(files)
    for i, name in enumerate(names[:2]):  # two sites export by the CLI, the third by clicking
        export(d, name, files[name], "--seed", str(i))
    w = wizard_with_new_identity(qtbot, "clicker", d / "clicker")
    accept_kit(w, d / "g.dckit")
    assert w.page_name() == "data"  # the anchor page is skipped: GOLD needs no anchor
    read_csv(qtbot, w, files[names[2]])
    w.next()
    pp = w.privacy_page
    assert pp.site_form.names() == ["noise"]  # max_candidates and seed are advanced
    wait_page(qtbot, pp, lambda: pp.isComplete() and pp.site_export is not None)
    rows = {pp.disclosure_table.item(r, 0).text() for r in range(pp.disclosure_table.rowCount())}
    assert rows == {"centroids", "counts", "col_sum", "col_sumsq"}
    assert "at least 5 rows" in pp.plain_label.text() and pp.site_export.arrays["counts"].min() >= 5
    export_bundle(qtbot, w, d / "bundles", "clicker.dcbundle")
    w.close()
    gc.collect()  # the wizard's leftovers go now, while no job thread runs

    aw = analyst_window_with_bundles(qtbot, d / "g.dckit", d / "analyst/analyst.dcid", PASS,
                                     sorted((d / "bundles").glob("*.dcbundle")))
    assert aw.show_page("models")
    mp = aw.models_page
    assert "Cluster" in mp.train_button.text()
    train_models(qtbot, aw)
    wait_metrics(qtbot, aw, 3)
    cp = aw.clustering_page
    assert cp.has_result and aw.show_page("clustering")
    cp.views.finish()  # (drawn a view per event-loop turn otherwise)
    kinds = cp.views.kinds
    # the default server step (k-means) has no granularity levels: one Bars view (the cluster sizes), the k curve
    assert kinds.count("Bars") == 1 and {"Scatter", "Table", "Curve"} <= set(kinds)
    assert len(export_packages(qtbot, aw, d / "gui-out")) == 3
    report = (d / "gui-out/report.html").read_text()
    assert "coarse-to-fine grouping" not in report and "count-weighted k-means" in report
