"""Write the audit-log test vectors (FORMAT §5): ``python docs/tools/make_audit_vectors.py tests/formats/vectors``.

A three-entry log (``audit.jsonl``: the ``audit-start`` entry naming its owner, a ``pin-analyst`` and an
``export`` entry) and its head file (``audit.head``), signed by the committed site identity of that folder
(``site.dcid``, passphrase in its ``expected.json``), written through the product's own ``AuditLog``. Times
and signatures differ on every run (Ed25519 is deterministic, but the entry times are the clock's), so
regenerate only when §5 changes and commit both files together.
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

from core.formats.audit import AuditLog  # noqa: E402
from core.formats.identity import Identity  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="the vectors folder (holds site.dcid and expected.json)")
    args = ap.parse_args(argv)
    expected = json.loads((args.folder / "expected.json").read_text())
    site = Identity.load(args.folder / "site.dcid", expected["passphrase"])
    with tempfile.TemporaryDirectory() as tmp:
        log = AuditLog(Path(tmp) / "audit.jsonl", site)
        log.bind(site)
        log.append("pin-analyst", project="0123456789abcdef0123456789abcdef", analyst="Vector Analyst",
                   fingerprint="0000-0000-0000-0000")
        log.append("export", project="0123456789abcdef0123456789abcdef", file="site.dcbundle",
                   digest="ab" * 32, rows=12)
        log.check()
        for name in ("audit.jsonl", "audit.head"):
            shutil.copyfile(Path(tmp) / name, args.folder / name)
    print(f"wrote {args.folder / 'audit.jsonl'} and {args.folder / 'audit.head'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
