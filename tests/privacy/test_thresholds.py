"""Issue #24: the kit states privacy limits (omitted when default, so old kits keep their digest); a site may
only tighten them."""

from __future__ import annotations

import pytest

from core.errors import ConfigError, FormatError
from core.formats.identity import Identity
from core.formats.kit import Kit
from core.formats.thresholds import PrivacyThresholds, parse_threshold_args


def small_schema(folder):
    import pandas as pd

    from core.data.schema import infer_schema

    pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [0.5, 0.1, 0.2, 0.9], "label": ["x", "y", "x", "y"]}).to_csv(
        folder / "s.csv", index=False)
    return infer_schema(folder / "s.csv", label="label")[0]


def test_a_site_may_tighten_but_never_loosen():
    th = PrivacyThresholds()
    tighter = th.stricter({"membership_auc_max": 0.55, "group_size_min": 10, "reconstruction_error_min": 0.8})
    assert tighter.membership_auc_max == 0.55 and tighter.group_size_min == 10
    for name, value in (("membership_auc_max", 0.7), ("group_size_min", 3), ("reconstruction_error_min", 0.2),
                        ("recovered_share_max", 0.5), ("nearest_record_ratio_min", 0.1)):
        with pytest.raises(ConfigError, match="can only be made stricter"):
            th.stricter({name: value})
    with pytest.raises(ConfigError, match="unknown privacy threshold"):
        th.stricter({"epsilon": 1})


def test_parse_and_validate():
    assert parse_threshold_args(["group-size-min=8", "membership_auc_max=0.55"]) == {
        "group_size_min": 8.0, "membership_auc_max": 0.55}
    for bad in ("group_size_min", "nope=1", "group_size_min=many"):
        with pytest.raises(ConfigError):
            parse_threshold_args([bad])
    with pytest.raises(ConfigError):
        PrivacyThresholds(membership_auc_max=0.3)
    with pytest.raises(ConfigError):
        PrivacyThresholds(recovered_share_max=2)


def test_kit_block_omitted_when_default_and_read_back(tmp_path):
    ident = Identity.generate("analyst")
    plain = Kit("p", "classification", small_schema(tmp_path), "dccfl", ident.card)
    assert "privacy" not in plain.to_dict()  # an old kit's bytes, and so its digest, are unchanged
    stated = Kit("p", "classification", small_schema(tmp_path), "dccfl", ident.card, privacy={"group_size_min": 10},
                 project_id=plain.project_id, created=plain.created)
    assert stated.to_dict()["privacy"] == {"group_size_min": 10} and stated.digest() != plain.digest()
    stated.save(tmp_path / "k.dckit", ident)
    back = Kit.load(tmp_path / "k.dckit")
    assert back.privacy_thresholds.group_size_min == 10 and back.digest() == stated.digest()
    same = Kit("p", "classification", small_schema(tmp_path), "dccfl", ident.card, privacy={"group_size_min": 5},
               project_id=plain.project_id, created=plain.created)
    assert same.digest() == plain.digest()  # a default stated explicitly is not written
    for forged in ({"group_size_min": "five"}, {"epsilon": 1}, [1]):
        with pytest.raises(FormatError):
            Kit.from_dict({**plain.to_dict(), "privacy": forged})
