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


def confirm(folder, names) -> list:
    """``--confirm`` with each site's public card ``folder/NAME/NAME.dcpub`` (the analyst compared them)."""
    return ["--confirm", *[folder / name / f"{name}.dcpub" for name in names]]


def anchor_to(folder, lead, names) -> list:
    """``anchor new`` arguments that encrypt the anchor to the lead's identity and the other sites' cards."""
    return ["--identity", folder / lead / f"{lead}.dcid", "--to",
            *[folder / name / f"{name}.dcpub" for name in names if name != lead]]
