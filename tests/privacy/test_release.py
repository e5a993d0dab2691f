"""Issue #34: each method declares what it releases (core/privacy/release.py) and the assessment reads that
declaration, not the bundle's array names; a release of one image per row is measured on the export itself,
which the assessment reuses instead of running the method again."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from core.methods import (
    COEFFICIENTS,
    DISTILLED_ROWS,
    METHODS,
    PROTOTYPES,
    REDUCED_ROWS,
    Method,
    Release,
    SiteExport,
    SiteInput,
    get_method,
)
from core.privacy.assessment import assess_export


@pytest.fixture(scope="module")
def table():
    X, y = load_breast_cancer(return_X_y=True)
    anchor = X.mean(0) + X.std(0) * np.random.default_rng(0).standard_normal((300, X.shape[1]))
    return X, y, anchor


def site_of(table, **settings) -> SiteInput:
    X, y, anchor = table
    return SiteInput(X, y, ["0", "1"], anchor, None, {"seed": 3, **settings}, scale=X.std(0), centre=X.mean(0))


def test_every_registered_method_declares_a_release_its_bundles_hold():
    kinds = {name: cls.discloses.kind for name, cls in METHODS.items()}
    assert kinds == {"dccfl": REDUCED_ROWS, "dc": REDUCED_ROWS, "feddag": REDUCED_ROWS, "dcclustering": REDUCED_ROWS,
                     "hfldd": DISTILLED_ROWS, "gold": PROTOTYPES, "meta-lr": COEFFICIENTS}
    for cls in METHODS.values():
        arrays = {a.name for a in cls.bundle_arrays or ()}
        if arrays:  # the arrays the bundle's declaration names hold what the method says it releases
            r = cls.discloses
            assert {n for n in (r.rows, r.anchor, r.counts) if n} <= arrays, cls.name


def test_a_method_that_does_not_say_what_it_releases_is_refused_when_it_is_written():
    with pytest.raises(TypeError, match="'silent' does not declare what it discloses"):
        class Silent(Method):  # noqa: F841 - never registered
            name, title, task, family, labels_leave = "silent", "t", "classification", "silent", "none"


class RenamedRows(Method):
    """DC-CFL's site computation with its arrays under other names: only the declaration says what they are."""

    name, title, task, family, labels_leave = "renamed_rows", "DC rows, renamed", "classification", "renamed", "rows"
    discloses = Release(REDUCED_ROWS, rows="images", anchor="anchor_images")
    calls = 0

    def site_compute(self, site, control=None) -> SiteExport:
        RenamedRows.calls += 1
        ex = get_method("dccfl").site_compute(site, control)
        ex.arrays = {"images": ex.arrays["x_tilde"], "anchor_images": ex.arrays["anchor_tilde"], "y": ex.arrays["y"]}
        return ex

    def fit(self, bundles, context):
        raise NotImplementedError

    def apply(self, manifest, arrays, private_arrays, X):
        raise NotImplementedError


def test_the_attacks_follow_the_declaration_not_the_array_names(table):
    method = RenamedRows()
    site = site_of(table, dimension=30)
    a = assess_export(site, method.site_compute(site), method)
    for attack in ("collusion", "analyst_alone", "membership"):
        assert a.finding(attack).verdict == "poor", attack  # no noise, every dimension kept: rebuilt, and it shows
    assert a.finding("collusion").numbers["median_cell_error"] < 0.01


def test_a_release_of_one_image_per_row_is_assessed_on_the_export_without_running_the_method_again(table):
    method = RenamedRows()
    site = site_of(table, noise=1.0)
    ex = method.site_compute(site)
    RenamedRows.calls = 0
    a = assess_export(site, ex, method)
    assert RenamedRows.calls == 0
    membership = a.finding("membership")
    assert membership.rows > 0 and membership.numbers["auc"] < 0.7  # noise: a patient's presence barely shows


@pytest.mark.parametrize("name", ["gold", "meta-lr"])
def test_a_joint_release_is_tested_on_a_simulated_release_of_half_the_rows(table, name, monkeypatch):
    X, y, _ = table
    cls = METHODS[name]
    method = get_method(name, {"k": 2} if name == "gold" else {})
    site = SiteInput(X, None if cls.task == "clustering" else y, [] if cls.task == "clustering" else ["0", "1"],
                     None, None, {"seed": 3})
    ex = method.site_compute(site)
    calls = []
    original = cls.site_compute
    monkeypatch.setattr(cls, "site_compute", lambda self, s, control=None: calls.append(len(s.X))
                        or original(self, s, control))
    a = assess_export(site, ex, method)
    assert calls and calls[0] < len(X)  # the members only
    assert a.finding("membership").verdict in ("ok", "poor")
