"""Issue #23: the report flags a model that never predicts the minority class at the top, draws several curves
on one legible figure, and carries every package's model card."""

from __future__ import annotations

import re

import numpy as np

from core.methods import MethodResult, get_method
from core.methods.views import Curve, Heatmap
from core.report import lines_svg, minority_flags, render_report, render_view
from tests.report import cards


def _report(summary, kit=None):
    kit = kit or cards.kit()
    method = get_method(kit.method, {})
    return render_report(kit, method, MethodResult(kit.method, [], summary, {}), summary)


def test_report_flags_never_predicts_minority_before_any_table():
    html = _report(cards.dccfl_summary(never_site="North"))
    flag = html.index("never predict the minority class")
    assert flag < html.index("<table") and flag < html.index("Model cards")
    assert "North: the model sent never predicts" in html and "sensitivity 0" in html
    assert "its accuracy of 0.67 is what always answering the common outcome gives" in html
    assert "never predict the minority class" not in _report(cards.dccfl_summary())
    assert minority_flags(cards.multiclass_summary()) == [
        "Only: the model sent never predicts high although this site has such rows (recall 0 for them, whatever "
        "the accuracy)."]


def test_report_holds_one_card_per_site():
    html = _report(cards.dccfl_summary())
    assert html.count('<section class="card">') == 3 and "Model card — package for East" in html


def test_several_series_share_one_figure_with_a_legend():
    x = [0.0, 0.5, 1.0]
    svg = render_view(Curve("ROC", x, {"North": [0, 0.8, 1], "South": [0, 0.6, 1], "chance": x}))
    assert svg.count("<figure>") == 1 and svg.count("<polyline") == 3
    assert ">North</text>" in svg and ">chance</text>" in svg and 'stroke-dasharray="5 4"' in svg
    assert "<text" not in lines_svg(x, {"only": [1, 2, 3]}).split("<line")[0]  # no legend for one line


def test_confusion_heatmap_names_its_columns():
    svg = render_view(Heatmap("Confusion", np.array([[0.9, 0.1], [0.4, 0.6]]), ["true a", "true b"],
                              ["predicted a", "predicted b"]))
    assert "1 = predicted a, 2 = predicted b" in svg and "true a – predicted b" in svg


def test_site_tree_from_dccfl_linkage_and_from_feddag_matrix():
    """Issue #27: the report draws the sites' dendrogram for methods that group sites, from the data their Clients
    page uses (DC-CFL's linkage of the label mixes, cut at t; FedDAG's site × site matrix, cut at α)."""
    from core.learn.client_clustering import LabelDistributionClustering
    from core.report import dendrogram_svg, site_tree

    counts = np.array([[50, 5], [45, 8], [4, 60], [6, 55]])
    clus = LabelDistributionClustering().fit(counts)
    summary = {"t": 0.3, "sites": [{"site": n} for n in ("A", "B", "C", "D")], "settings": {"linkage": "average"}}
    Z, names, cut, _ = site_tree(MethodResult("dccfl", [], summary, {"linkage": clus.linkage_}))
    assert np.array_equal(Z, clus.linkage_) and names == ["A", "B", "C", "D"] and cut == 0.3
    svg = dendrogram_svg(Z, names, cut=cut)
    assert svg.count("<polyline") == 3 and "cut 0.3" in svg and all(f">{n}</text>" in svg for n in names)
    fed = site_tree(MethodResult("feddag", [], summary, {"matrix": clus.distances_}))
    assert fed is not None and fed[0].shape == (3, 4) and fed[2] == 0.3
    assert site_tree(MethodResult("gold", [], summary, {})) is None
    assert site_tree(MethodResult("dccfl", [], summary, {"linkage": np.zeros((2, 4))})) is None  # wrong shape


def test_bars_are_numbered_and_named_and_notes_sit_under_their_table():
    from core.methods.views import Bars, Table
    from core.report import bars_svg

    svg = bars_svg([120, 3], ["alive", "dead"], width=110)
    assert ">1</text>" in svg and ">2</text>" in svg and ">120</text>" in svg and "<title>dead: 3</title>" in svg
    html = render_view(Table("Sites", ["site", "note", "labels"],
                             [["North", "keeps its own model", [120, 3]], ["South", "keeps its own model", [4, 9]],
                              ["East", "", [1, 1]]], bars=("labels",), bar_labels=["alive", "dead"]))
    assert "<th>note</th>" not in html and html.count("keeps its own model") == 1
    assert "<b>North, South</b>: keeps its own model" in html and "1 = alive; 2 = dead" in html
    assert "Levels. Bars: 1 = stage 1; 2 = stage 2." in render_view(Bars("Levels", ["stage 1", "stage 2"], [3.0, 2.0]))


def test_dc_one_shared_model_draws_no_site_tree():
    """DC keeps DC-CFL's linkage in its details but trains one model for all: no tree (no threshold to cut at)."""
    from core.learn.client_clustering import LabelDistributionClustering

    clus = LabelDistributionClustering().fit(np.array([[50, 5], [45, 8], [4, 60]]))
    summary = cards.dccfl_summary()
    details = {"linkage": clus.linkage_}
    kit = cards.kit()
    assert "Sites grouped by the method" in render_report(kit, get_method("dccfl"),
                                                          MethodResult("dccfl", [], summary, details), summary)
    assert "Sites grouped by the method" not in render_report(kit, get_method("dc"),
                                                              MethodResult("dc", [], summary, details), summary)


def _many_sites(n: int) -> tuple[dict, dict]:
    """A DC-CFL summary of ``n`` sites (the three of cards.dccfl_summary repeated under new names), their label-mix
    distances and the tree of them."""
    from core.learn.client_clustering import LabelDistributionClustering

    base = cards.dccfl_summary()
    sites = [{**base["sites"][i % 3], "site": f"site-{i:05d}", "fingerprint": f"FP{i:05d}"} for i in range(n)]
    counts = np.random.default_rng(n).integers(1, 60, size=(n, 2))
    clus = LabelDistributionClustering().fit(counts)
    return {**base, "sites": sites}, {"linkage": clus.linkage_, "distances": clus.distances_}


def test_the_report_of_many_sites_grows_by_a_few_hundred_bytes_a_site():
    """Issue #36: no part of the report grows with the square of the sites: the site × site heatmap becomes one
    image (a pixel per block of sites, in the tree's order), the tree shows its last merges, long tables write their
    counts instead of drawing bars, and beyond a few dozen packages the cards (each written beside its package) are
    a table of their warnings. 1,000 → 2,000 sites adds under 1 kB a site: a report of 10,000 sites stays under
    20 MB (measured whole: docs/results/report-size.md)."""
    kit = cards.kit()
    sizes = {}
    for n in (1000, 2000):
        summary, details = _many_sites(n)
        html = render_report(kit, get_method("dccfl"), MethodResult("dccfl", [], summary, details), summary)
        sizes[n] = len(html.encode("utf-8"))
        assert html.count("<rect") < 200 and html.count("data:image/png;base64,") == 1
        assert "in the order of the site tree" in html and "Only the last 59 merges are drawn" in html
        assert html.count('<section class="card">') == 0 and f"{n:,} packages: each one's model card" in html
        assert html.count("<svg") < 20
    per_site = (sizes[2000] - sizes[1000]) / 1000
    assert per_site < 1000, per_site
    assert sizes[2000] + 8000 * per_site < 20e6


def test_a_large_heatmap_is_a_png_of_block_means():
    import base64
    import re
    import struct
    import zlib

    from core.report import heatmap_svg

    M = np.kron(np.eye(3), np.ones((400, 400)))  # three blocks of 400 sites that are alike
    html = heatmap_svg(M, [f"s{i}" for i in range(1200)], size=300, title="Distances")
    png = base64.b64decode(re.search(r"base64,([^\"]+)", html).group(1))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", png[16:24])
    assert (w, h) == (300, 300) and "each pixel the mean of 4 × 4 entries" in html
    idat = png[png.index(b"IDAT") + 4:png.index(b"IEND") - 8]
    pixels = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + 3 * w)[:, 1:].reshape(h, w, 3)
    assert tuple(pixels[0, 0]) == (40, 84, 190) and tuple(pixels[0, 299]) == (240, 244, 250)  # 1: dark, 0: light


def test_curve_axes_carry_round_ticks_not_the_datas_raw_floats():
    """Issue #33 item 14: a calibration curve's axes (in the report and its PDF) are labelled 0.2, 0.4 …, never with
    the first and last predicted risks as raw floats."""
    from core.report import nice_ticks

    xs = [0.0123456789, 0.1876543, 0.4321, 0.8932101]
    svg = render_view(Curve("Calibration", xs, {"observed": [0.02, 0.15, 0.47, 0.91], "ideal": xs},
                            xlabel="predicted risk", ylabel="observed rate"))
    labels = re.findall(r">([-0-9.]+)</text>", svg)
    assert "0.0123457" not in svg and "0.0123456789" not in svg and "0.893" not in labels
    assert {"0.2", "0.4", "0.6", "0.8"} <= set(labels)
    assert all(len(t.split(".")[-1]) <= 2 for t in labels)  # every tick printed with the step's decimals
    assert nice_ticks(0.0123, 0.8932) == ([0.2, 0.4, 0.6, 0.8], 1)
    assert nice_ticks(0, 1000, 5) == ([0, 200, 400, 600, 800, 1000], 0)
