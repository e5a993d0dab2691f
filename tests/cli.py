"""Calling the ``dcstudio`` CLI in-process from tests, and checking a refusal's shape."""

from __future__ import annotations

from core.cli import main

WF = ["--work-factor", "14"]  # scrypt work factor for test identities: fast, still real


def run(*argv) -> int:
    return main([str(a) for a in argv])


def refused(capsys, *argv, expect: str) -> str:
    """Run a command that must fail: non-zero, one stderr line without a traceback, naming ``expect``."""
    code = run(*argv)
    err = capsys.readouterr().err.strip()
    assert code != 0, f"expected refusal for {argv}"
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert expect.lower() in err.lower(), err
    return err
