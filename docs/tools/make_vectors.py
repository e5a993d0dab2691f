"""Regenerate the committed test vectors (``tests/formats/vectors/``): ``python docs/tools/make_vectors.py tests/formats/vectors``.

Runs one tiny DC-CFL round through the product's own code paths — identities, kit builder, anchor file,
participant export, analyst import/run/export — and writes every file the format defines, plus the
expected plaintext: the decrypted archives (``*.archive.zip``) and ``expected.json`` (manifests, array
names, dtypes, shapes and member SHA-256s, digests, the anchor's and the id-hash key's derived values).

Everything the format lets us fix is fixed: the data (seeded), the project id, the anchor secret, the site's
reduction/shuffle seed, the learner seed, the passphrase and the scrypt work factor (the minimum the identity
reader accepts). Identity keys, card times, envelope ids, age's ephemeral keys and nonces are random by
nature, so a regeneration produces different files; the vectors are generated once and committed, and this
script exists to regenerate them when the format changes (docs/FORMAT.md §13). Run it from the repository
root with the project's Python; it needs no network and no data outside the repository.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from core.analyst import AnalystRound  # noqa: E402
from core.data.schema import FeatureColumn, Schema  # noqa: E402
from core.fileio import utc_now, write_json_atomic  # noqa: E402
from core.formats.anchor import AnchorFile  # noqa: E402
from core.formats.envelope import TRAILER_LEN, file_digest  # noqa: E402
from core.formats.identity import SCRYPT_LOG_N_MIN, Identity  # noqa: E402
from core.formats.kit import Kit  # noqa: E402
from core.formats.workspace import AnalystWorkspace, SiteWorkspace  # noqa: E402
from core.kit_builder import build_kit  # noqa: E402
from core.participant import ParticipantRound, hash_ids  # noqa: E402

PASSPHRASE = "dcstudio test vectors"
LOG_N = SCRYPT_LOG_N_MIN
FEATURES = ["x1", "x2", "x3"]
CLASSES = ["no", "yes"]
ROWS = 12
ANCHOR_ROWS = 20
DATA_SEED = 20261122
PROJECT_ID = hashlib.sha256(b"dcstudio/test-vectors/v1 project").hexdigest()[:32]
ANCHOR_SECRET = hashlib.sha256(b"dcstudio/test-vectors/v1 anchor secret").digest()
KIT_SETTINGS = {"t": 1.0, "epochs": 5, "hidden": [4], "seed": 0}  # one tiny model; t = 1: one cluster
SITE_SETTINGS = {"seed": 0}  # fixed reduction and shuffle
SEED_ROWS = 5  # extended SMOTE makes p·⌈r/p⌉ rows from p seed rows: 5 seeds × 4 = exactly ANCHOR_ROWS
ID_EXAMPLE = "row-1"  # an id hashed under the anchor's id-hash key, as a vector for §9's derivation
FILES = ("analyst.dcid", "analyst.dcpub", "site.dcid", "site.dcpub", "project.dckit", "project.dcanchor",
         "site.csv", "site.dcbundle", "site.dcpkg", "bundle.archive.zip", "package.archive.zip", "expected.json")


def site_rows() -> tuple[np.ndarray, np.ndarray]:
    """12 rows × 3 features on different scales, two classes (6 each), rounded so the CSV is exact."""
    rng = np.random.default_rng(DATA_SEED)
    y = rng.permutation(np.repeat([0, 1], ROWS // 2))
    X = rng.normal(size=(ROWS, 3)) * [1.0, 10.0, 0.5] + [0.0, 50.0, 2.0] + np.outer(y, [1.5, 8.0, -0.5])
    return np.round(X, 3), y


def write_csv(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    lines = [",".join([*FEATURES, "label"])]
    lines += [",".join([*(f"{v:.3f}" for v in row), CLASSES[k]]) for row, k in zip(X, y, strict=True)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def age_section(path: Path) -> bytes:
    """The age file inside an envelope (FORMAT.md §4.1): after the first two lines, before the trailer."""
    data = path.read_bytes()
    first = data.index(b"\n") + 1
    start = data.index(b"\n", first) + 1
    return data[start:len(data) - TRAILER_LEN]


def decrypt_archive(path: Path, identity: Identity) -> bytes:
    import pyrage

    return pyrage.decrypt(age_section(path), [identity.age_identity()])


def describe(sealed: Path, archive: bytes, archive_name: str) -> dict:
    """What a reader must find in one sealed file: digest, manifest and every array member."""
    arrays = {}
    with zipfile.ZipFile(io.BytesIO(archive)) as zf:
        names = zf.namelist()
        manifest = json.loads(zf.read("manifest.json"))
        for name in names[:-2]:
            raw = zf.read(name)
            arr = np.load(io.BytesIO(raw), allow_pickle=False)
            arrays[name[:-4]] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                                 "sha256": hashlib.sha256(raw).hexdigest()}
    return {"file": sealed.name, "digest": file_digest(sealed), "size": sealed.stat().st_size,
            "archive": archive_name, "archive_sha256": hashlib.sha256(archive).hexdigest(),
            "archive_size": len(archive), "members": names, "manifest": manifest, "arrays": arrays}


def make(out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        (out / name).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="dcvectors-") as tmp_name:
        tmp = Path(tmp_name)
        analyst, site = Identity.generate("Vector Analyst"), Identity.generate("Vector Site")
        for who, ident in (("analyst", analyst), ("site", site)):
            ident.save(out / f"{who}.dcid", PASSPHRASE, log_n=LOG_N)
            ident.card.save(out / f"{who}.dcpub")

        schema = Schema([FeatureColumn(f) for f in FEATURES], label="label", classes=list(CLASSES))
        kit, _notes = build_kit(name="DC Studio test vectors", schema=schema, analyst=analyst.card, method="dccfl",
                                settings=dict(KIT_SETTINGS), anchor_kind="smote", anchor_rows=ANCHOR_ROWS,
                                roster=[site.card])
        kit.project_id = PROJECT_ID
        kit_path = out / "project.dckit"
        kit.save(kit_path, analyst)
        kit = Kit.load(kit_path, expect_analyst=analyst.card)

        X, y = site_rows()
        csv_path = out / "site.csv"
        write_csv(csv_path, X, y)
        anchor = AnchorFile(PROJECT_ID, "smote", ANCHOR_ROWS, ANCHOR_SECRET,
                            {"seed_rows": X[:SEED_ROWS].tolist(), "k": 3, "a": 1.5, "features": list(FEATURES)},
                            utc_now())
        anchor._validate()
        anchor.save(out / "project.dcanchor")
        anchor = AnchorFile.load(out / "project.dcanchor", expect_project=PROJECT_ID)

        export = ParticipantRound(kit, kit_path, site, SiteWorkspace(tmp / "site.workspace"), anchor=anchor,
                                  site_settings=dict(SITE_SETTINGS))
        export.confirm_analyst(kit.analyst, how="test vectors: the kit's own signer")
        export.accept_privacy_risk("test vectors: a simulated site accepts its poor verdicts")
        export.load(csv_path)
        bundle = export.seal(out / "site.dcbundle").path

        session = AnalystRound(kit, analyst, AnalystWorkspace(tmp / "analyst.workspace"))
        session.import_bundles([bundle])
        received = session.received()
        result = session.run(received)
        outputs = session.export(result, tmp / "packages")
        package = out / "site.dcpkg"
        shutil.copyfile(outputs.packages[0].path, package)

        bundle_zip = decrypt_archive(bundle, analyst)
        package_zip = decrypt_archive(package, site)
        (out / "bundle.archive.zip").write_bytes(bundle_zip)
        (out / "package.archive.zip").write_bytes(package_zip)

    X_anc = anchor.generate()
    expected = {
        "about": "expectations for the committed test vectors; regenerate with "
                 "`python docs/tools/make_vectors.py tests/formats/vectors` (docs/FORMAT.md §13)",
        "passphrase": PASSPHRASE,
        "scrypt_log_n": LOG_N,
        "identities": {who: {"file": f"{who}.dcid", "card": f"{who}.dcpub", "name": ident.card.name,
                             "key_id": ident.card.key_id, "fingerprint": ident.card.fingerprint}
                       for who, ident in (("analyst", analyst), ("site", site))},
        "kit": {"file": "project.dckit", "project_id": PROJECT_ID, "digest": kit.digest(),
                "schema_digest": kit.schema.digest(), "method": kit.method, "settings": kit.settings,
                "anchor": kit.anchor},
        "anchor": {"file": "project.dcanchor", "kind": anchor.kind, "rows": anchor.rows,
                   "generated_shape": list(X_anc.shape),
                   "generated_sha256": hashlib.sha256(np.ascontiguousarray(X_anc, "<f8").tobytes()).hexdigest(),
                   "id_hash_key": anchor.id_hash_key().hex(), "id_example": ID_EXAMPLE,
                   "id_example_hash": bytes(hash_ids(np.array([ID_EXAMPLE]), anchor.id_hash_key())[0]).hex()},
        "csv": {"file": "site.csv", "rows": ROWS, "features": FEATURES, "classes": CLASSES},
        "bundle": {**describe(bundle, bundle_zip, "bundle.archive.zip"), "kind": "bundle", "sender": "site",
                   "recipient": "analyst"},
        "package": {**describe(package, package_zip, "package.archive.zip"), "kind": "package",
                    "sender": "analyst", "recipient": "site"},
    }
    write_json_atomic(out / "expected.json", expected)
    return expected


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", nargs="?", default=str(ROOT / "tests" / "vectors"), help="folder to write into")
    args = ap.parse_args(argv)
    out = Path(args.out)
    e = make(out)
    total = sum((out / f).stat().st_size for f in FILES)
    print(f"wrote {len(FILES)} files ({total} bytes) to {out}: bundle {e['bundle']['size']} B, "
          f"package {e['package']['size']} B")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
