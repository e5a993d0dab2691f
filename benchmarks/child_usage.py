"""A command run as a user runs it, in its own process, with the CPU time and peak memory the kernel counted for it.

:func:`measured` starts the process with ``posix_spawn`` from a small launcher and reaps it with ``wait4``, whose
resource usage is that one process's alone (user + system CPU seconds, peak resident set). :func:`dcstudio` is the
``dcstudio`` command of this interpreter's environment, as installed (``make install``); :func:`bare_read` is the
baseline every site-side benchmark compares with: a fresh Python that imports pandas and calls
``pandas.read_csv(path)``. :func:`installed` gives the product's modules their bytecode, as an installed product has
it (pip and the packaged app compile every module at install, as pandas' were): with ``PYTHONDONTWRITEBYTECODE`` set
in the environment, as on the development machine, every measured command would otherwise compile the ~150 modules
it imports from source (~0.25 s of CPU) while the bare read's pandas is compiled.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]  # the repository root


def dcstudio() -> list[str]:
    """The argv prefix of the installed ``dcstudio`` command (the console script beside this Python), else the same
    entry point run by this Python."""
    script = Path(sys.executable).with_name("dcstudio")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from core.cli import main; sys.exit(main())"]


def bare_read(path: str | Path) -> list[str]:
    """A fresh Python that imports pandas and reads the CSV with ``pandas.read_csv(path)``."""
    return [sys.executable, "-c", "import sys, pandas; pandas.read_csv(sys.argv[1])", str(path)]


def installed(folder: str | Path) -> dict[str, str]:
    """The environment of a command run from an installed product: the repository's modules compiled once into
    ``folder``/pycache (``PYTHONPYCACHEPREFIX``) and read from there; nothing is written in the repository."""
    import compileall

    cache = str(Path(folder) / "pycache")
    before = sys.pycache_prefix
    sys.pycache_prefix = cache
    try:
        for package in ("core",):
            if not compileall.compile_dir(str(_ROOT / package), quiet=1, workers=1):
                raise RuntimeError(f"the product's modules under {package}/ do not compile")
    finally:
        sys.pycache_prefix = before
    return {"PYTHONPYCACHEPREFIX": cache, "PYTHONDONTWRITEBYTECODE": ""}


# A small Python that starts the command and reports the kernel's usage of it. Linux records, at exec, the peak
# memory of the address space being replaced, which for a process started by a large benchmark is the
# benchmark's own: starting it from this small launcher keeps that inherited floor at the launcher's ~10 MB.
_LAUNCHER = r"""
import json, os, sys
log, argv = sys.argv[1], sys.argv[2:]
fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, fd, 1),
                                                              (os.POSIX_SPAWN_DUP2, fd, 2)])
_, status, u = os.wait4(pid, 0)
print(json.dumps([os.waitstatus_to_exitcode(status), u.ru_utime + u.ru_stime, u.ru_maxrss]))
"""


def measured(argv: list[str], *, env: dict | None = None, log: str | Path | None = None) -> dict:
    """Run ``argv`` to its end: ``cpu_seconds`` (user + system), ``wall_seconds``, ``peak_rss_mb`` and ``returncode``.
    Its output goes to ``log`` (else nowhere); a non-zero exit raises RuntimeError naming the command and the log."""
    import json
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(_ROOT), **(env or {})}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-S", "-c", _LAUNCHER, str(log) if log else os.devnull, *argv], env=env,
                         capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    code, cpu, rss_kb = json.loads(out.stdout.strip().splitlines()[-1])
    if code != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} … exited with {code}" + (f"; see {log}" if log else ""))
    return {"cpu_seconds": round(cpu, 3), "wall_seconds": round(wall, 3), "peak_rss_mb": round(rss_kb / 1024, 1),
            "returncode": code}
