"""The promise's pieces (core/methods/promise.py): the site's set-aside rows, its choice by the shared margin, and
the one apply path every classification method goes through."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import FormatError
from core.formats.fields import SCHEMAS, check_fields, site_rows
from core.learn.local_model import fit_local_model
from core.learn.own_cv import MARGIN_SE, beats_own, read_own_cv
from core.methods.promise import check_shared_oof, check_state, paired_se, promised_columns, split_check_rows


def test_a_quarter_of_each_class_is_set_aside_the_same_way_for_the_same_rows():
    y = np.array([0] * 20 + [1] * 9 + [2] * 2 + [3])
    keep, held = split_check_rows(y, seed=7)
    assert np.array_equal(np.sort(np.concatenate([keep, held])), np.arange(len(y)))
    counts = np.bincount(y[held], minlength=4)
    assert counts.tolist() == [5, 2, 1, 0]  # round(n_c / 4), at least 1, none of a one-row class
    assert all(np.sum(y[keep] == c) >= 1 for c in range(4))  # every class keeps rows to learn from
    again, _ = split_check_rows(y, seed=7)
    other, _ = split_check_rows(y, seed=8)
    assert np.array_equal(keep, again) and not np.array_equal(keep, other)


def test_the_margin_is_one_rule_for_the_analyst_and_the_site():
    assert MARGIN_SE == 1.645
    assert beats_own(0.80, 0.70, 0.05) and not beats_own(0.78, 0.70, 0.05)
    a = np.array([True] * 8 + [False] * 2)
    assert paired_se(a, a) == 0.0  # the same predictions: no difference, no spread
    b = np.array([True] * 5 + [False] * 5)
    # b = 3 rows only the first gets right, c = 0: √(3 − 9/10)/10
    assert paired_se(a, b) == pytest.approx(np.sqrt(3 - 0.9) / 10)


def _site(seed: int = 0, n: int = 120, noise: float = 0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + noise * rng.normal(size=n) > 0).astype(np.int64)
    return X, y


def _own_proba(private):
    from core.learn.local_model import local_predict_proba

    own = {k[len("check_"):]: v for k, v in private.items() if k.startswith("check_local")}
    return local_predict_proba(own, private["check_x"])


def test_the_site_keeps_its_own_model_unless_the_package_is_better_on_its_set_aside_rows():
    """A site-scored method's package is compared with a model of the other rows on the rows set aside at export
    (core.learn.site_update on those rows): a package that knows the truth is used; one that predicts as the own
    model does changes nothing but, at most, the baseline risk."""
    from core.methods.promise import paired_choice

    X, y = _site(noise=1.5)  # a hard site: its own model is right on about two rows in three
    _, held, private = check_state(X, y, 2)
    assert len(held) == len(private["check_y"]) == 30 and set(private) >= {"check_x", "check_local_w"}
    classes = ["no", "yes"]
    truth = np.eye(2)[private["check_y"]] * 0.98 + 0.01
    lookup = {tuple(r): p for r, p in zip(private["check_x"].tolist(), truth, strict=True)}

    def perfect(rows):
        P = np.array([lookup[tuple(r)] for r in rows.tolist()])
        return {"prediction": np.asarray(classes, dtype=object)[P.argmax(1)], "prob_no": P[:, 0], "prob_yes": P[:, 1]}
    better = paired_choice(_SiteScored(), {"classes": classes}, {}, private, classes, "auto", perfect)
    assert better["kind"] != "own" and better["paired_on"] == "set-aside" and "so you use it" in better["reason"]
    own = _own_proba(private)

    def same(rows):
        return {"prediction": np.asarray(classes, dtype=object)[own.argmax(1)], "prob_no": own[:, 0],
                "prob_yes": own[:, 1]}
    kept = paired_choice(_SiteScored(), {"classes": classes}, {}, private, classes, "auto", same)
    # the same ranking as its own model: whatever is used ranks the rows as the own model does (at most its baseline
    # risk is re-estimated on the set-aside rows)
    assert kept["kind"] in ("own", "shared", "intercept", "blend")
    assert kept["scores"][kept["kind"]]["auc"] == pytest.approx(kept["scores"]["own"]["auc"], abs=0.02)


class _SiteScored:
    task, own_model_choice = "classification", "site"


class _AnalystScored:
    task, own_model_choice = "classification", "analyst"


def test_every_method_applies_through_one_path():
    X, y = _site(1)
    _, _, private = check_state(X, y, 2)
    private.update(fit_local_model(X, y, 2))
    manifest = {"classes": ["no", "yes"]}
    wrong = lambda rows: {"prediction": np.where(rows[:, 0] > 0, "no", "yes").astype(object)}  # noqa: E731
    cols, choice = promised_columns(_SiteScored(), manifest, private, X, wrong)
    assert choice["model"] == "own" and choice["by"] == "site" and choice["scores"]["shared"]["accuracy"] < 0.3
    assert np.mean(cols["prediction"] == np.array(["no", "yes"], dtype=object)[y]) > 0.8  # the own model's
    right = lambda rows: {"prediction": np.where(rows[:, 0] > 0, "yes", "no").astype(object)}  # noqa: E731
    _, choice = promised_columns(_SiteScored(), manifest, private, X, right)
    assert choice["model"] in ("package", "own", "updated") and choice["by"] == "site"
    own = {**manifest, "model": "own", "own_kind": "linear"}
    cols, choice = promised_columns(_AnalystScored(), own, private, X, wrong)
    assert choice == {"model": "own", "by": "analyst", "reason": choice["reason"]} and "prob_yes" in cols
    cols, choice = promised_columns(_AnalystScored(), manifest, private, X, wrong)
    assert choice["model"] == "package" and cols["prediction"][0] == wrong(X[:1])["prediction"][0]


def test_shared_out_of_fold_arrays_are_checked_before_use():
    good = {"shared_oof": np.full((3, 2), 0.5, np.float32), "shared_oof_rows": np.array([0, 4, 9], np.int64)}
    check_shared_oof(good, 10, 2)
    check_shared_oof({}, 10, 2)  # a package used as sent carries none
    bad = [({"shared_oof": good["shared_oof"]}, "without its partner"),
           ({**good, "shared_oof_rows": np.array([0, 9, 4], np.int64)}, "must increase"),
           ({**good, "shared_oof_rows": np.array([0, 4, 10], np.int64)}, "within this site's 10 rows"),
           ({**good, "shared_oof_rows": np.array([0, 4, 9], np.int32)}, "whole numbers"),
           ({**good, "shared_oof": np.full((3, 3), 0.3, np.float32)}, r"shape \(3, 2\)"),
           ({**good, "shared_oof": np.full((3, 2), 1.5, np.float32)}, "between 0 and 1")]
    for arrays, words in bad:
        with pytest.raises(FormatError, match=words):
            check_shared_oof(arrays, 10, 2)


def test_own_cv_may_rest_on_the_rows_set_aside_but_no_more():
    cv = {"accuracy": 0.9, "balanced_accuracy": 0.9, "auc": 0.95, "log_loss": 0.3, "rows": 40, "folds": 5,
          "repeats": 5, "events": 10}
    manifest = {"n_rows": 30, "rows_kept_at_site": 10, "own_cv": cv}
    assert site_rows(manifest) == 40 and read_own_cv(manifest, site_rows(manifest), 2)["rows"] == 40
    with pytest.raises(FormatError, match=r"own-model scores \(own_cv\) give 'rows'"):
        read_own_cv({**manifest, "rows_kept_at_site": 9}, site_rows({**manifest, "rows_kept_at_site": 9}), 2)
    for name in ("hfldd", "meta-lr"):  # the site-scored methods declare the count: never negative
        kept = next(f for f in SCHEMAS[f"bundle:{name}"] if f.name == "rows_kept_at_site")
        assert kept.type == "int" and kept.low == 0
    with pytest.raises(FormatError, match="rows_kept_at_site"):
        check_fields("bundle:meta-lr", {"n_rows": 30, "n_features": 2, "n_classes": 2, "estimate": "none",
                                        "method": "meta-lr", "family": "meta-lr", "kit_digest": "0" * 64,
                                        "schema_digest": "0" * 64, "rows_kept_at_site": -1}, "the bundle's manifest")
