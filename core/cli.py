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

from .api import (
    DEFAULT_PUBLIC_ROWS,
    DIRECTIONS,
    THREAT_CHOICES,
    ConfigError,
    DCError,
    PrivacyThresholds,
    ThreatModel,
    parse_threshold_args,
    shown_lines,
    version_string,
)


# ---- helpers ------------------------------------------------------------------------------------------
def passphrase(prompt: str, *, confirm: bool = False) -> str:
    from .api import check_new_passphrase

    env = os.environ.get("DCSTUDIO_PASSPHRASE")
    if env is not None:
        if confirm:
            check_new_passphrase(env)
        return env
    if not sys.stdin.isatty():
        raise ConfigError("no passphrase: set DCSTUDIO_PASSPHRASE or run in a terminal")
    first = getpass.getpass(prompt)
    if confirm and getpass.getpass("Repeat passphrase: ") != first:
        raise ConfigError("the two passphrases differ")
    if confirm:
        check_new_passphrase(first)
    return first


def load_identity(path: str):
    from .api import Identity

    return Identity.load(path, passphrase(f"Passphrase for {path}: "))


def csv_options(args):
    from .api.common import MISSING_TOKENS, CsvOptions

    extra = getattr(args, "missing_token", None) or []
    return CsvOptions(encoding=args.encoding, delimiter=args.delimiter, decimal=args.decimal,
                      impute="mean" if args.impute else None,
                      missing_tokens=tuple(dict.fromkeys([*MISSING_TOKENS, *extra])))


def parse_sets(pairs: list[str] | None, method=None) -> dict:
    """``--set key=value`` → settings, each parsed and checked by the method's declared setting (values
    are JSON when they parse, e.g. ``t=0.3``, ``k_range=[2,8]``, else text)."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ConfigError(f"--set takes key=value, got '{pair}'")
        k, v = (s.strip() for s in pair.split("=", 1))
        spec = method.setting(k) if method is not None else None
        if spec is not None:
            out[k] = spec.parse(v)
            continue
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def say(*lines: str) -> None:
    """Print lines, each through the one sanitiser (core.safe_text): text from files is never printed raw."""
    for line in lines:
        print(shown_lines(line))


# ---- commands -----------------------------------------------------------------------------------------
def cmd_keys_new(args) -> None:
    from .api import Identity

    out = Path(args.out)
    from .api import safe_name

    stem = safe_name(args.name, "identity")
    dcid, dcpub = out / f"{stem}.dcid", out / f"{stem}.dcpub"
    if dcid.exists() and not args.force:
        raise ConfigError(f"{dcid} exists; pass --force to replace it")
    ident = Identity.generate(args.name)
    ident.save(dcid, passphrase(f"New passphrase for {dcid}: ", confirm=True), log_n=args.work_factor)
    ident.card.save(dcpub)
    say(f"identity:    {dcid}  (keep private)", f"public card: {dcpub}", f"fingerprint: {ident.card.fingerprint}")


def cmd_keys_show(args) -> None:
    from .api import PublicCard

    path = Path(args.file)
    card = _card_of_identity(path) if path.suffix == ".dcid" else PublicCard.load(path)
    say(f"name:        {card.name}", f"fingerprint: {card.fingerprint}", f"age:         {card.age_recipient}")


def _card_of_identity(path: Path):
    from .api import Identity

    return Identity.load_card(path)


def cmd_keys_export_age(args) -> None:
    ident = load_identity(args.identity)
    ident.export_age_identity(args.out)
    say(f"age identity written to {args.out} (secret: for `age -d -i` only)")


def cmd_kit_new(args) -> None:
    from .api import PublicCard
    from .api.analyst import build_kit, column_choices
    from .api.common import default_method, infer_schema, method_class

    method = args.method or default_method(args.task or "classification")
    cls = method_class(method)
    task = args.task or cls.task
    ranges = args.ranges if args.ranges is not None else task == "clustering"  # a uniform anchor needs them
    ident = load_identity(args.identity)
    choices = column_choices(ignore=args.ignore, types=args.type, levels=args.levels, missing=args.missing,
                             other=args.other)
    schema, notes = infer_schema(args.schema_from, label=args.label, id_column=args.id_column,
                                 with_ranges=ranges, with_statistics=args.statistics, options=csv_options(args),
                                 choices=choices, min_group=_min_group(args.min_group))
    roster = [PublicCard.load(p) for p in args.roster] if args.roster else None
    kit, more = build_kit(name=args.name, schema=schema, analyst=ident.card, task=task, method=method,
                          settings=parse_sets(args.set, cls), blocks=args.blocks, anchor_kind=args.anchor_kind,
                          anchor_rows=args.anchor_rows, roster=roster,
                          threat=ThreatModel.given(args.threat_model, args.public_rows))
    kit.privacy = PrivacyThresholds.given(parse_threshold_args(args.privacy_threshold)).kit_block()
    kit.save(args.out, ident)
    schema = kit.schema
    if task == "clustering":
        what = f"{len(schema.features)} features in block(s) {schema.describe_blocks()}; no labels leave any site"
        if schema.id_column:
            what += f"; rows linked by hashed '{schema.id_column}'"
    else:
        what = f"{len(schema.features)} features, label '{schema.label}' with classes {', '.join(schema.classes)}"
    chosen = get_settings_text(cls, kit.settings)
    published = ([f"public statistics of the sample: shares over groups of at least {args.min_group} rows"
                  + (", ranges rounded outward (no row's exact min or max)" if ranges else "")]
                 if args.statistics or ranges else [])
    say(*notes, *more, *schema.describe_columns(), *published, f"kit: {args.out}", f"project id: {kit.project_id}",
        what,
        f"method {method} ({cls.title}){chosen}",
        *(f"threat model: {line}" for line in kit.threat.lines()),
        *([] if cls.needs_anchor else ["this method needs no anchor: skip `dcstudio anchor new`"]),
        f"analyst fingerprint (participants compare this): {ident.card.fingerprint}")


def _min_group(n: int) -> int:
    if not 1 <= n <= 1000:
        raise ConfigError(f"--min-group takes a number of rows from 1 to 1000, got {n}")
    return n


def filled_lines(table, formal: bool = False) -> list[str]:
    """What export and apply say about missing cells filled, per column (also in the bundle's manifest, except under
    the formal option, whose fills are the kit's public values and whose counts stay at the site)."""
    if not table.filled:
        return []
    if formal:
        return [f"missing cells filled: {table.n_imputed:,}, with the kit's public values (formal option: the "
                "counts stay here)"]
    parts = [f"{name} {k:,} (with {value:.6g})" if isinstance(value := table.fill_values.get(name), float)
             else f"{name} {k:,} (with {value!r})" for name, k in table.filled.items()]
    return [f"missing cells filled: {table.n_imputed:,} ({'; '.join(parts)})"]


def get_settings_text(cls, settings: dict) -> str:
    return "" if not settings else ": " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in settings.items())


def cmd_kit_show(args) -> None:
    from .api.common import Kit

    say(*Kit.load(args.kit).describe())


def _workspace_at(where: str):
    from .api.common import open_workspace

    path = Path(where)
    if path.name == "audit.jsonl":
        path = path.parent
    if not path.is_dir():
        raise ConfigError(f"{where} is not a workspace (give a workspace folder or its audit.jsonl)")
    if not (path / "audit.jsonl").exists() and not (path / "audit.head").exists() and not (path / "projects").is_dir():
        raise ConfigError(f"{path} is not a workspace: it holds no audit log (give a workspace folder)")
    return open_workspace(path)


def cmd_audit_verify(args) -> None:
    """The log (chain, signatures, head file, its workspace, the heads of files sealed there), then every signed
    file of the workspace; exit 1 on the first problem, on an earlier version's log and on a restart that
    followed a rollback."""
    from .api import VerificationError
    from .api.common import file_digest, inspect, new_log_hint

    ws = _workspace_at(args.log)
    log = ws.audit
    state = log.check()
    if state.earlier_version:
        what = ("the entries are not signed and there is no head file, so an edit that rebuilt the chain, or lines "
                "cut from its end, cannot be ruled out" if state.legacy else
                "it is signed but names no workspace, so an exchange with another workspace's log cannot be ruled "
                "out")
        say(f"audit log {log.path}: {state.entries} entries, chain intact, head {state.head}")
        raise VerificationError(f"this audit log was written by an earlier version of DC Studio: {what}; it is not "
                                "extended; " + new_log_hint(log.path), path=log.path)
    owner = f"{state.owner.name!r} ({state.owner.fingerprint})" if state.owner else "nobody yet"
    behind = " (its head file was one entry behind: the last write was interrupted; the next entry repairs it)" \
        if state.head_file == "one behind" else ""
    entries = f"{state.entries} entr{'y' if state.entries == 1 else 'ies'}"
    bound = f", bound to this workspace ({state.workspace[:8]}…)" if state.workspace else ""
    say(f"audit log {log.path}: {entries}, chain intact, every entry signed by {owner}, "
        f"head file matches{behind}{bound}", f"head: {state.head}")
    previous = (state.start or {}).get("previous")
    if isinstance(previous, dict):
        say(f"this log was started on {state.start['time']} to replace another: {state.start['reason']!r}")
    if state.restart_after_rollback:
        raise VerificationError(state.restart_after_rollback, path=log.path)
    problems = ws.check_files(state.owner) if state.owner is not None else []
    if problems:
        for p in problems[1:]:
            say(f"refused: {p}")
        raise VerificationError(f"{len(problems)} file(s) of this workspace cannot be trusted: {problems[0]}")
    if state.owner is not None:
        say("every pin, kit, export state, confirmation and registry line of the workspace is signed by its owner")
    if not args.against:
        say("(each bundle or package this workspace sealed carries the head of its time as audit_head: check "
            "the log against one with --against FILE)")
    for sealed in args.against or []:
        binding = inspect(sealed)
        if state.owner is None or binding.sender.key_id != state.owner.key_id:
            raise VerificationError(f"{sealed} was sealed by {binding.sender.name!r} "
                                    f"({binding.sender.fingerprint}), not by this log's owner")
        try:
            n, m = log.find_sealed(binding.audit_head, file_digest(sealed))
        except VerificationError as exc:  # sealed before a declared restart? then the kept copy records it
            try:
                name, n, m = log.find_sealed_before_restart(state, binding.audit_head, file_digest(sealed))
            except VerificationError:
                raise exc from None
            say(f"{sealed}: sealed after line {n} of the log this one replaced ({name}), recorded in its line {m}; "
                f"that log was replaced on {state.start['time']} ({state.start['reason']!r})")
            continue
        say(f"{sealed}: sealed after line {n}, recorded in line {m}")


def cmd_audit_new(args) -> None:
    from .api.common import restart_audit

    ws = _workspace_at(args.log)
    done = restart_audit(ws.root, load_identity(args.identity), args.reason,
                         adopt_unsigned=True if args.adopt_unsigned else None)
    entry = done.start
    prev = entry.get("previous", {})
    kept = (f"the old log was copied to {prev['file']}" if prev.get("file") else "there was no old log")
    say(f"new audit log {ws.audit.path}, started by {entry['owner']['name']!r} ({entry['owner']['fingerprint']}); "
        f"{kept}; its first entry records the reason and the old head as far as it is known; no export was removed")
    if done.adopted:
        say(f"signed {len(done.adopted)} file(s) an earlier version wrote unsigned (listed in the log): "
            + ", ".join(done.adopted[:5]) + (" …" if len(done.adopted) > 5 else ""))
    for sentence in done.reconfirm:
        say(f"still refused: {sentence}")


def _anchor_recipients(args) -> list:
    from .api import Identity, PublicCard

    cards = [PublicCard.load(p) for p in args.to or []]
    if args.identity:
        cards.insert(0, Identity.load_card(args.identity))
    return cards


def cmd_anchor_new(args) -> None:
    from .api.common import Kit, read_table
    from .api.participant import SHAREABLE_WARNING, anchor_for_kit

    kit = Kit.load(args.kit)
    recipients = _anchor_recipients(args)
    if not recipients and not args.plain:
        raise ConfigError("the anchor file is encrypted to the participants' public cards: give --identity (this "
                          "site's) and --to with every other site's .dcpub (or --plain for an unencrypted file)")
    local = seed = None
    if args.csv:
        local = read_table(args.csv, kit.schema, options=csv_options(args), labels=False).X
    if args.seed_csv:
        seed = read_table(args.seed_csv, kit.schema, options=csv_options(args), labels=False).X
    anchor = anchor_for_kit(kit, kind=args.kind, rows=args.rows, local_X=local, seed_X=seed,
                            seed_rows=args.seed_rows)
    anchor.save(args.out, None if args.plain else recipients)
    if seed is not None and anchor.kind == "smote":
        say("warning: " + SHAREABLE_WARNING.format(n=len(seed)))
    elif anchor.kind == "smote":
        say("the SMOTE seed rows are synthetic, drawn from your CSV's per-column statistics: no real row is in "
            "the file")
    to = ", ".join(f"{c.name} ({c.fingerprint})" for c in recipients) if not args.plain else "nobody (plain file)"
    say(f"anchor: {args.out} ({anchor.kind}, {anchor.generated_rows:,} rows), encrypted to {to}",
        "Give this file to the other participants only. It must never reach the analyst.")


class PoorPrivacy(DCError):
    """``participant assess --require-ok`` found a poor verdict: exit 2 (scripts tell it from a failure)."""

    exit_code = 2


def _participant_round(args):
    """The ParticipantRound ``participant export`` and ``participant assess`` drive: kit, identity, anchor, the
    site's settings and its tightened privacy limits."""
    from .api import parse_threshold_args
    from .api.common import Kit, default_workspace, method_class
    from .api.participant import ParticipantRound

    kit = Kit.load(args.kit)
    site = {spec.name: spec.parse(getattr(args, spec.name)) for spec in method_class(kit.method).site_settings_spec()
            if getattr(args, spec.name, None) is not None}
    workspace = args.workspace or default_workspace(args.identity)
    job = ParticipantRound(kit, args.kit, load_identity(args.identity), workspace, anchor=args.anchor,
                           site_settings=site)
    job.tighten_privacy(parse_threshold_args(args.privacy_threshold))
    job.units_checked = args.units_checked
    return kit, job


def privacy_lines(assessment) -> list[str]:
    """What ``participant export`` and ``participant assess`` print of a privacy assessment: the kit's threat
    model first (which adversaries count), then one line per finding."""
    return ["threat model (the kit's; which adversaries count against this export):",
            *(f"  {line}" for line in assessment.threat.lines()),
            f"privacy ({assessment.rows:,} rows, measured in {assessment.seconds:.2f} s; verdict "
            f"{assessment.verdict}):", *(f"  {line}" for line in assessment.lines())]


def cmd_participant_assess(args) -> None:
    """The export's measured disclosure, without writing a bundle (exit 0; ``--require-ok``: 2 when poor)."""
    _, job = _participant_round(args)
    try:
        job.load(args.csv, csv_options(args), block=args.block)
        job.compute()
        assessment = job.assess()
        ledger = job.ledger_lines()
        levers = None
        if args.levers:
            from .api.participant import measure_levers

            levers = measure_levers(job, thresholds=job.privacy_thresholds)
    finally:
        job.tidy()
    if args.json:
        out = assessment.to_dict()
        if levers is not None:
            out["levers"] = levers.to_dict()
        print(json.dumps(out, indent=2, ensure_ascii=True, default=float))  # no raw control character
    else:
        say(*privacy_lines(assessment), *ledger, *(levers.lines() if levers is not None else []))
    if args.require_ok and assessment.verdict == "poor":
        raise PoorPrivacy(f"the privacy assessment is poor on {len(assessment.poor)} attack(s) "
                          f"({', '.join(f.attack for f in assessment.poor)}); see the lines above for the levers")


def _within(context: str):
    """A command run inside ``core.heap``'s context manager ``context`` (imported only when the command runs)."""
    import functools

    def wrap(command):
        @functools.wraps(command)
        def run(args) -> None:
            from . import heap

            with getattr(heap, context)():
                command(args)

        return run

    return wrap


# the export's few large arrays then cost no memory compaction when first touched (core.heap.without_huge_pages)
@_within("without_huge_pages")
def cmd_participant_export(args) -> None:
    from .api import leaves_sentence

    kit, job = _participant_round(args)
    _confirm_analyst(job, args.analyst_fingerprint)
    try:
        table = job.load(args.csv, csv_options(args), block=args.block)
        if args.units_checked:  # otherwise sealing refuses, naming the columns
            say(*(f"warning: {w} (you said you checked it: --units-checked)" for w in job.unit_warnings))
        job.check_target(args.out, replace=args.force)
        ex = job.compute()
        assessment = job.assess()
        say(*privacy_lines(assessment), *job.ledger_lines())  # the ε spent so far, before this export seals
        if assessment.needs_consent and args.accept_poor_privacy:
            job.accept_privacy_risk("--accept-poor-privacy")
            say(f"you accept the risk of {len(assessment.poor)} poor verdict(s) (--accept-poor-privacy): recorded in "
                "the audit log")
        sealed = job.seal(args.out, replace=args.force)
    except BaseException:
        job.tidy()
        raise
    if job.first_use:
        say(f"first kit for project {kit.name!r} ({kit.project_id}): analyst {kit.analyst.name!r} "
            f"({kit.analyst.fingerprint}), confirmed ({job.analyst_confirmed}), is now pinned for it")
    say(f"read {table.source.name}: {table.format.describe()}"
        + ("" if args.encoding and args.delimiter and args.decimal else " (detected; override with --encoding, "
           "--delimiter, --decimal)"),
        f"bundle: {sealed.path} ({sealed.size:,} bytes, sha256 {sealed.digest})",
        *([f"feature block: '{job.block}' ({', '.join(kit.schema.block_columns(job.block))})"] if job.block else []),
        f"rows: {table.n_rows:,}, encoded in the kit's {table.X.shape[1]} matrix column(s)",
        *filled_lines(job.table, "privacy" in ex.manifest),
        *(f"note: {n}" for n in job.table.notes),
        "leaves this site: " + (ex.plain or leaves_sentence(  # the method's own words when it gives them
            table.n_rows, table.X.shape[1], int(ex.arrays["x_tilde"].shape[1]) if "x_tilde" in ex.arrays else 0,
            labels="rows" if "y" in ex.arrays else "counts" if "label_counts" in ex.arrays else "none",
            ids="id_hash" in ex.arrays, noise=float(args.noise or 0.0))),
        "  (arrays: " + "; ".join(f"{d.name} {tuple(d.shape)}" for d in ex.disclosures) + ")",
        f"workspace: {job.workspace.root}")


def _confirm_analyst(job, given: str | None) -> None:
    """First use of a project in this workspace: the analyst's key is confirmed by the fingerprint the analyst
    read out (``--analyst-fingerprint``, or typed at the prompt of an interactive terminal) or their card."""
    from .api import PublicCard

    if given is None and job.first_use and sys.stdin.isatty():
        say(f"first kit for project '{job.kit.name}': it is signed by '{job.kit.analyst.name}'.")
        given = input("Type the fingerprint the analyst read to you (by phone or in person), or press Enter to "
                      "stop: ").strip() or None
    if given is None:
        return  # sealing refuses on first use, saying how to confirm
    if given.endswith(".dcpub") and Path(given).is_file():
        job.confirm_analyst(PublicCard.load(given), how=f"card {Path(given).name}")
    else:
        job.confirm_analyst(given, how="fingerprint given" if job.first_use else "fingerprint given again")


# a site's apply allocates the same large arrays block after block, and the scrypt unlock's 256 MiB are reused by the
# first blocks (not the export: pandas' parser threads cannot use the main heap's free memory; its peak rose 0.5 GB)
@_within("reuse_freed_memory")
def cmd_participant_apply(args) -> None:
    from .api.common import SiteWorkspace, default_workspace
    from .api.participant import apply_package

    ident = load_identity(args.identity)
    ws = SiteWorkspace(args.workspace or default_workspace(args.identity))
    from .api.common import CsvOptions

    out_options = CsvOptions(encoding=args.out_encoding, delimiter=args.out_delimiter, decimal=args.out_decimal)
    res = apply_package(args.package, ident, args.csv, args.out, workspace=ws, options=csv_options(args),
                        with_representation=args.representation, out_options=out_options, validate=args.validate,
                        threshold=args.threshold, threshold_target=_threshold_target(args),
                        allow_older=args.allow_older, analyst_fingerprint=_analyst_given(args.analyst_fingerprint))
    say(*apply_lines(res, Path(args.csv).name, validation=False))
    if res.validation:
        _say_validation(res.validation, [str(c) for c in res.summary.get("classes", [])], res.choice)
    if res.summary.get("note"):
        say(f"note: {res.summary['note']}")


def apply_lines(res, csv_name: str, *, validation: bool = True) -> list[str]:
    """What ``participant apply`` prints of an applied package (the package's text is its declared members only;
    :func:`say` shows each line through the one sanitiser)."""
    lines = [f"warning: {w}" for w in res.warnings]
    lines += [f"read {csv_name}: {res.input_format.describe()}",
              f"results: {res.out_path} ({res.rows:,} rows; columns {', '.join(res.columns)})",
              f"written as {res.output_format.describe()}"
              + (" (like the input)" if res.output_format == res.input_format else "")]
    if res.threshold:
        t = res.threshold
        classes = res.summary.get("classes", [])
        lines.append(f"decision: '{t['positive']}' (the kit's second class; column risk_{t['positive']} is its "
                     f"probability) when the risk ≥ {t['value']:.3f}, else '{classes[0]}' — {t['sentence']}")
    if res.model_note:
        lines.append(f"note: {res.model_note}")
    if validation and res.summary.get("note"):
        lines.append(f"note: {res.summary['note']}")
    return lines


def _analyst_given(given: str | None):
    """``--analyst-fingerprint`` at apply: a fingerprint, or the analyst's .dcpub card."""
    from .api import PublicCard

    if given and (given.endswith(".dcpub") or Path(given).is_file()):
        return PublicCard.load(given)
    return given


def _in_use(choice: dict | None, own_package: bool) -> str:
    """What the results are, in words: the model the site uses (its own, the package, or an update of it)."""
    from .api.common import UPDATE_WORDS

    kind = (choice or {}).get("kind")
    if kind in UPDATE_WORDS:
        return "the model you use (" + UPDATE_WORDS[kind] + ")"
    return "your own model (the package)" if own_package else "the analyst's package"


def _say_validation(v: dict, classes: list[str], choice: dict | None = None) -> None:
    from .api.common import describe_estimate as describe

    say(f"checked on {v['rows']} labelled row(s) of yours (95 % Wilson intervals):",
        f"  {_in_use(choice, bool(v.get('own_model_package')))}: {describe(v['package'])}")
    if v.get("analyst_expected"):
        say(f"  (the analyst expected {describe(v['analyst_expected'])} from your bundle)")
    if v.get("local"):
        say(f"  your own-rows model:    {describe(v['local'])}")
    say(f"recommended: {'the package' if v['recommend'] == 'package' else 'your own model'} — {v['reason']}"
        + (" (column 'recommended')" if v.get("local") else ""))
    if v.get("weak"):
        say("warning: too few labelled rows for these numbers to mean much (95 % interval wider than 20 pt or "
            "fewer than 30 rows)")
    _say_figures(v, classes)


def _say_figures(v: dict, classes: list[str]) -> None:
    """The models' clinical figures (the one in use, the site's own, and the shared model as sent when the site
    uses another), each with the rows it was counted on; DeLong's tests; never-predicts flags."""
    from .api.common import confusion_lines, figure_rows

    models = [v["package_metrics"]] + ([v["local_metrics"]] if v.get("local_metrics") else [])
    names = ["in use"] + (["your own model"] if v.get("local_metrics") else [])
    if v.get("sent_metrics"):
        models.append(v["sent_metrics"])
        names.append("shared, as sent")
    rows = [["", *names, "counted on"]]
    rows += figure_rows(models, classes)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    say("clinical figures on the same rows" + (f" ('{classes[1]}', the kit's second class, is the positive class)"
                                               if len(classes) == 2 else "") + ":")
    for r in rows:
        say("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if len(classes) > 2:
        for name, m in zip(names, models, strict=True):
            say(f"  confusion matrix of {name} (rows = true class, columns = predicted):",
                *("    " + line for line in confusion_lines(m, classes)))
    for key, what in (("delong", "in use"), ("delong_sent", "shared as sent")):
        d = v.get(key)
        if d and d.get("p_value") is not None and d["p_value"] == d["p_value"]:
            say(f"AUC difference ({what} − your own model): {d['difference']:+.3f}, 95 % interval "
                f"{d['low']:+.3f} to {d['high']:+.3f}, DeLong's paired test p = {d['p_value']:.3f} "
                f"({models[0]['rows']} rows, {models[0]['events']} '{classes[1]}')")
    for flag in v.get("flags", []):
        say(f"warning: {flag} — its accuracy says nothing about that class")


def _threshold_target(args):
    if args.threshold_for_sensitivity is not None and args.threshold_for_specificity is not None:
        raise ConfigError("give --threshold-for-sensitivity or --threshold-for-specificity, not both")
    if args.threshold_for_sensitivity is not None:
        return ("sensitivity", args.threshold_for_sensitivity)
    if args.threshold_for_specificity is not None:
        return ("specificity", args.threshold_for_specificity)
    return None


def _analyst_round(args):
    from .api.analyst import AnalystRound
    from .api.common import AnalystWorkspace, Kit, default_workspace

    ident = load_identity(args.identity)
    kit = Kit.load(args.kit, expect_analyst=ident.card)
    analysis = AnalystRound(kit, ident, AnalystWorkspace(args.workspace or default_workspace(args.identity)))
    for item in [x for group in getattr(args, "confirm", None) or [] for x in group]:
        _confirm(analysis, item)
    return analysis


def _confirm(analysis, item: str) -> None:
    """``--confirm`` takes a fingerprint the analyst compared with the site, or the site's .dcpub card."""
    from .api import PublicCard

    if item.endswith(".dcpub") or Path(item).is_file():
        card = PublicCard.load(item)
        analysis.confirm(card, how=f"--confirm {Path(item).name}")
        say(f"confirmed: '{card.name}' ({card.fingerprint})")
    else:
        fp = analysis.confirm(item, how="--confirm fingerprint")
        say(f"confirmed: {fp}")


def _no_senders_hint(analysis, files: list[Path]) -> None:
    """Fail closed, with the way out, when offered files come from senders nobody confirmed."""
    pending = analysis.unconfirmed(files)
    if pending:
        who = "; ".join(f"{p.name} from '{c.name}' ({c.fingerprint})" for p, c in pending[:4])
        more = f" and {len(pending) - 4} more" if len(pending) > 4 else ""
        raise ConfigError(f"{len(pending)} bundle(s) come from senders this project has not confirmed: {who}{more}; "
                          "compare each fingerprint with its site (by phone or on paper), then run again with "
                          "--confirm FINGERPRINT (or --confirm SITE.dcpub) for each, or list the sites in the kit's "
                          "roster")


def _import_and_run(args, *, classification_only: bool = False):
    """The analyst's round over a folder of bundles, as ``analyst run`` and ``analyst estimate`` share it."""
    from .api.common import method_class

    analysis = _analyst_round(args)
    folder = Path(args.bundles)
    files = sorted(folder.glob("*.dcbundle")) if folder.is_dir() else []
    if files and len(analysis.unconfirmed(files)) == len(files):
        _no_senders_hint(analysis, files)  # no usable bundle at all: refused, with the way out
    # a file that cannot be used (sender not confirmed, empty, unreadable, refused by a check) is left out, not fatal
    reports, received = analysis.import_folder(folder, leave_out=True)
    refused = [r for r in reports if r.status in ("unconfirmed", "refused")]
    bundles, excluded = analysis.split_excluded(received, getattr(args, "exclude", None) or [])
    name = args.method or analysis.kit.method
    if classification_only and method_class(name).task != "classification":
        raise ConfigError("estimate compares classification models; this kit clusters")
    run = analysis.run(bundles, args.method, parse_sets(args.set, method_class(name)), excluded=excluded,
                       refused=refused)
    say(*run.refused_lines())  # one line per file left out; the summary and the audit log name it too
    return analysis, [r for r in reports if r not in refused], run


def cmd_analyst_import(args) -> None:
    """Import the offered files; one from a sender nobody confirmed is left out (one line, nothing of it opened)
    and the others are imported — refused only when no file's sender is confirmed."""
    analysis = _analyst_round(args)
    files = [Path(p) for p in args.bundle]
    pending = analysis.unconfirmed(files)
    if len(pending) == len(files):
        _no_senders_hint(analysis, files)
    from .api.analyst import ImportReport, left_out_line

    left_out = {p for p, _ in pending}
    for p, card in pending:
        say(left_out_line(ImportReport(p, "unconfirmed", "", card.name, card.fingerprint), "import"))
    for r in analysis.import_bundles([f for f in files if f not in left_out]):
        say(import_line(r))


def import_line(r) -> str:
    """The line ``analyst import`` and ``analyst run`` print for a bundle they used."""
    return f"{r.status}: {r.path.name} from '{r.site}' ({r.fingerprint}), {r.rows} rows"


def cmd_analyst_run(args) -> None:
    from .api.analyst import describe_scale_flag as describe

    analysis, reports, run = _import_and_run(args)
    out = analysis.export(run, args.out)
    for r in reports:
        say(import_line(r))
    for b in run.excluded:
        say(f"excluded: '{b.site}' ({b.fingerprint}) — no package")
    for f in run.scale_flags:
        say(f"warning: out of scale: {describe(f)}; consider --exclude '{f.fingerprint}'")
    say(*run.summary_lines())
    for p in out.packages:
        say(f"package: {p.path}")
    say(f"report:  {out.report}", f"summary: {out.summary}")


def cmd_analyst_estimate(args) -> None:
    """Simulate before you collaborate: the expected gain per site from the bundles alone; nothing is sealed."""
    _, _, run = _import_and_run(args, classification_only=True)
    s = run.result.summary
    say(*run.summary_lines(), "no package was written")
    if args.json:
        from .api import write_json_atomic

        write_json_atomic(args.json, {k: s[k] for k in ("method", "t", "n_clusters", "selection", "sites",
                                                         "expected_mean", "own_model_mean") if k in s})
        say(f"estimate: {args.json}")


def cmd_demo(args) -> None:
    from .demo import run_demo

    ok = run_demo(Path(args.out), say)
    if not ok:
        raise DCError("the demo round failed (see above)")


def cmd_gui(args) -> None:
    """Start the desktop app through its installed entry point (``dcstudio-gui``): the command line sits beside
    the app, never above it, so ``core`` imports nothing of ``gui``."""
    from importlib.metadata import entry_points

    found = entry_points(group="gui_scripts", name="dcstudio-gui")
    if not found:
        raise ConfigError("the desktop app is not installed with this copy of DC Studio; start it with `dcstudio-gui`")
    sys.exit(next(iter(found)).load()())


# ---- parser -------------------------------------------------------------------------------------------
EPILOG = """\
passphrases:
  Commands that unlock an identity (.dcid) ask for its passphrase in the terminal. For scripts, set
  DCSTUDIO_PASSPHRASE in the environment instead (it is then used for every identity the command opens,
  and as the new passphrase of `keys new`); keep such scripts as private as the identity itself.

Run `dcstudio GROUP --help` or `dcstudio GROUP COMMAND --help` for the options of one command."""

def _csv_args(p, *, out: bool = False) -> None:
    g = p.add_argument_group("CSV reading (each detected from the file when not given)")
    g.add_argument("--encoding", help="text encoding, e.g. utf-8, cp1252, shift_jis")
    g.add_argument("--delimiter", help="column separator, e.g. ';' or ',' (a tab: $'\\t')")
    g.add_argument("--decimal", choices=[".", ","], help="decimal mark of the numbers")
    g.add_argument("--missing-token", action="append", metavar="TEXT",
                   help="also read cells of this text as missing (repeatable; case and surrounding spaces do not "
                   "matter) [always: empty, NA, N/A, NaN, ?, null, and the kit's own]; given to kit new, the kit "
                   "carries it to every site")
    g.add_argument("--impute", action="store_true",
                   help="older kits whose columns refuse missing values: fill them with this site's column mean "
                   "(kits made now decide missing values per column themselves)")
    if out:
        g = p.add_argument_group("RESULT.csv writing (default: the same as the input CSV)")
        g.add_argument("--out-encoding", help="text encoding of the results, e.g. utf-8 or cp1252")
        g.add_argument("--out-delimiter", help="column separator of the results")
        g.add_argument("--out-decimal", choices=[".", ","], help="decimal mark of the results' numbers")


def _group(sub, name: str, help_text: str):
    """A command group; bare ``dcstudio GROUP`` prints the group's help."""
    parser = sub.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(func=None, parser=parser)
    return parser.add_subparsers(dest="cmd", metavar="COMMAND")


def settings_help(side: str) -> str:
    """Every registered method's settings of one side, generated from their declarations."""
    from .api.common import METHODS

    lines = ["method settings (--set KEY=VALUE):" if side == "analyst" else "site settings:"]
    for name, cls in METHODS.items():
        specs = [s for s in cls.settings_spec if s.side == side]
        lines.append(f"  {name} — {cls.title}")
        lines += [f"    {s.describe()}" for s in specs] or ["    (none)"]
    return "\n".join(lines)


def _site_setting_args(p, specs: dict, title: str) -> None:
    """One option per site-side setting of any method (``--NAME``), with its help and default."""
    g = p.add_argument_group(title)
    for spec in specs.values():
        g.add_argument(f"--{spec.name.replace('_', '-')}", dest=spec.name, metavar=spec.kind.upper(),
                       help=f"{spec.help} [{spec.none_help if spec.default is None else spec.default}]")


def _confirm_arg(p) -> None:
    p.add_argument("--confirm", action="append", nargs="+", metavar="FINGERPRINT|CARD.dcpub",
                   help="confirm site keys (remembered in the workspace): a fingerprint you compared with the site "
                   "by phone or on paper, or its .dcpub card. Without a kit roster, bundles from unconfirmed "
                   "senders are refused before they are decrypted")


def _privacy_args(p) -> None:
    p.add_argument("--privacy-threshold", action="append", metavar="NAME=VALUE",
                   help="make one of the kit's privacy limits stricter for this export (repeatable; "
                   "loosening is refused): " + ", ".join(DIRECTIONS))


def build_parser() -> argparse.ArgumentParser:
    from .api.common import METHODS, MISSING_CHOICES

    ap = argparse.ArgumentParser(prog="dcstudio", description="One-shot, air-gapped Data Collaboration.",
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=f"dcstudio {version_string()}")
    ap.add_argument("--debug", action="store_true", help="show tracebacks")
    ap.set_defaults(func=None, parser=ap)
    sub = ap.add_subparsers(dest="group", metavar="GROUP")

    keys = _group(sub, "keys", "identities and public cards")
    p = keys.add_parser("new", help="create NAME.dcid (private) and NAME.dcpub (public card)")
    p.add_argument("--name", required=True, help="your site's or the analyst's name, as others will see it")
    p.add_argument("--out", required=True, help="folder for the two files")
    p.add_argument("--work-factor", type=int, default=18, help="scrypt log2(N) of the passphrase lock (default 18)")
    p.add_argument("--force", action="store_true", help="replace an existing identity of that name")
    p.set_defaults(func=cmd_keys_new)
    p = keys.add_parser("show", help="print a card's or identity's fingerprint")
    p.add_argument("file", help="a .dcpub card or a .dcid identity (no passphrase needed)")
    p.set_defaults(func=cmd_keys_show)
    p = keys.add_parser("export-age", help="write the X25519 key as an age identity (for `age -d`)")
    p.add_argument("--identity", required=True, help="the .dcid identity to export")
    p.add_argument("--out", required=True, help="the age identity file to write (secret)")
    p.set_defaults(func=cmd_keys_export_age)

    kit = _group(sub, "kit", "project kits")
    p = kit.add_parser("show", help="print a kit's project, analyst fingerprint, schema and method")
    p.add_argument("kit", help="the .dckit file")
    p.set_defaults(func=cmd_kit_show)
    p = kit.add_parser("new", help="make and sign a project kit")
    p.add_argument("--identity", required=True, help="the analyst's .dcid (signs the kit)")
    p.add_argument("--name", required=True, help="the project's name, as the sites will see it")
    p.add_argument("--schema-from", required=True, help="a sample CSV with the project's columns")
    p.add_argument("--label", help="the column to predict (classification)")
    p.add_argument("--id-column", help="a row-id column (never used as a feature; hashed for linkage)")
    p.add_argument("--task", choices=["classification", "clustering"],
                   help="default: the method's task")
    p.add_argument("--method", choices=list(METHODS), metavar="METHOD",
                   help="; ".join(f"{n}: {c.title}" for n, c in METHODS.items())
                   + " (default: the task's first method)")
    p.add_argument("--blocks", help='clustering: feature blocks, e.g. "clinical=a,b,c;lifestyle=d,e"')
    p.add_argument("--ranges", action=argparse.BooleanOptionalAction, default=None,
                   help="publish each numeric column's range in the kit, rounded outward (never a real row's "
                   "exact min or max; default: on for "
                   "clustering)")
    p.add_argument("--statistics", action=argparse.BooleanOptionalAction, default=True,
                   help="publish the sample's per-column mean and spread, level shares and missing shares in the "
                   "kit, so every site can check its units before export (default: on)")
    p.add_argument("--min-group", type=int, default=10, metavar="N",
                   help="publish shares only over groups of at least N rows (counts rounded to multiples of N, a "
                   "smaller group counted as N) and means and spreads only over N rows or more (default: 10)")
    p.add_argument("--ignore", action="append", metavar="COL[,COL]",
                   help="leave columns out of the project (e.g. ones that leak the outcome); repeatable")
    p.add_argument("--type", action="append", metavar="COL=TYPE",
                   help="a column's type: numeric, binary, categorical, ordinal or ignored (default: detected "
                   "from the sample); repeatable")
    p.add_argument("--levels", action="append", metavar="COL=a,b,c",
                   help="a column's level order (binary: the first is the reference; ordinal: low to high); the "
                   "sample's other levels follow; an item NAME=x|y makes raw values x and y mean level NAME, e.g. "
                   "\"rx=Obs,treated=Lev|Lev+5FU\"; repeatable")
    p.add_argument("--missing", action="append", metavar="COL=POLICY",
                   help=f"{', '.join(MISSING_CHOICES)} (default: impute, with an indicator when the sample "
                   "has missing cells in the column); repeatable")
    p.add_argument("--other", action="append", metavar="COL",
                   help="no longer needed: a value a column with levels does not know always goes to the column's "
                   "unseen bucket (none of its levels) and is counted at each site; accepted for scripts")
    p.add_argument("--anchor-kind", choices=["smote", "uniform", "gaussian"],
                   help="default: uniform for clustering (in the public ranges), smote otherwise")
    p.add_argument("--anchor-rows", type=int, default=1000, help="rows of the shared anchor (default 1000)")
    p.add_argument("--roster", nargs="*", help="public cards (.dcpub) of the expected sites")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="a method setting, fixed for every site (repeatable; listed below)")
    p.add_argument("--privacy-threshold", action="append", metavar="NAME=VALUE",
                   help="a privacy limit every site's assessment is judged by (repeatable; sites may only tighten "
                   "it): " + ", ".join(f"{k} [{v:g}]" for k, v in PrivacyThresholds().to_dict().items()))
    p.add_argument("--threat-model", choices=THREAT_CHOICES, default=None,
                   help="which adversaries every site's privacy assessment counts: 'collusion' (default: the analyst "
                   "may work with one other site, which holds the anchor) or 'no-collusion' (sites do not work with "
                   "the analyst; their attacks are still shown). Every site sees it before export")
    p.add_argument("--public-rows", type=int, default=None, metavar="N",
                   help=f"the rows of a public sample like the sites' the analyst may hold (default "
                   f"{DEFAULT_PUBLIC_ROWS:,}): the assessment's analyst-alone attacks use that many")
    p.add_argument("--out", required=True, help="the .dckit file to write")
    _csv_args(p)
    p.epilog = settings_help("analyst")
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.set_defaults(func=cmd_kit_new)

    anc = _group(sub, "anchor", "the participants' shared anchor")
    p = anc.add_parser("new", help="lead participant only: make the anchor file")
    p.add_argument("--kit", required=True, help="the project's .dckit")
    p.add_argument("--out", required=True, help="the .dcanchor file to write (for the participants only)")
    p.add_argument("--kind", choices=["smote", "uniform", "gaussian"], help="default: the kit's recommendation")
    p.add_argument("--rows", type=int, help="anchor rows (default: the kit's)")
    p.add_argument("--csv", help="the lead site's CSV (ranges/statistics/seed rows when the kit has none)")
    p.add_argument("--seed-csv", help="rows you declare shareable with every participant, as the SMOTE seed set "
                   "(default: synthetic seeds from --csv's per-column statistics; no real row)")
    p.add_argument("--identity", help="this (lead) site's .dcid or .dcpub: the file is also encrypted to it")
    p.add_argument("--to", nargs="+", metavar="CARD.dcpub", help="the other participants' public cards")
    p.add_argument("--plain", action="store_true", help="write an unencrypted anchor file (not recommended)")
    p.add_argument("--seed-rows", type=int, default=100, help="SMOTE seed rows (default 100)")
    _csv_args(p)
    p.set_defaults(func=cmd_anchor_new)

    part = _group(sub, "participant", "site operations")
    p = part.add_parser("export", help="reduce a CSV privately and seal the bundle")
    p.add_argument("--kit", required=True, help="the project's .dckit from the analyst")
    p.add_argument("--identity", required=True, help="this site's .dcid (signs the bundle)")
    p.add_argument("--csv", required=True, help="this site's data")
    p.add_argument("--out", required=True, help="the .dcbundle file to write")
    p.add_argument("--force", action="store_true", help="replace an existing bundle file")
    p.add_argument("--anchor", help="the project's .dcanchor from the lead participant")
    p.add_argument("--workspace", help="where the private reduction is kept (default: beside the identity)")
    p.add_argument("--block", help="clustering: the feature block this CSV holds (default: detected from its columns)")
    p.add_argument("--analyst-fingerprint", metavar="FINGERPRINT|CARD.dcpub",
                   help="the first time this workspace sees the project: the analyst's fingerprint as they read it to "
                   "you (by phone or in person), or their public card received another way; checked against the "
                   "kit's signer before anything is sealed")
    p.add_argument("--units-checked", action="store_true",
                   help="export even though a column does not look like the kit's sample (another unit or coding?): "
                   "only after checking the columns named")
    site_specs = {}
    for cls in METHODS.values():
        for spec in cls.site_settings_spec():
            site_specs.setdefault(spec.name, spec)
    p.add_argument("--accept-poor-privacy", action="store_true",
                   help="export even though an attack the kit's threat model counts finds the export poor (your "
                   "site accepts that risk; recorded in the audit log). Without it such an export is refused")
    _site_setting_args(p, site_specs, "this site's choices (the method's site-side settings; defaults in brackets)")
    _privacy_args(p)
    _csv_args(p)
    p.set_defaults(func=cmd_participant_export)
    p = part.add_parser("assess", help="measure how much an export would disclose, without writing a bundle",
                        description="Runs the attacks of docs/privacy-and-security.md on what `participant export` "
                        "would ship from this CSV with these choices, and prints one line and verdict per attack. "
                        "Nothing is written; exit 0 unless --require-ok and a verdict is poor (exit 2).")
    p.add_argument("--kit", required=True, help="the project's .dckit from the analyst")
    p.add_argument("--identity", required=True, help="this site's .dcid")
    p.add_argument("--csv", required=True, help="this site's data")
    p.add_argument("--anchor", help="the project's .dcanchor from the lead participant")
    p.add_argument("--workspace", help="this site's workspace (default: beside the identity; nothing is written)")
    p.add_argument("--block", help="clustering: the feature block this CSV holds (default: detected from its columns)")
    p.add_argument("--units-checked", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    p.add_argument("--require-ok", action="store_true", help="exit 2 when any verdict is poor (for scripts)")
    p.add_argument("--levers", action="store_true",
                   help="also try every lever (fewer numbers per row, noise, formal noise) on a sample of your rows "
                        "and print each one's checks and expected accuracy cost")
    _site_setting_args(p, site_specs, "this site's choices (as for export)")
    _privacy_args(p)
    _csv_args(p)
    p.set_defaults(func=cmd_participant_assess)
    p = part.add_parser("apply", help="apply the analyst's package to this site's rows")
    p.add_argument("--package", required=True, help="the .dcpkg the analyst returned to this site")
    p.add_argument("--identity", required=True, help="this site's .dcid")
    p.add_argument("--csv", required=True, help="the CSV to add results to (the exported one, or new rows)")
    p.add_argument("--out", required=True, help="RESULT.csv to write (never the input CSV)")
    p.add_argument("--workspace", help="the workspace the bundle was exported from (default: beside the identity)")
    p.add_argument("--allow-older", action="store_true",
                   help="apply a package older than one already applied for the same bundle (going back on purpose)")
    p.add_argument("--analyst-fingerprint", metavar="FINGERPRINT|CARD.dcpub",
                   help="confirm the analyst's key again (the fingerprint they read to you by phone, or their card) "
                        "when this workspace's pin of it cannot be trusted (an earlier version's, or edited)")
    p.add_argument("--validate", action="store_true",
                   help="the CSV's rows carry labels: score the package beside this site's own-rows model and "
                        "recommend the better")
    g = p.add_argument_group("two classes: the decision threshold (the risk is that of the kit's second class)")
    g.add_argument("--threshold", type=float, metavar="T",
                   help="write decision = the second class when its risk ≥ T (0 < T < 1) [0.5]")
    g.add_argument("--threshold-for-sensitivity", type=float, metavar="S",
                   help="with --validate: the largest T whose sensitivity on your labelled rows is ≥ S")
    g.add_argument("--threshold-for-specificity", type=float, metavar="S",
                   help="with --validate: the smallest T whose specificity on your labelled rows is ≥ S")
    p.add_argument("--representation", action="store_true",
                   help="clustering: also write each row's clustering representation (columns z1, z2, …)")
    _csv_args(p, out=True)
    p.set_defaults(func=cmd_participant_apply)

    ana = _group(sub, "analyst", "analyst operations")
    p = ana.add_parser("import", help="verify and import bundles into the workspace")
    p.add_argument("--kit", required=True, help="the project's .dckit")
    p.add_argument("--identity", required=True, help="the analyst's .dcid")
    p.add_argument("--bundle", nargs="+", required=True, help="one or more .dcbundle files")
    p.add_argument("--workspace", help="the analyst's workspace (default: beside the identity)")
    _confirm_arg(p)
    p.set_defaults(func=cmd_analyst_import)
    p = ana.add_parser("run", help="import a folder of bundles, fit, and write one package per site")
    p.add_argument("--kit", required=True, help="the project's .dckit")
    p.add_argument("--identity", required=True, help="the analyst's .dcid")
    p.add_argument("--bundles", required=True, help="a folder of .dcbundle files")
    p.add_argument("--out", required=True, help="folder for the packages, report.html and summary.json")
    p.add_argument("--method", help="another method of the same bundle family (default: the kit's)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a kit setting for this run, e.g. t=0.3 or epochs=100 (see `kit new --help`)")
    p.add_argument("--workspace", help="the analyst's workspace (default: beside the identity)")
    _confirm_arg(p)
    p.add_argument("--exclude", action="append", metavar="SITE", help="leave a site (name or fingerprint) out of "
                   "the analysis, e.g. one flagged as out of scale; repeatable")
    p.set_defaults(func=cmd_analyst_run)

    aud = sub.add_parser("audit", help="the workspace audit log").add_subparsers(dest="cmd", required=True)
    p = aud.add_parser("verify", help="check a workspace's audit log: chain, signatures and head file")
    p.add_argument("log", help="a workspace folder or its audit.jsonl")
    p.add_argument("--against", nargs="+", metavar="FILE", help="bundles or packages this workspace sealed: the "
                   "log must hold the audit head each carries and the line recording it (a rolled-back log fails)")
    p.set_defaults(func=cmd_audit_verify)
    p = aud.add_parser("new", help="start a new audit log after a damaged, deleted or earlier-version one; "
                                   "whatever is left of the old log is copied beside it, the break is the new log's "
                                   "first entry, and no export is removed")
    p.add_argument("log", help="a workspace folder or its audit.jsonl")
    p.add_argument("--identity", required=True, help="the workspace owner's .dcid (signs the new log)")
    p.add_argument("--reason", required=True, help="why, in a few words (recorded in the new log)")
    p.add_argument("--adopt-unsigned", action="store_true",
                   help="also sign the export states, applied lists and bundle registry an earlier version wrote "
                        "unsigned (done by itself when the old log is an earlier version's); analyst pins and "
                        "confirmed sites are never adopted: confirm those fingerprints again")
    p.set_defaults(func=cmd_audit_new)
    p = ana.add_parser("estimate", help="expected accuracy per site against its own-rows model, before any "
                                        "package is sent")
    p.add_argument("--kit", required=True, help="the project's .dckit")
    p.add_argument("--identity", required=True, help="the analyst's .dcid")
    p.add_argument("--bundles", required=True, help="a folder of .dcbundle files")
    p.add_argument("--method", help="another method of the same bundle family (default: the kit's)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a kit setting for this estimate")
    p.add_argument("--workspace", help="the analyst's workspace (default: beside the identity)")
    p.add_argument("--json", help="also write the per-site estimates as JSON")
    _confirm_arg(p)
    p.set_defaults(func=cmd_analyst_estimate)

    p = sub.add_parser("demo", help="a whole round on embedded data")
    p.add_argument("--out", default="dcstudio-demo", help="folder for the demo's files (default dcstudio-demo)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("gui", help="open the desktop app")
    p.set_defaults(func=cmd_gui)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.func is None:  # a bare `dcstudio` or `dcstudio GROUP`: show what there is to do
        args.parser.print_help()
        return 0
    return exit_code(lambda: args.func(args), "dcstudio", debug=args.debug,
                     interrupted="interrupted; nothing was written")


def error_line(prog: str, exc: DCError) -> str:
    """The one line an error prints on stderr, through the one sanitiser (it may quote a file's text)."""
    return shown_lines(f"{prog}: error: {exc}")


def exit_code(call, prog: str, *, debug: bool = False, interrupted: str = "interrupted") -> int:
    """Run ``call``; a product error or a file-system error becomes one line on stderr and exit 1 (``debug``:
    the traceback), Ctrl-C exit 130."""
    try:
        call()
    except DCError as exc:
        if debug:
            raise
        print(error_line(prog, exc), file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    except KeyboardInterrupt:
        print(f"{prog}: {interrupted}", file=sys.stderr)
        return 130
    except OSError as exc:
        if debug:
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(shown_lines(f"{prog}: error: {where}{exc.strerror or exc}"), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
