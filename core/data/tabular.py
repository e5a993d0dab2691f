"""CSV ingestion: detect a local file's format and read it into a float64 matrix in the schema's column order.

The fast path is pandas' C parser. A UTF-8 file of at most 1 GiB whose every column is needed is read in
one call, which pandas splits at line ends and parses on all cores, then copied into the matrix on two
threads; any other file is read chunk by chunk (only the needed columns) straight into one preallocated
matrix. Whatever the fast path refuses is read again chunk by chunk, and only a chunk in which the parser
refuses a cell is read again as text, to find the first bad cell and name its line, column and value (or
to accept what only a text reading accepts, such as "NA " with a trailing space). Every problem is a
:class:`~core.errors.DataError` with one sentence naming the file.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import re
import unicodedata
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import pandas as pd

from ..control import JobControl, ensure
from ..errors import ConfigError, DataError
from ..parallel import for_row_blocks
from .encoding import MISSING, UNKNOWN, UNSEEN_LEVEL, LevelCoder, encode
from .missing import LEGACY_MEAN, Filling, fill_code, fills, looks_missing, missing_token_hint, missing_token_set
from .ordering import natural_sorted


class Schema(Protocol):
    """What reading a site's rows needs of the project's schema (:class:`core.data.schema.Schema`)."""

    features: list[Any]
    feature_names: list[str]
    classes: list[str]
    label: str | None
    id_column: str | None
    width: int
    all_numeric: bool
    missing_tokens: list[str]

    def validate(self) -> None: ...

_T = TypeVar("_T")
_Opened = tuple["CsvFormat", list[str], int]

MISSING_TOKENS = ("", "NA", "N/A", "NaN", "nan", "?", "null")
DELIMITERS = (",", ";", "\t")
SAMPLE_BYTES = 1 << 20
_CHUNK_CELLS = 4_000_000
_WHOLE_READ_MAX_BYTES = 1 << 30  # up to 1 GiB a file is read in one call, on all cores; beyond it, chunk by chunk
_DETECT_ROWS = 200
_DEC_COMMA = re.compile(r"^\s*[+-]?\d*,\d+(?:[eE][+-]?\d+)?\s*$")
_DEC_POINT = re.compile(r"^\s*[+-]?\d*\.\d+(?:[eE][+-]?\d+)?\s*$")
_NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")
_JAPANESE = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff01-\uff5e]")
# What Windows-1252 accented text looks like when read as Shift_JIS: a kanji glued between two ASCII
# letters ("Temp" + kanji + "ature") or half-width katakana touching an ASCII letter.
_MISREAD_LATIN = re.compile(r"[A-Za-z][^\x00-\x7f][A-Za-z]|[A-Za-z][\uff61-\uff9f]|[\uff61-\uff9f][A-Za-z]")
_SEP_NAMES = {",": "comma", ";": "semicolon", "\t": "tab"}
_ENCODING_NAMES = {
    "utf-8": "UTF-8",
    "utf-8-sig": "UTF-8 (with BOM)",
    "utf-16": "UTF-16",
    "shift_jis": "Shift_JIS",
    "cp932": "Shift_JIS (Windows)",
    "cp1252": "Windows-1252",
}


@dataclass
class CsvOptions:
    """How to read a CSV; every ``None`` is detected from the file.

    ``impute`` is for kits made before the kit decided missing values (columns whose policy is "refuse"):
    ``None`` keeps a missing value an error; ``"mean"`` fills it with the mean of that column over this
    site's own rows (an explicit choice the caller should record). A column whose kit policy is "impute" is
    filled whatever this says.
    """

    encoding: str | None = None
    delimiter: str | None = None
    decimal: str | None = None
    missing_tokens: tuple[str, ...] = MISSING_TOKENS
    impute: str | None = None


@dataclass(frozen=True)
class CsvFormat:
    """The encoding, delimiter and decimal mark that were detected (or given) and used."""

    encoding: str
    delimiter: str
    decimal: str

    def describe(self) -> str:
        """Plain words, e.g. "UTF-8, separated by ';', decimal comma"."""
        sep = {",": "commas", ";": "semicolons", "\t": "tabs"}.get(self.delimiter, repr(self.delimiter))
        mark = "decimal comma" if self.decimal == "," else "decimal point"
        return f"{_ENCODING_NAMES.get(self.encoding, self.encoding)}, separated by {sep}, {mark}"


@dataclass
class LocalTable:
    """A site's rows read against the schema.

    Attributes
    ----------
    X : float64 (n, schema.width): the ENCODED matrix, columns in ``schema.encoded_names`` order, all finite.
    y : int64 indices into ``schema.classes``, or None.
    ids : str ids (stripped), or None.
    format : the CSV format that was used.
    n_imputed : how many feature cells were missing and filled (``sum(filled.values())``).
    source : the file that was read.
    filled : cells filled per raw column name (only columns with filled cells).
    fill_values : per imputed column, the value its missing cells get at this site (median or most frequent
        level, or the mean under the legacy ``CsvOptions.impute``, or the kit's value for a column with no value
        in the file); pass it back to :func:`read_table` to encode another file of this site exactly the same way.
    unseen : per typed column, the values the kit does not know and on how many rows each (they went to the
        column's unseen bucket, :mod:`core.data.encoding`).
    notes : plain sentences on what reading did that the site should hear before anything leaves: columns with no
        value filled with the kit's value, values sent to an unseen bucket.
    """

    X: np.ndarray
    y: np.ndarray | None
    ids: np.ndarray | None
    format: CsvFormat
    n_imputed: int
    source: Path
    filled: dict[str, int] = field(default_factory=dict)
    fill_values: dict[str, float | str] = field(default_factory=dict)
    unseen: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])


# ----------------------------------------------------------------------------------------------- format


def detect_format(path: str | Path, options: CsvOptions | None = None) -> CsvFormat:
    """Detect encoding, delimiter and decimal mark from the start of the file (options override each)."""
    options = options or CsvOptions()
    _check_options(options)
    return _open_csv(Path(path), options)[0]


def preview(
    path: str | Path, options: CsvOptions | None = None, nrows: int = 50
) -> tuple[pd.DataFrame, CsvFormat]:
    """The first ``nrows`` rows as text (header names stripped), and the format used to read them."""
    path = Path(path)
    options = options or CsvOptions()
    _check_options(options)

    def work(opened: _Opened) -> tuple[pd.DataFrame, CsvFormat]:
        fmt, header, _ = opened
        names = [_clean_name(h) for h in header]
        df = pd.DataFrame({i: pd.Series([], dtype=object) for i in range(len(header))})
        if nrows > 0:
            chunks = _iter_chunks(path, fmt, len(header), list(range(len(header))), chunk_rows=int(nrows))
            with contextlib.closing(chunks):
                df = next(chunks, (0, df))[1]
        df = df.fillna("")
        df.columns = names
        return df, fmt

    return _with_format(path, options, work)


def _check_options(options: CsvOptions) -> None:
    if options.encoding is not None:
        try:
            codecs.lookup(options.encoding)
        except LookupError as exc:
            raise ConfigError(f"unknown text encoding {options.encoding!r}") from exc
    if options.delimiter is not None and (len(options.delimiter) != 1 or options.delimiter in '"\r\n.'):
        raise ConfigError(f"{options.delimiter!r} cannot be used as the column separator")
    if options.decimal is not None and options.decimal not in (".", ","):
        raise ConfigError(f"the decimal mark must be '.' or ',', not {options.decimal!r}")
    if options.decimal is not None and options.decimal == options.delimiter:
        raise ConfigError("the decimal mark and the column separator cannot be the same character")
    if isinstance(options.missing_tokens, str) or not all(isinstance(t, str) for t in options.missing_tokens):
        raise ConfigError("the missing-value markers must be a list of strings")
    if options.impute not in (None, "mean"):
        raise ConfigError(f"unknown imputation {options.impute!r}; the choices are none or 'mean'")


def _open_csv(path: Path, options: CsvOptions) -> tuple[CsvFormat, list[str], int]:
    """Detect the format and read the header; returns (format, raw header fields, row-count estimate)."""
    sample, complete, size = _read_sample(path)
    encoding = options.encoding or _detect_encoding(lambda: iter([sample]), complete, path)
    return _format_from_sample(path, sample, complete, size, encoding, options)


def _with_format(path: Path, options: CsvOptions, work: Callable[[_Opened], _T]) -> _T:
    """Run ``work((format, header, row estimate))``.

    If a later part of the file is not in the encoding detected from its start, detect again on the whole
    file and run once more.
    """
    sample, complete, size = _read_sample(path)
    encoding = options.encoding or _detect_encoding(lambda: iter([sample]), complete, path)
    name = _ENCODING_NAMES.get(encoding, encoding)
    try:
        return work(_format_from_sample(path, sample, complete, size, encoding, options))
    except UnicodeDecodeError as exc:
        if options.encoding is not None or complete:
            raise DataError(f"the file is not valid {name} text", path=path) from exc
    encoding2 = _detect_encoding(_file_blocks(path), True, path)
    if encoding2 == encoding:
        raise DataError(f"the file is not valid {name} text beyond its first megabyte", path=path)
    try:
        return work(_format_from_sample(path, sample, complete, size, encoding2, options))
    except UnicodeDecodeError as exc:
        raise DataError("the file mixes text encodings; save it again as UTF-8", path=path) from exc


def _format_from_sample(
    path: Path, sample: bytes, complete: bool, size: int, encoding: str, options: CsvOptions
) -> tuple[CsvFormat, list[str], int]:
    dec = codecs.getincrementaldecoder(encoding)("replace")
    text = dec.decode(sample, final=complete)
    if not complete:  # the last line may be cut
        text = text[: max(text.rfind("\n"), text.rfind("\r")) + 1] or text
    allowed = tuple(d for d in DELIMITERS if d != options.decimal)
    delimiter = options.delimiter or _detect_delimiter(text, allowed)
    rows = _sample_rows(text, delimiter, _DETECT_ROWS + 1)
    if not rows:
        raise DataError("the file has no header row", path=path)
    header = rows[0]
    decimal = options.decimal or _detect_decimal(rows[1:], delimiter)
    newlines = max(sample.count(b"\n"), sample.count(b"\r"), 1)
    est = int(size / (len(sample) / newlines) * 1.25) + 64
    return CsvFormat(encoding, delimiter, decimal), header, est


def _read_sample(path: Path) -> tuple[bytes, bool, int]:
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            sample = fh.read(SAMPLE_BYTES)
            complete = not fh.read(1)
    except FileNotFoundError as exc:
        raise DataError("file not found", path=path) from exc
    except IsADirectoryError as exc:
        raise DataError("this is a folder, not a CSV file", path=path) from exc
    except OSError as exc:
        raise DataError(f"the file cannot be read ({exc.strerror or exc})", path=path) from exc
    if not sample.strip():
        raise DataError("the file is empty", path=path)
    return sample, complete, size


def _decodes(blocks: Callable[[], Iterator[bytes]], encoding: str, complete: bool) -> str | None:
    """Strictly decode the blocks; returns evidence text (first block, first non-ASCII block) or None."""
    dec = codecs.getincrementaldecoder(encoding)("strict")
    evidence: list[str] = []
    try:
        for i, block in enumerate(blocks()):
            t = dec.decode(block)
            if i == 0 or (len(evidence) < 2 and not t.isascii()):
                evidence.append(t)
        if complete:
            dec.decode(b"", final=True)
    except UnicodeDecodeError:
        return None
    return "".join(evidence)


def _detect_encoding(blocks: Callable[[], Iterator[bytes]], complete: bool, path: Path) -> str:
    """UTF-8 (BOM or not), else Shift_JIS (or Windows cp932) if it reads as Japanese, else cp1252."""
    first = next(blocks(), b"")
    if first.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    if _decodes(blocks, "utf-8", complete) is not None:
        return "utf-8"
    japanese = None
    for enc in ("shift_jis", "cp932"):
        text = _decodes(blocks, enc, complete)
        if text is not None:
            japanese = enc
            if _JAPANESE.search(text) and not _MISREAD_LATIN.search(text):
                return enc
            break
    if _decodes(blocks, "cp1252", complete) is not None:
        return "cp1252"
    if japanese is not None:
        return japanese
    raise DataError("the file is not UTF-8, Shift_JIS or Windows-1252 text; choose its encoding", path=path)


def _file_blocks(path: Path) -> Callable[[], Iterator[bytes]]:
    def gen() -> Iterator[bytes]:
        with open(path, "rb") as fh:
            while block := fh.read(SAMPLE_BYTES * 8):
                yield block

    return gen


def _sample_rows(text: str, delimiter: str, n: int) -> list[list[str]]:
    rows = []
    try:
        for row in csv.reader(io.StringIO(text), delimiter=delimiter):
            if row and any(c.strip() for c in row) or len(row) > 1:
                rows.append(row)
                if len(rows) >= n:
                    break
    except csv.Error:
        pass
    return rows


def _detect_delimiter(text: str, allowed: tuple[str, ...]) -> str:
    """The delimiter that splits the header into several fields and the most rows into as many."""
    best, best_score = allowed[0], (False, 0.0, 0)
    for d in allowed:
        rows = _sample_rows(text, d, _DETECT_ROWS + 1)
        if not rows:
            continue
        n = len(rows[0])
        body = rows[1:]
        consistent = sum(len(r) == n for r in body) / len(body) if body else 1.0
        score = (n > 1, round(consistent, 2), n)
        if score > best_score:
            best, best_score = d, score
    return best


def _detect_decimal(rows: list[list[str]], delimiter: str) -> str:
    """The decimal mark: "," only if the delimiter allows it and numeric-looking cells mostly use a comma."""
    if delimiter == ",":
        return "."
    comma = point = 0
    for row in rows:
        for cell in row:
            if _DEC_COMMA.match(cell):
                comma += 1
            elif _DEC_POINT.match(cell):
                point += 1
    return "," if comma > point else "."


def _clean_name(name: str) -> str:
    """A header name as matched against the schema: BOM and surrounding whitespace removed."""
    return name.replace("\ufeff", "").strip()


def _fold(name: str) -> str:
    """A column name without case, accents and surrounding spaces ("Cholestérol " → "cholesterol")."""
    decomposed = unicodedata.normalize("NFKD", name.strip().casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def near_name(wanted: str, names: Iterable[str]) -> str | None:
    """The one name in ``names`` that differs from ``wanted`` only in case or accents, if any."""
    target = _fold(wanted)
    found = [n for n in names if n != wanted and _fold(n) == target]
    return found[0] if len(found) == 1 else None


def _quote(value: Any, limit: int = 40) -> str:
    s = str(value)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return "'" + s.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + "'"


def _quote_list(values: Iterable[str], limit: int = 10) -> str:
    values = list(values)
    shown = ", ".join(_quote(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


# ------------------------------------------------------------------------------------------ chunked read


def _csv_kwargs(
    fmt: CsvFormat, n_columns: int, usecols: list[int] | None, floats: Iterable[int], tokens: Iterable[str]
) -> dict[str, Any]:
    """Arguments for pandas' C parser; columns are named by file position, text columns stay Python str.

    ``floats``: columns read as numbers. Their type is left to pandas' inference (a forced float64 costs ~25 %
    more parsing): a column of numbers comes back int64 or float64, anything else (a word, a boolean) makes the
    column another type, which the caller refuses (:meth:`_TableReader._features`) and reads again as text."""
    floats = set(floats)
    tokens = list(dict.fromkeys(v for t in tokens for v in (t, t.lower(), t.upper(), t.title())))  # case variants
    cols = range(n_columns) if usecols is None else usecols
    return dict(
        sep=fmt.delimiter,
        decimal=fmt.decimal,
        encoding=fmt.encoding,
        encoding_errors="strict",
        engine="c",
        header=0,
        names=list(range(n_columns)),
        usecols=usecols,
        index_col=False,
        dtype={i: object for i in cols if i not in floats},
        na_values={i: tokens for i in floats},
        keep_default_na=False,
        skip_blank_lines=True,
        # text reading: "   " reads as "" (missing). The fast float reading leaves it off (it costs ~15 % of the
        # parse): pandas' float conversion skips the spaces around " 2.5 " itself, labels and ids are stripped
        # later, and a cell of spaces only (or " NA") is refused, so its chunk is read again as text.
        skipinitialspace=not floats,
        quotechar='"',
        doublequote=True,
    )


def _iter_chunks(
    path: Path,
    fmt: CsvFormat,
    n_columns: int,
    usecols: list[int],
    *,
    floats: Iterable[int] = (),
    tokens: Iterable[str] = (),
    chunk_rows: int | None = None,
    resume: tuple[int, int] | None = None,
) -> Iterator[tuple[int, pd.DataFrame]]:
    """Yield (first data-row index, chunk); columns keyed by file position, ``floats`` as float64.

    ``resume=(row, byte offset)`` starts at a data row whose first byte is known (header already read).
    A row with more fields than the header is an error. pandas checks that itself only when it reads every
    column, so when some columns are skipped the file's bytes are scanned for such a row first.
    """
    usecols = sorted(set(usecols))
    chunk_rows = chunk_rows or max(1000, _CHUNK_CELLS // max(len(usecols), 1))
    partial: list[int] | None = usecols if len(usecols) < n_columns else None
    if partial is not None and fmt.encoding == "utf-16":  # its bytes cannot be scanned; read every column
        partial = None
    if partial is not None and resume is None and _has_long_record(path, fmt, n_columns):
        raise _long_record_error(path, fmt, n_columns)
    kwargs = _csv_kwargs(fmt, n_columns, partial, floats, tokens)
    start = 0
    source: Any = path
    if resume is not None:
        start, offset = resume
        source = open(path, "rb")  # closed in the finally clause below
        source.seek(offset)
        kwargs["header"] = None
    try:
        with pd.read_csv(source, chunksize=chunk_rows, **kwargs) as reader:
            chunks = iter(reader)
            while True:
                with warnings.catch_warnings():
                    # pandas only warns (and drops data) when the first data row is longer than the header
                    warnings.simplefilter("error", pd.errors.ParserWarning)
                    chunk = next(chunks, None)
                if chunk is None:
                    break
                yield start, chunk
                start += len(chunk)
    except pd.errors.ParserWarning as exc:
        if "Length of header" in str(exc):
            raise _long_record_error(path, fmt, n_columns) from exc
        raise DataError(f"the file cannot be read ({exc})", path=path) from exc
    except pd.errors.ParserError as exc:
        raise _read_error(exc, path, fmt, n_columns) from exc
    except pd.errors.EmptyDataError as exc:
        if resume is None:
            raise DataError("the file is empty", path=path) from exc
    finally:
        if resume is not None:
            source.close()


def _has_quote(path: Path, block: int = 1 << 22) -> bool:
    with open(path, "rb") as fh:
        while buf := fh.read(block):
            if b'"' in buf:
                return True
    return False


def _skip_lines(path: Path, fmt: CsvFormat, offset: int, n: int, block: int = 1 << 22) -> int:
    """The byte offset just after the next ``n`` non-blank lines from ``offset`` (a line start).

    In a file without quote characters a record is a non-blank line, for pandas and here alike.
    """
    content = np.ones(256, dtype=bool)
    content[list(" \t\r\n\f\v".replace(fmt.delimiter, "").encode("ascii"))] = False
    pos = offset
    open_content = False  # the line that runs into this block already has content
    with open(path, "rb") as fh:
        fh.seek(offset)
        while n > 0 and (buf := fh.read(block)):
            b = np.frombuffer(buf, dtype=np.uint8)
            ends = np.flatnonzero((b == 10) | (b == 13))
            counts = np.cumsum(content[b], dtype=np.int64)
            if ends.size:
                at_ends = counts[ends]
                per_line = np.diff(at_ends, prepend=0)
                has = per_line > 0
                has[0] |= open_content
                lines = np.flatnonzero(has)
                if lines.size >= n:
                    return pos + int(ends[lines[n - 1]]) + 1
                n -= lines.size
                open_content = bool(counts[-1] > at_ends[-1])
            else:
                open_content = open_content or bool(counts[-1] > 0)
            pos += len(buf)
    return pos


def _has_long_record(path: Path, fmt: CsvFormat, n_columns: int, block: int = 1 << 22) -> bool:
    """Whether any record has more than ``n_columns`` fields, by counting delimiters outside quotes.

    Vectorised over raw bytes: valid for ASCII-compatible encodings whose multibyte characters never use
    the bytes of '"', the delimiter, CR or LF (UTF-8, Shift_JIS, cp932, cp1252).
    """
    delim = fmt.delimiter.encode("ascii")[0]
    limit = n_columns - 1
    quote_parity = 0
    carried = 0  # delimiters seen since the last record end, from earlier blocks
    with open(path, "rb") as fh:
        while buf := fh.read(block):
            b = np.frombuffer(buf, dtype=np.uint8)
            if quote_parity or buf.find(b'"') >= 0:
                inside = np.cumsum(b == 34, dtype=np.uint8)  # wraps mod 256: parity survives
                inside += quote_parity
                inside &= 1
                quote_parity = int(inside[-1])
                outside = inside == 0
                d = (b == delim) & outside
                ends = np.flatnonzero(((b == 10) | (b == 13)) & outside)
            else:
                d = b == delim
                ends = np.flatnonzero((b == 10) | (b == 13))
            if ends.size == 0:
                carried += int(np.count_nonzero(d))
                if carried > limit:
                    return True
                continue
            starts = np.concatenate(([0], ends[:-1] + 1))
            counts = np.add.reduceat(d, starts, dtype=np.int64)
            tail = int(np.count_nonzero(d[ends[-1] + 1 :]))
            counts[-1] -= tail
            counts[0] += carried
            if int(counts.max()) > limit:
                return True
            carried = tail
    return carried > limit


def _text_to_numbers(
    series: pd.Series, decimal: str, tokens: frozenset[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse text cells: (float64 values with NaN where missing or bad, missing mask, bad mask).

    A cell is missing if it is absent (short row) or, stripped, one of the tokens; it is bad if it is not
    missing and is not a number written with ``decimal`` as the decimal mark. Most cells are plain numbers,
    so everything is parsed at once and only the cells that did not parse are looked at one by one.
    """
    raw = series.to_numpy(dtype=object)
    if decimal == ",":  # "1,5" -> "1.5"; a point is wrong here ("1.234" could be a thousands mark)
        work = np.array(
            [v.replace(",", ".") if isinstance(v, str) and "." not in v else "" for v in raw], dtype=object
        )
    else:
        work = raw
    values = pd.to_numeric(pd.Series(work, dtype=object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan, copy=True
    )
    missing = np.zeros(len(raw), dtype=bool)
    numeric_tokens = [t for t in tokens if _NUMBER.match(t)]
    if numeric_tokens:  # e.g. -999 as a missing-value marker parses as a number
        missing |= np.isin(
            np.array([v.strip() if isinstance(v, str) else "" for v in raw], dtype=object), numeric_tokens
        )
    bad = np.zeros(len(raw), dtype=bool)
    retry: list[int] = []
    for i in np.flatnonzero(np.isnan(values)).tolist():
        v = raw[i]
        s = v.strip() if isinstance(v, str) else None
        if s is None or s.casefold() in tokens:
            missing[i] = True
        elif decimal == "," and "." in s:
            bad[i] = True
        else:
            retry.append(i)
    if retry:
        texts = [raw[i].strip().replace(",", ".") if decimal == "," else raw[i].strip() for i in retry]
        again = pd.to_numeric(pd.Series(texts, dtype=object), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan
        )
        values[retry] = again
        bad[np.asarray(retry)[np.isnan(again)]] = True
    values[missing | bad] = np.nan
    return values, missing, bad


class _Growable:
    """Rows appended chunk by chunk to one preallocated array (untouched capacity costs no memory)."""

    def __init__(self, capacity: int, width: int | None, dtype: Any):
        self.width = width
        self.array = np.empty((capacity,) if width is None else (capacity, width), dtype=dtype)
        self.n = 0

    @classmethod
    def full(cls, array: np.ndarray) -> _Growable:
        """One already filled in a single step (the whole-file reading)."""
        out = cls(0, None if array.ndim == 1 else array.shape[1], array.dtype)
        out.array, out.n = array, array.shape[0]
        return out

    def take(self, k: int) -> np.ndarray:
        """A writable view of the next ``k`` rows."""
        need = self.n + k
        if need > self.array.shape[0]:
            rows = max(need, int(self.array.shape[0] * 1.5))
            grown = np.empty((rows,) + self.array.shape[1:], self.array.dtype)
            grown[: self.n] = self.array[: self.n]
            self.array = grown
        view = self.array[self.n : need]
        self.n = need
        return view

    def finish(self) -> np.ndarray:
        shape = (self.n,) if self.width is None else (self.n, self.width)
        try:
            self.array.resize(shape, refcheck=False)
        except ValueError:
            self.array = self.array[: self.n].copy()
        return self.array


def _rows_from_columns(columns: list[np.ndarray], out: np.ndarray, block: int = 16384) -> None:
    """out[:, j] = columns[j] (:func:`_columns_into_rows`), row blocks shared by two threads (numpy copies without
    the GIL; the block-wise order keeps each thread's writes in one region of the row-major matrix)."""
    for_row_blocks(out.shape[0], lambda start, stop: _columns_into_rows(columns, out, start, stop), block=block,
                   blas=False)


def _columns_into_rows(columns: list[np.ndarray], out: np.ndarray, start: int = 0, stop: int | None = None) -> None:
    """out[start:stop, j] = columns[j][start:stop], a few thousand rows at a time: each piece of the row-major
    matrix stays in the cache while every column is written into it (a column at a time over all rows would fetch
    every row's cache line once per column)."""
    stop = out.shape[0] if stop is None else stop
    for lo in range(start, stop, 4096):
        rows = out[lo:min(lo + 4096, stop)]
        for j, col in enumerate(columns):
            rows[:, j] = col[lo:lo + len(rows)]


class _FastPathRefused(Exception):
    """pandas' float parser refused a cell; read again as text to find it."""


# -------------------------------------------------------------------------------------------- read_table


def read_table(
    path: str | Path,
    schema: Schema,
    *,
    options: CsvOptions | None = None,
    labels: bool = True,
    ids: bool = False,
    control: JobControl | None = None,
    fill_values: dict[str, float | str] | None = None,
) -> LocalTable:
    """Read a local CSV against the schema into the kit's encoded matrix (:mod:`core.data.encoding`).

    Columns are matched by name (any order, extra columns ignored). ``labels`` reads the schema's label
    column into class indices (ignored when the schema has no label); ``ids`` reads the id column.
    Missing cells follow each column's policy; ``fill_values`` (a :attr:`LocalTable.fill_values` of an earlier
    reading) are used instead of this file's own medians / most frequent levels.
    Raises DataError with one sentence naming the line, column and value of the first problem.
    """
    path = Path(path)
    options = options or CsvOptions()
    _check_options(options)
    schema.validate()
    if ids and schema.id_column is None:
        raise ConfigError("the project's schema has no id column")
    control = ensure(control)
    given = dict(fill_values or {})
    by_name = {f.name: f for f in schema.features}
    for name, value in given.items():
        if name in by_name:
            fill_code(by_name[name], value)  # DataError if it does not fit the column
    return _with_format(
        path, options, lambda opened: _read_opened(path, schema, options, opened, labels, ids, control, given)
    )


def _read_opened(
    path: Path,
    schema: Schema,
    options: CsvOptions,
    opened: tuple[CsvFormat, list[str], int],
    labels: bool,
    ids: bool,
    control: JobControl,
    fill_values: dict[str, float | str],
) -> LocalTable:
    fmt, header, est_rows = opened
    names = [_clean_name(h) for h in header]
    positions: dict[str, int] = {}
    repeated: set[str] = set()
    for i, n in enumerate(names):
        if n in positions:
            repeated.add(n)
        positions.setdefault(n, i)
    label_col = schema.label if labels else None
    id_col = schema.id_column if ids else None
    needed = schema.feature_names + [c for c in (label_col, id_col) if c is not None]
    absent = [c for c in needed if c not in positions]
    if absent:
        what = "column" if len(absent) == 1 else "columns"
        have = _quote_list(names, 20)
        hints = [f"{_quote(a)} → did you mean {_quote(near)}?" for a in absent
                 if (near := near_name(a, names)) is not None]
        raise DataError(
            f"the file has no {what} {_quote_list(absent, len(absent))} (its columns are {have})"
            + (f"; {'; '.join(hints)}" if hints else ""), path=path
        )
    twice = [c for c in needed if c in repeated]
    if twice:
        raise DataError(f"column {_quote(twice[0])} appears more than once in the header", path=path)

    args = (path, schema, options, fmt, header, positions, label_col, id_col, est_rows, control)
    reader = _TableReader(*args)
    reader.read()
    return reader.result(fill_values)


class _TableReader:
    """One pass over the file: fills X (and y, ids) chunk by chunk and remembers the first problems."""

    def __init__(
        self,
        path: Path,
        schema: Schema,
        options: CsvOptions,
        fmt: CsvFormat,
        header: list[str],
        positions: dict[str, int],
        label_col: str | None,
        id_col: str | None,
        est_rows: int,
        control: JobControl,
    ):
        self.path, self.schema, self.options, self.fmt, self.header = path, schema, options, fmt, header
        self.control = control
        self.est_rows = est_rows
        numeric = [f for f in schema.features if not f.typed]
        typed = [f for f in schema.features if f.typed]
        self.num_cols = numeric
        self.num_names = [f.name for f in numeric]
        self.feat_pos = [positions[f.name] for f in numeric]  # the numeric columns (the fast path's)
        self.typed_cols = typed
        self.typed_pos = [positions[f.name] for f in typed]
        tokens = (*options.missing_tokens, *schema.missing_tokens)  # the site's markers and the kit's
        self.coders = [LevelCoder(f, tokens, fmt.decimal) for f in typed]
        self.label_pos = positions[label_col] if label_col is not None else None
        self.id_pos = positions[id_col] if id_col is not None else None
        self.tokens = missing_token_set(tokens)  # compared stripped and case-folded
        n_used = len(self._used())
        self.fast_rows = 8 * max(100, _CHUNK_CELLS // 8 // n_used)
        self._cursor: tuple[int, int] | None = None  # a (data row, byte offset) pair already found
        self.X = _Growable(est_rows, len(self.feat_pos), np.float64)  # the numeric columns, raw
        self.codes = _Growable(est_rows, len(typed), np.int64)  # the typed columns' level codes
        self.first_missing_typed: tuple[int, int] | None = None  # (row, typed index), refusing columns only
        self.refusing = np.array([f.missing == "refuse" for f in numeric], dtype=bool)
        self.y = _Growable(est_rows, None, np.int64) if self.label_pos is not None else None
        self.id_parts: list[np.ndarray] = []
        self.missing_per_col = np.zeros(len(self.feat_pos), dtype=np.int64)
        self.sums = np.zeros(len(self.feat_pos), dtype=np.float64)
        self.first_missing: tuple[int, int] | None = None  # (row, feature index)
        self.first_missing_label: int | None = None
        self.first_empty_id: int | None = None
        self.unknown: dict[str, int] = {}  # unknown label -> rows
        self.unseen: list[dict[str, int]] = [{} for _ in typed]  # per typed column: unknown value -> rows
        self.label_coder = LevelCoder.of_levels(schema.classes, self.tokens, fmt.decimal)  # read like a level

    def _used(self) -> set[int]:
        return {*self.feat_pos, *self.typed_pos, *(p for p in (self.label_pos, self.id_pos) if p is not None)}

    # -- the pass

    def read(self) -> None:
        """Read the whole file: fast chunks, and a text-parsed chunk wherever pandas refuses a cell.

        A refused chunk is either where the first bad cell is (found and reported from the text) or holds
        cells only the text reading accepts (e.g. "NA " with a trailing space). In a file without quote
        characters the chunk is re-read from its byte offset and the fast reading resumes after it;
        otherwise the rest of the file is read as text.
        """
        if self._read_whole():
            return
        resume: tuple[int, int] | None = None
        quote_free: bool | None = None
        while True:
            try:
                self.run(text=False, resume=resume)
                return
            except _FastPathRefused:
                pass
            row = self.X.n  # every row before the refused chunk is stored
            if quote_free is None:
                quote_free = self.fmt.encoding != "utf-16" and not _has_quote(self.path)
            if not quote_free:
                self.run(text=True, skip=row)
                return
            if self.run(text=True, resume=(row, self._offset_of(row)), stop=row + self.fast_rows):
                return
            resume = (self.X.n, self._offset_of(self.X.n))

    def _read_whole(self) -> bool:
        """The fast path for a UTF-8 file of at most :data:`_WHOLE_READ_MAX_BYTES` whose every column is used:
        one pandas read of the whole file (pandas splits it at line ends and parses the pieces on all cores),
        then one copy into the row-major matrix on two threads. Returns False, with nothing stored, whenever
        that reading refuses anything (a cell that is not a number, a malformed line, a warning): the chunked
        reading then runs from the start and names the problem as before. No progress is shown within it; a
        cancel is honoured as soon as it ends."""
        n_cols = len(self.header)
        used = self._used()
        if self.fmt.encoding not in ("utf-8", "utf-8-sig") or len(used) != n_cols \
                or self.path.stat().st_size > _WHOLE_READ_MAX_BYTES:
            return False
        self.control.step(0.0, "reading rows")
        kwargs = _csv_kwargs(self.fmt, n_cols, None, self.feat_pos, self.tokens)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", pd.errors.ParserWarning)
                frame = pd.read_csv(self.path, **kwargs)
        except UnicodeDecodeError:
            raise
        except (ValueError, pd.errors.ParserWarning, pd.errors.ParserError, pd.errors.EmptyDataError):
            return False
        if any(frame[pos].dtype.kind not in "iuf" for pos in self.feat_pos):
            return False
        self.control.check()
        n = len(frame)
        X = np.empty((n, len(self.feat_pos)), dtype=np.float64)
        _rows_from_columns([frame[pos].to_numpy() for pos in self.feat_pos], X)
        self.X = _Growable.full(X)
        for start in range(0, n, self.fast_rows):
            self._check_rows(start, X[start:start + self.fast_rows])
        if self.typed_pos:
            self._typed(0, frame)
        if self.label_pos is not None:
            self._labels(0, frame[self.label_pos])
        if self.id_pos is not None:
            self._ids(0, frame[self.id_pos])
        self.control.step(1.0, f"read {n:,} rows")
        return True

    def _offset_of(self, row: int) -> int:
        """Byte offset of data row ``row`` (quote-free files only), scanning on from the last one found."""
        if self._cursor is None:
            self._cursor = (0, _skip_lines(self.path, self.fmt, 0, 1))  # past the header
        known_row, known_offset = self._cursor
        offset = _skip_lines(self.path, self.fmt, known_offset, row - known_row)
        self._cursor = (row, offset)
        return offset

    def run(
        self, *, text: bool, skip: int = 0, resume: tuple[int, int] | None = None, stop: int | None = None
    ) -> bool:
        """One reading pass; True once the end of the file is reached.

        ``text`` parses feature cells as text. ``skip``: rows already stored (they are parsed again but not
        kept); ``resume``: (row, byte offset) to start at instead; ``stop``: return after this many rows.
        In the fast mode a refused cell raises :class:`_FastPathRefused` at a chunk boundary, with every
        earlier row stored.
        """
        usecols = sorted(self._used())
        floats = () if text else self.feat_pos
        n_cols = len(self.header)
        rows = (
            self.fast_rows // 8 if text else self.fast_rows
        )  # text cells are Python strings: smaller chunks
        chunks = _iter_chunks(
            self.path,
            self.fmt,
            n_cols,
            usecols,
            floats=floats,
            tokens=self.tokens,
            chunk_rows=rows,
            resume=resume,
        )
        if not skip and resume is None:
            self.control.step(0.0, "reading rows")
        with contextlib.closing(chunks):
            while True:
                try:
                    item = next(chunks, None)
                except UnicodeDecodeError:
                    raise
                except ValueError as exc:
                    if text:
                        raise
                    raise _FastPathRefused() from exc
                if item is None:
                    break
                start, chunk = item
                if start + len(chunk) <= skip:
                    continue
                if start < skip:
                    chunk, start = chunk.iloc[skip - start :], skip
                self._features(start, chunk, text)
                if self.label_pos is not None:
                    self._labels(start, chunk[self.label_pos])
                if self.id_pos is not None:
                    self._ids(start, chunk[self.id_pos])
                fraction = min(1.25 * self.X.n / self.est_rows, 0.99)
                self.control.step(fraction, f"read {self.X.n:,} rows")
                if stop is not None and self.X.n >= stop:
                    return False
        self.control.step(1.0, f"read {self.X.n:,} rows")
        return True

    def _features(self, start: int, chunk: pd.DataFrame, text: bool) -> None:
        k = len(chunk)
        if not text and any(chunk[pos].dtype.kind not in "iuf" for pos in self.feat_pos):
            raise _FastPathRefused()  # a cell pandas did not read as a number: this chunk is read again as text
        block = self.X.take(k)
        if text:  # filled one contiguous row per feature, then copied into the row-major block in one go
            cols = np.empty((len(self.feat_pos), k), dtype=np.float64)
            for j, pos in enumerate(self.feat_pos):
                values, _, bad = _text_to_numbers(chunk[pos], self.fmt.decimal, self.tokens)
                if bad.any():
                    self._raise_bad_in_chunk(start, chunk)
                cols[j] = values
            block[:] = cols.T
            del cols
        else:  # the columns copied into the row-major block a few thousand rows at a time (cache-sized pieces)
            _columns_into_rows([chunk[pos].to_numpy() for pos in self.feat_pos], block)
        self._check_rows(start, block)
        if self.typed_pos:
            self._typed(start, chunk)

    def _typed(self, start: int, chunk: pd.DataFrame) -> None:
        """Level codes of the typed columns (stored); a value the kit does not know goes to the column's unseen
        bucket and is counted (:attr:`LocalTable.unseen`)."""
        k = len(chunk)
        cols = np.empty((len(self.typed_pos), k), dtype=np.int64)
        for j, (pos, coder) in enumerate(zip(self.typed_pos, self.coders, strict=True)):
            raw = chunk[pos].to_numpy(dtype=object)
            cols[j] = coder.codes(raw)
            hit = cols[j] == UNKNOWN
            if hit.any():
                seen = self.unseen[j]
                for value, n in pd.Series(raw[hit]).astype(str).str.strip().value_counts().items():
                    seen[value] = seen.get(value, 0) + int(n)
        if self.first_missing_typed is None:
            refusing = [j for j, f in enumerate(self.typed_cols) if f.missing == "refuse"]
            miss = cols[refusing] == MISSING
            if miss.any():
                r = int(np.flatnonzero(miss.any(axis=0))[0])
                jj = min(np.flatnonzero(miss[:, r]).tolist(), key=lambda i: self.typed_pos[refusing[i]])
                self.first_missing_typed = (start + r, refusing[jj])
        self.codes.take(k)[:] = cols.T

    def _check_rows(self, start: int, block: np.ndarray) -> None:
        """Column sums for imputation, missing cells counted (the first one remembered), an infinite value
        refused with its line; ``block`` holds data rows ``start`` onwards, already stored in X."""
        sums = block.sum(axis=0)
        if np.isfinite(sums).all():  # no NaN and no inf in this chunk
            self.sums += sums
            return
        nan = np.isnan(block)
        if nan.any():
            self.missing_per_col += nan.sum(axis=0)
            refused = nan & self.refusing
            if self.first_missing is None and refused.any():
                r = int(np.flatnonzero(refused.any(axis=1))[0])
                j = int(min(np.flatnonzero(refused[r]), key=lambda jj: self.feat_pos[jj]))
                self.first_missing = (start + r, j)
        inf = np.isinf(block)
        if inf.any():
            r = int(np.flatnonzero(inf.any(axis=1))[0])
            j = int(min(np.flatnonzero(inf[r]), key=lambda jj: self.feat_pos[jj]))
            line, fields = _locate(self.path, self.fmt, start + r)
            pos = self.feat_pos[j]
            value = fields[pos] if pos < len(fields) else str(block[r, j])
            raise DataError(
                f"line {line}, column {_quote(self.num_names[j])}: {_quote(value.strip())} "
                "is not a finite number",
                path=self.path,
            )
        self.sums += np.where(nan, 0.0, block).sum(axis=0)

    def _raise_bad_in_chunk(self, start: int, chunk: pd.DataFrame) -> None:
        """Raise for the first bad cell of the chunk in file order (earliest row, then leftmost column)."""
        best: tuple[int, int, int] | None = None  # (row, file position, feature index)
        for j, pos in enumerate(self.feat_pos):
            _, _, bad = _text_to_numbers(chunk[pos], self.fmt.decimal, self.tokens)
            hit = np.flatnonzero(bad)
            if hit.size and (best is None or (int(hit[0]), pos) < best[:2]):
                best = (int(hit[0]), pos, j)
        assert best is not None
        row, pos, j = best
        value = chunk[pos].iloc[row]
        line, _ = _locate(self.path, self.fmt, start + row)
        text = str(value).strip()
        point_number = self.fmt.decimal == "," and _NUMBER.match(text) is not None  # "1.5" in a decimal-comma file
        raise DataError(
            f"line {line}, column {_quote(self.num_names[j])}: {_quote(value)} is not a number"
            + (" (the decimal mark here is ',')" if point_number else f"; {missing_token_hint(text, named=False)}"),
            path=self.path,
        )

    def _labels(self, start: int, series: pd.Series) -> None:
        codes, uniques = pd.factorize(series, use_na_sentinel=True)
        lut = np.empty(len(uniques) + 1, dtype=np.int64)
        lut[-1] = MISSING
        for k, u in enumerate(uniques):
            lut[k] = self.label_coder.code(u)
        y = lut[codes]
        self.y.take(len(y))[:] = y
        if (lut[:-1] == UNKNOWN).any():
            counts = np.bincount(codes[codes >= 0], minlength=len(uniques))
            for k in np.flatnonzero(lut[:-1] == UNKNOWN):
                s = uniques[k].strip()
                self.unknown[s] = self.unknown.get(s, 0) + int(counts[k])
        if self.first_missing_label is None:
            hit = np.flatnonzero(y == MISSING)
            if hit.size:
                self.first_missing_label = start + int(hit[0])

    def _ids(self, start: int, series: pd.Series) -> None:
        s = series.fillna("").astype(str).str.strip()
        empty = (s == "").to_numpy()
        if self.first_empty_id is None and empty.any():
            self.first_empty_id = start + int(np.flatnonzero(empty)[0])
        self.id_parts.append(np.asarray(s.to_numpy(dtype=object), dtype=str))

    # -- the outcome

    def result(self, fill_values: dict[str, float | str]) -> LocalTable:
        path = self.path
        X = self.X.finish()
        codes = self.codes.finish()
        n = max(X.shape[0], codes.shape[0])
        if n == 0:
            raise DataError("the file has a header but no data rows", path=path)
        self._refuse_missing(codes)
        if self.y is not None:
            y = self.y.finish()
            if self.first_missing_label is not None:
                line, _ = _locate(path, self.fmt, self.first_missing_label)
                label = _quote(self.schema.label)
                raise DataError(f"line {line}: the label column {label} is empty", path=path)
            if self.unknown:

                bad = sorted(natural_sorted(self.unknown), key=lambda v: -self.unknown[v])  # most rows first
                count = sum(self.unknown.values())
                raise DataError(
                    f"the label column {_quote(self.schema.label)} has value{'s' if len(bad) > 1 else ''} "
                    f"{_quote_list(bad)} on {count:,} row{'s' if count != 1 else ''}, which the project does "
                    f"not know (its classes are {_quote_list(self.schema.classes, 30)})",
                    path=path,
                )
        else:
            y = None
        id_array = None
        if self.id_pos is not None:
            if self.first_empty_id is not None:
                line, _ = _locate(path, self.fmt, self.first_empty_id)
                col = _quote(self.schema.id_column)
                raise DataError(f"line {line}: the id column {col} is empty", path=path)
            id_array = np.concatenate(self.id_parts) if self.id_parts else np.empty(0, dtype=str)
        filled, used, masks, notes = self._fill(X, codes, fill_values)
        if not self.schema.all_numeric:
            num = iter(range(X.shape[1]))
            typ = iter(range(codes.shape[1]))
            columns = [codes[:, next(typ)] if f.typed else X[:, next(num)] for f in self.schema.features]
            X = encode(self.schema, columns, [masks.get(f.name) for f in self.schema.features])
        unseen = {f.name: dict(sorted(seen.items(), key=lambda kv: (-kv[1], kv[0])))
                  for f, seen in zip(self.typed_cols, self.unseen, strict=True) if seen}
        notes += [unseen_note(by_name, unseen[by_name.name]) for by_name in self.typed_cols if by_name.name in unseen]
        return LocalTable(X=X, y=y, ids=id_array, format=self.fmt, n_imputed=sum(filled.values()), source=path,
                          filled=filled, fill_values=used, unseen=unseen, notes=notes)

    def _fill(self, X: np.ndarray, codes: np.ndarray, given: dict[str, float | str]
              ) -> tuple[dict[str, int], dict[str, float | str], dict[str, np.ndarray], list[str]]:
        """Fill missing cells in place per column policy by the one missing-value rule
        (:class:`core.data.missing.Filling`): (cells filled per column, the value used per filled column, the
        filled rows of each column with an indicator, notes on columns filled with the kit's value). ``given``
        values win over this file's own (a column without missing cells here needs none, so none is computed: a
        median costs a pass). Every column that has no value here and nothing to fill it with is named in one
        DataError."""
        filling = Filling(given, legacy_mean=self.options.impute == "mean")
        masks: dict[str, np.ndarray] = {}
        for j, f in enumerate(self.num_cols):
            col = X[:, j]
            nan = np.isnan(col) if self.missing_per_col[j] else np.zeros(X.shape[0], dtype=bool)
            if f.indicator:
                masks[f.name] = nan
            if fills(f, filling.legacy_mean):
                filling.column(f, col, nan)
        for j, f in enumerate(self.typed_cols):
            col = codes[:, j]
            miss = col == MISSING
            if f.indicator:
                masks[f.name] = miss
            if fills(f):
                filling.column(f, col, miss)
        filled, used, notes = filling.finish(self.schema.feature_names, path=self.path)
        return filled, used, masks, notes

    def _refuse_missing(self, codes: np.ndarray) -> None:
        """Raise for the first missing cell, in file order, of a column whose kit policy refuses missing cells
        (numeric columns only when the legacy mean imputation is off)."""
        legacy = self.options.impute == "mean"
        refusing_num = int(self.missing_per_col[self.refusing].sum()) if not legacy else 0
        typed_refusing = [j for j, f in enumerate(self.typed_cols) if f.missing == "refuse"]
        refusing_typed = int((codes[:, typed_refusing] == MISSING).sum()) if typed_refusing else 0
        first: list[tuple[int, int, str, bool]] = []  # (row, file position, column name, numeric)
        if refusing_num and self.first_missing is not None:
            row, j = self.first_missing
            first.append((row, self.feat_pos[j], self.num_names[j], True))
        if refusing_typed and self.first_missing_typed is not None:
            row, j = self.first_missing_typed
            first.append((row, self.typed_pos[j], self.typed_cols[j].name, False))
        if not first:
            return
        row, pos, name, numeric = min(first)
        n_missing = refusing_num + refusing_typed
        path = self.path
        line, fields = _locate(path, self.fmt, row)
        raw = fields[pos].strip() if pos < len(fields) else None
        what = (
            "is missing (the row ends before it)"
            if raw is None
            else "is empty"
            if not raw
            else f"has the missing-value marker {_quote(raw)}"
        )
        others = n_missing - 1
        verb = "cells are" if others != 1 else "cell is"
        more = f", and {others:,} other {verb} missing too" if others else ""
        columns = [f.name for j, f in enumerate(self.num_cols) if self.refusing[j] and self.missing_per_col[j]
                   and not legacy] + [self.typed_cols[j].name for j in typed_refusing
                                      if (codes[:, j] == MISSING).any()]
        if len(columns) > 1:  # every column that refuses a missing cell here, named once
            order = {n: i for i, n in enumerate(self.schema.feature_names)}
            more += f" (in columns {_quote_list(sorted(columns, key=order.__getitem__), len(columns))})"
        if numeric and self.schema.all_numeric:
            fix = ("fix the file or fill missing values with your own column's mean (CLI: --impute; in the app: "
                   f"'{LEGACY_MEAN}')")
        else:
            fix = "fix the file (the kit refuses missing values in this column)"
        raise DataError(f"line {line}, column {_quote(name)} {what}{more}; {fix}", path=path)


def unseen_note(column: Any, seen: dict[str, int]) -> str:
    """The sentence a site reads for a typed column with values the kit does not know: which, on how many rows,
    that they went to the unseen bucket, and how to read one that is a missing-value code as missing."""
    rows = sum(seen.values())
    shown = ", ".join(f"{_quote(v)} ({k:,})" for v, k in list(seen.items())[:5]) + (
        f" and {len(seen) - 5} more" if len(seen) > 5 else "")
    where = {"categorical": "none of its levels", "binary": "read halfway between its two levels",
             "ordinal": "read at the middle of its scale"}.get(column.type, "its 'other' level")
    if getattr(column, "other", False):
        where = "its 'other' level"
    out = (f"column {_quote(column.name)}: {rows:,} row{'s' if rows != 1 else ''} hold{'s' if rows == 1 else ''} "
           f"a value the kit does not know ({shown}; its levels are {column.levels_text}): "
           f"{'they go' if rows != 1 else 'it goes'} to the column's unseen bucket {UNSEEN_LEVEL} ({where})")
    codes = [v for v in seen if looks_missing(v)]
    return out + (f"; {missing_token_hint(codes[0])}" if codes else "")


# ------------------------------------------------------------------------------------- locating problems


def _records(path: Path, fmt: CsvFormat) -> Iterator[tuple[int, str, bool]]:
    """Yield (first line number, raw text, closed) for each record, header first, skipping blank lines.

    Follows the C parser closely enough for messages: a record continues over line ends while an odd number
    of quote characters is open.
    """
    blank = " \t\r\n\f\v".replace(fmt.delimiter, "")
    with open(path, encoding=fmt.encoding, errors="replace", newline="") as fh:
        buf: list[str] = []
        start = 0
        open_quote = False
        for lineno, line in enumerate(fh, 1):
            if not buf:
                if not line.strip(blank):
                    continue
                start = lineno
            buf.append(line)
            if line.count('"') % 2:
                open_quote = not open_quote
            if not open_quote:
                yield start, "".join(buf), True
                buf = []
        if buf:
            yield start, "".join(buf), False


def data_records(path: str | Path, fmt: CsvFormat, *, stop_line: int | None = None,
                 max_records: int | None = None) -> Iterator[tuple[int, list[str]]]:
    """(first line number, fields) of every data record after the header, numbered as in the messages.

    Stops after the record starting at or past ``stop_line``, or after ``max_records`` records.
    """
    records = _records(Path(path), fmt)
    next(records, None)  # the header
    for count, (start, text, _closed) in enumerate(records, 1):
        yield start, _fields(text, fmt)
        if (stop_line is not None and start >= stop_line) or (max_records is not None and count >= max_records):
            return


def _fields(text: str, fmt: CsvFormat) -> list[str]:
    text = text.rstrip("\r\n")
    if '"' not in text:
        return text.split(fmt.delimiter)
    try:
        return next(csv.reader(io.StringIO(text), delimiter=fmt.delimiter), [])
    except csv.Error:
        return text.split(fmt.delimiter)


def _locate(path: Path, fmt: CsvFormat, row: int) -> tuple[int, list[str]]:
    """The line number and fields of data row ``row`` (0-based, header not counted)."""
    for i, (line, text, _) in enumerate(_records(path, fmt)):
        if i == row + 1:
            return line, _fields(text, fmt)
    return row + 2, []


def _long_record_error(path: Path, fmt: CsvFormat, n_header: int) -> DataError:
    """The error for the first record that has more fields than the header."""
    for i, (line, text, _) in enumerate(_records(path, fmt)):
        n = len(_fields(text, fmt))
        if i > 0 and n > n_header:
            return DataError(
                f"line {line} has {n} fields but the header has {n_header} "
                f"(is a {_SEP_NAMES.get(fmt.delimiter, repr(fmt.delimiter))} inside an unquoted value?)",
                path=path,
            )
    return DataError(f"a row has more fields than the {n_header} of the header", path=path)


def _read_error(exc: Exception, path: Path, fmt: CsvFormat, n_header: int) -> DataError:
    """Turn a pandas parser error into one sentence naming the line."""
    msg = str(exc)
    if "Expected" in msg and "fields" in msg:
        return _long_record_error(path, fmt, n_header)
    if "EOF inside string" in msg:
        for line, _, closed in _records(path, fmt):
            if not closed:
                return DataError(f"line {line} opens a quoted value that is never closed", path=path)
    first = msg.strip().splitlines()[0] if msg.strip() else exc.__class__.__name__
    sep = _SEP_NAMES.get(fmt.delimiter, repr(fmt.delimiter))
    return DataError(f"the file cannot be read as {sep}-separated text ({first})", path=path)
