"""``dcstudio``: the same operations as the GUI, for scripts and terminals (DESIGN §5).

Errors print one line naming the file and what is wrong, exit non-zero, and leave nothing half-written;
``--debug`` shows the traceback. Passphrases come from ``DCSTUDIO_PASSPHRASE`` or a terminal prompt.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from pathlib import Path

from . import __version__
from .errors import ConfigError, DCError


# ---- helpers ------------------------------------------------------------------------------------------
def passphrase(prompt: str, *, confirm: bool = False) -> str:
    env = os.environ.get("DCSTUDIO_PASSPHRASE")
    if env is not None:
        return env
    if not sys.stdin.isatty():
        raise ConfigError("no passphrase: set DCSTUDIO_PASSPHRASE or run in a terminal")
    first = getpass.getpass(prompt)
    if confirm and getpass.getpass("Repeat passphrase: ") != first:
        raise ConfigError("the two passphrases differ")
    if confirm and len(first) < 8:
        raise ConfigError("choose a passphrase of at least 8 characters")
    return first


def load_identity(path: str):
    from .formats.identity import Identity

    return Identity.load(path, passphrase(f"Passphrase for {path}: "))


def csv_options(args):
    from .data.tabular import CsvOptions

    return CsvOptions(encoding=args.encoding, delimiter=args.delimiter, decimal=args.decimal,
                      impute="mean" if args.impute else None)


def parse_sets(pairs: list[str] | None) -> dict:
    """``--set key=value`` → settings; values parsed as JSON when they parse, else kept as text."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ConfigError(f"--set takes key=value, got '{pair}'")
        k, v = pair.split("=", 1)
        try:
            out[k.strip()] = json.loads(v)
        except json.JSONDecodeError:
            out[k.strip()] = v
    return out


def say(*lines: str) -> None:
    for line in lines:
        print(line)


# ---- commands -----------------------------------------------------------------------------------------
def cmd_keys_new(args) -> None:
    from .formats.identity import Identity

    out = Path(args.out)
    dcid, dcpub = out / f"{args.name}.dcid", out / f"{args.name}.dcpub"
    if dcid.exists() and not args.force:
        raise ConfigError(f"{dcid} exists; pass --force to replace it")
    ident = Identity.generate(args.name)
    ident.save(dcid, passphrase(f"New passphrase for {dcid}: ", confirm=True), log_n=args.work_factor)
    ident.card.save(dcpub)
    say(f"identity:    {dcid}  (keep private)", f"public card: {dcpub}", f"fingerprint: {ident.card.fingerprint}")


def cmd_keys_show(args) -> None:
    from .formats.identity import PublicCard

    path = Path(args.file)
    card = _card_of_identity(path) if path.suffix == ".dcid" else PublicCard.load(path)
    say(f"name:        {card.name}", f"fingerprint: {card.fingerprint}", f"age:         {card.age_recipient}")


def _card_of_identity(path: Path):
    from .formats.identity import Identity

    return Identity.load_card(path)


def cmd_keys_export_age(args) -> None:
    ident = load_identity(args.identity)
    ident.export_age_identity(args.out)
    say(f"age identity written to {args.out} (secret: for `age -d -i` only)")


def cmd_kit_new(args) -> None:
    from .data.schema import Schema, infer_schema, parse_blocks, with_blocks
    from .formats.identity import PublicCard
    from .formats.kit import Kit
    from .methods import METHODS, get_method

    method = args.method or ("dcclustering" if args.task == "clustering" else "dccfl")
    if method not in METHODS:
        get_method(method)  # the usual "unknown method" error
    task = args.task or METHODS[method].task
    if METHODS[method].task != task:
        raise ConfigError(f"method '{method}' is for {METHODS[method].task}, not {task}")
    clustering = task == "clustering"
    ranges = args.ranges if args.ranges is not None else clustering  # the paper's uniform anchor needs them
    ident = load_identity(args.identity)
    schema, notes = infer_schema(args.schema_from, label=args.label, id_column=args.id_column,
                                 with_ranges=ranges, options=csv_options(args))
    if clustering and schema.label is not None:
        notes.append(f"column '{schema.label}' is left out: labels never leave a site in a clustering project")
        schema = Schema(schema.features, id_column=schema.id_column)
    if args.blocks:
        if not clustering:
            raise ConfigError("--blocks (feature blocks) is for clustering projects")
        schema, more = with_blocks(schema, parse_blocks(args.blocks))
        notes += more
    settings = parse_sets(args.set)
    if args.t is not None:
        settings["t"] = args.t if args.t == "auto" else float(args.t)
    if args.k is not None:
        settings["k"] = args.k if args.k == "auto" else _whole(args.k, "--k")
    if args.algorithm is not None:
        settings["algorithm"] = args.algorithm
    get_method(method, settings)  # validate now, not at every site
    roster = None
    if args.roster:
        cards = [PublicCard.load(p) for p in args.roster]
        roster = [{"name": c.name, "fingerprint": c.fingerprint} for c in cards]
    anchor_kind = args.anchor_kind or ("uniform" if clustering else "smote")
    kit = Kit(name=args.name, task=task, schema=schema, method=method, analyst=ident.card,
              settings=settings, anchor={"kind": anchor_kind, "rows": args.anchor_rows}, roster=roster)
    kit.save(args.out, ident)
    if clustering:
        s = get_method(method, settings).settings
        what = (f"{len(schema.features)} features in block(s) {schema.describe_blocks()}; "
                f"k = {s['k']}, {s['algorithm']}, {s['alignment']} alignment; no labels leave any site")
        if schema.id_column:
            what += f"; rows linked by hashed '{schema.id_column}'"
    else:
        what = f"{len(schema.features)} features, label '{schema.label}' with classes {', '.join(schema.classes)}"
    say(*notes, f"kit: {args.out}", f"project id: {kit.project_id}", what,
        f"analyst fingerprint (participants compare this): {ident.card.fingerprint}")


def _whole(text: str, option: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{option} takes 'auto' or a whole number, got '{text}'") from None


def cmd_anchor_new(args) -> None:
    from .data.tabular import read_table
    from .formats.anchor import anchor_for_kit
    from .formats.kit import Kit

    kit = Kit.load(args.kit)
    local = seed = None
    if args.csv:
        local = read_table(args.csv, kit.schema, options=csv_options(args), labels=False).X
    if args.seed_csv:
        seed = read_table(args.seed_csv, kit.schema, options=csv_options(args), labels=False).X
    anchor = anchor_for_kit(kit, kind=args.kind, rows=args.rows, local_X=local, seed_X=seed,
                            seed_rows=args.seed_rows)
    anchor.save(args.out)
    say(f"anchor: {args.out} ({anchor.kind}, {anchor.rows} rows)",
        "Give this file to the other participants only. It must never reach the analyst.")


def cmd_participant_export(args) -> None:
    from .formats.anchor import AnchorFile
    from .formats.kit import Kit
    from .formats.workspace import SiteWorkspace, default_workspace
    from .participant import ParticipantExport

    kit = Kit.load(args.kit)
    anchor = AnchorFile.load(args.anchor, expect_project=kit.project_id) if args.anchor else None
    ident = load_identity(args.identity)
    ws = SiteWorkspace(args.workspace or default_workspace(args.identity))
    site = {"reduction": args.reduction, "dimension": args.dimension, "noise": args.noise, "seed": args.seed}
    job = ParticipantExport(kit, args.kit, ident, anchor, ws, site)
    table = job.load(args.csv, csv_options(args), block=args.block)
    ex = job.compute()
    sealed = job.seal(args.out)
    say(f"bundle: {sealed.path} ({sealed.size} bytes, sha256 {sealed.digest})",
        *([f"feature block: '{job.block}' ({', '.join(kit.schema.block_columns(job.block))})"] if job.block else []),
        f"rows: {table.n_rows}" + (f" ({table.n_imputed} cells imputed)" if table.n_imputed else ""),
        "leaves this site: " + "; ".join(f"{d.name} {tuple(d.shape)}" for d in ex.disclosures),
        f"workspace: {ws.root}")


def cmd_participant_apply(args) -> None:
    from .formats.workspace import SiteWorkspace, default_workspace
    from .participant import apply_package

    ident = load_identity(args.identity)
    ws = SiteWorkspace(args.workspace or default_workspace(args.identity))
    res = apply_package(args.package, ident, args.csv, args.out, workspace=ws, options=csv_options(args),
                        with_representation=args.representation, validate=args.validate)
    say(f"results: {res.out_path} ({res.rows} rows; columns {', '.join(res.columns)})")
    if res.validation:
        _say_validation(res.validation)
    if res.summary.get("note"):
        say(f"note: {res.summary['note']}")


def _say_validation(v: dict) -> None:
    from .learn.intervals import describe

    say(f"checked on {v['rows']} labelled row(s) of yours (95 % Wilson intervals):",
        f"  the analyst's package: {describe(v['package'])}")
    if v.get("analyst_expected"):
        say(f"  (the analyst expected {describe(v['analyst_expected'])} from your bundle)")
    if v.get("local"):
        say(f"  your own-rows model:    {describe(v['local'])}")
    say(f"recommended: {'the package' if v['recommend'] == 'package' else 'your own model'} — {v['reason']}"
        + (" (column 'recommended')" if v.get("local") else ""))
    if v.get("weak"):
        say("warning: too few labelled rows for these numbers to mean much (95 % interval wider than 20 pt or "
            "fewer than 30 rows)")


def _session(args):
    from .analyst import AnalystSession
    from .formats.kit import Kit
    from .formats.workspace import AnalystWorkspace, default_workspace

    ident = load_identity(args.identity)
    kit = Kit.load(args.kit, expect_analyst=ident.card)
    ws = AnalystWorkspace(args.workspace or default_workspace(args.identity))
    return AnalystSession(kit, ident, ws)


def _bundle_files(folder: str) -> list[Path]:
    d = Path(folder)
    if not d.is_dir():
        raise ConfigError(f"{d} is not a folder")
    files = sorted(d.glob("*.dcbundle"))
    if not files:
        raise ConfigError(f"{d} holds no .dcbundle files")
    return files


def cmd_analyst_import(args) -> None:
    session = _session(args)
    for r in session.import_bundles([Path(p) for p in args.bundle]):
        say(f"{r.status}: {r.path.name} from '{r.site}' ({r.fingerprint}), {r.rows} rows")


def cmd_analyst_run(args) -> None:
    session = _session(args)
    reports = session.import_bundles(_bundle_files(args.bundles), allow_known=True)
    ids = [r.envelope_id for r in reports]
    bundles = [b for b in session.received(ids)]
    settings = parse_sets(args.set)
    if args.t is not None:
        settings["t"] = args.t if args.t == "auto" else float(args.t)
    result = session.run(bundles, args.method, settings)
    out = session.export(result, bundles, args.out)
    for r in reports:
        say(f"{r.status}: {r.path.name} from '{r.site}' ({r.fingerprint}), {r.rows} rows")
    s = result.summary
    if s.get("task") == "clustering":
        _say_clustering(s)
    else:
        say(f"method {result.method}: t = {s.get('t')}, {s.get('n_clusters')} cluster(s)")
        _say_expected(s)
    for p in out.packages:
        say(f"package: {p.path}")
    say(f"report:  {out.report}", f"summary: {out.summary}")


def _say_expected(s: dict) -> None:
    """Per site: the model it is sent, its expected accuracy beside its own-rows model (n, 95 % interval)."""
    from .learn.intervals import describe

    sel = s.get("selection") or {}
    if sel.get("kind") in (None, "none"):
        return
    how = (f"{sel['folds']}-fold cross-validation × {sel['repeats']}" if sel["kind"] == "cv"
           else "a hold-out of the received rows")
    say(f"expected accuracy per site ({how}; n = the site's rows; 95 % Wilson interval):")
    weak = []
    for x in s.get("sites", []):
        gain = x.get("expected_gain")
        say(f"  {x['site']}: sends its {'own-rows' if x.get('model') == 'own' else 'cluster'} model; "
            f"expected {describe(x.get('expected'))}"
            + (f" vs own-rows model {describe(x.get('own_model'))}, {100 * gain:+.1f} pt" if gain is not None else ""))
        if (x.get("expected") or {}).get("weak"):
            weak.append(x["site"])
    if "expected_mean" in s:
        say(f"  mean expected accuracy {s['expected_mean']:.3f}"
            + (f" vs own-rows models {s['own_model_mean']:.3f}" if "own_model_mean" in s else ""))
    if weak:
        say(f"warning: too few rows for a firm estimate at {', '.join(weak)} (95 % interval wider than 20 pt "
            "or fewer than 30 rows)")


def cmd_analyst_estimate(args) -> None:
    """Simulate before you collaborate: the expected gain per site from the bundles alone; nothing is sealed."""
    session = _session(args)
    reports = session.import_bundles(_bundle_files(args.bundles), allow_known=True)
    bundles = session.received([r.envelope_id for r in reports])
    settings = parse_sets(args.set)
    if args.t is not None:
        settings["t"] = args.t if args.t == "auto" else float(args.t)
    result = session.run(bundles, args.method, settings)
    s = result.summary
    if s.get("task") == "clustering":
        raise ConfigError("estimate compares classification models; this kit clusters")
    say(f"method {result.method}: t = {s.get('t')}, {s.get('n_clusters')} cluster(s); no package was written")
    _say_expected(s)
    if args.json:
        from .formats.fileio import write_json_atomic

        write_json_atomic(args.json, {k: s[k] for k in ("method", "t", "n_clusters", "selection", "sites",
                                                         "expected_mean", "own_model_mean") if k in s})
        say(f"estimate: {args.json}")


def _say_clustering(s: dict) -> None:
    curve = s.get("k_curve") or {}
    how = "chosen by silhouette" if s.get("k_auto") else "fixed in the kit"
    say(f"method {s['method']} ({s['algorithm']}, {s['alignment']} alignment, dimension {s['dimension']}): "
        f"k = {s['k']} ({how}); cluster sizes {s['sizes']}")
    if curve:
        say("k curve: " + "; ".join(f"k={k}: silhouette {v['silhouette']:.3f}, inertia {v['inertia']:.4g}"
                                    for k, v in curve.items()))
    link = s["linkage"]
    say(f"rows clustered: {s['rows_clustered']} in {link['groups']} row group(s); "
        f"left out: {link['partial']} people missing from some block, {link['conflicts']} held twice in a block")
    for site in s["sites"]:
        say(f"  {site['site']} [block {site['block']}]: {site['clustered']} of {site['rows']} rows clustered"
            + (f" — {site['note']}" if site["note"] else ""))


def cmd_demo(args) -> None:
    from .demo import run_demo

    ok = run_demo(Path(args.out), say)
    if not ok:
        raise DCError("the demo round failed (see above)")


def cmd_bench(args) -> None:
    from .bench import run_benchmark

    run_benchmark(args.experiment, args, say)


def cmd_gui(args) -> None:
    from gui.app import main as gui_main

    gui_main([])


# ---- parser -------------------------------------------------------------------------------------------
def _csv_args(p) -> None:
    g = p.add_argument_group("CSV reading (detected when not given)")
    g.add_argument("--encoding")
    g.add_argument("--delimiter")
    g.add_argument("--decimal")
    g.add_argument("--impute", action="store_true", help="fill missing values with the column mean (local)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="dcstudio", description="One-shot, air-gapped Data Collaboration.")
    ap.add_argument("--version", action="version", version=f"dcstudio {__version__}")
    ap.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = ap.add_subparsers(dest="group", required=True)

    keys = sub.add_parser("keys", help="identities and public cards").add_subparsers(dest="cmd", required=True)
    p = keys.add_parser("new", help="create NAME.dcid (private) and NAME.dcpub (public card)")
    p.add_argument("--name", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--work-factor", type=int, default=18, help="scrypt log2(N) (default 18)")
    p.add_argument("--force", action="store_true")
    p.set_defaults(func=cmd_keys_new)
    p = keys.add_parser("show", help="print a card's or identity's fingerprint")
    p.add_argument("file")
    p.set_defaults(func=cmd_keys_show)
    p = keys.add_parser("export-age", help="write the X25519 key as an age identity (for `age -d`)")
    p.add_argument("--identity", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_keys_export_age)

    kit = sub.add_parser("kit", help="project kits").add_subparsers(dest="cmd", required=True)
    p = kit.add_parser("new", help="make and sign a project kit")
    p.add_argument("--identity", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--schema-from", required=True)
    p.add_argument("--label")
    p.add_argument("--id-column")
    p.add_argument("--task", choices=["classification", "clustering"],
                   help="default: the method's task (classification for dccfl)")
    p.add_argument("--method", help="dccfl (default), dc, or dcclustering (the default for --task clustering)")
    p.add_argument("--t", help="DC-CFL threshold: auto (default) or a number")
    p.add_argument("--blocks", help='clustering: feature blocks, e.g. "clinical=a,b,c;lifestyle=d,e"')
    p.add_argument("--k", help="clustering: number of clusters, or auto (silhouette over k_range)")
    p.add_argument("--algorithm", choices=["kmeans", "spectral"], help="clustering algorithm (default kmeans)")
    p.add_argument("--ranges", action=argparse.BooleanOptionalAction, default=None,
                   help="publish the sample's per-column min/max in the kit (default: on for clustering)")
    p.add_argument("--anchor-kind", choices=["smote", "uniform", "gaussian"],
                   help="default: uniform for clustering (in the public ranges), smote otherwise")
    p.add_argument("--anchor-rows", type=int, default=1000)
    p.add_argument("--roster", nargs="*", help="public cards of the expected sites")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="method setting")
    p.add_argument("--out", required=True)
    _csv_args(p)
    p.set_defaults(func=cmd_kit_new)

    anc = sub.add_parser("anchor", help="the participants' shared anchor").add_subparsers(dest="cmd", required=True)
    p = anc.add_parser("new", help="lead participant only: make the anchor file")
    p.add_argument("--kit", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--kind", choices=["smote", "uniform", "gaussian"])
    p.add_argument("--rows", type=int)
    p.add_argument("--csv", help="the lead site's CSV (ranges/statistics/seed rows when the kit has none)")
    p.add_argument("--seed-csv", help="a small shareable seed set for the SMOTE anchor")
    p.add_argument("--seed-rows", type=int, default=100)
    _csv_args(p)
    p.set_defaults(func=cmd_anchor_new)

    part = sub.add_parser("participant", help="site operations").add_subparsers(dest="cmd", required=True)
    p = part.add_parser("export", help="reduce a CSV privately and seal the bundle")
    for a in ("--kit", "--identity", "--csv", "--out"):
        p.add_argument(a, required=True)
    p.add_argument("--anchor")
    p.add_argument("--workspace")
    p.add_argument("--block", help="clustering: the feature block this CSV holds (default: detected from its columns)")
    p.add_argument("--reduction", default="pca", choices=["pca", "lpp", "random"])
    p.add_argument("--dimension", type=int)
    p.add_argument("--noise", type=float, default=0.0)
    p.add_argument("--seed", type=int)
    _csv_args(p)
    p.set_defaults(func=cmd_participant_export)
    p = part.add_parser("apply", help="apply the analyst's package to this site's rows")
    for a in ("--package", "--identity", "--csv", "--out"):
        p.add_argument(a, required=True)
    p.add_argument("--workspace")
    p.add_argument("--validate", action="store_true",
                   help="the CSV's rows carry labels: score the package beside this site's own-rows model and "
                        "recommend the better")
    p.add_argument("--representation", action="store_true",
                   help="clustering: also write each row's clustering representation (columns z1, z2, …)")
    _csv_args(p)
    p.set_defaults(func=cmd_participant_apply)

    ana = sub.add_parser("analyst", help="analyst operations").add_subparsers(dest="cmd", required=True)
    p = ana.add_parser("import", help="verify and import bundles into the workspace")
    p.add_argument("--kit", required=True)
    p.add_argument("--identity", required=True)
    p.add_argument("--bundle", nargs="+", required=True)
    p.add_argument("--workspace")
    p.set_defaults(func=cmd_analyst_import)
    p = ana.add_parser("run", help="import a folder of bundles, fit, and write one package per site")
    for a in ("--kit", "--identity", "--bundles", "--out"):
        p.add_argument(a, required=True)
    p.add_argument("--method")
    p.add_argument("--t")
    p.add_argument("--set", action="append", metavar="KEY=VALUE")
    p.add_argument("--workspace")
    p.set_defaults(func=cmd_analyst_run)

    p = ana.add_parser("estimate", help="expected accuracy per site against its own-rows model, before any "
                                        "package is sent")
    for a in ("--kit", "--identity", "--bundles"):
        p.add_argument(a, required=True)
    p.add_argument("--method")
    p.add_argument("--t")
    p.add_argument("--set", action="append", metavar="KEY=VALUE")
    p.add_argument("--workspace")
    p.add_argument("--json", help="also write the per-site estimates as JSON")
    p.set_defaults(func=cmd_analyst_estimate)

    p = sub.add_parser("demo", help="a whole round on embedded data")
    p.add_argument("--out", default="dcstudio-demo")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("bench", help="benchmarks")
    p.add_argument("experiment")
    p.add_argument("--dataset", action="append")
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--data-dir")
    p.add_argument("--json")
    p.add_argument("--rows", type=int)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sites", help="scale: comma-separated site counts (default 10,30,100,300,1000)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("gui", help="open the desktop app")
    p.set_defaults(func=cmd_gui)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except DCError as exc:
        if args.debug:
            raise
        print(f"dcstudio: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("dcstudio: interrupted; nothing was written", file=sys.stderr)
        return 130
    except OSError as exc:
        if args.debug:
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"dcstudio: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
