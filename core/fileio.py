"""Atomic file writes and bounded reads.

A file appears under its final name only once it is complete and fsynced, so a pulled USB stick or a
crash never leaves a file that would validate.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from .errors import FormatError

PART_SUFFIX = ".part"


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "wb", *, before_rename: Callable[[], None] | None = None,
                  private: bool = False, clean: bool = True) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success fsync and rename it into place.

    On any exception the temporary file is removed and ``path`` is left as it was. ``before_rename`` runs
    after the fsync and before the rename (state that must exist before the file does). ``private`` files
    are mode 0600 whatever the umask. The temporary name carries this process's id, so a later run can
    remove what a killed one left behind (:func:`clean_stale_parts`, run here first unless ``clean`` is False: a
    caller that writes many files into one large folder it cleaned already skips the folder scan) without touching
    a live writer's file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if clean:
        clean_stale_parts(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=PART_SUFFIX, dir=path.parent)
    try:
        if private:
            os.fchmod(fd, 0o600)
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if before_rename is not None:
            before_rename()
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but not ours (PermissionError), or the platform cannot tell
        return True
    return True


def clean_stale_parts(folder: str | Path, name: str | None = None, *, recursive: bool = False) -> int:
    """Remove ``.NAME.PID.*.part`` files whose writer process is gone (left by a crash or a kill).

    ``name`` limits it to one target file; returns how many were removed."""
    folder = Path(folder)
    pattern = f".{name}.*{PART_SUFFIX}" if name else f".*{PART_SUFFIX}"
    removed = 0
    try:
        found = list(folder.rglob(pattern) if recursive else folder.glob(pattern))
    except OSError:
        return 0
    for part in found:
        bits = part.name[:-len(PART_SUFFIX)].rsplit(".", 2)
        if len(bits) != 3 or not bits[1].isdigit() or process_alive(int(bits[1])):
            continue
        with contextlib.suppress(OSError):
            part.unlink()
            removed += 1
    return removed


STAGING_SUFFIX = ".staging"
OLD_SUFFIX = ".old"


def staging_folder(final: str | Path) -> Path:
    """Where a folder that must appear whole (``final``) is written first: ``.NAME.PID.staging`` beside it."""
    final = Path(final)
    return final.parent / f".{final.name}.{os.getpid()}{STAGING_SUFFIX}"


def writer_gone(path: Path, final_name: str, suffix: str) -> bool:
    """Whether ``.FINAL_NAME.PID<suffix>`` was left by a process that no longer runs."""
    bits = path.name[len(final_name) + 2:-len(suffix)]
    return bits.isdigit() and not process_alive(int(bits))


def publish_folder(stage: Path, final: Path) -> None:
    """Make the complete folder ``stage`` appear as ``final``: one rename (two when a previous ``final`` is
    replaced; it is set aside as ``.NAME.PID.old`` and removed after)."""
    _fsync_dir(stage)
    old = final.parent / f".{final.name}.{os.getpid()}{OLD_SUFFIX}"
    if final.exists():
        shutil.rmtree(old, ignore_errors=True)
        os.rename(final, old)
    os.rename(stage, final)
    _fsync_dir(final.parent)
    shutil.rmtree(old, ignore_errors=True)


def private_dir(folder: str | Path) -> Path:
    """Create ``folder`` (and parents) and make it 0700 whatever the umask."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        folder.chmod(0o700)
    return folder


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_bytes_atomic(path: str | Path, data: bytes, *, private: bool = False) -> None:
    with atomic_writer(path, "wb", private=private) as fh:
        fh.write(data)


def write_text_atomic(path: str | Path, text: str, *, private: bool = False) -> None:
    with atomic_writer(path, "w", private=private) as fh:
        fh.write(text)


def canonical_json(obj: Any) -> bytes:
    """The one byte form of a JSON value that gets signed: sorted keys, no spaces, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def write_json_atomic(path: str | Path, obj: Any, *, private: bool = False) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", private=private)


def read_bytes_capped(path: str | Path, cap: int) -> bytes:
    """Read a whole file, refusing before allocation if it is larger than ``cap`` bytes."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError as exc:
        raise FormatError("file not found", path=path) from exc
    if size > cap:
        raise FormatError(f"file is {size} bytes, more than the {cap}-byte limit for this kind of file", path=path)
    with open(path, "rb") as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise FormatError("file grew while being read", path=path)
    return data


MAX_JSON_DEPTH = 32


def json_depth_ok(raw: bytes | str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the brackets of a JSON text never nest deeper than ``limit`` (checked before parsing, so
    a deeply nested file cannot exhaust the parser's recursion)."""
    text = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    depth, in_string, escaped = 0, False, False
    if text.count(b"[") + text.count(b"{") <= limit:
        return True
    if b"\\" not in text:  # no escapes: every quote opens or closes a string; brackets inside strings do not count
        import numpy as np

        b = np.frombuffer(text, dtype=np.uint8)
        outside = (np.cumsum(b == 0x22, dtype=np.int64) & 1) == 0
        step = np.zeros(len(b), dtype=np.int64)
        step[((b == 0x5B) | (b == 0x7B)) & outside] = 1
        step[((b == 0x5D) | (b == 0x7D)) & outside] = -1
        return int(np.cumsum(step).max(initial=0)) <= limit
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return False
        elif c in (0x5D, 0x7D):
            depth -= 1
    return True


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def loads_checked(raw: bytes, what: str = "file", path: str | Path | None = None) -> Any:
    """Parse JSON text with a nesting cap and without NaN/Infinity; FormatError on anything else."""
    if not json_depth_ok(raw):
        raise FormatError(f"the {what} nests JSON deeper than {MAX_JSON_DEPTH} levels", path=path)
    try:
        return json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else raw, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise FormatError(f"not valid JSON ({exc.__class__.__name__})", path=path) from exc


def read_json_capped(path: str | Path, cap: int = 16 << 20) -> Any:
    return loads_checked(read_bytes_capped(path, cap), path=path)


_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """A text cell a spreadsheet would evaluate as a formula (leading = + - @ tab CR) gets a leading
    apostrophe (the OWASP CSV-injection rule); a cell that is a plain number (``-1.5``, ``-1,5``, ``+3``) and every
    non-text cell are returned unchanged."""
    if isinstance(value, str) and value.startswith(_FORMULA_PREFIXES):
        try:
            float(value.replace(",", ".", 1))  # a number with either decimal mark, e.g. "-1,5" in a French file
        except ValueError:
            return "'" + value
    return value


def significant(values: Any, digits: int = 6) -> Any:
    """``values`` rounded to ``digits`` significant digits, each the double nearest its short decimal (so a CSV shows
    ``0.123457``, not ``0.12345678901234567``); 0, inf and NaN unchanged. Vectorised per power of ten: x rounded to
    digits − 1 − ⌊log₁₀|x|⌋ decimals (numpy's round divides an exact integer by an exact power of ten); below
    10⁻¹⁵, where that power is no longer exact, by formatting. Returns a float64 array."""
    import numpy as np  # here: this module is imported where numpy is not yet needed

    v = np.asarray(values, dtype=np.float64)
    out = v.copy()
    at = np.flatnonzero(np.isfinite(v) & (v != 0))
    x = v[at]
    exponent = np.floor(np.log10(np.abs(x))).astype(np.int64)
    rounded = np.empty_like(x)
    for e in np.unique(exponent):
        m = exponent == e
        decimals = int(digits - 1 - e)
        if e < -15:
            rounded[m] = [float(f"{z:.{digits}g}") for z in x[m]]
        elif decimals >= 0:
            rounded[m] = np.round(x[m], decimals)
        else:
            rounded[m] = np.round(x[m] / 10.0 ** -decimals) * 10.0 ** -decimals
    out[at] = rounded
    return out


def utc_now() -> str:
    """The current UTC time as ``YYYY-MM-DDTHH:MM:SSZ``: the one time form in every file the product writes."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]+')
_RESERVED = re.compile(r"(?i)(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?")


def safe_name(name: str, fallback: str = "site") -> str:
    """A file name that keeps the name readable ("Hôpital du Val-d'Oise" stays so): only the characters
    Windows, macOS or Linux forbid in a file name become "_", leading/trailing dots and spaces go, and a
    name Windows reserves (CON, NUL, COM1 …) gets a trailing "_"."""
    text = _FORBIDDEN.sub("_", unicodedata.normalize("NFC", str(name))).strip(" .")[:120].rstrip(" .")
    if _RESERVED.fullmatch(text):
        text += "_"
    return text or fallback


_NOT_PORTABLE = re.compile(r"[^A-Za-z0-9_.-]+")


def portable_name(name: str, fallback: str = "site") -> str:
    """A file stem of only ``[A-Za-z0-9_.-]`` (FORMAT.md §11), still readable: accents are dropped from their
    letters ("Hôpital" → "Hopital"), every other run of characters outside the set becomes one "_", leading
    and trailing dots, dashes and "_" go, at most 100 characters; a name Windows reserves gets a trailing "_"."""
    ascii_text = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode("ascii")
    text = _NOT_PORTABLE.sub("_", ascii_text).strip("._-")[:100].rstrip("._-")
    if _RESERVED.fullmatch(text):
        text += "_"
    return text or fallback


def unique_names(stems: list[str], tags: list[str]) -> list[str]:
    """``stems`` made unique without regard to case (two files "A" and "a" are one on Windows and macOS): each stem
    that collides gets "-" and its ``tags`` entry (e.g. 4 fingerprint characters), then a counter if it still does."""
    folded = [s.casefold() for s in stems]
    out = [f"{s}-{t}" if folded.count(s.casefold()) > 1 else s for s, t in zip(stems, tags, strict=True)]
    seen: set[str] = set()
    for i, name in enumerate(out):
        base, k = name, 2
        while name.casefold() in seen:
            name, k = f"{base}-{k}", k + 1
        seen.add(name.casefold())
        out[i] = name
    return out

