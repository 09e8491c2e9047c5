"""Words and stems of a text, as FTS5's ``porter unicode61`` tokenizer sees them.

Recall tokenizes queries and candidate memories in Python for its ranking features
(term coverage, neighbouring memories, entities); splitting and stemming them the way
FTS5 does keeps those in step with the full-text index.  The write path keeps each
memory's stems (:func:`stored_stems`), so recall does not stem every candidate.

Two paths give the same terms as the index.  ASCII text (nearly all of it) is split
and stemmed in Python, which is exact there: a letter or digit is a token character,
anything else a separator, and :func:`sealmem.client.store.stemmer.stem` is FTS5's
Porter.  Text with any other character is handed to SQLite's own tokenizer, because
unicode61 folds and splits by its own Unicode tables (it keeps "й" and a Hangul
syllable whole, joins a private-use or unassigned character to a word) and FTS5's
Porter works on UTF-8 bytes: a private in-memory database of the process holds two
FTS5 tables, one with :data:`TOKENIZE` (the index's stems) and one with unicode61
alone (the folded words); the text is inserted, its terms read back through
``fts5vocab`` and the insert rolled back (about 20 µs a call, plus some 1.5 µs a
word).  For the stems a memory keeps, only the pieces between ASCII separators that
hold another character are asked, and each piece's stems are remembered, so a text
of words already seen costs about what ASCII text costs (``tests/bench/bench_tokens.py``).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from functools import lru_cache

from .scripts import gram_tokens, has_run, is_run
from .stemmer import STEMS, stem

__all__ = [
    "TOKENIZE",
    "parse_stems",
    "query_word_stems",
    "stems_of",
    "stored_grams",
    "stored_stems",
    "tokens",
    "word_stems",
]

# the tokenizer of ``memories_fts`` and ``history_fts`` (:mod:`.schema`)
TOKENIZE = "porter unicode61 remove_diacritics 2"

# ASCII text: a letter or digit is a token character (lower-cased), anything else a
# separator, as unicode61 splits it; ``str.translate`` + ``split`` is about twice as
# fast as a regular expression (stemming at every write made it worth it)
_ASCII_WORDS = str.maketrans({i: chr(i).lower() if chr(i).isalnum() else " " for i in range(128)})
# the same table over bytes, for text that is all ASCII: ``bytes.translate`` is a table
# lookup per byte, about 4 times faster than ``str.translate`` with a mapping
_ASCII_BYTES = bytes(
    ord(chr(i).lower()) if i < 128 and chr(i).isalnum() else 32 for i in range(256)
)


def _ascii_words(text: str) -> list[str]:
    """The tokens of ``text``, which is all ASCII."""
    return text.encode("ascii").translate(_ASCII_BYTES).decode("ascii").split()


# a lone surrogate has no UTF-8 form: SQLite cannot take it, unicode61 would not keep it
_SURROGATE_RE = re.compile("[\ud800-\udfff]")

_SCHEMA = f"""
CREATE VIRTUAL TABLE stems USING fts5 (text, tokenize = '{TOKENIZE}');
CREATE VIRTUAL TABLE words USING fts5 (
    text, tokenize = '{TOKENIZE.removeprefix("porter ")}'
);
CREATE VIRTUAL TABLE stems_at USING fts5vocab (stems, instance);
CREATE VIRTUAL TABLE words_at USING fts5vocab (words, instance);
"""
# the stems of pieces between ASCII separators that hold another character (of at
# most _PIECE_MAX characters; forgotten all at once past _PIECES_KEPT: a few MB)
_PIECES: dict[str, frozenset[str]] = {}
_PIECES_KEPT = 8192
_PIECE_MAX = 64


class _Tokenizer:
    """The process's private in-memory database of tokenizer tables, one caller at a
    time (a call takes some 20 to 80 µs).  A forked child makes its own: the parent's
    connection is kept, never used nor closed there."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.conn: sqlite3.Connection | None = None
        self.forked: list[sqlite3.Connection] = []

    def after_fork(self) -> None:
        self.lock = threading.Lock()
        if self.conn is not None:
            self.forked.append(self.conn)
        self.conn = None

    def rows(self, texts: list[str], sql: str, tables: tuple[str, ...]) -> list[tuple[str, ...]]:
        """The rows of ``sql`` over the vocabularies of ``tables`` while they hold
        ``texts`` alone, the i-th as row i + 1 (inserted, read and rolled back: the
        tables stay empty)."""
        rows = [(i, _SURROGATE_RE.sub(" ", text)) for i, text in enumerate(texts, 1)]
        with self.lock:
            conn = self.conn
            if conn is None:
                conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
                conn.executescript(_SCHEMA)
                self.conn = conn
            conn.execute("BEGIN")
            try:
                for table in tables:
                    conn.executemany(f"INSERT INTO {table} (rowid, text) VALUES (?, ?)", rows)
                return conn.execute(sql).fetchall()
            finally:
                conn.execute("ROLLBACK")


_TOKENIZER = _Tokenizer()
os.register_at_fork(after_in_child=_TOKENIZER.after_fork)
_indexed = _TOKENIZER.rows


def word_stems(text: str) -> list[tuple[str, str]]:
    """Each token of ``text`` in order, as ``(folded word, stem)``: the word is what
    unicode61 makes of it (an FTS5 query of it matches the same term), the stem the
    term the index holds for it."""
    if text.isascii():
        return [(word, stem(word)) for word in _ascii_words(text)]
    sql = (
        "SELECT w.term, s.term FROM words_at AS w JOIN stems_at AS s USING (offset) ORDER BY offset"
    )
    return [(word, stemmed) for word, stemmed in _indexed([text], sql, ("words", "stems"))]


def query_word_stems(text: str) -> list[tuple[str, str]]:
    """:func:`word_stems` of a query, its words of scripts written without spaces
    replaced by their grams, and its emoji and symbols added
    (:func:`sealmem.client.store.scripts.gram_tokens`): the terms a memory holding those
    words inside longer runs holds too.  ASCII text: :func:`word_stems` alone."""
    pairs = word_stems(text)
    extra = gram_tokens(text)
    if not extra:
        return pairs
    return [pair for pair in pairs if not has_run(pair[0])] + word_stems(" ".join(extra))


def tokens(text: str) -> list[str]:
    """Lower-case, diacritic-free word tokens, split and folded as unicode61 does."""
    if text.isascii():
        return _ascii_words(text)
    sql = "SELECT term FROM words_at ORDER BY offset"
    return [word for (word,) in _indexed([text], sql, ("words",))]


def _stems(text: str) -> frozenset[str]:
    if text.isascii():
        return frozenset(map(STEMS.__getitem__, _ascii_words(text)))
    words = text.translate(_ASCII_WORDS).split(" ")  # an ASCII character splits alike in both
    found: set[str] = set()
    other = []
    for piece in set(words):
        if piece.isascii():
            found.update([STEMS[piece]] if piece else [])
            continue
        known = _PIECES.get(piece)  # one lookup: another thread may clear it meanwhile
        if known is None:
            other.append(piece)
        else:
            found.update(known)
    if other:
        terms: dict[int, set[str]] = {i: set() for i in range(1, len(other) + 1)}
        asked = []
        for i, piece in enumerate(other, 1):  # with its grams (scripts.py)
            rest = [piece]
            for token in gram_tokens(piece, tails=True):
                if token.isascii():
                    terms[i].update(map(STEMS.__getitem__, _ascii_words(token)))
                elif is_run(token):  # its own term
                    terms[i].add(token)
                else:
                    rest.append(token)
            asked.append(" ".join(rest))
        for row, term in _indexed(asked, "SELECT doc, term FROM stems_at", ("stems",)):
            terms[int(row)].add(str(term))
        if len(_PIECES) + len(other) > _PIECES_KEPT:
            _PIECES.clear()
        for i, piece in enumerate(other, 1):
            found.update(terms[i])
            if len(piece) <= _PIECE_MAX:  # a word, not a paragraph of CJK text
                _PIECES[piece] = frozenset(terms[i])
    return frozenset(found)


@lru_cache(maxsize=8192)
def stems_of(text: str) -> frozenset[str]:
    """The distinct stems FTS5's porter tokenizer indexes for ``text`` (cached: recall
    looks at the same memories again and again)."""
    return _stems(text)


def stored_stems(content: str, keywords: str) -> str:
    """What ``memories.stems`` holds for a row with this ``content`` and ``keywords``
    (the space-joined column): its distinct stems, sorted, space-joined (a stem holds
    no space).  :func:`parse_stems` of it is ``stems_of(f"{content} {keywords}")``."""
    return " ".join(sorted(_stems(f"{content} {keywords}")))


def stored_grams(content: str, keywords: str) -> str | None:
    """What ``memories.grams`` holds for a row with this ``content`` and ``keywords``
    (:func:`sealmem.client.store.scripts.grams`; None: the text has none, as all ASCII
    text)."""
    text = f"{content} {keywords}"
    return None if text.isascii() else " ".join(gram_tokens(text, tails=True)) or None


def parse_stems(stored: str) -> frozenset[str]:
    """The stems a ``memories.stems`` value holds."""
    return frozenset(stored.split())
