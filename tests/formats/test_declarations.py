"""Each file format is one declaration, used to write it and to check it (issue #32, findings 8 and 9).

The round trip writes every file kind — kit, anchor, bundle (with its privacy block), package — with every
registered method and its options (formal noise, noise, dimension, reductions, distillation modes, clustering
choices, linked feature blocks), through the product's own writers, and reads each back on the other side with the
product's own readers: the analyst's checks for bundles, the site's for packages (``participant apply``). A member
a writer puts in a file is declared, so the reader keeps it: what the analyst reads is exactly what the site wrote.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from benchmarks.fuzz import Corpus
from core.errors import FormatError
from core.formats import envelope as env
from core.formats.anchor import AnchorFile
from core.formats.fields import SCHEMAS, declaration, write_fields
from core.formats.kit import Kit
from core.methods import METHODS, method_class
from core.participant import apply_package
from core.privacy.mechanism import accounting

FORMAL = {"privacy_epsilon": 5.0}
# (method, kit settings, site settings, round options): every method, and each option that changes what is written
CASES = [
    ("dc", {}, {}, {}),
    ("dc", {}, {"noise": 1.0, "dimension": 2}, {}),
    ("dc", {}, FORMAL, {"statistics": True}),
    ("dc", {"alignment": "linear", "prior_correction": False}, {"privacy_epsilon": 1.0, "privacy_delta": 1e-6},
     {"statistics": True}),
    ("dccfl", {"t": 0.5}, {"reduction": "lpp"}, {}),
    ("dccfl", {}, {"reduction": "random", "noise": 0.5}, {"sites": 3}),
    ("dccfl", {}, FORMAL, {"statistics": True}),
    ("feddag", {}, {}, {}),
    ("feddag", {"encoder": "dual", "view": "data"}, {"dimension": 3}, {}),
    ("feddag", {}, FORMAL, {"statistics": True}),
    ("hfldd", {}, {"objective": "match"}, {}),
    ("hfldd", {"clusters": 2}, {"objective": "kip", "init": "means", "rows_share": 0.2}, {"sites": 3}),
    ("hfldd", {}, {"noise": 0.5, "dimension": 2, "init": "real"}, {}),
    ("hfldd", {}, FORMAL, {"statistics": True}),
    ("meta-lr", {}, {}, {}),
    ("meta-lr", {"intercepts": "common", "penalty_scale": "raw"}, {}, {}),
    ("meta-lr", {}, {}, {"statistics": True}),
    ("meta-lr", {}, FORMAL, {"statistics": True}),  # the summary path's central DP (core/methods/metalr/private_fit.py)
    ("dcclustering", {}, {}, {}),
    ("dcclustering", {"algorithm": "spectral", "scaling": "raw", "k": 3}, {"dimension": 2, "noise": 0.5}, {}),
    ("dcclustering", {}, FORMAL, {"statistics": True}),
    ("dcclustering", {}, {}, {"blocks": True}),
    ("gold", {}, {}, {}),
    ("gold", {"server_step": "mcpl", "scaling": "raw", "small_clusters": "drop"}, {"noise": 0.5}, {}),
]


def test_the_cases_cover_every_registered_method_and_formal_noise_wherever_a_method_offers_it():
    assert {c[0] for c in CASES} == set(METHODS)
    for name, cls in METHODS.items():
        if cls.setting("privacy_epsilon") is not None:
            assert any(c[0] == name and "privacy_epsilon" in c[2] for c in CASES), name


@pytest.mark.parametrize("method, kit_settings, site_settings, options", CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_every_file_kind_written_by_one_end_is_read_back_by_the_other(tmp_path, method, kit_settings, site_settings,
                                                                     options):
    c = Corpus(tmp_path, 0, method, kit_settings=kit_settings, site_settings=site_settings, **options)
    # the kit: written through its declaration, read back (the site's and the analyst's reader)
    assert Kit.load(c.kit_path).digest() == c.kit.digest()
    # the anchor: both forms, read back by a site
    for path in (c.anchor_plain, c.anchor_sealed):
        back = AnchorFile.load(path, expect_project=c.kit.project_id, identity=c.sites[0])
        assert back.to_dict() == c.anchor.to_dict()
    # bundles: the analyst's checks accepted every one (Corpus opened them); what it reads is what the site wrote
    for sealed, received in zip(c.sealed_bundles, c.received, strict=True):
        written = env.open_sealed(sealed.path, c.analyst, expect_kind="bundle").payload.manifest
        assert received.manifest == written
        assert ("privacy" in written) == ("privacy_epsilon" in site_settings)
        if "privacy" in written:  # formal noise: a DC map is named as the analyst's declaration allows
            assert method == "meta-lr" or written["reduction"] == "random-orthogonal"  # (meta-lr ships no rows)
            assert written["privacy"]["epsilon"] == site_settings["privacy_epsilon"]
    # packages: each read back and applied by its site, as `participant apply` does
    for k, (package, site, ws, csv) in enumerate(zip(c.packages, c.sites, c.site_ws, c.csv, strict=True)):
        result = apply_package(package.path, site, csv, tmp_path / f"result{k}.csv", workspace=ws)
        written = env.open_sealed(package.path, site, expect_kind="package").payload.manifest
        assert result.summary == written and result.rows > 0


# ---- the writers go through the declarations ------------------------------------------------------------------

@pytest.fixture(scope="module")
def dc_round(tmp_path_factory):
    return Corpus(tmp_path_factory.mktemp("declared"), 0, "dc")


def test_a_writer_refuses_an_undeclared_member_or_a_value_its_declaration_does_not_allow(dc_round):
    c = dc_round
    cls = method_class("dc")
    bundle = c.received[0]
    assert cls.write_bundle_manifest(dict(bundle.manifest), bundle.arrays, c.kit) == bundle.manifest
    for change, named in (({"note": "hello"}, "'note'"), ({"reduction": "svd"}, "'reduction'"),
                          ({"noise": 3.0}, "'noise'"), ({"n_features": 5}, "n_features"),
                          ({"dimension": bundle.manifest["dimension"] + 1}, "'x_tilde'"),
                          ({"own_cv": {**bundle.manifest["own_cv"], "extra": 1}}, "'own_cv.extra'")):
        with pytest.raises(FormatError, match=f"refused to write.*{re.escape(named)}"):
            cls.write_bundle_manifest({**bundle.manifest, **change}, bundle.arrays, c.kit)
    package = env.open_sealed(c.package_path, c.sites[0], expect_kind="package").payload.manifest
    assert cls.write_package_manifest(dict(package)) == package
    for change, named in (({"note": "hello"}, "'note'"), ({"model": "mine"}, "'model'"), ({"method": "dccfl"},
                                                                                          "'method'")):
        with pytest.raises(FormatError, match=f"refused to write.*{named}"):
            cls.write_package_manifest({**package, **change})
    with pytest.raises(FormatError, match="refused to write.*'roster.*extra"):
        replace(c.kit, roster=[{"name": "a", "fingerprint": "b", "extra": 1}]).save(c.folder / "bad.dckit", c.analyst)
    assert not (c.folder / "bad.dckit").exists()
    with pytest.raises(FormatError, match="refused to write.*'rows'"):
        AnchorFile(c.kit.project_id, "smote", 0, b"\0" * 32, c.anchor.params, c.anchor.created).to_dict()
    acc = accounting(1000.0, 1e-6, labels=True, k=2, clip=float(np.sqrt(bundle.manifest["dimension"])))
    with pytest.raises(FormatError, match="refused to write.*'privacy'.*'epsilon'"):  # ε beyond the setting's range
        cls.write_bundle_manifest({**bundle.manifest, "privacy": acc, "reduction": "random-orthogonal"},
                                  bundle.arrays, c.kit)
    with pytest.raises(FormatError, match="refused to write.*'rows'"):
        write_fields("own_cv", {**bundle.manifest["own_cv"], "rows": 1})


def test_every_method_declares_its_bundles_and_packages_and_formats_names_every_member():
    """The declarations are the spec: docs/FORMAT.md names every member each method's files declare (§6–§7.3, §8,
    §9, §12) and every array its bundles declare, so the two stay in step."""
    text = (Path(__file__).parents[2] / "docs" / "FORMAT.md").read_text(encoding="utf-8")
    for name, cls in METHODS.items():
        for kind in ("bundle", "package"):
            decl = declaration(f"{kind}:{name}")
            assert decl.fields == SCHEMAS[f"{kind}:{name}"]
            for f in decl.fields:
                assert f"`{f.name}`" in text, (kind, name, f.name)
        for a in cls.bundle_arrays or ():
            assert f"`{a.name}`" in text, (name, a.name)
    for kind in ("kit", "kit:roster", "anchor", "privacy", "own_cv", "estimate", "nn_disclosure", "near_copies"):
        for f in declaration(kind).fields:
            assert f"`{f.name}`" in text, (kind, f.name)


def test_each_array_dimension_is_a_member_a_kit_fact_a_number_or_a_function():
    for name, cls in METHODS.items():
        fields = {f.name for f in SCHEMAS[f"bundle:{name}"]}
        for a in cls.bundle_arrays or ():
            assert a.dtype in env.ALLOWED_DTYPES
            for d in a.shape:
                assert (d is None or type(d) is int or callable(d)
                        or d in fields or d in ("width", "classes")), (name, a.name, d)


def test_the_shape_check_names_the_members_and_their_values(dc_round):
    bundle = dc_round.received[0]
    arrays = {**bundle.arrays, "x_tilde": np.zeros((bundle.manifest["n_rows"], 1), np.float32)}
    with pytest.raises(FormatError, match=r"'x_tilde' as <f4 of shape \(\d+, 1\), not <f4 of shape "
                                          r"\(n_rows, dimension\) = \(\d+, \d+\)"):
        method_class("dc").check_bundle_declared(bundle.manifest, arrays, dc_round.kit)
