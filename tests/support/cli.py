"""Calling the ``dcstudio`` CLI in-process from tests, and checking a refusal's shape."""

from __future__ import annotations

from core.cli import main

WF = ["--work-factor", "14"]  # scrypt work factor for test identities: fast, still real


def run(*argv) -> int:
    return main([str(a) for a in argv])


def analyst_of(kit_path) -> str:
    """The fingerprint of the key that signed the kit: what the analyst reads to a site by phone before the
    site's first export (``--analyst-fingerprint``)."""
    from core.formats.kit import Kit

    return Kit.load(kit_path).analyst.fingerprint


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


def export_dccfl_round(d, sites: dict, name: str, *kit_sets: str) -> None:
    """Analyst keys and a ``dccfl`` kit (``--set`` each of ``kit_sets``), a plain anchor from ``data/seed.csv``,
    then every site's keys and bundle into ``d/bundles`` (``sites``: name → (train CSV, test CSV))."""
    assert run("keys", "new", "--name", "analyst", "--out", d / "analyst", *WF) == 0
    sets = [a for v in kit_sets for a in ("--set", v)]
    assert run("kit", "new", "--identity", d / "analyst/analyst.dcid", "--name", name, "--schema-from",
               d / "data/sample.csv", "--label", "label", "--method", "dccfl", *sets, "--out", d / "p.dckit") == 0
    assert run("anchor", "new", "--kit", d / "p.dckit", "--seed-csv", d / "data/seed.csv", "--plain",
               "--out", d / "p.dcanchor") == 0
    for site, (train, _) in sites.items():
        assert run("keys", "new", "--name", site, "--out", d / site, *WF) == 0
        assert run("participant", "export", "--kit", d / "p.dckit", "--anchor", d / "p.dcanchor",
                   "--analyst-fingerprint", analyst_of(d / "p.dckit"), "--accept-poor-privacy",
                   "--identity", d / site / f"{site}.dcid", "--csv", train,
                   "--out", d / "bundles" / f"{site}.dcbundle") == 0


def apply_packages(folder, csvs: dict) -> None:
    """Every site NAME applies ``folder/out/NAME.dcpkg`` to the CSV ``csvs[NAME]``, into ``folder/NAME/result.csv``."""
    for name, csv in csvs.items():
        assert run("participant", "apply", "--package", folder / "out" / f"{name}.dcpkg", "--identity",
                   folder / name / f"{name}.dcid", "--csv", csv, "--out", folder / name / "result.csv") == 0
