"""Text that crosses the air gap is shown only through one sanitiser (issue #32, finding 6): core.safe_text.

A package's text is printed by ``participant apply`` only when the package's declaration names it, and then with
every control character (ESC/CSI: clear screen, cursor moves, fake lines, links), bidi override and invisible
format character shown as a visible escape; refusal sentences that quote a file's text likewise."""

from __future__ import annotations

import pytest

from benchmarks.fuzz import Corpus, reseal
from core.safe_text import MAX_SHOWN, is_safe, shown, shown_lines
from tests.support.cli import run

PASS = "pass phrase 1"
ATTACK = "\x1b[2J\x1b[1;1HAll clear: nothing to check\x1b]8;;http://evil\x07link\x1b]8;;\x07 \u202etxt.exe \x9b31m"


def test_shown_escapes_every_control_bidi_and_invisible_character_and_caps_the_length():
    assert shown("plain text, é, 漢字, 👩\u200d⚕️ (ZWJ kept)") == "plain text, é, 漢字, 👩\u200d⚕️ (ZWJ kept)"
    assert shown("a\x1bb\x9bc\x00d\x7f") == "a\\x1bb\\x9bc\\x00d\\x7f"
    assert shown("\u202e\u2066\u200b\u2028\ufeff\U000e0041") == "\\u202e\\u2066\\u200b\\u2028\\ufeff\\U000e0041"
    assert shown("line\nbreak\ttab") == "line\\x0abreak\\x09tab" and shown_lines("a\nb\x1b") == "a\nb\\x1b"
    long = shown("x" * (MAX_SHOWN + 50))
    assert long.startswith("x" * MAX_SHOWN + "… (50 more characters)") and len(long) < MAX_SHOWN + 30
    assert is_safe(shown(ATTACK)) and not is_safe(ATTACK)


@pytest.fixture(scope="module", params=["meta-lr", "dc"])
def applied(request, tmp_path_factory, monkeypatch_module):
    """A round of the method; site0's identity on disk; its package re-signed by the analyst with a hostile note."""
    d = tmp_path_factory.mktemp(request.param.replace("-", ""))
    c = Corpus(d, 0, request.param)
    monkeypatch_module.setenv("DCSTUDIO_PASSPHRASE", PASS)
    c.sites[0].save(d / "site0.dcid", PASS, log_n=14)
    path = d / "hostile.dcpkg"
    reseal(c, "package", path, {**c.inner["package"].payload.manifest, "note": ATTACK})
    return c, d, path


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as m:
        yield m


def test_participant_apply_prints_a_package_note_only_if_declared_and_only_sanitised(applied, capfd):
    c, d, path = applied
    capfd.readouterr()
    assert run("participant", "apply", "--package", path, "--identity", d / "site0.dcid", "--csv", c.csv[0],
               "--out", d / f"result-{c.method}.csv", "--workspace", c.site_ws[0].root) == 0
    out = capfd.readouterr()
    assert is_safe(out.out) and is_safe(out.err), out
    if c.method == "meta-lr":  # its package declares 'note': printed, escaped
        assert "note: \\x1b[2J\\x1b[1;1HAll clear" in out.out and "\\u202etxt.exe" in out.out
    else:  # the DC package declares no 'note': never read, never printed
        assert "All clear" not in out.out


def test_a_refusal_quoting_a_files_text_is_printed_sanitised(applied, capfd):
    c, d, _ = applied
    bad = d / "bad.dcpkg"
    reseal(c, "package", bad, {**c.inner["package"].payload.manifest, "model": ATTACK[-12:]})
    capfd.readouterr()
    assert run("participant", "apply", "--package", bad, "--identity", d / "site0.dcid", "--csv", c.csv[0],
               "--out", d / "refused.csv", "--workspace", c.site_ws[0].root) == 1
    out = capfd.readouterr()
    assert "error:" in out.err and "'model'" in out.err and "\\x9b31m" in out.err, out  # quoted, escaped
    assert is_safe(out.err) and is_safe(out.out), out
