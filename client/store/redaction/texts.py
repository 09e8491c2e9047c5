"""A memory's texts redacted by one rule, wherever they come from.

:func:`redact_texts` is what every write path runs (``remember``, ``share`` and
``forget`` locally; a pull, an import and the re-redaction before a push through
:func:`redact_version`):

- the content, each keyword and the delete reason are redacted on their own;
- the keywords are also read together, joined by spaces, so that a secret split
  across them (``["password=", "hunter2"]``) is caught (:func:`_across_keywords`);
- a text the placeholders push past its limit is cut to it (:func:`fit`): a
  placeholder is longer than many secrets (``pw=abcd1`` becomes
  ``pw=[REDACTED:password]``), and a text stored over its limit would be refused
  wherever it went next (an export imported elsewhere, an edit pushed to the team).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ....protocol.record import MAX_CONTENT_CHARS, MAX_KEYWORD_CHARS, MAX_REASON_CHARS, Record
from .engine import Redacted, redact, redact_many, secret_spans

__all__ = ["Texts", "fit", "redact_batch", "redact_texts", "redact_version"]


@dataclass(frozen=True)
class Texts:
    """A memory's texts once redacted and cut to their limits, and what was found where."""

    content: str
    keywords: tuple[str, ...]
    reason: str | None
    found: dict[str, int] = field(default_factory=dict)
    """Secrets found in the content, by type."""
    found_keywords: dict[str, int] = field(default_factory=dict)
    found_reason: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.found or self.found_keywords or self.found_reason)

    def total(self) -> dict[str, int]:
        """Secrets found in every text together, by type."""
        return dict(Counter(self.found) + Counter(self.found_keywords) + Counter(self.found_reason))


def redact_texts(content: str, keywords: Sequence[str] = (), reason: str | None = None) -> Texts:
    """``content``, ``keywords`` and ``reason`` redacted (keywords also read together),
    each cut to its limit (:func:`fit`) when the placeholders made it longer."""
    return _redact_texts(redact(content), keywords, reason)


def _redact_texts(text: Redacted, keywords: Sequence[str], reason: str | None) -> Texts:
    """:func:`redact_texts` with the content already redacted (``text``)."""
    clean = _CLEAN_WORDS
    words = [] if all(w in clean for w in keywords) else list(map(_redact_word, keywords))
    said = None if reason is None else redact(reason)
    if len(keywords) > 1:
        across = _across_keywords([w.text for w in words] if words else list(keywords))
        if across is not None:
            words = across
    found_kw: Counter[str] = Counter()
    for word in words:
        found_kw.update(word.found)
    return Texts(
        fit(text.text, MAX_CONTENT_CHARS),
        tuple(fit(w.text, MAX_KEYWORD_CHARS) for w in words) if words else tuple(keywords),
        None if said is None else fit(said.text, MAX_REASON_CHARS),
        text.found,
        dict(found_kw),
        {} if said is None else said.found,
    )


def redact_version(record: Record) -> tuple[Record, dict[str, int]]:
    """``record`` with what the redaction rules catch replaced (:func:`redact_texts`),
    and the types found (empty: it was clean and ``record`` itself is returned).

    A version keeps its identity (id, clock, editor) so replicas still agree on the
    winner; only this store's copy of the text loses the secret (DESIGN §3).
    """
    return _version(record, redact_texts(record.content, record.keywords, record.delete_reason))


def _version(record: Record, texts: Texts) -> tuple[Record, dict[str, int]]:
    """``record`` holding ``texts`` (itself when they are unchanged), and what was found."""
    if not texts.changed:
        return record, {}
    cleaned = record.evolve(
        content=texts.content, keywords=texts.keywords, delete_reason=texts.reason
    )
    return cleaned, texts.total()


def redact_batch(records: Sequence[Record]) -> list[tuple[Record, dict[str, int]]]:
    """:func:`redact_version` of each record, in order, with the contents redacted
    together (:func:`~.engine.redact_many`: one cue lookup for the batch).

    A version whose content the rules leave as it is, with no delete reason and
    keywords already found clean one by one and read together (:data:`_CLEAN_WORDS`),
    is returned as it is without building its :class:`Texts`: what
    :func:`redact_version` returns for it."""
    changed = redact_many([record.content for record in records])
    known = _CLEAN_WORDS.issuperset
    out: list[tuple[Record, dict[str, int]]] = []
    for i, record in enumerate(records):
        text = changed.get(i)
        keywords = record.keywords
        if (
            text is None
            and record.delete_reason is None
            and known(keywords)
            and (len(keywords) < 2 or " ".join(keywords) in _CLEAN_WORDS)
        ):
            out.append((record, {}))
            continue
        texts = _redact_texts(
            Redacted(record.content) if text is None else text, keywords, record.delete_reason
        )
        out.append(_version(record, texts))
    return out


_OPENING = "[REDACTED:"


def fit(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in an ellipsis, if it is longer.

    Cut, a redacted text keeps its place and its text up to the limit.  The cut falls
    before a placeholder it would split."""
    if len(text) <= limit:
        return text
    cut = limit - 1
    # the last placeholder that opens before the cut, even if its "[REDACTED:" does not
    # fit whole before it
    opened = text.rfind(_OPENING, 0, cut - 1 + len(_OPENING))
    if opened != -1 and text.find("]", opened) >= cut:
        cut = opened
    return text[:cut] + "\u2026"


def _across_keywords(words: list[str]) -> list[Redacted] | None:
    """The keywords with the secrets that show only when they are read together
    (``["password=", "hunter2"]``) replaced, or None when there are none.

    The rules run once over the keywords joined by spaces (each already redacted on
    its own, so its placeholders stand); every part of a keyword that a secret covers
    becomes that secret's placeholder.  A clean joined text is remembered as a clean
    keyword is (the same keyword sets come back)."""
    joined = " ".join(words)
    if joined in _CLEAN_WORDS:
        return None
    spans = secret_spans(joined)
    if not spans:
        _remember_clean(joined)
        return None
    out: list[Redacted] = []
    counted: set[int] = set()  # a secret over several keywords counts once
    at = 0
    for word in words:
        start, end = at, at + len(word)
        at = end + 1
        hits = [(max(s, start), min(e, end), t, i) for i, (s, e, t) in enumerate(spans)]
        hits = [h for h in hits if h[0] < h[1]]
        text = word
        for s, e, t, _ in reversed(hits):
            text = f"{text[: s - start]}[REDACTED:{t}]{text[e - start :]}"
        counts = Counter(t for _, _, t, i in hits if i not in counted)
        counted.update(i for *_, i in hits)
        out.append(Redacted(text, dict(counts)) if hits else Redacted(word))
    return out


_CLEAN_WORDS: set[str] = set()
"""Keywords (and keyword sets joined by spaces) the rules found clean: the same few
hundred come back in every batch (the rules are a pure function of the text).  One
holding a secret is never remembered, so no secret outlives its call here."""
_CLEAN_WORDS_MAX = 8192


def _redact_word(word: str) -> Redacted:
    """:func:`redact` of one keyword, remembering the clean ones."""
    if word in _CLEAN_WORDS:
        return Redacted(word)
    result = redact(word)
    if not result.changed:
        _remember_clean(word)
    return result


def _remember_clean(text: str) -> None:
    if len(_CLEAN_WORDS) >= _CLEAN_WORDS_MAX:
        _CLEAN_WORDS.clear()
    _CLEAN_WORDS.add(text)
