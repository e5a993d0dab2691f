"""One kit builder for the CLI and the app: the same rules refuse the same kits in both."""

from __future__ import annotations

import pytest

from core.data.schema import FeatureColumn, Schema
from core.errors import ConfigError
from core.formats.identity import Identity
from core.kit_builder import build_kit
from tests.support.cli import WF, refused, run
from tests.support.roundkit import make_sites


@pytest.fixture(scope="module")
def analyst():
    return Identity.generate("analyst").card


def _schema(ranges: bool) -> Schema:
    feats = [FeatureColumn(f"x{j}", 0.0 if ranges else None, 1.0 if ranges else None) for j in range(3)]
    return Schema(feats, label="y", classes=["a", "b"])


def test_the_rules(analyst):
    kit, notes = build_kit(name=" P ", schema=_schema(True), analyst=analyst)
    assert kit.name == "P" and kit.task == "classification" and kit.anchor == {"kind": "smote", "rows": 1000}
    with pytest.raises(ConfigError, match="uniform anchor needs"):
        build_kit(name="P", schema=_schema(False), analyst=analyst, anchor_kind="uniform")
    with pytest.raises(ConfigError, match="is for clustering, not classification"):
        build_kit(name="P", schema=_schema(True), analyst=analyst, task="classification", method="dcclustering")
    with pytest.raises(ConfigError, match="setting 'epochs' must be"):
        build_kit(name="P", schema=_schema(True), analyst=analyst, settings={"epochs": 0})
    with pytest.raises(ConfigError, match="feature blocks"):
        build_kit(name="P", schema=_schema(True), analyst=analyst, blocks="a=x0,x1;b=x2")
    kit, notes = build_kit(name="P", schema=_schema(True), analyst=analyst, task="clustering")
    assert kit.schema.label is None and any("left out" in n for n in notes)
    assert [c.name for c in kit.schema.ignored] == ["y"]  # the kit itself says the label was left out
    assert kit.anchor["kind"] == "uniform"


def test_the_cli_refuses_what_the_app_refuses(tmp_path, monkeypatch, capsys):
    """Before one builder, the CLI accepted a uniform anchor without published ranges; the app did not."""
    monkeypatch.setenv("DCSTUDIO_PASSPHRASE", "pass phrase 1")
    make_sites(tmp_path / "data", rows=40)
    assert run("keys", "new", "--name", "analyst", "--out", tmp_path, *WF) == 0
    refused(capsys, "kit", "new", "--identity", tmp_path / "analyst.dcid", "--name", "P", "--schema-from",
            tmp_path / "data/sample.csv", "--label", "label", "--anchor-kind", "uniform", "--no-ranges",
            "--out", tmp_path / "p.dckit", expect="uniform anchor needs")
    assert not (tmp_path / "p.dckit").exists()


def test_column_choices_from_the_flags_text():
    from core.kit_builder import column_choices

    c = column_choices(ignore=["futime,chapter", "id"], types=["grade=ordinal", "x=ignored"],
                       levels=["sex=M, F", "grade=low,mid,high"], missing=["creat=impute+indicator"], other=["rx"])
    assert c.ignore == {"futime", "chapter", "id"} and c.types == {"grade": "ordinal", "x": "ignored"}
    assert c.levels == {"sex": ["M", "F"], "grade": ["low", "mid", "high"]} and c.other == {"rx"}
    assert c.missing == {"creat": "impute+indicator"}
    with pytest.raises(ConfigError, match="unknown column type 'text' for column 'a'"):
        column_choices(types=["a=text"])
    with pytest.raises(ConfigError, match="--missing takes COLUMN=VALUE"):
        column_choices(missing=["a"])
    with pytest.raises(ConfigError, match="unknown missing-value policy 'drop'"):
        column_choices(missing=["a=drop"])


def test_levels_flags_merge_raw_values_into_a_level():
    from core.kit_builder import column_choices

    c = column_choices(levels=["rx=Obs,treated=Lev|Lev+5FU", "sex=M=m|male,F"])
    assert c.levels == {"rx": ["Obs", "treated"], "sex": ["M", "F"]}
    assert c.merged == {"rx": {"treated": ["Lev", "Lev+5FU"]}, "sex": {"M": ["m", "male"]}}
    with pytest.raises(ConfigError, match="a merged level is NAME=value"):
        column_choices(levels=["rx=Obs,treated="])
    with pytest.raises(ConfigError, match="--levels for column 'rx' lists no level"):
        column_choices(levels=["rx=,"])
