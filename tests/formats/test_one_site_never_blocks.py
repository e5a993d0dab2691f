"""One site never blocks a run (issue #32, finding 5).

A bundle the analyst cannot use — one whose own-model scores claim more rows than it has (``rows_kept_at_site:
10**15``), one made with another anchor, an empty or unreadable file, one stored by a version that checked less —
is refused at import naming the site, or left out of ``analyst run`` with one line naming it and named in
summary.json and the audit log; the run goes on with the others. A stored bundle that fails the checks is replaced
by its site's next one.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.fuzz import Corpus, reseal
from core.analyst import AnalystRound
from core.errors import DuplicateError, FormatError
from core.formats.anchor import make_anchor
from core.formats.envelope import file_digest, read_header
from core.formats.workspace import AnalystWorkspace
from core.participant import ParticipantRound


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    return Corpus(tmp_path_factory.mktemp("three"), 0, "dccfl", sites=3)


def _lying_own_cv(corpus: Corpus, path, kept: int) -> None:
    """site0's bundle re-signed: own-model scores on more rows than it exported, 'explained' by rows kept at site."""
    content = dict(corpus.inner["bundle"].payload.manifest)
    content["own_cv"] = {**content["own_cv"], "rows": content["n_rows"] + 5}
    content["rows_kept_at_site"] = kept
    reseal(corpus, "bundle", path, content)


@pytest.mark.parametrize("kept", [10 ** 15, 5])
def test_rows_kept_at_site_in_a_dc_bundle_is_not_read_and_own_cv_beyond_its_rows_is_refused_at_import(
        three, tmp_path, kept):
    """Import and run count a bundle's rows by one rule (core.formats.fields.site_rows): a DC-family bundle keeps no
    rows at its site, so its own_cv may rest on n_rows rows at most — refused at import, never at run time."""
    path = tmp_path / "lie.dcbundle"
    _lying_own_cv(three, path, kept)
    with pytest.raises(FormatError, match=r"site0.*own_cv"):
        three.session.open_bundle(path)


def _other_anchor_bundle(corpus: Corpus, site: int, folder) -> object:
    """A genuine bundle of ``site`` made with another anchor file of the same project (100 anchor rows, not 60)."""
    anchor = make_anchor(corpus.kit.project_id, corpus.kit.schema.encoded_names, kind="smote", rows=100,
                         seed_rows=np.asarray(corpus.anchor.params["seed_rows"]))
    job = ParticipantRound(corpus.kit, corpus.kit_path, corpus.sites[site], corpus.site_ws[site], anchor=anchor,
                           site_settings={"seed": 7})
    job.load(corpus.csv[site])
    job.accept_privacy_risk("the test accepts the default kit's collusion risk")
    return job.seal(folder / f"site{site}-other-anchor.dcbundle")


def test_a_run_leaves_out_an_empty_file_garbage_and_a_site_of_another_anchor_naming_each(three, tmp_path):
    folder = tmp_path / "bundles"
    folder.mkdir()
    for k in (0, 1):
        (folder / f"site{k}.dcbundle").write_bytes(three.sealed_bundles[k].path.read_bytes())
    _other_anchor_bundle(three, 2, folder)
    (folder / "empty.dcbundle").write_bytes(b"")
    (folder / "garbage.dcbundle").write_bytes(b"dcstudio-envelope/v1\n" + bytes(range(256)))
    session = AnalystRound(three.kit, three.analyst, AnalystWorkspace(tmp_path / "ws"))
    reports, received = session.import_folder(folder, leave_out=True)
    assert sorted(b.site for b in received) == ["site0", "site1", "site2"]
    assert {r.path.name: r.status for r in reports if r.status == "refused"} == {"empty.dcbundle": "refused",
                                                                                "garbage.dcbundle": "refused"}
    run = session.run(received, refused=[r for r in reports if r.status == "refused"])
    assert sorted(b.site for b in run.bundles) == ["site0", "site1"]
    lines = run.refused_lines()
    assert len(lines) == 3
    assert any(line.startswith("refused: empty.dcbundle") and "empty (0 bytes)" in line for line in lines)
    assert any(line.startswith("refused: garbage.dcbundle") for line in lines)
    assert any("site2-other-anchor.dcbundle from 'site2'" in line and "another anchor (100 anchor rows" in line
               for line in lines)
    out = session.export(run, tmp_path / "out")
    summary = json.loads(out.summary.read_text())
    assert sorted(r["file"] for r in summary["refused"]) == ["empty.dcbundle", "garbage.dcbundle",
                                                            "site2-other-anchor.dcbundle"]
    assert {s["site"] for s in summary["inputs"]} == {"site0", "site1"}
    line = [e for e in session.workspace.audit.entries() if e["event"] == "export-packages"][-1]
    assert sorted(r["file"] for r in line["refused"]) == sorted(r["file"] for r in summary["refused"])


def test_a_folder_with_no_usable_file_is_refused_with_the_first_files_reason(three, tmp_path):
    folder = tmp_path / "nothing"
    folder.mkdir()
    (folder / "empty.dcbundle").write_bytes(b"")
    session = AnalystRound(three.kit, three.analyst, AnalystWorkspace(tmp_path / "ws"))
    with pytest.raises(FormatError, match="empty"):
        session.import_folder(folder, leave_out=True)


def test_a_stored_bundle_that_fails_the_checks_is_left_out_named_and_replaced_by_the_sites_next_one(three, tmp_path):
    """A bundle stored before these checks (a version that checked less) is left out of every run with one line
    naming it; the site's next bundle replaces it (the old one is set aside, with an audit line)."""
    pid = three.kit.project_id
    workspace = AnalystWorkspace(tmp_path / "ws")
    session = AnalystRound(three.kit, three.analyst, workspace)
    lie = tmp_path / "stored-lie.dcbundle"
    _lying_own_cv(three, lie, 5)
    header = read_header(lie)
    workspace.store(pid, lie, header.envelope_id, file_digest(lie), "site0", header.sender.fingerprint, 50)
    session.import_bundles([three.sealed_bundles[1].path, three.sealed_bundles[2].path])
    received = session.received()
    assert sorted(b.site for b in received) == ["site1", "site2"]
    assert list(session.left_out) == [header.envelope_id] and "own_cv" in session.left_out[header.envelope_id].reason
    run = session.run(received)
    assert [r.site for r in run.refused] == ["site0"] and "site0" in run.refused_lines()[0]
    # site0 exports again: its new bundle takes the stored one's place
    job = ParticipantRound(three.kit, three.kit_path, three.sites[0], three.site_ws[0], anchor=three.anchor,
                           site_settings={"seed": 11})
    job.load(three.csv[0])
    job.accept_privacy_risk("the test accepts the default kit's collusion risk")
    again = job.seal(tmp_path / "site0-again.dcbundle")
    report = session.import_bundles([again.path])[0]
    assert report.status == "imported"
    entry = workspace.registry(pid)[header.envelope_id]
    assert "own_cv" in entry["set_aside"]["reason"]
    assert any(e["event"] == "set-aside-bundle" and e["envelope_id"] == header.envelope_id
               for e in workspace.audit.entries())
    assert sorted(b.site for b in session.received()) == ["site0", "site1", "site2"] and not session.left_out
    assert len(session.run(session.received()).bundles) == 3
    # a sound stored bundle is never replaced: one bundle per site
    job.load(three.csv[0])
    job.accept_privacy_risk("the test accepts the default kit's collusion risk")
    third = job.seal(tmp_path / "site0-third.dcbundle")
    with pytest.raises(DuplicateError, match="one bundle per site"):
        session.import_bundles([third.path])
