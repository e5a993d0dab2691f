"""The hfldd benchmark's summary: rows averaged over seeds and targets judged from them (no data needed)."""

from __future__ import annotations

from benchmarks.hfldd import HEADLINE, markdown, summarise, targets


def _cell(seed, split, distilled, control, central=0.95, fedavg=0.5):
    m = {HEADLINE: {"accuracy": distilled, "personal": distilled, "bundle_bytes_mean": 1000.0},
         "Random real rows (control)": {"accuracy": control, "personal": control},
         "FedAvg": {"accuracy": fedavg, "personal": fedavg},
         "Centralised MLP": {"accuracy": central, "personal": central}}
    return {"dataset": "toy", "split": split, "seed": seed, "methods": m}


def test_targets_are_judged_on_seed_means():
    cells = [_cell(0, "C1", 0.92, 0.90), _cell(1, "C1", 0.90, 0.91), _cell(0, "C10", 0.80, 0.85)]
    rows = summarise(cells)
    d = next(r for r in rows if r["split"] == "C1" and r["method"] == HEADLINE)
    assert abs(d["mean"] - 0.91) < 1e-12 and d["values"] == [0.92, 0.90] and d["std"] > 0
    c1, c10 = targets(rows)
    # 0.91 ≥ 0.95 × 0.95 = 0.9025; ≥ 0.5 + 0.2; beats the control's 0.905 by 0.5 pt
    assert c1.count("PASS") == 3 and "+0.50 pt" in c1
    assert "centralised" not in c10 and "FAIL" in c10  # C10: only the control is judged, and it wins
    text = markdown({"rows": rows, "targets": targets(rows), "jobs": 2, "cpu_seconds": 120.0, "wall_seconds": 60})
    assert "2 worker(s)" in text and "2.0 min" in text and "| toy | C1 | Distilled |" in text


def test_targets_judge_the_product_analyst_and_show_the_kernel_ridge_one_beside_it():
    cells = [_cell(0, "C1", 0.90, 0.91)]
    cells[0]["methods"][HEADLINE]["accuracy_krr"] = 0.93
    cells[0]["methods"]["Random real rows (control)"]["accuracy_krr"] = 0.92
    (line,) = targets(summarise(cells))
    # the headline (MLP) loses to the control by 1 pt; the KRR analyst wins by 1 pt, reported in brackets
    assert "-1.00 pt (FAIL)" in line and "(KRR 0.9200: +1.00 pt, PASS)" in line
