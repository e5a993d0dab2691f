"""A site whose column is in another unit is stopped before anything leaves, naming the column and what the kit
expected; after checking, ``--units-checked`` lets the export go ahead."""

import numpy as np
import pandas as pd

from tests.support.cli import WF, analyst_of, refused, run


def _rows(rng, n, height_scale=1.0):
    y = rng.integers(0, 2, n)
    return pd.DataFrame({"height": rng.normal(170, 10, n) * height_scale + 3 * y,
                         "weight": rng.normal(70, 12, n) + 4 * y, "sex": rng.choice(["F", "M"], n),
                         "outcome": np.where(y == 1, "yes", "no")})


def test_a_column_in_inches_is_named_before_export_and_nothing_is_written(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "correct horse battery staple")
    rng = np.random.default_rng(0)
    _rows(rng, 200).to_csv(tmp_path / "sample.csv", index=False)
    _rows(rng, 80, height_scale=1 / 2.54).to_csv(tmp_path / "site.csv", index=False)  # heights in inches
    assert run("keys", "new", "--name", "analyst", "--out", tmp_path / "analyst", *WF) == 0
    assert run("keys", "new", "--name", "site", "--out", tmp_path / "site", *WF) == 0
    assert run("kit", "new", "--identity", tmp_path / "analyst/analyst.dcid", "--name", "units", "--schema-from",
               tmp_path / "sample.csv", "--label", "outcome", "--method", "meta-lr", "--out", tmp_path / "p.dckit") == 0
    bundle = tmp_path / "site.dcbundle"
    export = ("participant", "export", "--kit", tmp_path / "p.dckit", "--identity", tmp_path / "site/site.dcid",
              "--analyst-fingerprint", analyst_of(tmp_path / "p.dckit"), "--accept-poor-privacy",
              "--csv", tmp_path / "site.csv", "--out", bundle, "--workspace", tmp_path / "ws")
    capsys.readouterr()
    err = refused(capsys, *export, expect="column 'height' does not look like the kit's")
    assert "the kit's sample has mean" in err and "--units-checked" in err and "'weight'" not in err
    assert not bundle.exists() and not (tmp_path / "ws").exists()
    assert run(*export, "--units-checked") == 0
    assert bundle.exists() and "you said you checked it" in capsys.readouterr().out
