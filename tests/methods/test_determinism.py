"""Issue #15: the same kit, bundles and settings give bit-identical packages, summary and report, whatever
the order, names or modification times of the bundle files."""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pytest

from core.formats.envelope import open_sealed
from core.formats.identity import Identity
from tests.support.cli import confirm, export_dccfl_round, run
from tests.support.roundkit import make_sites

PASS = "correct horse battery staple"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", PASS)
    d = tmp_path_factory.mktemp("det")
    sites = make_sites(d / "data", rows=90)
    export_dccfl_round(d, sites, "Det", "epochs=5", "hidden=[16]")
    yield d, list(sites)
    mp.undo()


def _analyse(d, bundles_dir, out, ws):
    assert run("analyst", "run", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", bundles_dir, "--out", out, "--workspace", ws,
               *confirm(d, ["site0", "site1", "site2", "site3"])) == 0
    arrays = {}
    for name in ("site0", "site1", "site2", "site3"):
        ident = Identity.load(d / name / f"{name}.dcid", PASS)
        opened = open_sealed(out / f"{name}.dcpkg", ident, expect_kind="package")
        m = dict(opened.payload.manifest)
        for key in ("run_id", "run_created"):  # which run made it (to warn on a superseded package): unique by design
            m.pop(key, None)
        arrays[name] = ({k: np.array(v) for k, v in opened.payload.arrays.items()}, m)
    summary = json.loads((out / "summary.json").read_text())
    report = (out / "report.html").read_text()
    run_info = summary.pop("run")  # this run's id, time and audit-log head: unique by design
    for value in run_info.values():
        report = report.replace(str(value), "<run>")
    # the sealed files are encrypted afresh each time (random keys and nonces): their digests differ by design
    for p in summary.pop("packages"):
        report = report.replace(p["digest"], "<digest>")
    return arrays, summary, report


def test_shuffled_renamed_bundles_give_identical_results(exported, tmp_path):
    d, names = exported
    a1, s1, r1 = _analyse(d, d / "bundles", tmp_path / "out1", tmp_path / "ws1")
    # the same bundles under other names, copied in another order with other modification times
    other = tmp_path / "other"
    other.mkdir()
    for k, name in enumerate(reversed(names)):
        dst = other / f"{chr(ord('z') - k)}-{k}.dcbundle"
        shutil.copyfile(d / "bundles" / f"{name}.dcbundle", dst)
        os.utime(dst, (1_000_000 + 1000 * k, 1_000_000 + 1000 * k))
    a2, s2, r2 = _analyse(d, other, tmp_path / "out2", tmp_path / "ws2")
    assert s1 == s2
    assert r1 == r2
    for name in names:
        (x1, m1), (x2, m2) = a1[name], a2[name]
        assert m1 == m2
        assert sorted(x1) == sorted(x2)
        for k in x1:
            assert x1[k].dtype == x2[k].dtype and np.array_equal(x1[k], x2[k]), (name, k)
    # the sites are listed by the digest of their content (s1 == s2 above: not by file or import order)
    assert re.search(r"95 % CI", r1)


def test_estimate_reports_expected_gain_per_site(exported, tmp_path, capsys):
    d, names = exported
    assert run("analyst", "estimate", "--kit", d / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", d / "bundles", "--workspace", tmp_path / "ws", "--json", tmp_path / "est.json",
               *confirm(d, names)) == 0
    out = capsys.readouterr().out
    assert "no package was written" in out and not list(tmp_path.glob("*.dcpkg"))
    est = json.loads((tmp_path / "est.json").read_text())
    assert {x["site"] for x in est["sites"]} == set(names)
    for x in est["sites"]:
        e, own = x["expected"], x["own_model"]
        assert e["rows"] == x["rows"] and e["low"] <= e["accuracy"] <= e["high"]
        # never worse than alone, by construction: the sent model cross-validates at least as well as its own
        assert e["accuracy"] >= own["accuracy"]
        assert f"{x['site']}: " in out and "expected accuracy" in out and "95 % CI" in out
