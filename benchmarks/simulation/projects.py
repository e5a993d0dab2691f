"""Synthetic analyst projects for tests, screenshots and the responsiveness probe.

:func:`build_project` makes a small but real round with core only: the analyst's identity (scrypt
log_n=14), a signed kit, a participant-side anchor and one sealed bundle per site, with label skew so the
sites fall into groups. :func:`build_clustering_project` does the same for a clustering kit.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

PASSPHRASE = "correct horse battery staple"
FEATURES = [f"x{j}" for j in range(8)]
CLASSES = ["a", "b", "c", "d"]
GROUP_MIXES = [[0.45, 0.45, 0.05, 0.05], [0.05, 0.05, 0.45, 0.45], [0.25, 0.25, 0.25, 0.25]]
BINARY_CLASSES = ["no", "yes"]  # ``build_project(..., classes=2)``: a yes/no outcome
BINARY_MIXES = [[0.8, 0.2], [0.55, 0.45], [0.7, 0.3]]
SITE_NAMES = ["North General", "St Mary's", "Lakeside Clinic", "City Hospital", "Riverside", "Hillcrest",
              "Bayview", "Oakwood", "Kingsbridge", "Elm Park", "Westfield", "Harbour"]


@dataclass
class Project:
    """Paths of a built project."""

    root: Path
    identity: Path
    passphrase: str
    kit: Path
    sample: Path
    bundles: list[Path]
    sites: list[str]
    extras: dict[str, Path] = field(default_factory=dict)  # "tampered", "duplicate", "foreign"


def _data(n_rows: int, seed: int, classes: int = 4):
    from sklearn.datasets import make_classification

    sep = 1.6 if classes > 2 else 0.8  # a yes/no outcome that is not trivially separable (ROC worth drawing)
    X, y = make_classification(n_samples=n_rows, n_features=8, n_informative=6, n_redundant=1, n_classes=classes,
                               n_clusters_per_class=2, class_sep=sep, random_state=seed)
    X = X * np.array([1, 10, 100, 0.1, 1, 5, 50, 2]) + np.array([0, 50, -300, 1, 2, 0, 1000, 7])
    frame = pd.DataFrame(X, columns=FEATURES)
    frame["label"] = np.asarray(BINARY_CLASSES if classes == 2 else CLASSES)[y]
    return frame, y


def build_project(root: str | Path, *, n_sites: int = 4, rows: int = 200, epochs: int = 5, groups: int = 2,
                  names: list[str] | None = None, seed: int = 0, extras: bool = False,
                  settings: dict | None = None, classes: int = 4, method: str = "dccfl",
                  site_settings: dict | None = None) -> Project:
    """Write a whole analyst-side starting point with core: identity, kit, and one bundle per site.

    Sites alternate between ``groups`` label mixes (two opposite skews, then a balanced one; with ``classes=2`` a
    yes/no outcome, the sites' shares of "yes" 20 %, 45 % and 30 %). With
    ``method`` names the kit's (classification) method, ``site_settings`` what every site sets (a seed each
    site by default, when the method has one). With
    ``extras`` also writes a tampered copy of bundle 0, a byte-identical duplicate of bundle 1 and a bundle
    from another project (all three must be refused on import).
    """
    from core.api import Identity
    from core.api.common import Kit, SiteWorkspace, infer_schema
    from core.api.participant import ParticipantRound, make_anchor

    root = Path(root)
    (root / "data").mkdir(parents=True, exist_ok=True)
    names = list(names or (SITE_NAMES[:n_sites] if n_sites <= len(SITE_NAMES) else
                           [f"site{i:02d}" for i in range(n_sites)]))
    K = 2 if classes == 2 else 4
    frame, y = _data(max(4000, n_sites * rows * 2 + 400), seed, K)
    rng = np.random.default_rng(seed)
    pools = {k: list(rng.permutation(np.flatnonzero(y == k))) for k in range(K)}
    sample = root / "data" / "sample.csv"
    frame.iloc[[pools[k].pop() for k in range(K) for _ in range(10 if K == 2 else 5)]].to_csv(sample, index=False)
    seed_rows = frame.iloc[[pools[k].pop() for k in range(K) for _ in range(25)]][FEATURES].to_numpy()

    analyst = Identity.generate("Analyst")
    identity = root / "analyst" / "analyst.dcid"
    identity.parent.mkdir(parents=True, exist_ok=True)
    analyst.save(identity, PASSPHRASE, log_n=14)
    analyst.card.save(identity.with_suffix(".dcpub"))
    schema, _ = infer_schema(sample, label="label")
    from core.api.common import method_class

    kit_settings = {"epochs": epochs, "seed": 0, **(settings or {})}
    kit_settings = {k: v for k, v in kit_settings.items() if method_class(method).setting(k) is not None}
    kit = Kit(name="Skewed wards", task="classification", schema=schema, method=method, analyst=analyst.card,
              settings=kit_settings, anchor={"kind": "smote", "rows": 500})
    kit_path = root / "analyst" / "project.dckit"
    kit.save(kit_path, analyst)
    anchor = make_anchor(kit.project_id, schema.encoded_names, kind="smote", rows=500, seed_rows=seed_rows)

    bundles = []
    for i, name in enumerate(names):
        mix = (BINARY_MIXES if K == 2 else GROUP_MIXES)[i % groups]
        counts = rng.multinomial(rows, mix)
        idx = rng.permutation([pools[k].pop() for k in range(K) for _ in range(counts[k])])
        csv = root / "data" / f"site{i}.csv"
        frame.iloc[idx].to_csv(csv, index=False)
        ident = Identity.generate(name)
        ws = SiteWorkspace(root / "sites" / f"site{i}.workspace")
        own = {k: v for k, v in {"seed": i, **(site_settings or {})}.items()
               if any(x.name == k for x in method_class(method).site_settings_spec())}
        job = ParticipantRound(kit, kit_path, ident, ws, anchor=anchor, site_settings=own)
        job.confirm_analyst(kit.analyst, how="simulation: the kit's own signer")
        job.accept_privacy_risk("simulation: a simulated site accepts its poor verdicts")
        job.load(csv)
        out = root / "bundles" / f"site{i}.dcbundle"
        out.parent.mkdir(parents=True, exist_ok=True)
        job.seal(out)
        bundles.append(out)

    project = Project(root, identity, PASSPHRASE, kit_path, sample, bundles, names)
    if extras:
        other = root / "other"
        other.mkdir(exist_ok=True)
        data = bytearray(bundles[0].read_bytes())
        data[len(data) // 2] ^= 0x01
        (other / "tampered.dcbundle").write_bytes(bytes(data))
        shutil.copyfile(bundles[1], other / "duplicate.dcbundle")
        foreign_kit = Kit(name="Another project", task="classification", schema=schema, method="dccfl",
                          analyst=analyst.card, settings={"epochs": epochs})
        fk_path = other / "foreign.dckit"
        foreign_kit.save(fk_path, analyst)
        fa = make_anchor(foreign_kit.project_id, schema.encoded_names, kind="smote", rows=200, seed_rows=seed_rows)
        fjob = ParticipantRound(foreign_kit, fk_path, Identity.generate("Stranger"),
                                SiteWorkspace(other / "stranger.workspace"), anchor=fa, site_settings={"seed": 99})
        fjob.confirm_analyst(foreign_kit.analyst, how="simulation: the kit's own signer")
        fjob.accept_privacy_risk("simulation: a simulated site accepts its poor verdicts")
        fjob.load(root / "data" / "site0.csv")
        fjob.seal(other / "foreign.dcbundle")
        project.extras = {"tampered": other / "tampered.dcbundle", "duplicate": other / "duplicate.dcbundle",
                          "foreign": other / "foreign.dcbundle"}
    return project


def build_clustering_project(root: str | Path, *, n_sites: int = 3, rows: int = 150, k: int = 3,
                             seed: int = 0, method: str = "dcclustering", settings: dict | None = None) -> Project:
    """A clustering project (task "clustering", ``method`` "dcclustering" by default, horizontal sites, uniform
    anchor in the kit's public ranges): identity, kit and one bundle per site, written with core."""
    from sklearn.datasets import make_blobs

    from core.api import Identity
    from core.api.common import Kit, SiteWorkspace, infer_schema
    from core.api.participant import ParticipantRound, make_anchor

    root = Path(root)
    (root / "data").mkdir(parents=True, exist_ok=True)
    X, _ = make_blobs(n_samples=n_sites * rows + 60, n_features=6, centers=k, cluster_std=1.2, random_state=seed)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(6)])
    sample = root / "data" / "sample.csv"
    frame.iloc[:60].to_csv(sample, index=False)
    analyst = Identity.generate("Analyst")
    identity = root / "analyst" / "analyst.dcid"
    identity.parent.mkdir(parents=True, exist_ok=True)
    analyst.save(identity, PASSPHRASE, log_n=14)
    schema, _ = infer_schema(sample, label=None, with_ranges=True)
    kit_settings = {"k": "auto", "k_range": [2, 5]} if settings is None else settings
    kit = Kit(name="Blobs", task="clustering", schema=schema, method=method, analyst=analyst.card,
              settings=kit_settings, anchor={"kind": "uniform", "rows": 300})
    kit_path = root / "analyst" / "project.dckit"
    kit.save(kit_path, analyst)
    lo = np.array([f.min for f in schema.features])
    hi = np.array([f.max for f in schema.features])
    anchor = make_anchor(kit.project_id, schema.encoded_names, kind="uniform", rows=300, ranges=(lo, hi))
    bundles, names = [], [f"lab{i}" for i in range(n_sites)]
    for i, name in enumerate(names):
        csv = root / "data" / f"site{i}.csv"
        frame.iloc[60 + i * rows: 60 + (i + 1) * rows].to_csv(csv, index=False)
        job = ParticipantRound(kit, kit_path, Identity.generate(name),
                               SiteWorkspace(root / "sites" / f"site{i}.workspace"), anchor=anchor,
                               site_settings={"seed": i})
        job.confirm_analyst(kit.analyst, how="simulation: the kit's own signer")
        job.accept_privacy_risk("simulation: a simulated site accepts its poor verdicts")
        job.load(csv)
        out = root / "bundles" / f"site{i}.dcbundle"
        out.parent.mkdir(parents=True, exist_ok=True)
        job.seal(out)
        bundles.append(out)
    return Project(root, identity, PASSPHRASE, kit_path, sample, bundles, names)


def fake_clustering_result(n: int = 600, k: int = 3, seed: int = 0):
    """A MethodResult shaped like the built-in clustering method's (planted clusters over four sites), for
    screenshots and view tests without a round."""
    from core.api.common import MethodResult, default_method, get_method

    name = default_method("clustering")
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, size=(k, 5))
    labels = rng.integers(0, k, size=n)
    R = centres[labels] + rng.normal(0, 1.0, size=(n, 5))
    groups = rng.integers(0, 4, size=n)
    curve = {}
    for kk in range(2, 8):
        curve[kk] = {"silhouette": float(0.62 - 0.06 * abs(kk - k) - 0.01 * kk),
                     "inertia": float(9000 / kk + 300 * max(0, k - kk))}
    sizes = np.bincount(labels, minlength=k)
    details = {"representation": R.astype(np.float32), "labels": labels, "group_of_row": groups,
               "centroids": centres, "k_curve": curve, "sizes": sizes}
    sites = [{"site": f"site{g}", "fingerprint": "", "block": "all", "rows": int((groups == g).sum()),
              "variance_kept": 0.9, "clustered": int((groups == g).sum()), "not_clustered": 0, "note": "",
              "cluster_counts": np.bincount(labels[groups == g], minlength=k).tolist()} for g in range(4)]
    summary = {"method": name, "task": "clustering", "k": k, "k_auto": True,
               "k_curve": {str(kk): v for kk, v in curve.items()}, "algorithm": "kmeans", "alignment": "affine",
               "scaling": "raw", "dimension": 5, "n_clusters": k, "sizes": sizes.tolist(), "rows_clustered": n,
               "blocks": ["all"], "graph_components": None,
               "linkage": {"people": n, "joined": n, "groups": 4, "partial": 0, "conflicts": 0,
                           "left_out_rows": 0, "what_happened": ""},
               "groups": [{"sites": [s["site"]], "rows": s["rows"]} for s in sites], "sites": sites,
               "settings": get_method(name).settings}
    return MethodResult(name, [], summary, details)
