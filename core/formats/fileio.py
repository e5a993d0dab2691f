"""Atomic file writes and bounded reads.

A file appears under its final name only once it is complete and fsynced, so a pulled USB stick or a
crash never leaves a file that would validate.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ..errors import FormatError


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success fsync and rename it into place.

    On any exception the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_text_atomic(path: str | Path, text: str) -> None:
    with atomic_writer(path, "w") as fh:
        fh.write(text)


def canonical_json(obj: Any) -> bytes:
    """The one byte form of a JSON value that gets signed: sorted keys, no spaces, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def write_json_atomic(path: str | Path, obj: Any) -> None:
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


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


def read_json_capped(path: str | Path, cap: int = 16 << 20) -> Any:
    data = read_bytes_capped(path, cap)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"not valid JSON ({exc.__class__.__name__})", path=path) from exc


def utc_now() -> str:
    """The current UTC time as ``YYYY-MM-DDTHH:MM:SSZ``: the one time form in every file the product writes."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
