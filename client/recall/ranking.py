"""Pure helpers of recall: tokenizing, query analysis and the scoring formula.

Nothing here touches SQLite or the clock; :mod:`sealmem.client.recall.search` feeds it
rows and ``now_ms``.  Text is split the way FTS5's ``unicode61`` tokenizer
splits it (letters and digits; case and diacritics folded) and stemmed with
the same Porter rules, so the features below agree with the full-text index.

The score of a candidate memory is a weighted sum, every part of which is
reported in ``why``:

``bm25``       FTS5 BM25 over content and keywords (keywords weighted up), normalised
               to the best hit (0..1); only the rarer terms go into the FTS5 query
               (see ``recall.pool_plan``), the others still count in ``coverage``;
               0 for a candidate drawn from a newest-first pool or as a neighbour
``coverage``   share of the query's terms the memory holds, each term weighted by a
               smoothed IDF, log(1 + N/df): a common name still counts, a rare word
               counts more; a word held only as the start of a longer one
               ("postgres" in "PostgreSQL", stems of ``prefix_min`` letters or more)
               counts ``prefix`` of its share
``entity``     share of the query's proper nouns (capitalised, not starting a
               sentence) that the memory holds; present when the query has any
``context``    from the memory's neighbours in its session (up to ``context_window``
               steps away; sessions: see ``recall.search``): the best neighbour's BM25,
               plus the query terms only the neighbours hold; a neighbour of a strong
               match is a candidate even if it matches nothing (it may come back only
               as ``related``, after the matches: ``recall.matching``).  When the memory
               written just before it in its session is a question (its text holds
               a "?") that matches the query, the memory answers it: that question's
               BM25 with the weight ``context_question`` stands in for the best
               neighbour's when larger
``date``       the memory was written in a period the query names ("in May 2023",
               "yesterday"); memories of that period also join the candidates
``recency``    exp(-age / half-life)
``importance`` importance above or below the neutral 0.5
``superseded`` negative when a newer memory corrects this one (demoted, never hidden)
``history``    present when only an older version of the memory matched
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..store.terms import query_word_stems, stems_of, tokens
from .stopwords import STOP_WORDS

__all__ = [
    "DATE_WORDS",
    "DAY_MS",
    "QueryTerm",
    "RankingWeights",
    "Span",
    "analyse_query",
    "date_spans",
    "fts_phrase",
    "is_date_word",
    "is_session_origin",
    "mask_share",
    "prefix_mask",
    "stems_of",
    "term_mask",
    "term_shares",
    "tokens",
]

DAY_MS = 86_400_000

_ENTITY_RE = re.compile(r"[A-Z][\w'-]*")


@dataclass(frozen=True)
class RankingWeights:
    """Weights of the score's components; 0 switches a feature off (the benchmark's ablation).

    The weights in ``tests/bench/bench_locomo.py``'s grid are what its ``tune()``
    (steepest coordinate ascent) picks on the five LoCoMo dev conversations; the
    bench's leave-one-conversation-out figure says how well that choice holds on a
    conversation it was not made on."""

    bm25: float = 1.0
    keywords_column: float = 2.0  # BM25 weight of agent keywords relative to content
    coverage: float = 1.0
    prefix: float = 1.0  # credit of a word found only as a prefix ("postgres" in "postgresql")
    prefix_min: int = 4  # shortest stem matched as a prefix
    entity: float = 0.7  # share of the query's proper nouns the memory holds
    context: float = 0.4  # the best neighbour's BM25
    context_terms: float = 0.7  # query terms only the neighbours hold
    context_question: float = 0.9  # ... or, when more, a matching question just before it
    context_gap_ms: int = 3_600_000  # neighbours: same session origin, at most this far apart
    session_gap_ms: int = 1_800_000  # no session id: same origin and author, this far apart
    context_window: int = 2
    context_seeds: int = 10  # best BM25 hits whose neighbours are considered
    context_seed_floor: float = 0.3  # ... if their BM25 is at least this share of the best
    date: float = 0.6
    recency: float = 0.05
    recency_half_life_days: float = 30.0
    importance: float = 0.1
    superseded: float = 0.5  # fraction of the score taken away from a corrected memory
    history: float = 0.8  # factor on a match found only in an older version
    pool: int = 30  # BM25 candidates considered before re-ranking
    pool_postings: int = 500  # postings the OR-ed FTS5 words may hold together (cost bound)
    common_share: float = 0.1  # terms in more memories than this only count in coverage


@dataclass(frozen=True)
class QueryTerm:
    word: str  # folded surface form, as put in the FTS5 query
    stem: str
    entity: bool  # written as a proper noun in the query


@dataclass(frozen=True)
class Span:
    """A half-open time interval in ms since the epoch, UTC."""

    start: int
    end: int


def analyse_query(query: str) -> list[QueryTerm]:
    """The query's distinct non-stop-word terms, in order, with proper nouns flagged.

    A proper noun is a capitalised word that does not start a sentence; a query
    written all in capitals or all in lower case has none.
    """
    entities: set[str] = set()
    if query != query.upper():
        for match in _ENTITY_RE.finditer(query):
            before = query[: match.start()].rstrip()
            if before and before[-1] not in ".!?:":
                entities.update(tokens(match.group()))
    seen: set[str] = set()
    terms: list[QueryTerm] = []
    for word, stemmed in query_word_stems(query):
        if word in STOP_WORDS or len(word) > 64:
            continue
        if stemmed in seen:
            continue
        seen.add(stemmed)
        terms.append(QueryTerm(word, stemmed, word in entities))
    return terms


def fts_phrase(word: str, prefix: bool = False) -> str:
    """One word as an FTS5 phrase (quoted: no operator can be injected); with
    ``prefix`` it also matches the index terms its stem begins ("postgres" finds
    "PostgreSQL")."""
    return '"' + word.replace('"', '""') + '"' + ("*" if prefix else "")


def prefix_mask(longer: Sequence[frozenset[str] | None], held: frozenset[str]) -> int:
    """Bit ``i`` when ``held`` has one of ``longer[i]``: the index terms the query's
    ``i``-th stem begins (None: that stem is not matched as a prefix)."""
    mask = 0
    for i, extensions in enumerate(longer):
        if extensions is not None and not held.isdisjoint(extensions):
            mask |= 1 << i
    return mask


def term_shares(terms: Sequence[QueryTerm], df: Mapping[str, int], n_docs: int) -> dict[str, float]:
    """Each query term's share of the query (they sum to 1): a smoothed IDF,
    log(1 + N/df), that stays positive for terms in most memories."""
    raw = {t.stem: math.log(1.0 + n_docs / max(df.get(t.stem, 0), 1)) for t in terms}
    total = sum(raw.values()) or 1.0
    return {term: value / total for term, value in raw.items()}


def term_mask(stems: Sequence[str], held: frozenset[str]) -> int:
    """Bit ``i`` set when the query's ``i``-th stem is among ``held``."""
    mask = 0
    for i, term in enumerate(stems):
        if term in held:
            mask |= 1 << i
    return mask


def mask_share(shares: Sequence[float], mask: int) -> float:
    """The share of the query held by the terms whose bits are set in ``mask``."""
    total = 0.0
    i = 0
    while mask:
        if mask & 1:
            total += shares[i]
        mask >>= 1
        i += 1
    return total


def is_session_origin(origin: str) -> bool:
    """Whether ``origin`` names one session: ``"<tool>:<session id>"``, both parts
    non-empty ("mcp:3f2a9c01b7de"); a bare tool name ("cli", "import") names none."""
    tool, sep, session = origin.partition(":")
    return bool(sep and tool.strip() and session.strip())


_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_name) if name})
_YEAR_RE = re.compile(r"^(19|20)\d\d$")
# Something in the query may name a time: a digit, a month, or a relative-date word.
_DATE_CUE_RE = re.compile(
    r"\d|\b(?:today|yesterday|week|month|year|" + "|".join(sorted(_MONTHS)) + r")", re.I
)
_ISO_RE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_NAMES = "|".join(name for name in calendar.month_name if name)
_DAY_RE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)? (?P<m1>{_MONTH_NAMES})|"
    rf"(?P<m2>{_MONTH_NAMES}) (?P<d2>\d{{1,2}})(?:st|nd|rd|th)?),? (?P<y>(?:19|20)\d\d)\b",
    re.I,
)


def _month_span(year: int, month: int) -> Span:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return Span(_ms(start), _ms(end))


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def date_spans(query: str, now_ms: int) -> list[Span]:
    """Periods the query names: ISO dates, month names (with or without a year),
    years, and relative to ``now_ms`` (UTC days): today, yesterday, last / this week
    (the last seven days), last month (31 days), this month, this year, last year,
    "N days ago", "N weeks ago", "last N days", "past N weeks".

    A month without a year means that month in each of the last three years.
    """
    spans: list[Span] = []
    if not _DATE_CUE_RE.search(query):  # most queries name no time: no work
        return spans
    for y, m, d in _ISO_RE.findall(query):
        try:
            day = datetime(int(y), int(m), int(d), tzinfo=UTC)
        except ValueError:
            continue
        spans.append(Span(_ms(day), _ms(day + timedelta(days=1))))
    for match in _DAY_RE.finditer(query):  # "9 October, 2022", "October 9, 2022"
        day_text = match.group("d1") or match.group("d2")
        month = _MONTHS[(match.group("m1") or match.group("m2")).lower()]
        try:
            day = datetime(int(match.group("y")), month, int(day_text), tzinfo=UTC)
        except ValueError:
            continue
        # the day named and the next (what happened is often written down the day after)
        spans.append(Span(_ms(day), _ms(day + timedelta(days=2))))
    words = tokens(_ISO_RE.sub(" ", query))  # an ISO date's year is not the whole year
    now = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    years = [int(w) for w in words if _YEAR_RE.match(w)]
    months = [_MONTHS[w] for w in words if w in _MONTHS and (w != "may" or _may_is_month(query))]
    if months:
        for month in months:
            for year in years or range(now.year - 2, now.year + 1):
                spans.append(_month_span(year, month))
    else:
        spans.extend(Span(_month_span(y, 1).start, _month_span(y, 12).end) for y in years)
    today = _ms(now.replace(hour=0, minute=0, second=0, microsecond=0))
    text = " ".join(words)
    month_start = _month_span(now.year, now.month).start
    relative = {
        "today": (today, today + DAY_MS),
        "yesterday": (today - DAY_MS, today),
        "last week": (today - 7 * DAY_MS, today + DAY_MS),
        "this week": (today - 7 * DAY_MS, today + DAY_MS),
        "last month": (today - 31 * DAY_MS, today + DAY_MS),
        "this month": (month_start, today + DAY_MS),
        "this year": (_month_span(now.year, 1).start, today + DAY_MS),
        "last year": (_month_span(now.year - 1, 1).start, _month_span(now.year, 1).start),
    }
    spans.extend(Span(s, e) for phrase, (s, e) in relative.items() if f" {phrase} " in f" {text} ")
    for n, unit in _AGO_RE.findall(text):
        width = 7 if unit.startswith("week") else 1
        start = today - min(int(n), 3660) * width * DAY_MS
        spans.append(Span(start, start + width * DAY_MS))
    for n, unit in _LAST_N_RE.findall(text):
        days = min(int(n), 3660) * (7 if unit.startswith("week") else 1)
        spans.append(Span(today - days * DAY_MS, today + DAY_MS))
    return spans


# Words that only say when: a query made of these (and stop words) asks for a period.
DATE_WORDS = frozenset(
    {"today", "yesterday", "last", "past", "week", "weeks", "month", "months", "year", "years"}
    | {"ago", "day", "days", "recent", "recently", "happened", "written", "wrote", "remembered"}
    | set(_MONTHS)
)
_AGO_RE = re.compile(r"\b(\d{1,4}) (days?|weeks?) ago\b")
_LAST_N_RE = re.compile(r"\b(?:last|past) (\d{1,4}) (days?|weeks?)\b")


def is_date_word(word: str) -> bool:
    """Whether a query word only names a time (``DATE_WORDS``, or a number)."""
    return word in DATE_WORDS or word.isdigit()


_MAY_RE = re.compile(
    r"(?-i:(?<=[a-z,] )May\b)|\bmay\s+\d|\d+(st|nd|rd|th)?\s+may\b|\bin\s+may\b", re.I
)


def _may_is_month(query: str) -> bool:
    """Whether "may" in the query is the month, not the verb."""
    return _MAY_RE.search(query) is not None
