"""``python -m benchmarks import-scale --sites 100,1000,3000``: the analyst's import, per bundle, as sites grow.

One real ``dc`` bundle is made through the product (a small site's export), and its content is sealed again by S
fresh site identities (each a roster entry of the kit), so every bundle is a small, valid, distinct file. Then one
:meth:`core.analyst.AnalystRound.import_bundles` call — what ``dcstudio analyst import`` runs — imports all S into
a new analyst workspace; the seconds (wall and CPU) per bundle are reported over the whole import and over its
first and last tenth. An import whose cost per bundle grows with the bundles already imported (a registry
rewritten, a log re-read per bundle: O(S²) overall) shows a last tenth slower than its first; an O(1) append
does not. Making the bundles is not timed. Works on earlier versions of the product too (the same public API),
so the record can hold a before/after pair.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from core.api import ConfigError


def _template(folder: Path):
    """A kit's analyst, schema and one sealed ``dc`` bundle's decrypted content (manifest, arrays)."""
    import pandas as pd

    from core.api import Identity
    from core.api.analyst import AnalystRound
    from core.api.common import AnalystWorkspace, Kit, SiteWorkspace, infer_schema, read_table
    from core.api.participant import ParticipantRound, make_anchor

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"x{j}": rng.normal(size=80) * (j + 1) for j in range(4)})
    frame["label"] = np.where(frame["x0"] > 0, "a", "b")
    frame.iloc[:20].to_csv(folder / "sample.csv", index=False)
    frame.iloc[20:].to_csv(folder / "site.csv", index=False)
    analyst, site = Identity.generate("analyst"), Identity.generate("template")
    schema, _ = infer_schema(folder / "sample.csv", label="label")
    kit = Kit(name="import", task="classification", schema=schema, method="dc", analyst=analyst.card,
              settings={"epochs": 2, "seed": 0})
    kit.save(folder / "t.dckit", analyst)
    anchor = make_anchor(kit.project_id, schema.encoded_names, kind="smote", rows=40,
                         seed_rows=read_table(folder / "sample.csv", schema, labels=False).X)
    job = ParticipantRound(kit, folder / "t.dckit", site, SiteWorkspace(folder / "site.ws"), anchor=anchor)
    job.confirm_analyst(kit.analyst, how="benchmark")
    job.load(folder / "site.csv")
    job.accept_privacy_risk("the test accepts the default kit's collusion risk")
    sealed = job.seal(folder / "template.dcbundle")
    session = AnalystRound(kit, analyst, AnalystWorkspace(folder / "t.ws"))
    session.confirm(site.card)
    opened = session.open_bundle(sealed.path)
    return analyst, kit, dict(opened.manifest), dict(opened.arrays)


def measure(sites: int, folder: Path, template) -> dict:
    """Seal ``sites`` bundles from as many identities (untimed), then time one import of them all."""
    import resource

    from core.api import Identity, JobControl
    from core.api.analyst import AnalystRound
    from core.api.common import AnalystWorkspace, Kit
    from core.api.research import Payload, seal

    analyst, base, manifest, arrays = template
    idents = [Identity.generate(f"site{i:05d}") for i in range(sites)]
    kit = Kit.from_dict({**base.to_dict(),
                         "roster": [{"name": s.card.name, "fingerprint": s.card.fingerprint} for s in idents]})
    kit.save(folder / "p.dckit", analyst)
    kit = Kit.load(folder / "p.dckit")
    manifest = {**manifest, "kit_digest": kit.digest()}
    paths = []
    for s in idents:
        path = folder / "bundles" / f"{s.card.name}.dcbundle"
        seal(path, Payload({**manifest, "site": s.card.name}, arrays), kind="bundle", project_id=kit.project_id,
             sender=s, recipient=kit.analyst)
        paths.append(path)
    session = AnalystRound(kit, analyst, AnalystWorkspace(folder / "analyst.ws"))
    verified: list[tuple[float, float]] = []  # (wall, CPU) at each bundle's verification step (the first pass)
    stored: list[tuple[float, float]] = []  # (wall, CPU) after each bundle's audit line and registry entry
    store = session.workspace.store

    def timed_store(*args, **kwargs):
        out = store(*args, **kwargs)
        stored.append((time.perf_counter(), time.process_time()))
        return out

    session.workspace.store = timed_store
    control = JobControl(lambda fraction, text: verified.append((time.perf_counter(), time.process_time())))
    cpu0, wall0 = time.process_time(), time.perf_counter()
    reports = session.import_bundles(paths, control)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    if len(reports) != sites or any(r.status != "imported" for r in reports):
        raise ConfigError("the benchmark's import did not import every bundle")
    return {"sites": sites, "wall_seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
            "ms_per_bundle": round(1000 * wall / sites, 3), "cpu_ms_per_bundle": round(1000 * cpu / sites, 3),
            **_tenths("verify", verified[:sites]), **_tenths("record", stored),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def _tenths(name: str, marks: list[tuple[float, float]]) -> dict:
    """Milliseconds per bundle (wall, and CPU) between consecutive marks, over the first and the last tenth of the
    bundles."""
    if len(marks) < 2:
        return {}
    steps = np.diff(np.asarray(marks), axis=0)
    tenth = max(1, len(steps) // 10)
    out = {}
    for k, what in ((0, "ms"), (1, "cpu_ms")):
        out[f"{name}_{what}_first_tenth"] = round(1000 * float(steps[:tenth, k].mean()), 3)
        out[f"{name}_{what}_last_tenth"] = round(1000 * float(steps[-tenth:, k].mean()), 3)
    return out


def run(sites: list[int], say: Callable[[str], None] | None = None) -> dict:
    from benchmarks import machine
    from core.api import __version__

    rows = []
    with tempfile.TemporaryDirectory(prefix="dcstudio-import-") as tmp:
        template = _template(Path(tmp))
        for s in sites:
            with tempfile.TemporaryDirectory(prefix=f"s{s}-", dir=tmp) as sub:
                row = measure(s, Path(sub), template)
            rows.append(row)
            if say is not None:
                say(f"{s:>6} bundles: {row['ms_per_bundle']:.2f} ms per bundle wall ({row['cpu_ms_per_bundle']:.2f} "
                    f"CPU), whole import {row['wall_seconds']:.1f} s; CPU ms per bundle, first / last tenth: "
                    f"verify {row.get('verify_cpu_ms_first_tenth')} / {row.get('verify_cpu_ms_last_tenth')}, audit "
                    f"line + registry entry {row.get('record_cpu_ms_first_tenth')} / "
                    f"{row.get('record_cpu_ms_last_tenth')}")
    return {"experiment": "import-scale", "version": __version__, "machine": machine(), "rows": rows}


def run_from_args(args, say: Callable[[str], None]) -> dict:
    sites = [int(s) for s in (args.sites or "100,1000,3000").split(",")]
    result = run(sites, say)
    if args.json:
        from core.api import write_json_atomic

        write_json_atomic(args.json, result)
    return result
