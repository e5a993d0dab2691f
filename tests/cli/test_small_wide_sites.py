"""Issue #25: a dimension every site can use. A 64-column table at sites of 30–60 rows exports by default (each
site keeps the largest dimension its rows allow, within the kit's rule), the analyst aligns sites of different
widths, and a dimension a site cannot give is refused naming the setting and the largest value that works."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import load_digits

from core.errors import ConfigError
from core.learn.reduction import PrivateReduction, default_dimension
from core.methods import get_method
from core.methods.base import SiteInput
from tests.support.cli import WF, analyst_of, confirm, refused, run

PASS = "correct horse battery staple"
ROWS = {"small": 30, "middle": 45, "large": 60}


def write_digits(folder, *, label: bool = True) -> dict:
    """sklearn's hand-written digits (64 columns) over three sites of 30, 45 and 60 rows; sample.csv and a public
    seed.csv for the anchor; a little jitter keeps every pixel a number (not a few levels). Returns site → CSV."""
    X, y = load_digits(return_X_y=True)
    X = X + np.random.default_rng(1).normal(0.0, 0.05, X.shape)
    cols = [f"p{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=cols)
    if label:
        frame["label"] = [f"d{v}" for v in y]
    order = np.random.default_rng(0).permutation(len(frame))
    folder.mkdir(parents=True, exist_ok=True)
    frame.iloc[order[:200]].to_csv(folder / "sample.csv", index=False)
    frame.iloc[order[:200]].to_csv(folder / "seed.csv", index=False)
    out, start = {}, 200
    for name, n in ROWS.items():
        out[name] = folder / f"{name}.csv"
        frame.iloc[order[start:start + n]].to_csv(out[name], index=False)
        start += n
    return out


def test_default_dimension_takes_the_sites_rows_into_account():
    assert default_dimension(64) == 63 and default_dimension(10) == 10
    assert default_dimension(64, 30) == 29 and default_dimension(64, 500) == 63
    assert default_dimension(10, 6) == 5 and default_dimension(3, 1) == 1


@pytest.mark.parametrize("method", ["dc", "dcclustering"])
def test_a_64_column_table_at_a_30_row_site_exports_by_default(method):
    X, y = load_digits(return_X_y=True)
    m = get_method(method)
    site = SiteInput(X[:30], y[:30] if m.reads_labels() else None, [str(c) for c in range(10)], X[100:400])
    ex = m.site_compute(site)
    assert ex.manifest["dimension"] == 29
    assert ex.arrays["x_tilde"].shape == (30, 29) and ex.arrays["anchor_tilde"].shape == (300, 29)


def test_a_dimension_the_rows_cannot_give_is_refused_naming_the_setting_and_the_largest_value():
    X, y = load_digits(return_X_y=True)
    site = SiteInput(X[:30], y[:30], [str(c) for c in range(10)], X[100:400], settings={"dimension": 40})
    with pytest.raises(ConfigError) as err:
        get_method("dc").site_compute(site)
    msg = str(err.value)
    assert "--dimension 30" in msg and "Numbers per row" in msg and "30 rows" in msg and "\n" not in msg
    wide = SiteInput(X[:100], y[:100], [str(c) for c in range(10)], X[100:400], settings={"dimension": 65})
    with pytest.raises(ConfigError, match="64 columns.*--dimension 64"):
        get_method("dc").site_compute(wide)
    # the reduction itself says the largest value too
    with pytest.raises(ConfigError, match="between 1 and 30"):
        PrivateReduction("pca", 31).fit(X[:30])


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("DCSTUDIO_PASSPHRASE", PASS)
    d = tmp_path_factory.mktemp("wide")
    for name in ["analyst", *ROWS]:
        assert run("keys", "new", "--name", name, "--out", d / name, *WF) == 0
    yield d
    mp.undo()


@pytest.mark.parametrize("method", ["dc", "dcclustering"])
def test_a_round_of_sites_of_different_widths(keys, tmp_path, method, capsys):
    d = keys
    labelled = method == "dc"
    sites = write_digits(tmp_path / "data", label=labelled)
    task = ["--label", "label", "--set", "epochs=10"] if labelled else ["--task", "clustering", "--set", "k=10"]
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", "Digits", "--schema-from",
               tmp_path / "data/sample.csv", "--method", method, *task, "--out", tmp_path / "p.dckit") == 0
    source = ["--seed-csv", tmp_path / "data/seed.csv"] if labelled else ["--rows", "400"]
    assert run("anchor", "new", "--kit", tmp_path / "p.dckit", *source, "--plain",
               "--out", tmp_path / "p.dcanchor") == 0
    widths = {}
    capsys.readouterr()
    for name, csv in sites.items():
        assert run("participant", "export", "--kit", tmp_path / "p.dckit", "--anchor", tmp_path / "p.dcanchor",
                   "--analyst-fingerprint", analyst_of(tmp_path / "p.dckit"), "--accept-poor-privacy",
                   "--identity", d / name / f"{name}.dcid", "--csv", csv, "--workspace", tmp_path / "ws" / name,
                   "--units-checked", "--out", tmp_path / "bundles" / f"{name}.dcbundle") == 0
        widths[name] = int(re.search(r"x_tilde \((\d+), (\d+)\)", capsys.readouterr().out).group(2))
    assert run("analyst", "run", "--kit", tmp_path / "p.dckit", "--identity", d / "analyst/analyst.dcid",
               "--bundles", tmp_path / "bundles", "--out", tmp_path / "out", "--workspace", tmp_path / "aws",
               *confirm(d, ROWS)) == 0
    for name, csv in sites.items():
        assert run("participant", "apply", "--package", tmp_path / "out" / f"{name}.dcpkg", "--identity",
                   d / name / f"{name}.dcid", "--csv", csv, "--workspace", tmp_path / "ws" / name,
                   "--out", tmp_path / f"{name}-result.csv") == 0
        result = pd.read_csv(tmp_path / f"{name}-result.csv")
        assert len(result) == ROWS[name]
        assert ("prediction" if labelled else "cluster") in result.columns
    assert widths == {"small": 29, "middle": 44, "large": 59}
    # a forced dimension the smallest site cannot give is refused in one line naming the setting and the value
    capsys.readouterr()
    refused(capsys, "participant", "export", "--kit", tmp_path / "p.dckit", "--anchor", tmp_path / "p.dcanchor",
            "--identity", d / "small" / "small.dcid", "--csv", sites["small"], "--workspace", tmp_path / "ws2",
            "--units-checked", "--dimension", "45", "--out", tmp_path / "again.dcbundle", expect="--dimension 30")
