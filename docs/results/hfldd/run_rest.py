"""The cells of `bench hfldd --seeds 3` not yet in hfldd_cells.jsonl, in 2 worker processes, appended to it."""
import json
import multiprocessing as mp
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from core.bench.hfldd import Protocol, _cell_task, _cpu_seconds, _jsonable

if __name__ == "__main__":
    log = Path("docs/results/hfldd/hfldd_cells.jsonl")
    have = {(c["dataset"], c["split"], c["seed"]) for c in map(json.loads, log.read_text().splitlines())}
    tasks = [(ds, sp, seed) for seed in (0, 1, 2) for ds in ("letter_recognition", "pendigits")
             for sp in ("C1", "C2", "C10") if (ds, sp, seed) not in have]
    tasks.sort(key=lambda t: (t[2], t[0] != "letter_recognition"))
    print(f"{len(tasks)} cells to run", flush=True)
    t0, c0 = time.time(), _cpu_seconds()
    p = Protocol()
    with ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("spawn")) as pool:
        futs = [pool.submit(_cell_task, ds, "../shared/datasets", sp, seed, p) for ds, sp, seed in tasks]
        for f in as_completed(futs):
            rec = f.result()
            with log.open("a") as fh:
                fh.write(json.dumps(rec, default=_jsonable) + "\n")
            m = rec["methods"]
            print(f"{rec['dataset']} {rec['split']} seed {rec['seed']}: distilled {m['Distilled']['accuracy']:.4f} "
                  f"control {m['Random real rows (control)']['accuracy']:.4f} ({rec['seconds']:.0f} s, CPU "
                  f"{rec['cpu_seconds']:.0f} s)", flush=True)
    print(f"wall {time.time() - t0:.0f} s, CPU {_cpu_seconds() - c0:.0f} s", flush=True)
