"""``python -m benchmarks gold-server``: one wine partition through every column of the record."""

from threadpoolctl import threadpool_limits

from benchmarks import gold_server as S


def test_a_wine_partition_scores_every_column_and_the_new_step_beats_the_old():
    with threadpool_limits(1):
        r = S.case("wine", 2)
    assert r["rows_per_site"] and min(r["rows_per_site"]) >= 30 and r["kinds_per_site"] == [2, 2, 2, 2]
    assert set(r["ari"]) == set(S.COLUMNS) and not r.get("errors")
    a = r["ari"]
    assert a[S.NEW_K] >= a[S.OLD_K] + 0.2  # MCPL + REMC with k = 3 given merges level clusters by label ties
    assert a[S.CEILING] >= 0.8  # the micro-clusters themselves mostly hold one kind each
    summary = S.summarise([r])
    assert summary["per_partition"][0]["reference"] == max(a[S.DC], a[S.KFED_SQRT], a[S.KFED_K])
