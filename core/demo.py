"""``dcstudio demo``: a whole round on embedded data, through the same objects as the CLI and the GUI.

Data: scikit-learn's bundled Wisconsin breast-cancer set (569 rows, 30 features, no download). A public
reference sample of 60 rows seeds the extended-SMOTE anchor; the other rows are split over five simulated
hospitals with label skew (two mostly-malignant referral centres, three mostly-benign screening sites).
Each hospital keeps a quarter of its rows back to test the package it receives; its baseline is its real own
model — the logistic regression it trains on its own rows at export and keeps — scored on the same held-out
rows (``participant apply --validate``). The kit asks for affine alignment, which is exact for centred private
maps such as PCA (DC-Clustering, appendix; algorithms.md §1.4).

Reproducible: every random choice is seeded. The data split and each site's private map use fixed seeds, the
anchor's secret is a fixed demo value (a real anchor's is fresh), and the analysis is seeded from the bundles'
decrypted content (:func:`core.methods.dc_analysis.derived_seed`), so the fresh keys and nonces of every run
change no number: two runs print the same table.
"""

from __future__ import annotations

import hashlib
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
from .participant import ParticipantRound, apply_package

SITES = [("north-referral", 0.70), ("east-referral", 0.60), ("south-screening", 0.15),
         ("west-screening", 0.10), ("central-clinic", 0.20)]  # (name, share of malignant rows)
SITE_ROWS = 100
DEMO_PASSPHRASE = "demo passphrase (not secret)"
SEED = 7
ANCHOR_SECRET = hashlib.sha256(b"dcstudio demo anchor (not secret)").digest()  # a real anchor's secret is fresh


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


def why(site: dict) -> str:
    """One plain sentence: which model the site was sent and why (from the analyst's summary of the site)."""
    own, exp = site.get("own_model") or {}, site.get("expected") or {}
    if site.get("model") == "own" and site.get("own_kind"):
        return (f"keeps its own model: the shared model's cross-validated accuracy "
                f"({(site.get('cluster_model') or {}).get('accuracy', float('nan')):.3f}) did not beat its own "
                f"({own.get('accuracy', float('nan')):.3f}, {own.get('what', 'its own rows')}) clearly (by more than "
                "1.645 standard errors, a one-sided test at 5 %)")
    return (f"uses the shared model of cluster {site.get('cluster')}: it cross-validated at "
            f"{exp.get('accuracy', float('nan')):.3f} against {own.get('accuracy', float('nan')):.3f} for its own "
            "model")


def result_sentence(sites: list[dict], own_mean: float, pkg_mean: float) -> str:
    """The demo's conclusion in one plain sentence: the mean gain, and why there is none when every site keeps
    its own model (how many sites' shared model cross-validated below their own, how many not clearly above)."""
    text = (f"Result: the packages score {pkg_mean:.3f} on average against {own_mean:.3f} for the sites' own models "
            f"({100 * (pkg_mean - own_mean):+.1f} pt); ")
    kept = [x for x in sites if x.get("model") == "own" and x.get("own_kind")]
    if len(kept) < len(sites):
        return text + f"{len(sites) - len(kept)} of {len(sites)} sites use a shared model."
    below = sum((x.get("cluster_model") or {}).get("accuracy", 0.0) < (x.get("own_model") or {}).get("accuracy", 0.0)
                for x in sites)
    return text + (f"every site keeps its own model, so there is no gain to show: the shared model cross-validated "
                   f"below the site's own logistic regression at {below} of {len(sites)} sites and not clearly above "
                   "it at the others — each site's own model already separates these two classes well, and the "
                   "compressed, aligned rows of the other sites do not add enough to beat it.")


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
        anchor.secret = ANCHOR_SECRET  # the demo's one fixed secret, so every run draws the same anchor rows
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
            job.confirm_analyst(kit.analyst, how="demo: the analyst's card")
            job.accept_privacy_risk("demo: a simulated site accepts its poor verdicts")
            job.load(folder / "local-data.csv")
            sealed = job.seal(bundles_dir / f"{name}.dcbundle")
            say(f"{name}: bundle {sealed.path} ({sealed.size // 1024} KiB)")
            if job.assessment_.needs_consent:  # a real site confirms this itself (--accept-poor-privacy, a tick)
                say(f"  privacy check poor on {', '.join(f.attack for f in job.assessment_.poor)}: a real site "
                    "would have to accept that risk before exporting; the demo accepts it for its simulated sites")

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
        by_site = {x["site"]: x for x in s["sites"]}
        for name, _ in SITES:
            folder = out / name
            res = apply_package(out / "to-sites" / f"{name}.dcpkg", idents[name], folder / "held-out.csv",
                                folder / "results.csv", workspace=SiteWorkspace(folder / f"{name}.workspace"),
                                validate=True)
            v = res.validation  # the package and the site's own model (kept at export) on the held-out rows
            own = v["package"] if v.get("own_model_package") else v["local"]  # the package may be the own model
            train, test = held_out[name]
            mal = int((train["diagnosis"] == "malignant").sum())
            rows.append((name, len(train), len(test), f"{mal}/{len(train) - mal}", by_site[name].get("cluster", ""),
                         own["accuracy"], v["package"]["accuracy"], by_site[name]))
        say("", "Per-site accuracy on each hospital's held-out rows (its own model: the logistic regression it "
            "trained on its rows at export):",
            f"{'site':<17}{'train':>6}{'test':>6}  {'mal/ben':>8}{'cluster':>8}{'own model':>11}{'package':>9}")
        for name, ntr, nte, mb, cl, loc, acc, _ in rows:
            say(f"{name:<17}{ntr:>6}{nte:>6}  {mb:>8}{cl:>8}{loc:>11.3f}{acc:>9.3f}")
        own_mean, pkg_mean = np.mean([r[5] for r in rows]), np.mean([r[6] for r in rows])
        say(f"{'mean':<45}{own_mean:>11.3f}{pkg_mean:>9.3f}", "")
        for r in rows:
            say(f"{r[0]}: {why(r[7])}.")
        say("", result_sentence([r[7] for r in rows], own_mean, pkg_mean), "", f"Everything is under {out.resolve()}")
        return True
    except Exception as exc:  # the demo reports any failure as a failed step and a non-zero exit
        say(f"demo failed during '{step}': {exc}")
        if os.environ.get("DCSTUDIO_DEBUG"):
            say(traceback.format_exc())
        return False
