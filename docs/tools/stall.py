"""How long does the window freeze? Event-loop stall and start-up measurements.

:func:`measure_stall` runs a fast QTimer while a :class:`gui.jobs.Job` runs and records the longest gap
between two ticks: the longest time the UI thread could not process events (a frozen window).

``python docs/tools/stall.py`` builds a synthetic analyst project (12 sites × 300 rows, 50 epochs by default),
measures the app's start-up in a fresh process (process start → StartWindow shown → AnalystWindow
shown), then drives the analyst window in this process and reports the longest stall just after the
window opened (its one-time background import of torch), while importing, training, drawing the result (its views
are drawn one per event-loop turn after training ends), exporting and saving the report as PDF. The target is no
stall over 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
TOOLS = Path(__file__).resolve().parent

TARGET_MS = 50.0


def measure_stall(app, job, interval_ms: int = 5, *, tail_ms: int = 300, timeout_s: float = 600.0) -> dict:
    """Run the event loop until ``job`` has ended (starting it if it was not started) and report the
    event-loop gaps seen meanwhile, plus ``tail_ms`` after it ended (the UI's handling of the result).

    Returns ``{"longest_ms", "mean_ms", "p99_ms", "ticks", "over_50ms", "seconds", "interval_ms",
    "longest_ui_cpu_ms", "max_ui_cpu_ms"}``. A gap is the time between two consecutive timer ticks, so the
    ideal ``longest_ms`` is ``interval_ms``. ``*_ui_cpu_ms`` is the CPU time the UI thread itself spent in a
    gap (in the longest one, and the most in any): the part of a stall that is the window's own work, as
    opposed to waiting for the GIL or for a CPU core (a loaded machine).
    """
    from PySide6.QtCore import QElapsedTimer, QEventLoop, Qt, QTimer

    clock = QElapsedTimer()
    stamps: list[int] = []
    cpu: list[float] = []  # the UI thread's own CPU time at each tick
    loop = QEventLoop()
    timer = QTimer()
    timer.setTimerType(Qt.PreciseTimer)
    timer.setInterval(int(interval_ms))
    timer.timeout.connect(lambda: (stamps.append(clock.nsecsElapsed()), cpu.append(time.thread_time())))
    ended = {"done": False}

    def finish() -> None:
        if not ended["done"]:
            ended["done"] = True
            QTimer.singleShot(int(tail_ms), loop.quit)

    job.ended.connect(finish)
    guard = QTimer()
    guard.setSingleShot(True)
    guard.timeout.connect(loop.quit)
    guard.start(int(timeout_s * 1000))
    clock.start()
    stamps.append(0)
    cpu.append(time.thread_time())
    timer.start()
    if not job.running and getattr(job, "_thread", None) is None:
        job.start()
    elif not job.running:  # it ended before we listened
        finish()
    loop.exec()
    timer.stop()
    guard.stop()
    try:
        job.ended.disconnect(finish)
    except (RuntimeError, TypeError):
        pass
    app.processEvents()
    import numpy as np

    gaps = np.diff(np.asarray(stamps, dtype=np.int64)) / 1e6 if len(stamps) > 1 else np.zeros(1)
    busy = np.diff(np.asarray(cpu)) * 1e3 if len(cpu) > 1 else np.zeros(1)
    worst = int(np.argmax(gaps))
    return {"longest_ms": float(gaps.max()), "mean_ms": float(gaps.mean()),
            "longest_ui_cpu_ms": float(busy[worst]), "max_ui_cpu_ms": float(busy.max()),
            "p99_ms": float(np.percentile(gaps, 99)), "ticks": int(len(gaps)),
            "over_50ms": int((gaps > TARGET_MS).sum()), "seconds": float(stamps[-1] / 1e9),
            "interval_ms": int(interval_ms), "timed_out": not ended["done"]}


# ---- start-up, measured in a fresh process -------------------------------------------------------------------
def _startup_child(kit: str, settings_dir: str) -> None:
    """Runs in a child process: print wall-clock marks when each window is shown (and painted)."""
    from PySide6.QtCore import QSettings
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    QSettings.setPath(QSettings.NativeFormat, QSettings.UserScope, settings_dir)
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, settings_dir)
    from gui import settings as app_settings
    from gui.app import StartWindow

    app = QApplication(["dcstudio-gui"])
    app.setOrganizationName(app_settings.ORG)
    app.setApplicationName(app_settings.APP)
    start = StartWindow()
    start.show()
    QTest.qWaitForWindowExposed(start)
    start.grab()  # painted once
    print(f"START {time.time():.6f}", flush=True)
    start.remember.setChecked(False)
    start.analyst.setChecked(True)
    print(f"CONTINUE {time.time():.6f}", flush=True)
    opening = start.open_role(kit_path=kit, defer=True)  # what the Continue button does
    QTest.qWaitForWindowExposed(opening)
    opening.grab()
    print(f"OPENING {time.time():.6f}", flush=True)
    deadline = time.time() + 120
    while start.child is None and time.time() < deadline:
        app.processEvents()
        time.sleep(0.002)
    window = start.child
    QTest.qWaitForWindowExposed(window)
    window.grab()
    print(f"ANALYST {time.time():.6f}", flush=True)
    app.processEvents()


def measure_startup(kit: Path, settings_dir: Path, runs: int = 3) -> dict:
    """Spawn ``python docs/tools/stall.py --startup-child`` ``runs`` times; median seconds from spawn to each mark."""
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    starts, analysts, openings, after = [], [], [], []
    for _ in range(runs):
        t0 = time.time()
        out = subprocess.run([sys.executable, str(TOOLS / "stall.py"), "--startup-child", str(kit), str(settings_dir)],
                             capture_output=True, text=True, env=env, cwd=root, timeout=120)
        marks = dict(line.split() for line in out.stdout.splitlines()
                     if line.startswith(("START", "CONTINUE", "OPENING", "ANALYST")))
        if "ANALYST" not in marks:
            raise RuntimeError(f"start-up probe failed: {out.stderr.strip()[-400:]}")
        starts.append(float(marks["START"]) - t0)
        analysts.append(float(marks["ANALYST"]) - t0)
        openings.append(float(marks["OPENING"]) - float(marks["CONTINUE"]))
        after.append(float(marks["ANALYST"]) - float(marks["CONTINUE"]))
    import statistics

    return {"start_window_s": statistics.median(starts), "analyst_window_s": statistics.median(analysts),
            "opening_after_continue_s": statistics.median(openings),
            "analyst_after_continue_s": statistics.median(after),
            "start_window_max_s": max(starts), "opening_after_continue_max_s": max(openings), "runs": runs}


# ---- the whole probe -------------------------------------------------------------------------------------------
def run_probe(sites: int = 12, rows: int = 300, epochs: int = 50, t: str = "auto", interval_ms: int = 5,
              startup_runs: int = 3, switch_interval: float | None = None, workdir: Path | None = None,
              torch_threads: int | None = None, baseline_s: float = 0.0) -> dict:
    from analyst_screens import confirm_senders, open_session
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from benchmarks.simulation.projects import build_project
    from gui import settings as app_settings
    from gui.analyst.window import AnalystWindow

    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory()
        workdir = Path(tmp.name)
    settings_dir = workdir / "settings"
    QSettings.setPath(QSettings.NativeFormat, QSettings.UserScope, str(settings_dir))
    QSettings.setPath(QSettings.IniFormat, QSettings.UserScope, str(settings_dir))
    t_build = time.perf_counter()
    project = build_project(workdir / "project", n_sites=sites, rows=rows, epochs=epochs, groups=2,
                            settings=None if t == "auto" else {"t": float(t)})
    build_s = time.perf_counter() - t_build
    report: dict = {"sites": sites, "rows": rows, "epochs": epochs, "t": t, "build_s": build_s,
                    "switch_interval_s": sys.getswitchinterval() if switch_interval is None else switch_interval}
    if startup_runs:
        report["startup"] = measure_startup(project.kit, settings_dir, startup_runs)

    app = QApplication.instance() or QApplication(["dcstudio-stall"])
    app.setOrganizationName(app_settings.ORG)
    app.setApplicationName(app_settings.APP)
    from gui.jobs import Job

    torch_was_loaded = "torch" in sys.modules
    import torch  # noqa: F401  (as the app does while its "Opening…" window waits: gui.app.HEAVY_MODULES)

    window = AnalystWindow(kit_path=str(project.kit))
    window.show()

    def warm(control):  # the window's first second (its one-time setting of torch's threads at 250 ms)
        time.sleep(1.0)

    report["open"] = measure_stall(app, Job(warm, "warm-up"), interval_ms)
    report["open"]["torch_was_loaded"] = torch_was_loaded
    if baseline_s:  # the machine's own jitter: an idle job of the same kind
        report["idle"] = measure_stall(app, Job(lambda control: time.sleep(baseline_s), "idle"), interval_ms)
    if torch_threads is not None:
        window.models_page.torch_threads = torch_threads
    report["torch_threads"] = window.models_page.torch_threads
    open_session(app, window, project)
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    job = window.bundles_page.import_paths([str(p) for p in project.bundles])
    report["import"] = measure_stall(app, job, interval_ms)
    confirm_senders(app, window.bundles_page, window.bundles_page.pending_fingerprints())  # compared by phone
    window.show_page("models")
    drawn = threading.Event()  # the result's views are drawn a view per event-loop turn after the job ends
    window.models_page.views.drawn.connect(drawn.set)
    t0 = time.perf_counter()
    job = window.models_page.train()
    report["train"] = measure_stall(app, job, interval_ms)
    report["train"]["train_s"] = time.perf_counter() - t0
    report["train"]["outcome"] = window.models_page.last_outcome
    report["draw"] = measure_stall(app, Job(lambda control: drawn.wait(120), "drawing the result"), interval_ms)
    report["draw"]["views"] = len(window.models_page.views.widgets)
    window.show_page("export")
    window.export_page.out_edit.setText(str(workdir / "packages"))
    report["export"] = measure_stall(app, window.export_page.export(), interval_ms)
    report["pdf"] = measure_stall(app, window.export_page.save_pdf(workdir / "report.pdf"), interval_ms)
    window.close()
    if tmp is not None:
        tmp.cleanup()
    return report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--startup-child":
        _startup_child(argv[1], argv[2])
        return 0
    ap = argparse.ArgumentParser(prog="python docs/tools/stall.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", type=int, default=12)
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--t", default="auto", help="auto (the default; trains the whole t grid) or a number")
    ap.add_argument("--interval-ms", type=int, default=5)
    ap.add_argument("--startup-runs", type=int, default=3)
    ap.add_argument("--switch-interval", type=float, help="sys.setswitchinterval during the jobs (seconds)")
    ap.add_argument("--torch-threads", type=int, help="torch.set_num_threads for the training (default: torch's)")
    ap.add_argument("--baseline", type=float, default=5.0, help="seconds of an idle job, for the machine's jitter")
    ap.add_argument("--json", help="also write the numbers to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    rep = run_probe(args.sites, args.rows, args.epochs, args.t, args.interval_ms, args.startup_runs,
                    args.switch_interval, torch_threads=args.torch_threads, baseline_s=args.baseline)
    print(f"{rep['sites']} sites × {rep['rows']} rows, {rep['epochs']} epochs, t = {rep['t']}, "
          f"torch threads {rep['torch_threads']}, switch interval {rep['switch_interval_s'] * 1000:g} ms")
    if "startup" in rep:
        s = rep["startup"]
        print(f"start-up: StartWindow shown after {s['start_window_s']:.2f} s, AnalystWindow after "
              f"{s['analyst_window_s']:.2f} s (median of {s['runs']}, from process start)")
    for phase in ("open", "idle", "import", "train", "draw", "export", "pdf"):
        if phase not in rep:
            continue
        m = rep[phase]
        flag = "ok" if m["longest_ms"] <= TARGET_MS else "OVER TARGET"
        extra = f", {m['train_s']:.1f} s training" if phase == "train" else ""
        print(f"{phase:7s} longest stall {m['longest_ms']:6.1f} ms (UI's own work in it "
              f"{m['longest_ui_cpu_ms']:5.1f} ms; most in any gap {m['max_ui_cpu_ms']:5.1f} ms)  "
              f"p99 {m['p99_ms']:5.1f} ms  "
              f"{m['over_50ms']} gap(s) > {TARGET_MS:.0f} ms over {m['seconds']:.1f} s{extra}  [{flag}]")
    print(f"machine: {os.cpu_count()} CPU(s), load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if args.json:
        Path(args.json).write_text(json.dumps(rep, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
