"""A CSV read in blocks of whole records, each block's rows read against the schema as :func:`read_table` reads them.

A site's ``apply`` (core/participant.py) streams its CSV to RESULT.csv with it: memory is bounded by a block, not
the file. A block is a run of whole records cut at a line end outside quotes; pandas' C parser reads it with the
arguments :func:`read_table` uses, and :class:`core.data.tabular._TableReader`'s own per-chunk steps (features,
typed columns, fill, encode) turn it into the kit's encoded rows, so a change to how a chunk is read reaches both.

Only what a block alone can decide is read block by block. :class:`NotStreamable` says a file or block cannot be,
and the caller reads the whole file instead: a text encoding whose bytes cannot be cut at line ends (UTF-16), a
header the simple cut does not find, a block the parser refuses (the whole-file reading then names the problem
as before), and missing cells in a column that the export gave no fill value for (their fill value, e.g. a
median, is a property of the whole file).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..control import JobControl
from .tabular import (
    CsvFormat,
    CsvOptions,
    LocalTable,
    Schema,
    _check_options,
    _clean_name,
    _csv_kwargs,
    _FastPathRefused,
    _open_csv,
    _TableReader,
)

BLOCK_BYTES = 1 << 24  # at least 16 MiB of records per block
# ... and at least MIN_ROWS rows and MIN_CELLS matrix cells (rows × the matrix's width), the last block joined to the
# one before when shorter. Why: a method's answer for a row comes from matrix products whose BLAS kernel depends on
# the number of rows; OpenBLAS takes its small-matrix kernel, with another order of additions, while rows × n × k ≤
# 10**6, so blocks this tall get, row for row, the bits a product over the whole file gets.
MIN_ROWS = 1 << 17
MIN_CELLS = 1 << 20
# encodings in which the bytes of '"', the delimiters, CR and LF never occur inside a multibyte character
CUTTABLE = ("utf-8", "utf-8-sig", "cp1252", "shift_jis", "cp932")


class NotStreamable(Exception):
    """This file (or one of its blocks) cannot be read block by block with the result of reading it whole."""


@dataclass
class Block:
    """Data rows ``start`` … ``start + rows − 1`` of the file.

    ``raw``: their records as bytes, exactly as in the file (every record ends with a line end; one is added
    after a last record that has none). ``frame``: the cells pandas read, columns by file position (the schema's
    numeric columns as numbers when every cell of the block is one, every other column as text). ``numeric``:
    the positions read as numbers; when there are any, every other cell is exactly its text in the file (read
    without stripping spaces or reading missing-value markers). ``table``: the rows read against the schema (None
    unless asked for)."""

    start: int
    raw: bytes
    frame: pd.DataFrame
    numeric: list[int]
    table: LocalTable | None

    @property
    def rows(self) -> int:
        return len(self.frame)


class BlockReader:
    """The data records of ``path`` in blocks (:class:`Block`), read against ``schema``.

    ``labels``, ``fill_values`` and ``options`` are :func:`read_table`'s. ``tables``: also read each block's rows
    against the schema (else only the cells are parsed). Blocks hold at least :data:`BLOCK_BYTES` bytes and
    :data:`MIN_ROWS` rows (a smaller file is one block). Iterating raises :class:`NotStreamable` where a block
    cannot be read alone (module docstring); the constructor raises it for a file that cannot be read so at all.
    """

    def __init__(self, path: str | Path, schema: Schema, *, options: CsvOptions | None = None,
                 labels: bool = False, fill_values: dict | None = None, tables: bool = True,
                 block_bytes: int | None = None):
        self.path = Path(path)
        self.options = options or CsvOptions()
        _check_options(self.options)
        self.schema, self.labels, self.tables = schema, labels, tables
        self.fill_values = dict(fill_values or {})
        self.block_bytes = int(block_bytes or BLOCK_BYTES)
        self.min_rows = max(MIN_ROWS, -(-MIN_CELLS // max(int(schema.width), 1)))
        fmt, header, _ = _open_csv(self.path, self.options)
        if fmt.encoding not in CUTTABLE:
            raise NotStreamable(f"{fmt.encoding} text cannot be cut at line ends byte by byte")
        self.format: CsvFormat = fmt
        self.header = header
        names = [_clean_name(h) for h in header]
        self.positions: dict[str, int] = {}
        for i, n in enumerate(names):
            if n in self.positions:
                self.positions[n] = -1  # a repeated name: the whole-file reading refuses it if it is needed
            else:
                self.positions[n] = i
        label_col = schema.label if labels else None
        needed = schema.feature_names + ([label_col] if label_col is not None else [])
        if any(self.positions.get(c, -1) < 0 for c in needed):
            raise NotStreamable("a needed column is absent or repeated")
        self.label_col = label_col
        self.n_columns = len(header)
        self._probe = self._reader(0)  # the reader's view of the columns: which are read as numbers
        self.numeric = list(self._probe.feat_pos)
        self.header_raw, self.data_offset = self._header_record()
        numbers = _csv_kwargs(fmt, self.n_columns, None, self.numeric, self._probe.tokens)["na_values"]
        self.markers: list[str] = next(iter(numbers.values()), [])  # missing-value markers of the numeric columns

    # -- the file's bytes

    def _header_record(self) -> tuple[bytes, int]:
        """The header record's bytes (with its line end) and where the data records start."""
        with open(self.path, "rb") as fh:
            head = fh.read(1 << 20)
        start = 3 if head.startswith(b"\xef\xbb\xbf") else 0
        if not head[start:start + 1] or head[start:start + 1] in b"\r\n":
            raise NotStreamable("the file does not start with its header")
        end = head.find(b"\n")
        if end < 0 or b'"' in head[:end] or b"\r" in head[:end].rstrip(b"\r"):
            raise NotStreamable("the header record is not one plain line")
        return head[:end + 1], end + 1

    def record_blocks(self) -> Iterator[bytes]:
        """The data records in blocks of at least ``block_bytes`` bytes and ``min_rows`` lines, each cut after a line
        feed outside quotes; a last block of fewer lines is joined to the one before (:data:`MIN_ROWS`). Each read
        asks for what the lines so far say the block still needs (at most 8 × ``block_bytes``), so a block is
        usually one read and one copy."""
        with open(self.path, "rb") as fh:
            fh.seek(self.data_offset)
            carry = b""  # the records read beyond the last cut
            held: bytes | None = None
            per_line = 0.0  # bytes per line so far
            starved = False  # no line feed outside quotes in what is held: read more before cutting again
            while True:
                parts, size, lines = ([carry] if carry else []), len(carry), carry.count(b"\n")
                ended = False
                while starved or size < self.block_bytes or lines < self.min_rows:
                    starved = False
                    need = max(self.block_bytes - size, int((self.min_rows - lines) * per_line * 1.05), 1)
                    data = fh.read(min(need, 8 * self.block_bytes))
                    if not data:
                        ended = True
                        break
                    parts.append(data)
                    size += len(data)
                    lines += data.count(b"\n")
                    per_line = size / max(lines, 1)
                if ended:
                    tail = b"".join(parts)
                    if tail and not tail.endswith(b"\n"):
                        tail += self._final_end(tail)
                    if held is not None and tail and tail.count(b"\n") < self.min_rows:
                        held, tail = held + tail, b""
                    if held is not None:
                        yield held
                    if tail:
                        yield tail
                    return
                block, carry = _cut_parts(parts)
                if block is None:
                    starved = True
                    continue
                if held is not None:
                    yield held
                held = block

    @staticmethod
    def _final_end(rest: bytes) -> bytes:
        return b"\n" if not rest.endswith(b"\r") else b""

    # -- reading a block

    def _reader(self, rows: int) -> _TableReader:
        return _TableReader(self.path, self.schema, self.options, self.format, self.header, self.positions,
                            self.label_col, None, max(rows, 1), JobControl())

    def _parse(self, raw: bytes, floats: list[int]) -> pd.DataFrame:
        kwargs = _csv_kwargs(self.format, self.n_columns, None, floats, self._probe.tokens)
        kwargs["header"] = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                return pd.read_csv(io.BytesIO(raw), **kwargs)
        except pd.errors.EmptyDataError:
            return pd.DataFrame({i: pd.Series([], dtype=object) for i in range(self.n_columns)})
        except (ValueError, UnicodeDecodeError, pd.errors.ParserWarning, pd.errors.ParserError) as exc:
            raise NotStreamable(f"a block cannot be read alone ({exc.__class__.__name__})") from exc

    def read_block(self, start: int, raw: bytes) -> Block:
        """One block: its cells, and (``tables``) its rows read as the whole-file reading reads them."""
        frame = self._parse(raw, self.numeric)
        numeric = self.numeric
        if any(frame[pos].dtype.kind not in "iuf" for pos in numeric):
            frame, numeric = self._parse(raw, []), []  # a cell that is not a number: every column as text
        table = self._table(frame, bool(numeric)) if self.tables and len(frame) else None
        return Block(start, raw, frame, numeric, table)

    def _table(self, frame: pd.DataFrame, fast: bool) -> LocalTable:
        reader = self._reader(len(frame))
        try:
            reader._features(0, frame, text=not fast)
        except _FastPathRefused as exc:  # pragma: no cover - read_block already parsed such a block as text
            raise NotStreamable("a numeric cell was refused") from exc
        if reader.label_pos is not None:
            reader._labels(0, frame[reader.label_pos])
        table = reader.result(self.fill_values)
        if set(table.fill_values) - set(self.fill_values):
            raise NotStreamable("a column has missing cells and no fill value from the export")
        return table

    def __iter__(self) -> Iterator[Block]:
        start = 0
        for raw in self.record_blocks():
            block = self.read_block(start, raw)
            start += block.rows
            yield block


def _cut_parts(parts: list[bytes]) -> tuple[bytes | None, bytes]:
    """(the records of ``parts`` up to the last line feed outside quotes, the bytes after it), copying the records
    once; (None, all of it) when there is no such line feed. Without a quote character the cut is the last part's
    last line feed."""
    if not any(b'"' in p for p in parts):
        last = parts[-1]
        at = last.rfind(b"\n") + 1
        if at:
            return b"".join([*parts[:-1], memoryview(last)[:at]]), last[at:]
    buf = b"".join(parts)
    cut = _record_cut(buf)
    return (buf[:cut], buf[cut:]) if cut else (None, buf)


def _record_cut(buf: bytes) -> int:
    """The length of the longest prefix of ``buf`` that ends with a line feed outside quotes (0 if none).

    A quote character opens or closes a quoted field, so a line feed is outside quotes when an even number of
    them precede it in the block (every block starts at a record start). A stray quote inside an unquoted field
    can mislead this count; the cut then falls inside a quoted field and the parser refuses the block (an open
    quote at its end), so the caller reads the whole file instead."""
    if b'"' not in buf:
        return buf.rfind(b"\n") + 1
    b = np.frombuffer(buf, dtype=np.uint8)
    inside = np.cumsum(b == 34, dtype=np.uint8) & 1  # wraps mod 256: the parity survives
    ends = np.flatnonzero((b == 10) & (inside == 0))
    return int(ends[-1]) + 1 if ends.size else 0
