"""What the desktop bundle leaves out, and why (read by ``packaging/dcstudio.spec``).

Every entry is checked by the release check (``packaging/dist_check.sh``): the frozen ``dcstudio demo`` and the
GUI under Xvfb must still run with all of it removed. The build writes the files each rule removed, with their
sizes, to ``build/dcstudio/removed.tsv``; the totals are in ``docs/results/packaging.md``.
"""

import fnmatch

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
    # interactive / plotting front ends never imported
    "tkinter": "Tk GUI toolkit; the app uses Qt",
    "matplotlib": "plots are drawn with pyqtgraph",
    "IPython": "interactive shell",
    "pygments": "syntax highlighting for interactive shells",
    "pydoc_data": "help() topics",
    "lib2to3": "Python 2 converter",
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
    ("PySide6/Qt/translations/qtwebengine*", "translations of Qt modules not bundled"),
    ("PySide6/Qt/translations/designer*", "translations of Qt Designer"),
    ("PySide6/Qt/translations/linguist*", "translations of Qt Linguist"),
    ("PySide6/Qt/translations/assistant*", "translations of Qt Assistant"),
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
