"""``dcstudio demo``: a whole round on embedded data, through the same objects as the CLI and the GUI.

Data: scikit-learn's bundled Wisconsin breast-cancer set (569 rows, 30 features, no download). A public
reference sample of 60 rows seeds the extended-SMOTE anchor; the other rows are split over five simulated
hospitals with label skew (two mostly-malignant referral centres, three mostly-benign screening sites).
Each hospital keeps a quarter of its rows back to test the package it receives, and the same learner
trained on its own rows alone is the "local only" baseline. The kit asks for affine alignment, which is
exact for centred private maps such as PCA (DC-Clustering, appendix; algorithms.md §1.4).
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer

from .analyst import AnalystRound
from .data.schema import infer_schema
from .data.tabular import read_table
from .formats.anchor import make_anchor
from .formats.identity import Identity, PublicCard
from .formats.workspace import AnalystWorkspace, SiteWorkspace
from .kit_builder import build_kit
from .learn.mlp import BatchedMLP
from .participant import ParticipantRound, apply_package

SITES = [("north-referral", 0.70), ("east-referral", 0.60), ("south-screening", 0.15),
         ("west-screening", 0.10), ("central-clinic", 0.20)]  # (name, share of malignant rows)
SITE_ROWS = 100
DEMO_PASSPHRASE = "demo passphrase (not secret)"
SEED = 7


def _data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    raw = load_breast_cancer(as_frame=True)
    df = raw.frame.rename(columns=lambda c: c.replace(" ", "_"))
    df["diagnosis"] = np.where(raw.target == 0, "malignant", "benign")
    df = df.drop(columns="target")
    rng = np.random.default_rng(seed)
    idx = {c: list(rng.permutation(np.flatnonzero(df["diagnosis"] == c))) for c in ("malignant", "benign")}
    public = [idx[c].pop() for c in ("malignant", "benign") for _ in range(30)]
    sites = {}
    for name, share in SITES:
        n_mal = int(round(share * SITE_ROWS))
        rows = [idx["malignant"].pop() for _ in range(n_mal)] + [idx["benign"].pop() for _ in range(SITE_ROWS - n_mal)]
        sites[name] = df.iloc[rng.permutation(rows)].reset_index(drop=True)
    return df, df.iloc[public].reset_index(drop=True), sites


def _local_only_accuracy(train: pd.DataFrame, test: pd.DataFrame, features: list[str], classes: list[str]) -> float:
    X, Xt = train[features].to_numpy(float), test[features].to_numpy(float)
    mu, sd = X.mean(0), X.std(0) + 1e-12
    y = np.array([classes.index(c) for c in train["diagnosis"]])
    model = BatchedMLP(random_state=SEED).fit([((X - mu) / sd, y)], len(classes)).models_[0]
    pred = np.asarray(classes)[model.predict_proba((Xt - mu) / sd).argmax(1)]
    return float(np.mean(pred == test["diagnosis"].to_numpy()))


def run_demo(out: Path, say: Callable[[str], None] = print) -> bool:
    """Run the round in ``out``; print per-site accuracy and where every file went. True on success."""
    os.environ.setdefault("DCSTUDIO_PASSPHRASE", DEMO_PASSPHRASE)
    pw = os.environ["DCSTUDIO_PASSPHRASE"]
    step = "setting up"
    try:
        out.mkdir(parents=True, exist_ok=True)
        analyst_dir, lead = out / "analyst", SITES[0][0]
        full, public, sites = _data(SEED)

        step = "analyst: keys and kit"
        analyst = Identity.generate("analyst")
        analyst.save(analyst_dir / "analyst.dcid", pw)
        analyst.card.save(analyst_dir / "analyst.dcpub")
        sample = analyst_dir / "schema-sample.csv"
        full.head(20).to_csv(sample, index=False)  # column names and classes only; no site rows
        schema, _ = infer_schema(sample, label="diagnosis")
        kit, _ = build_kit(name="Breast-cancer demo", schema=schema, analyst=analyst.card,
                           settings={"seed": SEED, "alignment": "affine"}, anchor_kind="smote", anchor_rows=1020)
        kit_path = out / "shared" / "demo.dckit"
        kit.save(kit_path, analyst)
        say(f"analyst: identity {analyst_dir / 'analyst.dcid'}, kit {kit_path} "
            f"(fingerprint {analyst.card.fingerprint})")

        step = "lead site: anchor"
        public_csv = out / "shared" / "public-reference-sample.csv"
        public.to_csv(public_csv, index=False)
        seed_rows = read_table(public_csv, kit.schema, labels=False).X
        idents = {}
        for name, _ in SITES:
            ident = Identity.generate(name)
            ident.save(out / name / f"{name}.dcid", pw)
            ident.card.save(out / name / f"{name}.dcpub")
            idents[name] = ident
        anchor = make_anchor(kit.project_id, kit.schema.encoded_names, kind="smote", rows=1020, seed_rows=seed_rows)
        anchor_path = out / lead / "demo.dcanchor"
        anchor.save(anchor_path, [ident.card for ident in idents.values()])
        say(f"{lead}: anchor {anchor_path} (seeded by the public reference sample, encrypted to the five sites' "
            "cards; never shared with the analyst)")

        step = "sites: export"
        bundles_dir = out / "to-analyst"
        held_out = {}
        for k, (name, _) in enumerate(SITES):
            folder = out / name
            df = sites[name]
            cut = int(0.75 * len(df))
            folder.mkdir(parents=True, exist_ok=True)
            df.iloc[:cut].to_csv(folder / "local-data.csv", index=False)
            df.iloc[cut:].to_csv(folder / "held-out.csv", index=False)
            held_out[name] = (df.iloc[:cut], df.iloc[cut:])
            ident = idents[name]
            job = ParticipantRound(kit, kit_path, ident, folder / f"{name}.workspace", anchor=anchor_path,
                                   site_settings={"seed": SEED + k})
            job.load(folder / "local-data.csv")
            sealed = job.seal(bundles_dir / f"{name}.dcbundle")
            say(f"{name}: bundle {sealed.path} ({sealed.size // 1024} KiB)")

        step = "analyst: import and run"
        analysis = AnalystRound(kit, analyst, AnalystWorkspace(analyst_dir / "analyst.workspace"))
        for name, _ in SITES:  # in a real round: after comparing each fingerprint with the site by phone
            analysis.confirm(PublicCard.load(out / name / f"{name}.dcpub"), how="demo: the sites' cards")
        _, bundles = analysis.import_folder(bundles_dir)
        run = analysis.run(bundles)
        outputs = analysis.export(run, out / "to-sites")
        s = run.result.summary
        say(*(f"analyst: {line}" for line in run.summary_lines()),
            f"analyst: packages in {out / 'to-sites'}, report {outputs.report}")

        step = "sites: apply"
        rows = []
        cluster = {x["site"]: x.get("cluster", "") for x in s["sites"]}
        for name, _ in SITES:
            folder = out / name
            res = apply_package(out / "to-sites" / f"{name}.dcpkg", idents[name], folder / "held-out.csv",
                                folder / "results.csv", workspace=SiteWorkspace(folder / f"{name}.workspace"))
            pred = pd.read_csv(res.out_path)
            acc = float(np.mean(pred["prediction"] == pred["diagnosis"]))
            train, test = held_out[name]
            local = _local_only_accuracy(train, test, kit.schema.feature_names, list(kit.schema.classes))
            mal = int((train["diagnosis"] == "malignant").sum())
            rows.append((name, len(train), len(test), f"{mal}/{len(train) - mal}", cluster[name], local, acc))
        say("", "Per-site accuracy on each hospital's held-out rows:",
            f"{'site':<17}{'train':>6}{'test':>6}  {'mal/ben':>8}{'cluster':>8}{'local only':>12}{'package':>9}")
        for name, ntr, nte, mb, cl, loc, acc in rows:
            say(f"{name:<17}{ntr:>6}{nte:>6}  {mb:>8}{cl:>8}{loc:>12.3f}{acc:>9.3f}")
        say(f"{'mean':<45}{np.mean([r[5] for r in rows]):>12.3f}{np.mean([r[6] for r in rows]):>9.3f}",
            "", f"Everything is under {out.resolve()}")
        return True
    except Exception as exc:  # the demo reports any failure as a failed step and a non-zero exit
        say(f"demo failed during '{step}': {exc}")
        if os.environ.get("DCSTUDIO_DEBUG"):
            say(traceback.format_exc())
        return False
