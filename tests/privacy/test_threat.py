"""Issue #35: the threat model a kit declares — its block in the kit (absent when default, so older kits keep their
digest), the refusal of a malformed one, and which findings it counts against an export."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import ConfigError, FormatError
from core.formats.kit import Kit
from core.formats.threat import ThreatModel
from core.methods import SiteInput, get_method
from core.privacy.assessment import COLLUDING, assess_export
from tests.privacy.test_round import make_round


def test_the_default_is_not_written_and_a_declared_one_round_trips(tmp_path):
    kit, analyst, _, _ = make_round(tmp_path, 60)
    assert "threat_model" not in kit.to_dict() and kit.threat == ThreatModel()
    declared = Kit.from_dict({**kit.to_dict(), "threat_model": {"collusion": False, "public_rows": 250}})
    assert declared.threat == ThreatModel(collusion=False, public_rows=250)
    assert declared.digest() != kit.digest()
    declared.save(tmp_path / "d.dckit", analyst)
    assert Kit.load(tmp_path / "d.dckit").threat_model == {"collusion": False, "public_rows": 250}
    assert any("do not work with the analyst" in line for line in Kit.load(tmp_path / "d.dckit").describe())
    same = Kit.from_dict({**kit.to_dict(), "threat_model": {"collusion": True, "public_rows": 1000}})
    assert same.digest() == kit.digest()  # stating the default is the default


@pytest.mark.parametrize("block, words", [({"collusion": "no"}, "true or false"), ({"public_rows": -1}, "whole"),
                                          ({"public_rows": 2.5}, "whole"), ({"who": 1}, "unknown member"),
                                          ([], "not an object")])
def test_a_malformed_block_is_refused_in_one_sentence(tmp_path, block, words):
    kit, _, _, _ = make_round(tmp_path, 60)
    with pytest.raises(FormatError, match=words):
        Kit.from_dict({**kit.to_dict(), "threat_model": block})


def test_the_analyst_states_it_by_name():
    assert ThreatModel.given("no-collusion", 300) == ThreatModel(False, 300)
    assert ThreatModel.given() == ThreatModel()
    with pytest.raises(ConfigError, match="--threat-model"):
        ThreatModel.given("nobody")


def test_a_kit_that_rules_out_collusion_counts_only_the_analyst_alone():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((400, 6)) @ rng.standard_normal((6, 6))
    y = (X[:, 0] > 0).astype(int)
    anchor = rng.standard_normal((300, 6)) * X.std(0) + X.mean(0)
    site = SiteInput(X, y, ["a", "b"], anchor, None, {"seed": 1, "noise": 0.1})
    method = get_method("dccfl")
    ex = method.site_compute(site)
    counted = assess_export(site, ex, method)
    ruled_out = assess_export(site, ex, method, threat=ThreatModel(collusion=False))
    collusion = ruled_out.finding("collusion")
    assert collusion.verdict == counted.finding("collusion").verdict == "poor"  # measured and shown either way
    assert collusion.adversary == COLLUDING and not collusion.in_scope and counted.finding("collusion").in_scope
    assert collusion in ruled_out.poor_out_of_scope and collusion not in ruled_out.poor
    assert counted.needs_consent
    assert ruled_out.finding("analyst_alone").in_scope
    assert ruled_out.needs_consent == any(f.verdict == "poor" for f in ruled_out.findings if f.in_scope)
    assert any("not counted" in line for line in ruled_out.lines())
    assert ruled_out.to_dict()["threat_model"] == {"collusion": False, "public_rows": 1000}


def test_public_rows_bound_the_stand_in_rows():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((600, 4))
    site = SiteInput(X, (X[:, 0] > 0).astype(int), ["a", "b"], rng.standard_normal((200, 4)), None, {"seed": 0})
    method = get_method("dc")
    ex = method.site_compute(site)
    assert assess_export(site, ex, method, threat=ThreatModel(public_rows=100)).reference_rows == 100
    assert assess_export(site, ex, method).reference_rows == 300  # never more than half the rows
    none = assess_export(site, ex, method, threat=ThreatModel(public_rows=0))
    assert none.reference_rows == 0 and set(none.finding("analyst_alone").by_attack) == {"column_means",
                                                                                        "moment_matching"}

