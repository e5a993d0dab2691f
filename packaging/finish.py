"""Write INSTALL.txt and BUILDINFO.txt into the unpacked bundle (run by ``packaging/build.sh``).

What the target machine must provide is measured, not assumed: every ELF file in the bundle is read with
``readelf``; the shared libraries they need that the bundle does not hold are the system's part (mapped to the
Debian package that provides them on the build machine), and the newest ``GLIBC_x.y`` symbol version they
reference is the glibc the target needs.
"""

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

GLIBC = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libutil.so.1",
         "ld-linux-x86-64.so.2", "libresolv.so.2", "libanl.so.1", "libcrypt.so.1"}


def elf_files(root):
    for path in sorted(Path(root).rglob("*")):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as fh:
                if fh.read(4) == b"\x7fELF":
                    yield path


def requirements(root):
    """{soname the bundle needs but does not hold: [bundle files needing it]}, newest GLIBC version (a tuple),
    [files needing that version], ELF count."""
    have = {p.name for p in Path(root).rglob("*")}
    needed, glibc, n = {}, {}, 0
    for path in elf_files(root):
        n += 1
        out = subprocess.run(["readelf", "-d", "-V", "-W", str(path)], capture_output=True, text=True).stdout
        rel = str(path.relative_to(root))
        for so in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out):
            if so not in have:
                needed.setdefault(so, []).append(rel)
        for ver in {(int(a), int(b)) for a, b in re.findall(r"Name: GLIBC_(\d+)\.(\d+)", out)}:
            glibc.setdefault(ver, []).append(rel)
    newest = max(glibc) if glibc else (0, 0)
    return needed, newest, sorted(glibc.get(newest, [])), n


# glibc of common hospital desktop / server distributions (their release notes)
DISTROS = [("Ubuntu 20.04", (2, 31)), ("RHEL 9", (2, 34)), ("Ubuntu 22.04", (2, 35)), ("Debian 12", (2, 36)),
           ("Ubuntu 24.04", (2, 39)), ("RHEL 10", (2, 39)), ("Debian 13", (2, 41))]


def provider(soname):
    """The Debian package that provides ``soname`` on this machine, or '?'."""
    res = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True)
    for line in res.stdout.splitlines():
        m = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if m and m.group(1) == soname and "x86-64" in m.group(2):
            for cand in (m.group(3), os.path.realpath(m.group(3))):
                for path in (cand, cand[4:] if cand.startswith("/usr/") else "/usr" + cand):
                    q = subprocess.run(["dpkg-query", "-S", path], capture_output=True, text=True)
                    if q.returncode == 0:
                        return q.stdout.split(":")[0]
    return "?"


INSTALL = """DC Studio {version} (commit {commit}) for Linux x86_64 -- installation notes for IT
=====================================================================================

What this is: one self-contained folder (Python, Qt, PyTorch and every library inside). It needs no network,
no administrator rights to run, and writes nothing outside the user's own folders.

1. Check the archive before unpacking. Next to it is {archive}.sha256;
   in the folder holding both:

       sha256sum -c {archive}.sha256        (prints "{archive}: OK")

   Compare the hash with the one the analyst sent you through another channel (e-mail, phone).

2. Unpack it anywhere readable by its users, e.g. for all users (as root):

       tar -xzf {archive} -C /opt          (creates /opt/{folder}/)
       ln -s /opt/{folder}/dcstudio /usr/local/bin/dcstudio      (optional)

   Unpacked it takes {unpacked_mb} MB in {files} files. To remove it, delete the folder.

3. Run it:  dcstudio             opens the desktop app
            dcstudio --version   prints "dcstudio {version} (commit {commit})"
            dcstudio demo        a whole round on built-in data, offline (under a minute)

What the computer needs (measured from the bundle's own files, see BUILDINFO.txt):
  * Linux on x86_64 with glibc {glibc} or newer: {ok}
    (too old: {too_old}).
  * For the desktop app only, an X11 session (on a Wayland desktop: XWayland, on by default) and these
    system libraries, which every desktop installation has (the command line needs none of them):
{needs}
  If one is missing, `dcstudio` prints which one and the package to install, instead of opening a window.
  Everything else, including the Qt X11 helper libraries (libxcb-icccm, -keysyms, -image, -render-util,
  -cursor, libxkbcommon-x11), is inside the folder.

Licences: LICENSES/README.txt lists every bundled component with its licence; the texts are beside it.
"""


def _who(files):
    """What a system library is for, from the bundle files that need it."""
    if all(re.search(r"wayland|libQt6Wl", f, re.IGNORECASE) for f in files):
        return "Wayland sessions only"
    return "the desktop app"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--archive", required=True)
    ap.add_argument("--freeze", required=True, help="pip freeze of the build venv")
    args = ap.parse_args(argv)
    root = Path(args.bundle)
    missing, glibc, glibc_files, n_elf = requirements(root)
    system = sorted(s for s in missing if s not in GLIBC)
    needs = "\n".join(f"      {s:<26} Debian/Ubuntu package {provider(s)}; for {_who(missing[s])}" for s in system)
    ok = [d for d, v in DISTROS if v >= glibc]
    too_old = [d for d, v in DISTROS if v < glibc]
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]  # as `find -type f`, `du`
    size = sum(p.stat().st_size for p in files)
    text = INSTALL.format(
        version=args.version, commit=args.commit, archive=args.archive, folder=root.name,
        unpacked_mb=round(size / 1e6), files=len(files) + 2, glibc=f"{glibc[0]}.{glibc[1]}", needs=needs or "(none)",
        ok=", ".join(ok) or "-", too_old=", ".join(too_old) or "-",
    )
    (root / "INSTALL.txt").write_text(text, encoding="utf-8")
    info = [
        f"DC Studio {args.version}, commit {args.commit}",
        f"built with Python {sys.version.split()[0]} on {os.uname().sysname} {os.uname().machine}",
        f"ELF files: {n_elf}; newest glibc symbol version needed: GLIBC_{glibc[0]}.{glibc[1]}, by "
        + ", ".join(glibc_files),
        "system libraries needed and not bundled:",
        *[f"  {so}: needed by {len(by)} files, e.g. {', '.join(sorted(by)[:3])}" for so, by in sorted(missing.items())],
        "",
        "Python packages in the build environment (pip freeze):",
        Path(args.freeze).read_text(encoding="utf-8").strip(),
    ]
    (root / "BUILDINFO.txt").write_text("\n".join(info) + "\n", encoding="utf-8")
    print(f"finish: INSTALL.txt and BUILDINFO.txt written; target needs glibc >= {glibc[0]}.{glibc[1]} and "
          f"{', '.join(system) or 'no other system library'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
