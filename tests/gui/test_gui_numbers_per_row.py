"""Issue #33 item 8: one "numbers per row" everywhere. The kit page, the privacy page's box (greyed while
"automatic") and the words beside it, and what the export sends all say the one value the method resolves for the
site's encoded columns — not the raw column count, not one fewer."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pytestqt")
pytestmark = pytest.mark.usefixtures("private_settings")

import numpy as np  # noqa: E402

from core.data.schema import infer_schema  # noqa: E402
from core.data.tabular import read_table  # noqa: E402
from core.formats.anchor import anchor_for_kit  # noqa: E402
from core.formats.identity import Identity  # noqa: E402
from core.formats.kit import Kit  # noqa: E402
from core.learn.reduction import resolved_dimension  # noqa: E402
from core.methods import METHODS  # noqa: E402
from core.methods.base import SiteInput  # noqa: E402
from core.methods.dc_site import dc_site_compute  # noqa: E402
from tests.support.gui import (  # noqa: E402
    accept_kit,
    import_anchor,
    read_csv,
    wait_job,
    wait_page,
    wizard_with_new_identity,
)
from tests.support.typedkit import make_typed_sites  # noqa: E402


@pytest.fixture(scope="module")
def typed_kit(tmp_path_factory):
    """A kit whose text columns and missing cells make more encoded columns than it has columns."""
    d = tmp_path_factory.mktemp("numbers-per-row")
    sites = make_typed_sites(d / "data", sites=1, rows=120)
    analyst = Identity.generate("Analyst")
    schema, _ = infer_schema(d / "data/sample.csv", label="outcome", with_statistics=True)
    kit = Kit(name="Clinical", task="classification", schema=schema, method="dccfl", analyst=analyst.card,
              settings={"epochs": 2, "seed": 3, "t": 0.5, "hidden": [8]}, anchor={"kind": "smote", "rows": 200})
    kit.save(d / "c.dckit", analyst)
    seed = read_table(d / "data/sample.csv", schema, labels=False).X
    anchor_for_kit(kit, seed_X=seed).save(d / "c.dcanchor")
    return {"kit": Kit.load(d / "c.dckit"), "kit_path": d / "c.dckit", "anchor": d / "c.dcanchor",
            "train": sites["site0"][0]}


def test_kit_page_privacy_page_and_export_say_one_number(qtbot, typed_kit, tmp_path):
    kit = typed_kit["kit"]
    width = kit.schema.width
    assert width != len(kit.schema.feature_names)  # the old kit page counted the raw columns: this kit tells apart
    w = wizard_with_new_identity(qtbot, "Site A", tmp_path / "ids")
    w.next()
    w.kit_page.kit_field.set_path(typed_kit["kit_path"])
    said = re.search(r"<b>(\d+) numbers per row</b>", w.kit_page.request_label.text())
    assert said is not None, w.kit_page.request_label.text()
    on_kit_page = int(said.group(1))
    w.back()
    accept_kit(w, typed_kit["kit_path"])
    import_anchor(qtbot, w, typed_kit["anchor"])
    w.next()
    read_csv(qtbot, w, typed_kit["train"])
    w.next()
    pp = w.privacy_page
    wait_page(qtbot, pp)
    if pp.levers_job is not None:  # a poor verdict measures the levers in their own job: it ends before the wizard
        wait_job(qtbot, pp.levers_job)  # goes (a job still reporting to a deleted page crashed the suite)
    editor = pp.site_form.widget("dimension")
    assert editor.value() is None and not editor.control.isEnabled()  # automatic
    in_box = editor.control.value()
    beside = int(re.search(r"here (\d+)", editor.why.text()).group(1))
    sent = pp.site_export.arrays["x_tilde"].shape[1]
    assert pp.site_export.manifest["dimension"] == sent
    assert on_kit_page == in_box == beside == sent == METHODS["dccfl"].numbers_per_row({}, width)
    # unticking "automatic" starts from that value: "fewer" counts down from what is sent
    editor.tick.setChecked(False)
    assert editor.value() == sent


@pytest.mark.parametrize("m,n,expected", [(16, None, 15), (15, None, 15), (20, None, 19), (20, 8, 7),
                                          (1, None, 1)])
def test_the_methods_rule_is_the_exports_rule(m, n, expected):
    """The one rule (:func:`resolved_dimension`) the kit page and the privacy page ask through the method, and the
    export follows; DC-Clustering keeps the papers' m − 1."""
    assert METHODS["dccfl"].numbers_per_row({}, m, n) == expected
    assert METHODS["dcclustering"].numbers_per_row({}, m, n) == resolved_dimension(None, m, n, papers=True)
    assert METHODS["dccfl"].numbers_per_row({"dimension": 3}, m, n) == 3
    assert METHODS["meta-lr"].numbers_per_row({}, m, n) is None  # its rows never leave compressed
    rows = n or 40
    X = np.random.default_rng(0).normal(size=(rows, m))
    site = SiteInput(X, None, [], np.random.default_rng(1).normal(size=(30, m)), settings={"seed": 0})
    assert dc_site_compute(site, ship_labels=False).manifest["dimension"] == expected
