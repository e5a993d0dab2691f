"""CPU time of one whole site step (reduction, local model, distillation) at a 500-row site: pendigits,
10 classes, 5 rows per class, 300 steps, both objectives. python -m benchmarks.records.hfldd.time_site"""

import resource
import time

import numpy as np

from benchmarks import one_thread
from benchmarks.simulation.datasets import load_cached
from core.api.common import SiteInput
from core.api.research import HFLDD


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


X, y, classes = load_cached("pendigits", "../shared/datasets")
idx = np.random.default_rng(0).choice(len(y), 1500, replace=False)
Xs, ys = X[idx[:500]], y[idx[:500]].astype(np.int64)
anchor = X[idx[500:]] + np.random.default_rng(1).standard_normal((1000, X.shape[1]))  # 1000 public-like rows
with one_thread():
    for objective, init in (("match", "herding"), ("kip", "real")):
        c0, t0 = cpu(), time.perf_counter()
        ex = HFLDD().site_compute(SiteInput(Xs, ys, classes, anchor,
                                            settings={"seed": 0, "objective": objective, "init": init}))
        print(f"500-row site, objective {objective}: CPU {cpu() - c0:.1f} s, wall {time.perf_counter() - t0:.1f} s, "
              f"kept step {ex.manifest['kip_best_step']}, NN ratio {ex.manifest['nn_disclosure']['ratio_median']}")
