"""RESULT.csv: the site's CSV with the result columns added, written block by block.

What is written is exactly what pandas writes for the whole file read as text (``read_csv(dtype=str,
keep_default_na=False)``), the result columns set on it, every cell that a spreadsheet would run as a formula
escaped (:func:`core.fileio.safe_cell`) and ``to_csv`` in the output's format. :class:`ResultWriter` writes it one
block of records at a time (:mod:`core.data.blocks`), so memory is bounded by a block, in one of two ways:

- *pass-through*: a block whose records ``to_csv`` would write back unchanged is copied byte for byte and each
  record gets its result cells appended. That holds when the block has no quote character, every record is one
  line with the file's line end and exactly the header's number of fields, and no cell is escaped. The last is
  decided without a Python call per cell: a text column's distinct values are checked once; a cell pandas read
  as a number is one Python's ``float`` reads too (so never escaped), unless it holds a space (pandas also
  reads "-1e 5"), which is checked alone; a missing-value marker that would be escaped sends the block to
- *the exact way*: the block read as text, the result columns set, :func:`guard_formulas`, ``to_csv``.

Result cells are formatted as ``to_csv`` formats them after the escaping (which turns every float into a Python
float, so a float32 column is written as float64: Python's ``repr``, here for a whole column at once by
:mod:`core.float_text`; the empty string for NaN); a cell that would need quotes sends the block the exact way. A
passed-through block is assembled in numpy: every record's result cells put in before its line end.
"""

from __future__ import annotations

import codecs
import io
from itertools import chain
from typing import IO

import numpy as np
import pandas as pd

from .data.blocks import CUTTABLE, Block
from .data.tabular import CsvFormat
from .errors import ConfigError
from .fileio import _FORMULA_PREFIXES, safe_cell
from .float_text import repr_bytes

_PREFIX_BYTES = np.frombuffer("".join(_FORMULA_PREFIXES).encode("ascii"), dtype=np.uint8)
_SPACES = b" \t\x0b\x0c"  # what pandas' number reading skips around and inside a number, besides CR/LF


def guard_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame.map(safe_cell)``, computed once per distinct value of each text column (numbers are never escaped)."""
    out = {}
    for i in range(frame.shape[1]):
        col = frame.iloc[:, i]
        if col.dtype.kind == "f":
            out[i] = col.astype(np.float64)  # map() gives Python floats: a float32 column is written as float64
            continue
        if col.dtype.kind in "iub":
            out[i] = col
            continue
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
        guarded = [safe_cell(u) for u in uniques]
        if all(g is u for g, u in zip(guarded, uniques, strict=True)):
            out[i] = col
            continue
        values = np.empty(len(guarded) + 1, dtype=object)
        values[:-1] = guarded
        values[-1] = np.nan
        out[i] = pd.Series(values[codes], index=col.index, dtype=object)
    result = pd.DataFrame(out, index=frame.index)
    result.columns = frame.columns
    return result


def same_bytes(a: str, b: str) -> bool:
    """Whether text after the first byte is stored the same in encodings ``a`` and ``b`` (a BOM aside)."""
    na, nb = codecs.lookup(a).name, codecs.lookup(b).name
    return na == nb or {na, nb} <= {"utf-8", "utf-8-sig"}


class ResultWriter:
    """Writes RESULT.csv to ``fh`` block by block (module docstring).

    ``header_raw``: the input's header record (bytes); ``in_fmt`` / ``out_fmt``: the input's format and the
    output's (:func:`core.participant.result_format`); ``line_ending``: every record's (the input's); ``markers``:
    the missing-value markers the blocks' numeric columns were read with (:attr:`BlockReader.markers`). The header
    is written with the first block, when the result columns' names and types are known."""

    def __init__(self, fh: IO[bytes], header_raw: bytes, in_fmt: CsvFormat, out_fmt: CsvFormat, line_ending: str,
                 *, markers: list[str] = (), out_path=None):
        self.header_raw, self.in_fmt, self.out_fmt = header_raw, in_fmt, out_fmt
        self.fh = io.BufferedWriter(_Through(fh), buffer_size=1 << 20)  # records go out a few hundred bytes a piece
        self.markers_escaped = any(safe_cell(t) != t for t in markers)  # a missing-value marker like "-" or "=NA"
        self.ending, self.out_path = line_ending, out_path
        self.encoder = codecs.getincrementalencoder(out_fmt.encoding)()
        self.names: list[str] | None = None  # the input's column names as pandas reads them (duplicates renamed)
        self.header_written = False
        self.passes = (out_fmt.delimiter == in_fmt.delimiter and in_fmt.encoding in CUTTABLE
                       and codecs.lookup(out_fmt.encoding).name in {codecs.lookup(e).name for e in CUTTABLE})
        self.blocks_passed = self.blocks_exact = 0

    # -- public

    def write(self, block: Block, columns: dict[str, np.ndarray]) -> None:
        """Write the records of ``block`` with the result ``columns`` (one value per record)."""
        if not self.header_written:
            self._write_header(columns)
        pieces = self._pass_through(block, columns) if self.passes else None
        if pieces is None:
            self.fh.write(self._encode(self._exact_text(block.raw, columns)))
            self.blocks_exact += 1
        else:
            self.fh.writelines(pieces)
            self.blocks_passed += 1

    def close(self) -> None:
        """Flush what is buffered into the file (which stays open: its owner syncs and renames it)."""
        self.fh.flush()

    def write_frame(self, frame: pd.DataFrame, columns: dict[str, np.ndarray]) -> None:
        """Write rows of the input already read as text (the whole-file way) with their result ``columns``."""
        if not self.header_written:
            self._write_header(columns, names=list(frame.columns))
        self.fh.write(self._encode(self._frame_text(frame, columns)))

    # -- the header

    def _write_header(self, columns: dict[str, np.ndarray], names: list[str] | None = None) -> None:
        if names is None:
            names = list(self._read_text(self.header_raw).columns)
        self.names = names
        empty = pd.DataFrame({i: pd.Series([], dtype=object) for i in range(len(names))})
        empty.columns = names
        for name, values in columns.items():
            empty[name] = np.asarray(values)[:0]
        empty.columns = [safe_cell(str(c)) for c in empty.columns]
        self.fh.write(self._encode(empty.to_csv(index=False, sep=self.out_fmt.delimiter,
                                                lineterminator=self.ending)))
        self.header_written = True
        if any(name in names for name in columns):  # a result column replaces an input column of that name
            self.passes = False

    # -- the exact way

    def _read_text(self, raw: bytes) -> pd.DataFrame:
        return pd.read_csv(io.BytesIO(raw), sep=self.in_fmt.delimiter, encoding=self.in_fmt.encoding, dtype=str,
                           keep_default_na=False)

    def _exact_text(self, raw: bytes, columns: dict[str, np.ndarray]) -> str:
        frame = self._read_text(self.header_raw + raw)
        return self._frame_text(frame, columns)

    def _frame_text(self, frame: pd.DataFrame, columns: dict[str, np.ndarray]) -> str:
        for name, values in columns.items():
            frame[name] = values
        frame.columns = [safe_cell(str(c)) for c in frame.columns]
        return guard_formulas(frame).to_csv(header=False, index=False, sep=self.out_fmt.delimiter,
                                            decimal=self.out_fmt.decimal, lineterminator=self.ending)

    def _encode(self, text: str) -> bytes:
        try:
            return self.encoder.encode(text)
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start:exc.end]
            raise ConfigError(f"the results hold {bad!r}, which {self.out_fmt.encoding} cannot store; write them as "
                              "UTF-8 (--out-encoding utf-8)", path=self.out_path) from exc

    # -- pass-through

    def _pass_through(self, block: Block, columns: dict[str, np.ndarray]):
        """The block's output, its records copied unchanged each followed by its result cells (an iterable of
        bytes), or None when it must go the exact way."""
        raw, rows = block.raw, block.rows
        if not block.numeric or b'"' in raw:
            return None
        end = self.ending.encode("ascii")
        text = np.frombuffer(raw, np.uint8)
        ends = np.flatnonzero(text == 10)  # where each record's line end starts
        if end == b"\n":
            if b"\r" in raw:
                return None
        elif not raw.count(b"\r") == len(ends) == raw.count(b"\r\n"):
            return None
        else:
            ends -= 1
        if len(ends) != rows:
            return None  # a blank line (pandas skips it), or a record over two lines
        if not self._no_short_record(block) or not self._cells_unescaped(block):
            return None
        cells = self._result_cells(columns, rows)
        if cells is None:
            return None
        present = cells != 0  # each record's delimiter and result cells, left-aligned, zero bytes after them
        if not same_bytes(self.in_fmt.encoding, self.out_fmt.encoding):
            records = self._encode(raw.decode(self.in_fmt.encoding)).split(end)
            ended = np.hstack([cells, np.broadcast_to(np.frombuffer(end, np.uint8), (rows, len(end)))])
            appended = ended[ended != 0].tobytes().splitlines(keepends=True)
            if len(records) != rows + 1 or len(appended) != rows:
                return None
            return chain.from_iterable(zip(records, appended, strict=False))
        # each record's cells put in before its line end; what follows the last line end (spaces) is not a record
        kept = text[:ends[-1] + len(end)] if rows else text[:0]
        return [_interleave(kept, ends, cells[present], present.sum(axis=1))]

    def _no_short_record(self, block: Block) -> bool:
        """Whether every record has all the header's fields (pandas fills a short one's last fields, which
        ``to_csv`` would then write). A short record leaves the last column empty, so a last column without an
        empty cell settles it; else the block's delimiters are counted (pandas refused every long record)."""
        frame = block.frame
        last = frame[frame.shape[1] - 1]
        if last.dtype.kind in "iu" or (last.dtype.kind == "f" and not last.isna().to_numpy().any()):
            return True
        if last.dtype == object and "" not in set(pd.unique(last.to_numpy(dtype=object))):
            return True
        sep = self.in_fmt.delimiter.encode("ascii")
        return block.raw.count(sep) == block.rows * (frame.shape[1] - 1)

    def _cells_unescaped(self, block: Block) -> bool:
        """Whether :func:`safe_cell` leaves every cell of the block as it is (module docstring)."""
        frame, numeric = block.frame, set(block.numeric)
        for pos in range(frame.shape[1]):
            col = frame[pos]
            if pos in numeric:
                if col.dtype.kind == "f" and self.markers_escaped and col.isna().to_numpy().any():
                    return False
                continue
            for value in pd.unique(col.to_numpy(dtype=object)):
                if not isinstance(value, str) or safe_cell(value) is not value:
                    return False
        return self._spaced_numbers_unescaped(block.raw)

    def _spaced_numbers_unescaped(self, raw: bytes) -> bool:
        """Cells holding a space or tab that start like a formula, checked one by one (pandas reads "-1e 5" as a
        number, Python's float does not)."""
        sep = self.in_fmt.delimiter.encode("ascii")
        spaces = bytes(c for c in _SPACES if bytes([c]) != sep)
        if not any(bytes([c]) in raw for c in spaces):
            return True
        b = np.frombuffer(raw, dtype=np.uint8)
        at = np.flatnonzero(np.isin(b, np.frombuffer(spaces, dtype=np.uint8)))
        bounds = np.flatnonzero((b == sep[0]) | (b == 10) | (b == 13))
        k = np.searchsorted(bounds, at)
        starts = np.where(k > 0, bounds[np.maximum(k - 1, 0)] + 1, 0)
        ends = np.where(k < len(bounds), bounds[np.minimum(k, len(bounds) - 1)], len(b))
        suspect = np.isin(b[np.minimum(starts, len(b) - 1)], _PREFIX_BYTES)
        for s, e in set(zip(starts[suspect].tolist(), ends[suspect].tolist(), strict=True)):
            cell = raw[s:e].decode(self.in_fmt.encoding)
            if safe_cell(cell) is not cell:
                return False
        return True

    def _result_cells(self, columns: dict[str, np.ndarray], rows: int) -> np.ndarray | None:
        """Per record, the delimiter and each result cell as ``to_csv`` writes it, in the output's encoding: a
        rows × width uint8 matrix, every piece left-aligned in its own fixed-width field and padded with zero bytes
        (which no cell holds). None if a cell needs quotes or holds a zero byte, or a type is not one formatted
        here (then the block goes the exact way)."""
        sep = self._encode(self.out_fmt.delimiter)
        special = (self.out_fmt.delimiter, '"', "\r", "\n", "\0")
        pieces = []
        for values in columns.values():
            v = np.asarray(values)
            if len(v) != rows:
                return None
            if v.dtype.kind == "f" and self.out_fmt.decimal == ".":
                # written as float64 (the escaping's map() gives Python floats), whose to_csv form is Python's repr
                chars, _ = repr_bytes(v)
                chars[np.isnan(v)] = 0  # NaN is written empty
            elif v.dtype == object:
                codes, uniques = pd.factorize(v, use_na_sentinel=True)
                shown = []
                for u in uniques:
                    if not isinstance(u, str):
                        return None
                    g = safe_cell(u)
                    if any(c in g for c in special):
                        return None
                    shown.append(self._encode(g))
                width = max(map(len, shown), default=0)
                table = np.zeros((len(shown) + 1, max(width, 1)), np.uint8)  # the last row: NaN, written empty
                for i, b in enumerate(shown):
                    table[i, :len(b)] = np.frombuffer(b, np.uint8)
                chars = table[codes]
            else:
                return None
            pieces += [np.broadcast_to(np.frombuffer(sep, np.uint8), (rows, len(sep))), chars]
        return np.hstack(pieces) if pieces else None


def _interleave(text: np.ndarray, at: np.ndarray, inserted: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``text`` with ``lengths[i]`` bytes of ``inserted`` (taken in order) put in before byte ``at[i]`` (``at``
    increasing): the output's bytes are marked as inserted or not by one run-length expansion, and each kind is
    written into its marked places."""
    runs = np.empty(2 * len(at) + 1, np.int64)
    runs[0::2] = np.diff(at, prepend=0, append=len(text))  # the text before the first place, between, after the last
    runs[1::2] = lengths
    marked = np.repeat(np.arange(len(runs)) % 2 == 1, runs)
    out = np.empty(len(text) + len(inserted), np.uint8)
    out[marked] = inserted
    out[np.logical_not(marked, out=marked)] = text
    return out


class _Through(io.RawIOBase):
    """The file the writer's own large buffer flushes into (closing it leaves the file open)."""

    def __init__(self, fh: IO[bytes]):
        super().__init__()
        self._fh = fh

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._fh.write(data)
        return len(data)
