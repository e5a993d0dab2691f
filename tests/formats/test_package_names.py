"""Package file names keep to FORMAT §11's ``[A-Za-z0-9_.-]`` and stay unique and readable (issue #26)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from core.fileio import portable_name, unique_names

RULE = re.compile(r"^[A-Za-z0-9_.-]+$")


def test_names_people_give_sites_become_portable_and_readable():
    assert portable_name("Hôpital du Val-d'Oise") == "Hopital_du_Val-d_Oise"
    assert portable_name("St. Mary's (north) ward=2") == "St._Mary_s_north_ward_2"
    assert portable_name("  ..hidden  ") == "hidden"
    assert portable_name("CON") == "CON_"
    assert portable_name("東京") == "site"


@given(st.text(max_size=60))
def test_any_name_keeps_to_the_rule(name):
    assert RULE.fullmatch(portable_name(name))


def test_collisions_get_the_fingerprint_then_a_counter_whatever_the_case():
    stems = [portable_name(n) for n in ("A (1)", "A=1", "a_1", "B")]
    names = unique_names(stems, ["K8ZA", "K8ZA", "QQ12", "ZZZZ"])
    assert names[3] == "B"
    assert len({n.casefold() for n in names}) == 4 and all(RULE.fullmatch(n) for n in names)
    assert names[2] == "a_1-QQ12"
