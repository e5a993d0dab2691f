"""Write the ``LICENSES/`` folder of the desktop bundle from installed metadata, never by hand.

Run by ``packaging/build.sh`` with the build venv's Python::

    python packaging/licenses.py --manifest build/dcstudio/manifest.json --bundle DIR --out DIR/LICENSES

* Every Python distribution that has a module or file in the bundle: the licence files its wheel installed
  (``License-File`` entries and ``*.dist-info/**/LICEN[CS]E*|COPYING*|NOTICE*``); a distribution that ships none
  gets the full texts of the SPDX licences its metadata names, from the system's ``/usr/share/common-licenses``.
* The Python interpreter (its ``LICENSE.txt``) and PyInstaller's bootloader (the ``dcstudio`` executable).
* Every bundled shared library that comes from the build machine rather than a wheel: the Debian package that
  installed it (``dpkg -S``) and that package's ``/usr/share/doc/<package>/copyright``.

Fails (exit 1) when anything bundled is left without a licence text.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

LICENCE_NAME = re.compile(r"^(licen[cs]e|copying|notice|authors|copyright)", re.IGNORECASE)
COMMON_LICENSES = Path("/usr/share/common-licenses")
# SPDX id -> file in /usr/share/common-licenses (Debian's base-files). LGPL-3 is an addendum to GPL-3: both go.
SPDX_FILES = {
    "LGPL-3.0": ["LGPL-3", "GPL-3"],
    "LGPL-2.1": ["LGPL-2.1"],
    "GPL-2.0": ["GPL-2"],
    "GPL-3.0": ["GPL-3"],
    "Apache-2.0": ["Apache-2.0"],
    "MPL-2.0": ["MPL-2.0"],
}


# Distributions bundled without any of their modules.
ALWAYS = {"pyinstaller": "its bootloader is the dcstudio executable"}


def _safe(name):
    return re.sub(r"[^A-Za-z0-9._+-]", "_", name)


def expression(dist):
    """The licence a distribution declares: ``License-Expression``, a one-line ``License``, or its classifiers."""
    meta = dist.metadata
    if meta.get("License-Expression"):
        return meta["License-Expression"].strip()
    lic = (meta.get("License") or "").strip()
    if lic and "\n" not in lic and len(lic) <= 120:
        return lic
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    return "; ".join(classifiers) or (lic.splitlines()[0][:120] if lic else "")


def licence_files(dist):
    """[(name inside the licence folder, text)] for the licence files a distribution installed."""
    declared = set(dist.metadata.get_all("License-File") or [])
    found = {}
    for f in dist.files or []:
        parts = Path(str(f)).parts
        if len(parts) < 2 or not parts[0].endswith((".dist-info", ".egg-info")):
            continue
        inner = Path(*parts[1:])
        if inner.parts[0] == "licenses" and len(inner.parts) > 1:
            inner = Path(*inner.parts[1:])
        elif not (LICENCE_NAME.match(parts[-1]) or str(inner) in declared):
            continue
        path = Path(dist.locate_file(f))
        if path.is_file():
            found[str(inner)] = path.read_text(encoding="utf-8", errors="replace")
    return sorted(found.items())


def spdx_texts(expr):
    """[(file name, text)] of the full licence texts for the SPDX ids in ``expr`` that the system ships."""
    out = {}
    for ident in re.findall(r"[A-Za-z0-9.+-]+", expr or ""):
        base = re.sub(r"(-only|-or-later|\+)$", "", ident)
        for name in SPDX_FILES.get(base, []):
            path = COMMON_LICENSES / name
            if path.is_file():
                out[name] = path.read_text(encoding="utf-8", errors="replace")
    return sorted(out.items())


def distribution_licence(dist):
    """{"name", "version", "expression", "files": [(name, text)], "source"} for one installed distribution."""
    expr = expression(dist)
    files, source = licence_files(dist), "the distribution's licence files"
    if not files:
        files, source = spdx_texts(expr), "full texts of the licences its metadata names"
    if not files and (dist.metadata.get("License") or "").strip():
        files, source = [("License-metadata.txt", dist.metadata["License"].strip() + "\n")], "its License metadata"
    return {
        "name": dist.metadata["Name"],
        "version": dist.version,
        "expression": expr,
        "files": files,
        "source": source,
    }


def top_level_names(dist):
    """The first path components a distribution installs (packages, modules, ``*.libs`` folders)."""
    names = set()
    for f in dist.files or []:
        parts = Path(str(f)).parts
        if not parts or parts[0] in ("..", "__pycache__") or parts[0].endswith((".dist-info", ".egg-info", ".pth")):
            continue
        names.add(parts[0].split(".")[0] if parts[0].endswith((".py", ".so", ".pyd")) else parts[0])
    return names


def bundled_distributions(manifest):
    """The installed distributions with at least one module or file in the bundle."""
    present = {m.split(".")[0] for m in manifest["modules"]}
    for dest, _ in manifest["binaries"] + manifest["datas"]:
        first = Path(dest).parts[0]
        present.add(first.split(".")[0] if first.endswith((".so", ".py")) or ".cpython-" in first else first)
    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name and (top_level_names(dist) & present or name.lower() in ALWAYS):
            out[name.lower()] = dist
    return [out[k] for k in sorted(out)]


def deb_package(path):
    """The Debian package that installed ``path`` (tries the /usr-merged spellings), or None."""
    real = os.path.realpath(path)
    candidates = []
    for p in (path, real):
        candidates += [p, p[4:] if p.startswith("/usr/") else "/usr" + p]
    for cand in dict.fromkeys(candidates):
        try:
            res = subprocess.run(["dpkg-query", "-S", cand], capture_output=True, text=True, check=False)
        except FileNotFoundError:
            return None
        if res.returncode == 0 and res.stdout:
            return res.stdout.split(":")[0].split(",")[0].strip()
    return None


def deb_copyright(pkg):
    """Text of the package's copyright file (or its source package's), or None."""
    names = [pkg]
    res = subprocess.run(["dpkg-query", "-W", "-f", "${source:Package}", pkg], capture_output=True, text=True)
    if res.returncode == 0 and res.stdout.strip():
        names.append(res.stdout.strip())
    for name in names:
        path = Path("/usr/share/doc") / name / "copyright"
        if path.is_file():
            return path.read_text(encoding="utf-8", errors="replace")
    return None


def deb_version(pkg):
    res = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True)
    return res.stdout.strip() if res.returncode == 0 else ""


def system_libraries(manifest):
    """[(bundle path, build-machine path)] of bundled binaries that no Python distribution installed."""
    roots = [os.path.realpath(p) for p in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}]
    out = []
    for dest, src in manifest["binaries"]:
        real = os.path.realpath(src)
        if any(real.startswith(r + os.sep) for r in roots):
            continue
        out.append((dest, src))
    return out


def write(manifest, out):
    """Write the licence folder ``out``; return the list of problems (empty when every component is covered)."""
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    (out / "python").mkdir(parents=True)
    problems, rows = [], []
    for dist in bundled_distributions(manifest):
        lic = distribution_licence(dist)
        folder = out / "python" / _safe(f"{lic['name']}-{lic['version']}")
        for name, text in lic["files"]:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
        if not lic["files"]:
            problems.append(f"no licence text for the Python distribution {lic['name']} {lic['version']}")
        rows.append(("python", lic["name"], lic["version"], lic["expression"] or "?", f"python/{folder.name}/"))

    # the interpreter and the bootloader
    base = Path(sys.base_prefix)
    py_lic = next((p for p in base.glob("lib/python3*/LICENSE.txt")), None)
    py_ver = sys.version.split()[0]
    if py_lic is None:
        problems.append("no LICENSE.txt for the Python interpreter")
    else:
        (out / "python" / f"Python-{py_ver}").mkdir()
        shutil.copy(py_lic, out / "python" / f"Python-{py_ver}" / "LICENSE.txt")
        rows.append(("interpreter", "Python", py_ver, "PSF-2.0", f"python/Python-{py_ver}/"))

    # system libraries copied from the build machine
    (out / "system").mkdir()
    seen = {}
    interp_prefix = os.path.realpath(sys.base_prefix) + os.sep
    for dest, src in system_libraries(manifest):
        if os.path.realpath(src).startswith(interp_prefix):
            continue  # libpython and the interpreter's own extension modules: Python's licence above
        pkg = deb_package(src)
        if pkg is None:
            problems.append(f"no Debian package found for the bundled library {dest} ({src})")
            continue
        seen.setdefault(pkg, []).append(Path(dest).name)
    for pkg, libs in sorted(seen.items()):
        text = deb_copyright(pkg)
        if text is None:
            problems.append(f"no copyright file for the Debian package {pkg}")
            continue
        (out / "system" / f"{pkg}.copyright").write_text(text, encoding="utf-8")
        rows.append(("system library", pkg, deb_version(pkg), ", ".join(sorted(libs)), f"system/{pkg}.copyright"))

    lines = [
        "Licences of everything bundled with DC Studio",
        "",
        "Generated at build time by packaging/licenses.py from the installed packages' own metadata",
        "(Python wheels: their licence files; system libraries: their Debian copyright files).",
        "",
        "Qt and PySide6 are used under the GNU LGPL v3: their libraries are separate shared objects in",
        "_internal/PySide6/ and _internal/shiboken6/ and may be replaced by compatible builds of the same version;",
        "their source code is published by the Qt Project for the version listed below.",
        "",
        f"{'kind':<16} {'component':<28} {'version':<24} licence / libraries -> file",
    ]
    for kind, name, ver, what, where in rows:
        lines.append(f"{kind:<16} {name:<28} {ver:<24} {what} -> {where}")
    (out / "README.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", required=True, help="manifest.json written by packaging/dcstudio.spec")
    ap.add_argument("--out", required=True, help="the LICENSES folder to (re)create")
    args = ap.parse_args(argv)
    manifest = json.loads(Path(args.manifest).read_text(encoding="utf-8"))
    problems = write(manifest, args.out)
    for p in problems:
        print("licences:", p, file=sys.stderr)
    n = sum(1 for _ in Path(args.out).rglob("*") if _.is_file())
    print(f"licences: {n} files in {args.out}" + (f", {len(problems)} problems" if problems else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
