"""The one sanitiser of text that crossed the air gap, before anyone sees it.

Names, notes, reasons and every other text a kit, bundle, package or card carries were typed by someone else, and an
error message may quote them. Shown raw, a control character (ESC/CSI sequences clear a terminal, move the cursor,
write fake lines or links), a bidirectional override (which reverses what follows on screen) or an invisible format
character can make a person read something other than what the file says. :func:`shown` makes text safe to show as
plain text: every such character becomes a visible escape (``\\x1b``, ``\\u202e``) and the text is cut to a length.
The CLI prints every line through it, the app's labels and the reports (which also escape their own markup: HTML in
report.html, Markdown in model cards) quote file text through it.
"""

from __future__ import annotations

import unicodedata

MAX_SHOWN = 300  # characters of one quoted value (a name, a note, a reason)
MAX_LINE = 4000  # characters of one printed line
# Format characters that are letters' business in some scripts (zero-width joiner and non-joiner) stay.
_KEEP = frozenset("\u200c\u200d")


def _unsafe(c: str) -> bool:
    """Control (Cc: C0, DEL, C1 incl. CSI), format (Cf: bidi embeddings, overrides, isolates and marks, zero-width
    and tag characters), line/paragraph separators (Zl, Zp) and lone surrogates (Cs)."""
    if c in _KEEP:
        return False
    return unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")


def _escape(c: str) -> str:
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def shown(value: object, limit: int = MAX_SHOWN) -> str:
    """``value`` as text safe to show: each unsafe character (:func:`_unsafe`) as a visible escape, then at most
    ``limit`` characters (the rest replaced by "… (N more characters)")."""
    text = value if isinstance(value, str) else str(value)
    if not text.isprintable() or any(_unsafe(c) for c in text):
        text = "".join(_escape(c) if _unsafe(c) else c for c in text)
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text) - limit:,} more characters)"
    return text


def shown_lines(text: object, limit: int = MAX_LINE) -> str:
    """Several lines of text to print: each line through :func:`shown` (the line breaks kept, nothing else)."""
    return "\n".join(shown(line, limit) for line in str(text).split("\n"))


def is_safe(text: str) -> bool:
    """Whether ``text`` holds no character :func:`shown` would escape (line breaks allowed)."""
    return not any(_unsafe(c) for c in text.replace("\n", ""))
