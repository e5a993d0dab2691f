"""Well-typed lies in re-signed bundles are refused at import, naming the site (issue #32, finding 8).

An insider holds a valid site key: every file here is a genuine bundle whose manifest or arrays were changed to
values of the right type that do not agree with its arrays or the kit, then correctly signed and encrypted again
(:func:`benchmarks.fuzz.reseal`). The analyst's import (:meth:`core.analyst.AnalystRound.open_bundle`) must refuse
each with one sentence that names the site and what does not agree.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.fuzz import Corpus, npy_bytes, reseal
from core.errors import FormatError
from core.privacy.mechanism import accounting

LIES = {  # method → (what the lie changes, manifest changes, array changes, words the refusal names)
    "dc": [
        ("n_features", {"n_features": +1}, {}, "n_features"),
        ("dimension", {"dimension": -1}, {}, "'x_tilde'"),
        ("anchor_rows", {"anchor_rows": +1}, {}, "'anchor_tilde'"),
        ("negative class count", {}, {"label_counts": lambda a: a + np.array([-1, 1])}, "label_counts"),
        ("class counts that do not count y", {}, {"label_counts": lambda a: a * 2}, "label_counts"),
        ("formal noise claimed, none applied", {"privacy": "formal"}, {}, "privacy"),
        ("noise above its range", {"noise": 5.0}, {}, "'noise'"),
        ("HTML in filled", {"filled": {"<img src=x onerror=alert(1)>": 1}}, {}, "'filled'"),
        ("terminal escape in filled", {"filled": {"x0\x1b[2J": 1}}, {}, "'filled'"),
        ("filled more cells than rows", {"filled": {"x0": 10 ** 6}}, {}, "'filled'"),
    ],
    "hfldd": [
        ("class counts that do not sum to n_rows", {"n_rows": +3}, {}, "label_counts"),
        ("rows kept at the site above its rows", {"rows_kept_at_site": 10 ** 15}, {}, "rows_kept_at_site"),
        ("anchor rows beyond the anchor", {"anchor_rows_total": 1}, {}, "anchor_rows"),
        ("bundle size that is not its arrays'", {"bundle_bytes": 7}, {}, "bundle_bytes"),
    ],
    "meta-lr": [
        ("rows kept at the site above its rows", {"rows_kept_at_site": 10 ** 15}, {}, "rows_kept_at_site"),
        ("ridge other than the kit's", {"ridge": 0.5}, {}, "ridge"),
        ("class count other than the kit's", {"n_classes": 3}, {}, "n_classes"),
    ],
    "gold": [
        ("rows left out that do not add up", {"dropped_rows": +7}, {}, "dropped_rows"),
        ("a guard other than the kit's", {"min_cluster_rows": +1}, {}, "min_cluster_rows"),
        ("micro-cluster count that is not its arrays'", {"micro_clusters": +1}, {}, "'centroids'"),
    ],
    "dcclustering": [
        ("n_features of another block", {"n_features": +1}, {}, "n_features"),
        ("dimension", {"dimension": -1}, {}, "'x_tilde'"),
    ],
}


@pytest.fixture(scope="module")
def rounds(tmp_path_factory):
    return {m: Corpus(tmp_path_factory.mktemp(m.replace("-", "")), 0, m) for m in LIES}


@pytest.fixture(scope="module")
def formal(tmp_path_factory):
    return Corpus(tmp_path_factory.mktemp("formal"), 0, "dc", site_settings={"privacy_epsilon": 2.0}, statistics=True)


def _lie(corpus: Corpus, manifest_change: dict, array_change: dict) -> tuple[dict, list]:
    opened = corpus.inner["bundle"]
    content = dict(opened.payload.manifest)
    for key, value in manifest_change.items():
        if value == "formal":  # the accounting of formal noise at ε = 2 for this dimension, on rows never noised
            content[key] = accounting(2.0, 1e-5, labels=True, k=2, clip=float(np.sqrt(content["dimension"])))
        elif type(value) is int and abs(value) < 100 and key in content:
            content[key] = content[key] + value
        else:
            content[key] = value
    arrays = {k: np.ascontiguousarray(v) for k, v in opened.payload.arrays.items()}
    for key, change in array_change.items():
        arrays[key] = change(arrays[key]).astype(arrays[key].dtype)
    return content, [(f"{k}.npy", npy_bytes(arrays[k])) for k in sorted(arrays)]


@pytest.mark.parametrize("method, what, manifest_change, array_change, named",
                         [(m, *lie) for m, lies in LIES.items() for lie in lies],
                         ids=[f"{m}: {lie[0]}" for m, lies in LIES.items() for lie in lies])
def test_a_resigned_bundle_whose_fields_do_not_agree_is_refused_at_import_naming_the_site(
        rounds, tmp_path, method, what, manifest_change, array_change, named):
    corpus = rounds[method]
    content, members = _lie(corpus, manifest_change, array_change)
    path = tmp_path / "lie.dcbundle"
    reseal(corpus, "bundle", path, content, members)
    with pytest.raises(FormatError) as err:
        corpus.session.open_bundle(path)
    message = str(err.value)
    assert "site0" in message and named in message, message
    assert "Traceback" not in message


def test_a_formal_noise_bundle_is_accepted_and_a_changed_accounting_or_unnoised_rows_are_refused(
        formal, rounds, tmp_path):
    manifest = formal.inner["bundle"].payload.manifest
    assert manifest["reduction"] == "random-orthogonal" and formal.received[0].manifest["privacy"] == \
        manifest["privacy"]  # accepted (finding 9: the analyst refused every formal-noise bundle)
    acc = manifest["privacy"]
    arrays = formal.inner["bundle"].payload.arrays
    quiet = arrays["x_tilde"] - arrays["x_tilde"].mean(axis=0)  # the rows without their noise's spread
    quiet = (quiet / np.linalg.norm(quiet, axis=1, keepdims=True).max() * acc["clip"]).astype(np.float32)
    for content, members, named in (
            ({**manifest, "privacy": {**acc, "sigma": acc["sigma"] / 10}}, None, "privacy"),
            ({**manifest, "privacy": {**acc, "epsilon": 50.0}}, None, "privacy"),
            ({**manifest, "privacy": {**acc, "clip": acc["clip"] * 2, "sensitivity": acc["sensitivity"] * 2}}, None,
             "privacy"),
            (manifest, [(f"{k}.npy", npy_bytes(quiet if k == "x_tilde" else arrays[k])) for k in sorted(arrays)],
             "x_tilde"),
            ({**manifest, "own_cv": rounds["dc"].inner["bundle"].payload.manifest["own_cv"]}, None, "own_cv")):
        path = tmp_path / "formal-lie.dcbundle"
        reseal(formal, "bundle", path, content, members)
        with pytest.raises(FormatError, match=f"site0.*{named}"):
            formal.session.open_bundle(path)


def test_undeclared_members_are_never_read(rounds, tmp_path):
    corpus = rounds["dc"]
    content = {**corpus.inner["bundle"].payload.manifest, "note": "\x1b]8;;http://evil\x07click\x1b]8;;\x07",
               "rows_kept_at_site": 3}
    path = tmp_path / "extra.dcbundle"
    reseal(corpus, "bundle", path, content)
    bundle = corpus.session.open_bundle(path)
    assert "note" not in bundle.manifest and "rows_kept_at_site" not in bundle.manifest  # dc declares neither
