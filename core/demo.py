"""``dcstudio demo``: a whole round on embedded data, through the same objects as the CLI and the GUI.

Data: simulated patients, embedded (scikit-learn's ``make_classification``, seeded; no download): 16 laboratory
values, six of which carry the signal, and a yes/no outcome. A public reference sample of 60 rows seeds the
extended-SMOTE anchor and types the kit's columns; five simulated clinics with label skew (the outcome in 50 %
down to 15 % of their patients) each hold only :data:`TRAIN_ROWS` labelled rows to learn from — the setting where a
one-shot collaboration pays: a logistic regression of 80 rows and 16 columns overfits, and the few rows of the
rarer outcome teach it little. Each clinic's :data:`TEST_ROWS` further rows are held back to test what it ends up
using (``participant apply --validate``): its real own model (the logistic regression it trains on its own rows at
export and keeps) beside the model it chooses on its own rows from the package (issue #37: its own, the shared
one, a recalibration or a blend, :mod:`core.learn.site_update`). The kit asks for affine alignment, which is exact
for centred private maps such as PCA (DC-Clustering, appendix; algorithms.md §1.4).

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
from sklearn.datasets import make_classification

from .analyst import AnalystRound
from .data.schema import infer_schema
from .data.tabular import read_table
from .formats.anchor import make_anchor
from .formats.identity import Identity, PublicCard
from .formats.workspace import AnalystWorkspace, SiteWorkspace
from .kit_builder import build_kit
from .participant import ParticipantRound, apply_package

SITES = [("north-clinic", 0.50), ("east-clinic", 0.40), ("south-clinic", 0.30),
         ("west-clinic", 0.20), ("central-clinic", 0.15)]  # (name, share of patients with the event)
TRAIN_ROWS = 80  # each clinic's labelled rows to learn from
TEST_ROWS = 300  # each clinic's held-back rows that test what it uses
PUBLIC_ROWS = 60
FEATURES = 16
TOTAL_ROWS = 4000
LABEL = "outcome"
DEMO_PASSPHRASE = "demo passphrase (not secret)"
SEED = 7
ANCHOR_SECRET = hashlib.sha256(b"dcstudio demo anchor (not secret)").digest()  # a real anchor's secret is fresh


def _data(seed: int) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, pd.DataFrame]]:
    """(the public reference sample's frame for the kit, the public reference sample, each clinic's rows): simulated
    patients (module docstring), the outcome ``event`` or ``no event``."""
    X, y = make_classification(n_samples=TOTAL_ROWS, n_features=FEATURES, n_informative=6, n_redundant=2,
                               n_clusters_per_class=2, class_sep=0.8, flip_y=0.03, random_state=seed)
    df = pd.DataFrame(np.round(X * 10 + 50, 1), columns=[f"lab_{j + 1:02d}" for j in range(FEATURES)])
    df[LABEL] = np.where(y == 1, "event", "no event")
    rng = np.random.default_rng(seed)
    idx = {c: list(rng.permutation(np.flatnonzero(df[LABEL] == c))) for c in ("event", "no event")}
    public = [idx[c].pop() for c in ("event", "no event") for _ in range(PUBLIC_ROWS // 2)]
    sites = {}
    for name, share in SITES:
        n = TRAIN_ROWS + TEST_ROWS
        n_pos = int(round(share * n))
        rows = [idx["event"].pop() for _ in range(n_pos)] + [idx["no event"].pop() for _ in range(n - n_pos)]
        sites[name] = df.iloc[rng.permutation(rows)].reset_index(drop=True)
    return df, df.iloc[public].reset_index(drop=True), sites


def why(choice: dict | None) -> str:
    """One plain sentence: which model the site uses and why (its own choice on its own rows)."""
    from .learn.site_update import UPDATE_WORDS

    if not choice:
        return "uses the package as sent"
    kind = choice.get("kind")
    return (f"uses {UPDATE_WORDS[kind]}" if kind in UPDATE_WORDS else f"uses {choice.get('model')}") + \
        f": {choice.get('reason', '')}"


def result_sentence(rows: list[dict]) -> str:
    """The demo's conclusion: the mean gain over the sites' own models (AUC and accuracy), how many sites use a
    shared or updated model, and why they gained."""
    shared = sum(1 for r in rows if (r["choice"] or {}).get("model") in ("package", "updated"))
    d_auc = float(np.mean([r["use_auc"] - r["own_auc"] for r in rows]))
    d_acc = float(np.mean([r["use_acc"] - r["own_acc"] for r in rows]))
    text = (f"Result: {shared} of {len(rows)} clinics use a shared or updated model; on their held-out rows "
            f"({TEST_ROWS} each, {TEST_ROWS * len(rows):,} in all) the models in use score AUC "
            f"{np.mean([r['use_auc'] for r in rows]):.3f} against "
            f"{np.mean([r['own_auc'] for r in rows]):.3f} for their own ({d_auc:+.3f}) and accuracy "
            f"{np.mean([r['use_acc'] for r in rows]):.3f} against {np.mean([r['own_acc'] for r in rows]):.3f} "
            f"({100 * d_acc:+.1f} pt). ")
    if shared:
        return text + (f"Why: each clinic learns from only {TRAIN_ROWS} patients with {FEATURES} measurements, few of "
                       "them with the rarer outcome, so its own model overfits; the shared model learned from every "
                       "clinic's compressed rows, and each clinic checked it against its own model on its own rows "
                       "(paired, out of fold) before using it.")
    return text + "Every clinic keeps its own model: on its own rows no shared or updated model did better."


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
        public.to_csv(sample, index=False)  # the public reference sample: column names, types and classes
        schema, _ = infer_schema(sample, label=LABEL)
        kit, _ = build_kit(name="Simulated clinics demo", schema=schema, analyst=analyst.card,
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
            cut = TRAIN_ROWS
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
        say(*(f"analyst: {line}" for line in run.summary_lines()),
            f"analyst: packages in {out / 'to-sites'}, report {outputs.report}")

        step = "sites: apply"
        rows = []
        for name, _ in SITES:
            folder = out / name
            res = apply_package(out / "to-sites" / f"{name}.dcpkg", idents[name], folder / "held-out.csv",
                                folder / "results.csv", workspace=SiteWorkspace(folder / f"{name}.workspace"),
                                validate=True)
            v = res.validation  # the model in use and the site's own model (kept at export) on the held-out rows
            own = v["package_metrics"] if v.get("own_model_package") else v["local_metrics"]
            train, test = held_out[name]
            mal = int((train[LABEL] == "event").sum())
            rows.append({"site": name, "train": len(train), "test": len(test), "mix": f"{mal}",
                         "own_auc": own["auc"], "use_auc": v["package_metrics"]["auc"],
                         "own_acc": own["accuracy"], "use_acc": v["package_metrics"]["accuracy"],
                         "choice": res.choice})
        say("", "Per-site AUC and accuracy on each clinic's held-out rows: its own model (the logistic regression it "
            "trained on its rows at export) and the model it uses (chosen on its own rows from the package):",
            f"{'site':<17}{'train':>6}{'test':>6}  {'events':>8}{'own AUC':>9}{'in use':>8}{'own acc':>9}"
            f"{'in use':>8}  uses")
        for r in rows:
            kind = (r["choice"] or {}).get("kind", "package")
            say(f"{r['site']:<17}{r['train']:>6}{r['test']:>6}  {r['mix']:>8}{r['own_auc']:>9.3f}{r['use_auc']:>8.3f}"
                f"{r['own_acc']:>9.3f}{r['use_acc']:>8.3f}  {kind}")
        say("", *(f"{r['site']}: {why(r['choice'])}." for r in rows))
        say("", result_sentence(rows), "", f"Everything is under {out.resolve()}")
        return True
    except Exception as exc:  # the demo reports any failure as a failed step and a non-zero exit
        say(f"demo failed during '{step}': {exc}")
        if os.environ.get("DCSTUDIO_DEBUG"):
            say(traceback.format_exc())
        return False
