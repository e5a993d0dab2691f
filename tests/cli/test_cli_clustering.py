"""A scripted CLI clustering round (kit with 2 feature blocks, anchor, 2 row groups × 2 blocks, analyst run,
apply) and the bad inputs of the clustering issue, each refused with one line naming what is wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.clustering_metrics import ari
from core.formats.anchor import AnchorFile
from core.formats.identity import Identity, PublicCard
from core.methods.dcclustering.data_clustering import kmeans
from tests.boundaries.test_privacy_boundary import BLOCKED_RUN, ROOT
from tests.support import HANG_S
from tests.support.cli import WF, analyst_of, anchor_to, apply_packages, confirm, refused, run
from tests.support.clusterkit import BLOCKS, make_grid

FEATURES = [c for b in BLOCKS.values() for c in b]
SPEC = ";".join(f"{b}={','.join(c)}" for b, c in BLOCKS.items())




PASS = "correct horse battery staple"


@pytest.fixture(scope="module")
def cround(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", PASS)
    mp.setenv("OMP_NUM_THREADS", "1")
    d = tmp_path_factory.mktemp("cround")
    sites, truth = make_grid(d / "data", per_cluster=60, seed=1, drop=5)
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Grid", "--task", "clustering",
               "--schema-from", d / "data/sample.csv", "--blocks", SPEC, "--id-column", "pid", "--set", "k=3",
               "--set", "scaling=range", "--out", d / "p.dckit") == 0
    for name in sites:
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
    lead = next(iter(sites))
    assert run("anchor", "new", "--kit", d / "p.dckit", "--rows", "1500", "--out", d / "lead/p.dcanchor",
               *anchor_to(d, lead, sites)) == 0
    for name, path in sites.items():
        assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "lead/p.dcanchor",
                   "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                   "--identity", d / name / f"{name}.dcid", "--csv", path,
                   "--out", d / "bundles" / f"{name}.dcbundle", "--seed", "1") == 0
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--out", d / "out", *confirm(d, sites)) == 0
    apply_packages(d, sites)
    yield d, sites, truth
    mp.undo()


def test_round_writes_clusters_in_each_sites_own_row_order(cround):
    d, sites, truth = cround
    summary = json.loads((d / "out/summary.json").read_text())
    assert summary["k"] == 3 and not summary["k_auto"] and set(summary["k_curve"]) == {"2", "3", "4", "5"}
    assert summary["linkage"]["groups"] == 2 and summary["linkage"]["partial"] == 10
    assert sum(summary["sizes"]) == summary["rows_clustered"] == len(truth) - 10
    report = (d / "out/report.html").read_text()
    assert "matched across sites by their (hashed) ids" in report
    assert "of its block's variance (after standardising)" in report
    kept = [x["variance_kept"] for x in summary["sites"]]
    assert all(0.5 < v < 1 for v in kept)  # each site keeps 2 of its 3 standardised dimensions
    by_pid: dict[str, str] = {}
    for name, path in sites.items():
        src = pd.read_csv(path, dtype=str)
        res = pd.read_csv(d / name / "result.csv", dtype=str, keep_default_na=False)
        assert list(res.columns) == [*src.columns, "cluster"]
        assert list(res["pid"]) == list(src["pid"])  # the site's own order, row for row
        missing = (res["cluster"] == "").sum()
        assert missing == (5 if name.endswith("clinical") else 0)  # people without a lifestyle row
        for pid, c in zip(res["pid"], res["cluster"], strict=True):
            assert by_pid.setdefault(pid, c) == c  # both blocks of a person got the same cluster
    done = {p: int(c) for p, c in by_pid.items() if c != ""}
    assert set(done.values()) == set(range(1, summary["k"] + 1))  # people count clusters from 1
    t = truth.set_index("pid").loc[list(done), "truth"].to_numpy()
    assert ari(t, np.array(list(done.values()))) > 0.9


@pytest.mark.slow
def test_analyst_run_of_a_clustering_round_never_needs_the_anchor_module(cround, tmp_path):
    d, sites, _ = cround
    args = ["analyst", "run", "--kit", str(d / "p.dckit"), "--identity", str(d / "analyst/analyst.dcid"),
            "--bundles", str(d / "bundles"), "--out", str(tmp_path / "out"), "--workspace", str(tmp_path / "ws"),
            *[str(a) for a in confirm(d, sites)]]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DCSTUDIO_PASSPHRASE": "correct horse battery staple",
           "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", BLOCKED_RUN, *args], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=HANG_S)
    assert out.returncode == 0, out.stderr


def _export(d: Path, name: str, csv: Path, out: Path, *extra) -> list:
    return ["participant", "export", "--kit", d / "p.dckit", "--anchor", d / "lead/p.dcanchor",
            "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy", "--identity",
            d / name / f"{name}.dcid", "--csv", csv, "--out", out, *extra]


def test_duplicate_ids_are_refused_naming_examples(cround, capsys):
    d, sites, _ = cround
    df = pd.read_csv(sites["g1-clinical"])
    df.loc[3, "pid"] = df.loc[7, "pid"]
    bad = d / "dup.csv"
    df.to_csv(bad, index=False)
    err = refused(capsys, *_export(d, "g1-clinical", bad, d / "dup.dcbundle"), expect="duplicate")
    assert f"'{df.loc[7, 'pid']}' (2 rows)" in err
    assert not (d / "dup.dcbundle").exists()


def test_a_csv_that_does_not_match_a_block_is_refused_naming_columns(cround, capsys):
    d, sites, _ = cround
    df = pd.read_csv(sites["g1-clinical"]).drop(columns=["chol"])
    bad = d / "noblock.csv"
    df.to_csv(bad, index=False)
    refused(capsys, *_export(d, "g1-clinical", bad, d / "x.dcbundle"), expect="lacks 'chol'")
    refused(capsys, *_export(d, "g1-clinical", bad, d / "x.dcbundle", "--block", "clinical"), expect="'chol'")
    refused(capsys, *_export(d, "g1-clinical", sites["g1-clinical"], d / "x.dcbundle", "--block", "genes"),
            expect="no feature block 'genes'")
    assert not (d / "x.dcbundle").exists()


def test_k_not_below_the_number_of_rows_is_refused(cround, capsys):
    d, _, _ = cround
    refused(capsys, "analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
            "--bundles", d / "bundles", "--out", d / "bigk", "--set", "k=400", expect="k = 400 clusters need more")
    assert not (d / "bigk").exists() or not any((d / "bigk").iterdir())


def test_ids_that_match_nothing_are_reported_per_site(cround, capsys, tmp_path):
    d, sites, _ = cround
    df = pd.read_csv(sites["g2-lifestyle"])
    df["pid"] = "zz" + df["pid"]
    stranger = tmp_path / "stranger.csv"
    df.to_csv(stranger, index=False)
    folder = tmp_path / "bundles"
    for name in ("g1-clinical", "g1-lifestyle", "g2-clinical"):
        (folder / f"{name}.dcbundle").parent.mkdir(exist_ok=True)
        (folder / f"{name}.dcbundle").write_bytes((d / "bundles" / f"{name}.dcbundle").read_bytes())
    assert run("keys", "new", "--name", "newsite", "--out", tmp_path, *WF) == 0
    lead = next(iter(sites))  # the lead site re-encrypts the anchor to the newcomer's card as well
    anchor = AnchorFile.load(d / "lead/p.dcanchor", identity=Identity.load(d / lead / f"{lead}.dcid", PASS))
    anchor.save(tmp_path / "p.dcanchor", [PublicCard.load(tmp_path / "newsite.dcpub")])
    assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", tmp_path / "p.dcanchor",
               "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy", "--identity",
               tmp_path / "newsite.dcid", "--csv", stranger, "--out", folder / "newsite.dcbundle") == 0
    capsys.readouterr()
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid", "--bundles",
               folder, "--out", tmp_path / "out", "--workspace", tmp_path / "ws", *confirm(d, sites),
               "--confirm", tmp_path / "newsite.dcpub") == 0
    out = capsys.readouterr().out
    assert "newsite [block lifestyle]: 0 of 85 rows clustered — none of its 85 rows could be joined" in out
    assert "g2-clinical [block clinical]: 0 of 90 rows clustered — none of its 90 rows could be joined" in out
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["rows_clustered"] == 85 and summary["linkage"]["groups"] == 1


def test_apply_can_write_the_clustering_representation(cround):
    d, sites, _ = cround
    out = d / "g1-clinical" / "with-z.csv"
    assert run("participant", "apply", "--package", d / "out/g1-clinical.dcpkg", "--identity",
               d / "g1-clinical/g1-clinical.dcid", "--csv", sites["g1-clinical"], "--out", out,
               "--representation") == 0
    res = pd.read_csv(out, dtype=str, keep_default_na=False)
    zcols = [c for c in res.columns if c.startswith("z")]
    summary = json.loads((d / "out/summary.json").read_text())
    assert len(zcols) == summary["dimension"]  # k-means: Z = X̂
    left_out = res["cluster"] == ""
    assert (res.loc[left_out, zcols] == "").all().all() and (res.loc[~left_out, zcols] != "").all().all()


def test_a_round_with_raw_scaling(cround, tmp_path):
    """``scaling=raw`` (the paper's setting; the default is ``range``): sites only centre before PCA, the
    analyst keeps C = Σ̄₁; the round works
    end to end and reproduces k-means on the raw columns (whose units differ here, so that is not the planted
    clustering, which the fixture's ``scaling=range`` round finds: raw scaling means what it says)."""
    d, sites, truth = cround
    kit, anchor = tmp_path / "raw.dckit", tmp_path / "raw.dcanchor"
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Grid raw", "--task", "clustering",
               "--schema-from", d / "data/sample.csv", "--blocks", SPEC, "--id-column", "pid", "--set", "k=3",
               "--set", "scaling=raw", "--out", kit) == 0
    assert run("anchor", "new", "--kit", kit, "--rows", "1500", "--out", anchor, "--plain") == 0
    for name, path in sites.items():
        assert run("participant", "export", "--kit", kit, "--anchor", anchor,
                   "--analyst-fingerprint", analyst_of(kit), "--accept-poor-privacy", "--identity",
                   d / name / f"{name}.dcid", "--csv", path, "--out", tmp_path / "b" / f"{name}.dcbundle",
                   "--workspace", tmp_path / "ws" / name) == 0
    assert run("analyst", "run", "--kit", kit, "--identity", d / "analyst/analyst.dcid", "--bundles",
               tmp_path / "b", "--out", tmp_path / "out", "--workspace", tmp_path / "aws", *confirm(d, sites)) == 0
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["scaling"] == "raw" and sum(summary["sizes"]) == len(truth) - 10
    name = next(iter(sites))
    assert run("participant", "apply", "--package", tmp_path / "out" / f"{name}.dcpkg", "--identity",
               d / name / f"{name}.dcid", "--csv", sites[name], "--out", tmp_path / "r.csv",
               "--workspace", tmp_path / "ws" / name) == 0
    res = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    got = res[res["cluster"] != ""]
    joined = truth[truth["pid"].isin(summary_pids(sites))]
    cc = pd.Series(kmeans(joined[FEATURES].to_numpy(), 3, n_init=10, random_state=0)[0], index=joined["pid"])
    labels = got["cluster"].astype(int).to_numpy()
    assert ari(cc.loc[list(got["pid"])].to_numpy(), labels) > 0.95
    assert ari(joined.set_index("pid").loc[list(got["pid"]), "truth"].to_numpy(), labels) < 0.5


def summary_pids(sites: dict[str, Path]) -> set[str]:
    """The people present in every block (the rows a round can cluster)."""
    by_block: dict[str, set[str]] = {}
    for name, path in sites.items():
        by_block.setdefault(name.split("-", 1)[1], set()).update(pd.read_csv(path, dtype=str)["pid"])
    return set.intersection(*by_block.values())
