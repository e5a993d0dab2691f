"""Write the audit-log test vectors (FORMAT §5): ``python docs/tools/make_audit_vectors.py tests/formats/vectors``.

A three-entry log (``audit.jsonl``: the ``audit-start`` entry naming its owner, its workspace and its log id, a
``pin-analyst`` and an ``export`` entry), its head file (``audit.head``) and the workspace's signed id file
(``workspace.json``, FORMAT §10.1), signed by the committed site identity of that folder (``site.dcid``, passphrase
in its ``expected.json``), written through the product's own workspace and ``AuditLog``. Times, ids and
signatures differ on every run (the ids are random, the entry times the clock's), so regenerate only when §5
changes and commit the three files together.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from core.formats.identity import Identity  # noqa: E402
from core.formats.workspace import SiteWorkspace  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="the vectors folder (holds site.dcid and expected.json)")
    args = ap.parse_args(argv)
    expected = json.loads((args.folder / "expected.json").read_text())
    site = Identity.load(args.folder / "site.dcid", expected["passphrase"])
    with tempfile.TemporaryDirectory() as tmp:
        log = SiteWorkspace(Path(tmp) / "ws").audit
        log.bind(site)
        log.append("pin-analyst", project="0123456789abcdef0123456789abcdef", analyst="Vector Analyst",
                   fingerprint="0000-0000-0000-0000")
        log.append("export", project="0123456789abcdef0123456789abcdef", file="site.dcbundle",
                   digest="ab" * 32, rows=12)
        log.check()
        for name in ("audit.jsonl", "audit.head", "workspace.json"):
            shutil.copyfile(Path(tmp) / "ws" / name, args.folder / name)
    print(f"wrote audit.jsonl, audit.head and workspace.json in {args.folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
