"""What the desktop bundle leaves out, and why (read by ``packaging/dcstudio.spec``).

Every entry is checked by the release check (``packaging/dist_check.sh``): the frozen ``dcstudio demo`` and the
GUI under Xvfb must still run with all of it removed. The build writes the files each rule removed, with their
sizes, to ``build/dcstudio/removed.tsv``; the totals are in ``docs/results/packaging.md``.
"""

import fnmatch
import os
import re
import subprocess

# Modules PyInstaller would otherwise follow (mostly through the torch hook, which collects every torch submodule).
# Neither the CLI nor the GUI imports them: `import torch` + a whole demo round + the GUI load none of them.
EXCLUDED_MODULES = {
    # test tooling
    "pytest": "test runner, not used at run time",
    "_pytest": "test runner internals",
    "pluggy": "pytest plugin system",
    "iniconfig": "pytest configuration",
    "pytestqt": "pytest-qt",
    # build tooling
    "setuptools": "build tool; torch and PyInstaller declare it but never need it at run time",
    "pkg_resources": "setuptools' runtime, not imported by the app",
    "_distutils_hack": "setuptools' import shim",
    "distutils": "build tool",
    "pip": "installer",
    "PyInstaller": "the freezer itself",
    # torch.compile / code generation stack: only reached through torch.compile, which DC Studio never calls
    "torch._inductor": "torch.compile code generator",
    "torch.utils.tensorboard": "TensorBoard logging",
    "torch.utils.benchmark": "micro-benchmark helpers",
    "torch.onnx": "ONNX export",
    "torch.distributed.elastic": "multi-machine launcher",
    "torch.distributed.checkpoint": "multi-machine checkpoints (pulls fsspec)",
    "torch.utils.cpp_extension": "compiles C++ extensions (needs a compiler and setuptools)",
    "functorch": "legacy alias package of torch.func",
    "sympy": "symbolic maths, only used by torch.compile's shape reasoning",
    "mpmath": "sympy's arbitrary-precision backend",
    "networkx": "graph library, only used by torch.compile's partitioner",
    "jinja2": "templates, only used by torch.compile's code generator",
    "markupsafe": "jinja2's escaping",
    "fsspec": "remote file systems, only used by torch.distributed checkpoints",
    "filelock": "lock files, only used by torch.compile's cache",
    # the project's own experiments: a top-level package beside core and gui, never imported by either
    "benchmarks": "experiments and their baselines (python -m benchmarks); not part of the product",
    # interactive / plotting front ends never imported
    "tkinter": "Tk GUI toolkit; the app uses Qt",
    "matplotlib": "plots are drawn with pyqtgraph",
    "IPython": "interactive shell",
    "pygments": "syntax highlighting for interactive shells",
    "pydoc_data": "help() topics",
    "PySide6.QtTest": "Qt's test helpers; pyqtgraph imports them only if present",
    "PySide6.QtOpenGLWidgets": "OpenGL widget; pyqtgraph imports it only if present, the app draws no GL views",
    "pyqtgraph.opengl": "3-D views (need PyOpenGL, not installed)",
    "pyqtgraph.examples": "pyqtgraph's demo programs",
    "pyqtgraph.jupyter": "notebook widgets",
    "lib2to3": "Python 2 converter",
    "readline": "line editing for the interactive prompt; the frozen app has none (and libreadline is GPL-3)",
    "curses": "terminal UI",
}

# Files that hooks collect but that the app never loads, as glob patterns on the path inside the bundle
# (relative to `_internal/`). The first matching rule wins; KEEP overrides everything.
KEEP = [
    "torch/bin/torch_shm_manager",  # torch.multiprocessing starts it for shared-memory tensors
]
REMOVED_FILES = [
    ("torch/bin/*", "torch's C++ test programs and protoc (tens of MB); only torch_shm_manager is needed"),
    ("torch/test/*", "torch's C++ test data"),
    ("torch/include/*", "C++ headers for building extensions"),
    ("torch/share/*", "CMake files for building extensions"),
    ("torch/csrc/*", "C++ headers for AOTInductor"),
    ("torch/lib/*test*.so", "test libraries (libtorchbind_test, libjitbackend_test)"),
    ("torch/lib/libbackend_with_compiler.so", "test backend for TorchScript"),
    ("torch/lib/libaoti_custom_ops.so", "test ops for AOTInductor"),
    ("torch/_inductor/*", "data files of the excluded torch.compile code generator"),
    ("torch/utils/benchmark/*", "data files of the excluded benchmark helpers"),
    ("torch/utils/model_dump/*", "HTML/JS viewer for TorchScript models"),
    ("torch/*.pyi", "type stubs"),
    ("PySide6/Qt/translations/*", "Qt's own translations: the app installs no QTranslator, so Qt never loads them"),
    ("*/tests/*", "test data of the bundled libraries"),
    ("PySide6/Qt/plugins/platforms/libqwayland*.so", "native Wayland: on a Wayland desktop Qt then uses XWayland "
     "through the xcb plugin, so there is one display path to test and no libwayland-* needed on the target"),
    ("PySide6/Qt/plugins/wayland-*", "Wayland plugins (see libqwayland)"),
    ("PySide6/Qt/lib/libQt6Wayland*", "Wayland client library (see libqwayland)"),
    ("PySide6/Qt/lib/libQt6Wl*", "Wayland shell integration (see libqwayland)"),
    ("PySide6/Qt/plugins/platformthemes/libqgtk3.so", "GTK 3 theme bridge: needs gtk-3/gdk-3 on the target; "
     "without it Qt draws its own Fusion style"),
    ("PySide6/Qt/plugins/platforms/libqeglfs.so", "full-screen EGL for embedded devices"),
    ("PySide6/Qt/plugins/platforms/libqlinuxfb.so", "Linux frame buffer for embedded devices"),
    ("PySide6/Qt/plugins/platforms/libqvnc.so", "remote VNC display"),
    ("PySide6/Qt/plugins/platforms/libqvkkhrdisplay.so", "Vulkan direct display"),
    ("PySide6/Qt/plugins/platforms/libqminimalegl.so", "headless EGL"),
    ("PySide6/Qt/plugins/egldeviceintegrations/*", "embedded EGL devices"),
    ("PySide6/Qt/plugins/sqldrivers/*", "SQL drivers; the app has no database"),
    ("PySide6/Qt/plugins/qmltooling/*", "QML debugger; the app has no QML"),
    ("PySide6/Qt/plugins/designer/*", "Qt Designer plugins"),
    ("PySide6/Qt/plugins/networkinformation/*", "network reachability; the app never uses the network"),
    ("PySide6/Qt/plugins/tls/*", "TLS back ends; the app never uses the network"),
    ("PySide6/Qt/plugins/printsupport/*", "CUPS printer discovery; the app only prints to PDF files, which Qt does "
     "without it (and it pulls in libcups, avahi, gnutls, kerberos)"),
    ("PySide6/Qt/plugins/generic/*", "touch-screen and tablet input for embedded devices (evdev, tslib)"),
    ("PySide6/Qt/lib/libQt6EglFSDeviceIntegration.so.6", "only needed by the removed eglfs plugins"),
    ("PySide6/Qt/lib/libQt6EglFsKmsSupport.so.6", "only needed by the removed eglfs plugins"),
    ("libQt6EglFSDeviceIntegration.so.6", "only needed by the removed eglfs plugins"),
    ("libQt6EglFsKmsSupport.so.6", "only needed by the removed eglfs plugins"),
]


def rule_for(dest):
    """The (pattern, reason) that removes the bundle path ``dest``, or None to keep it."""
    dest = dest.replace("\\", "/")
    if any(fnmatch.fnmatchcase(dest, k) for k in KEEP):
        return None
    for pattern, reason in REMOVED_FILES:
        if fnmatch.fnmatchcase(dest, pattern):
            return pattern, reason
    return None


def filter_toc(toc, removed):
    """Drop the TOC entries (dest, src, typecode) that a rule removes; append (dest, src, pattern) to ``removed``."""
    kept = []
    for entry in toc:
        rule = rule_for(entry[0])
        if rule is None:
            kept.append(entry)
        else:
            removed.append((entry[0], entry[1], rule[0]))
    return kept


def needed(path, _cache={}):  # noqa: B006 - a deliberate per-process cache
    """The DT_NEEDED sonames of the ELF file ``path`` (empty for anything else)."""
    if path not in _cache:
        out = subprocess.run(["readelf", "-d", "-W", path], capture_output=True, text=True).stdout
        _cache[path] = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)
    return _cache[path]


def prune_orphans(binaries, removed, needed_of=needed):
    """Drop the libraries PyInstaller added only because a removed file needed them.

    Candidates are the top-level libraries reachable (through DT_NEEDED) from the removed files; those still
    reachable from a kept file stay. Appends (dest, src, "needed only by removed files") to ``removed``.
    """
    top = {os.path.basename(e[0]): e for e in binaries if "/" not in e[0].replace("\\", "/")}

    def closure(srcs):
        seen, todo = set(), list(srcs)
        while todo:
            for name in needed_of(todo.pop()):
                if name in top and name not in seen:
                    seen.add(name)
                    todo.append(top[name][1])
        return seen

    candidates = closure(src for _, src, _ in removed if os.path.isfile(src))
    kept_roots = [e[1] for e in binaries if os.path.basename(e[0]) not in candidates or "/" in e[0]]
    orphans = candidates - closure(kept_roots)
    for name in sorted(orphans):
        removed.append((top[name][0], top[name][1], "needed only by removed files"))
    return [e for e in binaries if not ("/" not in e[0] and os.path.basename(e[0]) in orphans)]


def load_segments_ok(path):
    """True if every PT_LOAD segment of the ELF file has offset and address congruent modulo its alignment
    (``strip`` can break this in libraries that auditwheel/patchelf rewrote; the loader then refuses them)."""
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True)
    if out.returncode != 0:
        return False
    loads = [line.split() for line in out.stdout.splitlines() if line.strip().startswith("LOAD")]
    for f in loads:
        offset, vaddr, align = int(f[1], 16), int(f[2], 16), int(f[-1], 16)
        if align > 1 and offset % align != vaddr % align:
            return False
    return bool(loads)


def strip_tree(root, log):
    """Strip the symbol tables of every ELF file under ``root`` (not the executable), keeping a file unstripped
    when strip fails or leaves it unloadable. Writes one line per file to ``log``; returns bytes saved."""
    saved = 0
    with open(log, "w", encoding="utf-8") as fh:
        for dirpath, _, names in sorted(os.walk(root)):
            for name in sorted(names):
                path = os.path.join(dirpath, name)
                if os.path.islink(path) or not os.path.isfile(path) or dirpath == root:
                    continue
                with open(path, "rb") as f:
                    if f.read(4) != b"\x7fELF":
                        continue
                before = os.path.getsize(path)
                tmp = path + ".stripped"
                res = subprocess.run(["strip", "--strip-all", "-o", tmp, path], capture_output=True, text=True)
                if res.returncode == 0 and load_segments_ok(tmp):
                    os.chmod(tmp, os.stat(path).st_mode)
                    os.replace(tmp, path)
                    after = os.path.getsize(path)
                    saved += before - after
                    fh.write(f"{os.path.relpath(path, root)}\t{before}\t{after}\tstripped\n")
                else:
                    if os.path.exists(tmp):
                        os.remove(tmp)
                    fh.write(f"{os.path.relpath(path, root)}\t{before}\t{before}\tkept: strip would break it\n")
    return saved


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 4 or sys.argv[1] != "strip":
        sys.exit("usage: python packaging/trim.py strip BUNDLE_DIR LOG")
    print(f"strip: {strip_tree(sys.argv[2], sys.argv[3]) / 1e6:.0f} MB saved (per file: {sys.argv[3]})")
