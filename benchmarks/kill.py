"""``python -m benchmarks kill --kills N --seed S``: SIGKILL a site's export, ``audit new``, ``kit new``, an analyst's
import and run, and a site's apply at many moments.

Each case forks a child that performs one operation, and the parent kills it with SIGKILL:

* **chosen moments** — the child counts its crash-relevant system calls (``os.fsync``, ``os.replace``,
  ``os.rename``, ``os.unlink``) and kills itself just before or just after the k-th, for every k of a full run;
* **random moments** — the parent kills the child after a delay drawn uniformly from the operation's
  measured duration.

After every kill the invariants are checked: no file under a final name is partial (every ``.dcbundle``, ``.dcpkg``
and ``.dckit`` opens; an output folder holds a complete set — summary.json lists exactly its packages, with
matching SHA-256, and report.html is there); every bundle a site shows has its private state in the site's
workspace; **no export is lost** (every complete export folder the site's workspace held before the case is there
after it, its signed state intact, once the workspace is opened again); no private state is orphaned (no export
folder without its state.json; once the workspace is opened again, no staging folder, and no state of a bundle no
log — the current one or a copy ``audit new`` kept — records); every bundle in an analyst's registry is stored
intact and recorded by an ``import`` line; the audit logs verify (after ``audit new`` is killed, the next ``audit
new`` must make it verify). The next run must then succeed and leave no ``.part``, ``.staging`` or ``.old`` behind.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from core.api import AuditLogRefused, DCError

_CALLS = ("fsync", "replace", "rename", "unlink")


def _run_child(op: Callable[[], None], k: int = 0, when: str = "before", delay: float | None = None) -> int:
    """Fork, run ``op`` in the child (killing itself at its k-th counted call if ``k``), and return the
    number of counted calls the child made (for a full run) or -1 when it was killed."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        counter = [0]
        originals = {name: getattr(os, name) for name in _CALLS}

        def wrap(name):
            fn = originals[name]

            def inner(*args, **kwargs):
                counter[0] += 1
                if k and when == "before" and counter[0] == k:
                    os.kill(os.getpid(), signal.SIGKILL)
                out = fn(*args, **kwargs)
                if k and when == "after" and counter[0] == k:
                    os.kill(os.getpid(), signal.SIGKILL)
                return out
            return inner

        code = 0
        try:
            for name in _CALLS:
                setattr(os, name, wrap(name))
            op()
            for name in _CALLS:
                setattr(os, name, originals[name])
            os.write(write_fd, str(counter[0]).encode())
        except BaseException as exc:  # noqa: BLE001 - the child must never return into the parent's code
            code = 1
            with contextlib.suppress(BaseException):  # say why, for the parent's RuntimeError
                os.write(2, f"kill bench child failed: {exc.__class__.__name__}: {exc}\n".encode())
        finally:
            os._exit(code)
    os.close(write_fd)
    if delay is not None:
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    data = os.read(read_fd, 64)
    os.close(read_fd)
    if os.WIFSIGNALED(status):
        return -1
    if os.WEXITSTATUS(status) != 0:
        raise RuntimeError("the operation failed in the child without being killed")
    return int(data or b"0")


class _Round:
    """A small classification round: two sites' exports ready to seal, the analyst's result ready to export."""

    PASSPHRASE = "kill benchmark passphrase"

    def __init__(self, folder: Path, seed: int):
        import pandas as pd

        from core.api import Identity
        from core.api.analyst import AnalystRound
        from core.api.common import AnalystWorkspace, Kit, SiteWorkspace, infer_schema, read_table
        from core.api.participant import ParticipantRound, make_anchor

        rng = np.random.default_rng(seed)
        self.folder = folder
        frame = {f"x{j}": rng.normal(size=140) * (j + 1) for j in range(4)}
        frame["label"] = np.where(frame["x0"] > 0, "a", "b")
        df = pd.DataFrame(frame)
        df.iloc[:20].to_csv(folder / "sample.csv", index=False)
        self.analyst = Identity.generate("analyst")
        self.analyst_file = folder / "analyst.dcid"
        self.analyst.save(self.analyst_file, self.PASSPHRASE, log_n=14)  # for `dcstudio kit new`
        self.site = Identity.generate("site0")
        other = Identity.generate("site1")
        schema, _ = infer_schema(folder / "sample.csv", label="label")
        self.kit = Kit(name="kill", task="classification", schema=schema, method="dc", analyst=self.analyst.card,
                       settings={"epochs": 2, "seed": seed},
                       roster=[{"name": s.card.name, "fingerprint": s.card.fingerprint} for s in (self.site, other)])
        self.kit_path = folder / "p.dckit"
        self.kit.save(self.kit_path, self.analyst)
        anchor = make_anchor(self.kit.project_id, schema.encoded_names, kind="smote", rows=60,
                             seed_rows=read_table(folder / "sample.csv", schema, labels=False).X)
        self.site_ws = SiteWorkspace(folder / "site.ws")
        self.jobs = []
        bundles = []
        for i, ident in enumerate((self.site, other)):
            csv = folder / f"site{i}.csv"
            df.iloc[20 + 60 * i: 80 + 60 * i].to_csv(csv, index=False)
            ws = self.site_ws if i == 0 else SiteWorkspace(folder / "other.ws")
            job = ParticipantRound(self.kit, self.kit_path, ident, ws, anchor=anchor,
                                   site_settings={"seed": i})
            job.confirm_analyst(self.kit.analyst, how="benchmark: the kit's own signer")
            job.accept_privacy_risk("benchmark: a simulated site accepts its poor verdicts")
            job.load(csv)
            job.compute()
            self.jobs.append(job)
            bundles.append(job.seal(folder / "ready" / f"site{i}.dcbundle").path)
        self.bundle_files = bundles
        session = AnalystRound(self.kit, self.analyst, AnalystWorkspace(folder / "analyst0.ws"))
        received = [session.open_bundle(p) for p in bundles]
        self.result, self.received = session.run(received), received  # an AnalystRun
        # an analyst workspace that already holds site0's bundle: each import case adds site1's to a copy of it
        self.import_base = folder / "import-base.ws"
        AnalystRound(self.kit, self.analyst, AnalystWorkspace(self.import_base)).import_bundles(bundles[:1])
        self.out = folder / "out"
        self.exports = folder / "exports"
        self.kits = folder / "kits"
        self.n = {"analyst": 0, "export": 0, "apply": 0, "restart": 0, "kit": 0, "import": 0}
        self.site_csv = folder / "site0.csv"
        self.package = session.export(self.result, folder / "packages").packages[0].path
        self.applied = folder / "applied"
        self.kept: dict[str, bytes] = {}  # export folder → its state.json, before the case (lost exports)

    # ---- the operations ---------------------------------------------------------------------------------
    def export_op(self) -> Callable[[], None]:
        self.n["export"] += 1
        out = self.exports / f"case{self.n['export']}.dcbundle"
        return lambda: self.jobs[0].seal(out)

    def restart_op(self) -> Callable[[], None]:
        """``dcstudio audit new`` on the site's workspace (which holds every export of this campaign)."""
        from core.api.common import restart_audit

        self.n["restart"] += 1
        reason = f"kill benchmark restart {self.n['restart']}"
        return lambda: restart_audit(self.folder / "site.ws", self.site, reason)

    def kit_op(self) -> Callable[[], None]:
        """``dcstudio kit new`` as the analyst runs it (identity file, sample CSV, the kit written atomically)."""
        from core.cli import main

        self.n["kit"] += 1
        out = self.kits / f"kit{self.n['kit']}.dckit"
        argv = ["kit", "new", "--identity", str(self.analyst_file), "--name", "kill", "--schema-from",
                str(self.folder / "sample.csv"), "--label", "label", "--method", "dc", "--out", str(out)]

        def op() -> None:
            os.environ["DCSTUDIO_PASSPHRASE"] = self.PASSPHRASE
            with contextlib.redirect_stdout(io.StringIO()):
                if main(argv) != 0:
                    raise RuntimeError("kit new failed")
        return op

    def import_op(self) -> Callable[[], None]:
        """``dcstudio analyst import`` of site1's bundle into a copy of a workspace that holds site0's."""
        from core.api.analyst import AnalystRound
        from core.api.common import AnalystWorkspace

        self.n["import"] += 1
        ws = self.folder / f"import{self.n['import']}.ws"
        shutil.copytree(self.import_base, ws)
        return lambda: AnalystRound(self.kit, self.analyst, AnalystWorkspace(ws)).import_bundles(self.bundle_files[1:])

    def apply_op(self) -> Callable[[], None]:
        from core.api.participant import apply_package

        self.n["apply"] += 1
        out = self.applied / f"result{self.n['apply']}.csv"
        return lambda: apply_package(self.package, self.site, self.site_csv, out, workspace=self.site_ws)

    def analyst_op(self) -> Callable[[], None]:
        from core.api.analyst import AnalystRound
        from core.api.common import AnalystWorkspace

        self.n["analyst"] += 1
        ws = self.folder / f"analyst{self.n['analyst']}.ws"

        def op():
            session = AnalystRound(self.kit, self.analyst, AnalystWorkspace(ws))
            session.import_bundles(self.bundle_files)
            session.export(self.result, self.out)
        return op

    # ---- invariants ---------------------------------------------------------------------------------
    def remember_exports(self) -> None:
        """The complete export folders the site holds now (a case may add some, never lose one)."""
        root = self.folder / "site.ws"
        self.kept = {str(d.relative_to(root)): (d / "state.json").read_bytes()
                     for d in root.glob("projects/*/exports/*") if (d / "state.json").is_file()}

    def lost_exports(self) -> list[str]:
        """Export folders held before the case and gone (or changed, or no longer trusted) after it, once the
        workspace has been opened again (which cleans up)."""
        from core.api.common import SiteWorkspace

        root = self.folder / "site.ws"
        ws = SiteWorkspace(root)
        lost = []
        for rel, state in self.kept.items():
            folder = root / rel
            if not (folder / "state.json").is_file() or (folder / "state.json").read_bytes() != state:
                lost.append(f"LOST export {rel}")
                continue
            try:
                ws.load_export(folder.parent.parent.name, "", self.site.card, folder=folder)
            except DCError as exc:
                lost.append(f"LOST export {rel}: {exc.message}")
        return lost

    def check_site(self) -> list[str]:
        from core.api.common import inspect

        problems = []
        for bundle in sorted(self.exports.glob("*.dcbundle")):
            try:
                binding = inspect(bundle)
                digest = _digest(bundle)
                self.site_ws.load_export(binding.project_id, digest, self.site.card)
            except DCError as exc:
                problems.append(f"{bundle.name}: {exc.message}")
        try:
            self.site_ws.audit.verify()
        except DCError as exc:
            problems.append(f"site audit log: {exc.message}")
        return problems + self.orphans()

    def check_restart(self) -> list[str]:
        """After a killed ``audit new`` the exports are all there and nothing is orphaned; the log may need the next
        ``audit new`` (it is refused with the sentence saying so, never half-trusted)."""
        from core.api.common import SiteWorkspace

        problems = self.orphans()
        try:
            SiteWorkspace(self.folder / "site.ws").audit.verify()
        except AuditLogRefused:
            pass  # the next `audit new` (the next case, or the final run) starts it again
        except DCError as exc:
            problems.append(f"site audit log after audit new: not an audit refusal: {exc.message}")
        return problems

    def check_kit(self) -> list[str]:
        from core.api.common import Kit

        problems = []
        for kit in sorted(self.kits.glob("*.dckit")):
            try:
                Kit.load(kit, expect_analyst=self.analyst.card)
            except DCError as exc:
                problems.append(f"{kit.name} is not a whole kit: {exc.message}")
        return problems

    def check_import(self) -> list[str]:
        """Every import workspace: its log verifies, every registry line is signed, its bundle stored intact and
        recorded by an ``import`` line."""
        from core.api.common import AnalystWorkspace

        problems = []
        for ws_dir in sorted(self.folder.glob("import*.ws")):
            problems += _registry_problems(ws_dir, self.analyst, AnalystWorkspace)
        return problems

    def check_apply(self) -> list[str]:
        """Every RESULT.csv under its final name is whole (all rows, the result column filled); the site's
        record of applied packages reads; its audit log verifies."""
        import pandas as pd

        problems = []
        rows = len(pd.read_csv(self.site_csv))
        for result in sorted(self.applied.glob("*.csv")):
            frame = pd.read_csv(result)
            if len(frame) != rows or "prediction" not in frame or frame["prediction"].isna().any():
                problems.append(f"{result.name} is not a complete result ({len(frame)} of {rows} rows)")
        try:
            self.site_ws.applied(self.kit.project_id, _digest(self.bundle_files[0]), self.site.card)
            self.site_ws.audit.verify()
        except DCError as exc:
            problems.append(f"site workspace after apply: {exc.message}")
        return problems

    def orphans(self) -> list[str]:
        """Private state no bundle can answer to: right after a kill, no export folder may lack its state.json;
        once the workspace is opened again (it cleans up), no staging folder is left and every export folder
        is named by an ``export`` line of the log or of a copy ``audit new`` kept (its bundle may have been
        published)."""
        from core.api.common import SiteWorkspace

        root = self.folder / "site.ws"
        problems = [f"{d.relative_to(self.folder)} has no state.json" for d in root.glob("projects/*/exports/*")
                    if d.is_dir() and not d.name.startswith(".") and not (d / "state.json").is_file()]
        SiteWorkspace(root)
        exported = set()
        for log in [root / "audit.jsonl", *root.glob("audit.before-*.jsonl")]:
            with contextlib.suppress(OSError):
                for line in log.read_bytes().splitlines():
                    with contextlib.suppress(ValueError):
                        entry = json.loads(line)
                        if entry.get("event") == "export":
                            exported.add(entry.get("digest"))
        for d in root.glob("projects/*/exports/*"):
            if d.name.startswith("."):
                problems.append(f"{d.relative_to(self.folder)} left after the workspace was opened again")
            elif (d / "state.json").is_file() and \
                    json.loads((d / "state.json").read_text())["body"]["bundle_digest"] not in exported:
                problems.append(f"{d.relative_to(self.folder)}: private state of a bundle never exported")
        return problems

    def check_analyst(self) -> list[str]:
        from core.api.common import AnalystWorkspace

        problems = []
        if self.out.exists():
            summary_path = self.out / "summary.json"
            if not summary_path.is_file() or not (self.out / "report.html").is_file():
                problems.append("an output folder without its summary or report")
            else:
                summary = json.loads(summary_path.read_text())
                listed = {p["file"]: p["digest"] for p in summary["packages"]}
                present = {p.name for p in self.out.glob("*.dcpkg")}
                if present != set(listed):
                    problems.append(f"packages {sorted(present)} differ from the summary's {sorted(listed)}")
                for name, digest in listed.items():
                    if (self.out / name).is_file() and _digest(self.out / name) != digest:
                        problems.append(f"{name} does not match its digest in the summary")
        for ws_dir in self.folder.glob("analyst*.ws"):
            problems += _registry_problems(ws_dir, self.analyst, AnalystWorkspace)
        return problems

    def leftovers(self) -> list[str]:
        return sorted(str(p.relative_to(self.folder)) for p in self.folder.rglob("*")
                      if p.name.endswith((".part", ".staging", ".old")))


def _registry_problems(ws_dir: Path, owner, workspace_class) -> list[str]:
    """An analyst workspace after a kill: the log verifies, every registry line is signed by the owner, every
    registered bundle is stored intact and an ``import`` line of the log records it."""
    problems = []
    ws = workspace_class(ws_dir)
    try:
        ws.audit.verify()
        imported = {e.get("digest") for e in ws.audit.entries() if e.get("event") == "import"}
        for pid_dir in (ws_dir / "projects").glob("*"):
            for entry in ws.registry(pid_dir.name, owner.card).values():
                stored = pid_dir / "bundles" / entry["file"]
                if not stored.is_file() or _digest(stored) != entry["digest"]:
                    problems.append(f"{ws_dir.name}: registry lists {entry['file']}, not stored intact")
                if entry["digest"] not in imported:
                    problems.append(f"{ws_dir.name}: registry lists {entry['file']}, which no import line records")
    except DCError as exc:
        problems.append(f"{ws_dir.name}: {exc.message}")
    return problems


def _digest(path: Path) -> str:
    from core.api.common import file_digest

    return file_digest(path)


OPERATIONS = ("export", "audit new", "kit new", "analyst import", "analyst run", "apply")


def run_kill(random_kills: int = 10, seed: int = 0, say: Callable[[str], None] | None = None,
             whens: tuple[str, ...] = ("before", "after"), operations: tuple[str, ...] = OPERATIONS) -> dict:
    """Kill each operation at every counted call (``whens``: just before and/or just after it) and at
    ``random_kills`` random moments; return counts and every invariant that broke (none expected)."""
    rng = np.random.default_rng(seed)
    shm = Path("/dev/shm")
    stats: dict = {"seed": seed, "ops": {}, "problems": [], "lost_exports": 0, "orphans": 0}
    start_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dcstudio-kill-", dir=shm if shm.is_dir() else None) as tmp:
        r = _Round(Path(tmp), seed)
        table = {"export": (r.export_op, r.check_site), "audit new": (r.restart_op, r.check_restart),
                 "kit new": (r.kit_op, r.check_kit), "analyst import": (r.import_op, r.check_import),
                 "analyst run": (r.analyst_op, r.check_analyst), "apply": (r.apply_op, r.check_apply)}
        for name in operations:
            make, check = table[name]
            r.remember_exports()
            t0 = time.perf_counter()
            calls = _run_child(make())
            duration = time.perf_counter() - t0
            kills = 0
            plan = [(k, when, None) for k in range(1, calls + 1) for when in whens]
            plan += [(0, "", float(rng.uniform(0.0, duration))) for _ in range(random_kills)]
            for k, when, delay in plan:
                r.remember_exports()
                if _run_child(make(), k, when or "before", delay) == -1:
                    kills += 1
                moment = f"call {k} {when}" if k else f"{delay:.3f} s"
                found = check() + r.lost_exports()
                stats["lost_exports"] += sum(p.startswith("LOST") for p in found)
                stats["orphans"] += sum("orphan" in p or "never exported" in p or "left after" in p
                                        or "no state.json" in p for p in found)
                for problem in found:
                    stats["problems"].append(f"{name}, kill at {moment}: {problem}")
            r.remember_exports()
            _run_child(make())  # the next run completes and cleans up after the killed ones
            for problem in check() + r.lost_exports():
                stats["problems"].append(f"{name}, after the final run: {problem}")
            stats["ops"][name] = {"counted_calls": calls, "cases": len(plan), "killed": kills,
                                  "seconds_per_run": round(duration, 3)}
            if say is not None:
                say(f"{name}: {calls} counted calls, {len(plan)} cases, {kills} killed mid-way")
        # the next runs, in this process, remove what the killed children left: opening a workspace cleans it,
        # writing into a folder cleans that folder, and an export finishes or undoes an interrupted publish
        from core.api.analyst import recover_outputs
        from core.api.common import AnalystWorkspace, SiteWorkspace

        SiteWorkspace(r.folder / "site.ws")
        for ws_dir in [*r.folder.glob("analyst*.ws"), *r.folder.glob("import*.ws")]:
            AnalystWorkspace(ws_dir)
        if "audit new" in operations:
            r.restart_op()()
        r.jobs[0].seal(r.exports / "final.dcbundle")
        recover_outputs(r.out)
        r.analyst_op()()
        r.apply_op()()
        r.kit_op()()
        SiteWorkspace(r.folder / "site.ws").audit.verify()
        stats["leftovers"] = r.leftovers()
    stats["kills"] = sum(o["killed"] for o in stats["ops"].values())
    stats["seconds"] = round(time.perf_counter() - start_all, 1)
    return stats


def run_from_args(args, say: Callable[[str], None]) -> dict:
    kills = args.kills if args.kills is not None else 50
    stats = run_kill(kills, args.seed, say)
    say(f"kill: {sum(o['cases'] for o in stats['ops'].values())} cases ({stats['kills']} killed mid-way) in "
        f"{stats['seconds']} s, {stats['lost_exports']} lost export(s), {stats['orphans']} orphan(s), "
        f"{len(stats['problems'])} broken invariant(s), leftovers {stats['leftovers'] or 'none'}")
    for p in stats["problems"][:20]:
        say(f"  PROBLEM {p}")
    if args.json:
        from core.api import write_json_atomic

        write_json_atomic(args.json, stats)
    return stats
