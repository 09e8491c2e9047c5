"""The noise gate for captured memories, and the redundancy test against stored ones.

A transcript is mostly narration ("Let me check the tests"), questions, code
and state that is only true for a moment.  The few lines worth keeping across
sessions say what was *decided*, what to *avoid*, or what was *learned*
(often right after an error).  :func:`gate_score` adds up weighted cues for
both sides; a candidate is kept when the score reaches :data:`GATE_THRESHOLD`.

How the thresholds were chosen
------------------------------
``tests/fixtures/hosts/capture.jsonl`` holds hand-labelled candidate lines
(``type: gate``, ``label: keep|drop``) split into ``tune`` (60 lines) and
``holdout`` (35 lines, not used to pick the threshold), and pairs for the
redundancy test (``type: dedup``: a candidate, an existing memory, ``dup|new``).
``tests/hosts/test_gate.py`` sweeps the threshold over the tune split in
steps of 0.5 and takes the *highest* threshold that maximises F1 there (among
equally good thresholds the stricter one: a wrong memory costs more than a
missed one, since every later session is shown it), then reports precision
and recall on both splits.  At ``GATE_THRESHOLD = 1.0``:

    tune     precision 1.00  recall 1.00   (27 keep / 33 drop; keeps score >= 1.0,
                                            drops <= 0.0)
    holdout  precision 1.00  recall 1.00   (16 keep / 19 drop)

The redundancy threshold (:data:`DUP_THRESHOLD` on :func:`overlap`, the share
of the shorter text's content stems found in the other) is the midpoint
between the highest ``new`` and the lowest ``dup`` overlap on the dedup pairs,
rounded to 0.05: 0.50 and 0.83 give 0.65, which separates all 16 (8 dup,
8 new).

Both fixtures were written by the same hand as the cues, before the cues but
with the same ideas in mind, so these figures overstate what a stranger's
transcripts will show; relabelling real transcripts is the next step.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..recall.ranking import stems_of
from ..recall.stopwords import STOP_WORDS

__all__ = [
    "DUP_THRESHOLD",
    "GATE_THRESHOLD",
    "Verdict",
    "content_stems",
    "gate_score",
    "judge",
    "overlap",
    "redundant",
]

GATE_THRESHOLD = 1.0
DUP_THRESHOLD = 0.65


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# Leading markers people and agents write on purpose; the kind they imply.
_MARKERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_re(r"^(?:decision|decided)\s*[:\-—]"), "decision"),
    (_re(r"^(?:warning|gotcha|caveat|careful|danger)\s*[:\-—!]"), "warning"),
    (_re(r"^(?:lesson(?: learned)?|takeaway|til|learned)\s*[:\-—]"), "lesson"),
    (_re(r"^(?:remember(?: that)?|note to self|important|rule|fyi)\s*[:\-—]?\s"), "note"),
)
_DECISION = _re(
    r"\b(?:we|i|team)\s+(?:decided|chose|agreed|settled on|went with|standardi[sz]ed on)\b"
    r"|\bgoing forward\b|\bfrom now on\b|\bwe use\b|\bwe(?:'ll| will) use\b"
)
_WARNING = _re(
    r"^(?:never|always|don't|do not|avoid|make sure)\b"
    r"|\b(?:never|must not|mustn't|do not|don't)\b.*\b(?:use|run|call|commit|push|bump|"
    r"remove|rely|pass|add|force)\b"
)
_LESSON = _re(
    r"\b(?:root cause|the (?:issue|problem|bug|error) (?:was|is)|turns out|turned out|"
    r"fixed (?:it )?by|the fix (?:was|is)|(?:was|is|were) caused by|caused by)\b"
)
_DURABLE = _re(
    r"\b(?:requires?|must|only (?:accepts?|works?)|needs? (?:to|the)|has to|cannot|"
    r"is incompatible|otherwise|because)\b"
)
_NARRATION = _re(
    r"^(?:let me|let's|i'll|i will|i'm going to|i am going to|now,? (?:i|let)|first,? i|"
    r"next,? i|okay|ok\b|great|perfect|sure|done|alright|good catch|i see|looking at|"
    r"i've|i have|i ran|i checked|i found|here is|here's|all \d+ tests)"
)
_REQUEST = _re(r"^(?:can|could|would|should|will) (?:you|i|we)\b|^please\b|^what\b|^why\b")
_HEDGE = _re(r"\b(?:maybe|might|perhaps|probably|i think|not sure|seems?|at some point)\b")
_EPHEMERAL = _re(
    r"\b(?:currently|right now|at the moment|for now|this time|in this session|"
    r"now the|the output shows)\b"
)
_CODE_CHARS = re.compile(r"[{}()\[\]=<>;$|&\"'`:/\\_.#*]")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")


@dataclass(frozen=True)
class Verdict:
    """Whether a candidate passes, its score, and the kind of memory it would make."""

    keep: bool
    score: float
    kind: str
    text: str  # the candidate with its leading marker removed


def _strip_marker(text: str) -> tuple[str, str | None]:
    for pattern, kind in _MARKERS:
        match = pattern.match(text)
        if match:
            rest = text[match.end() :].strip()
            return (rest[:1].upper() + rest[1:] if rest else text), kind
    return text, None


def gate_score(text: str, *, after_error: bool = False) -> tuple[float, str]:
    """The noise-gate score of one candidate line, and the kind it suggests."""
    body, marked = _strip_marker(text.strip())
    score = 3.0 if marked else 0.0
    kind = marked or "lesson"
    if _DECISION.search(body):
        score += 2.0
        kind = marked or "decision"
    if _WARNING.search(body):
        score += 2.0
        kind = marked or "warning"
    if _LESSON.search(body):
        score += 2.0 if after_error else 1.5
    if _DURABLE.search(body):
        score += 1.0
    if marked is None:
        if _NARRATION.match(body):
            score -= 3.0
        if _REQUEST.match(body):
            score -= 3.0
    if body.rstrip().endswith("?"):
        score -= 3.0
    if _HEDGE.search(body):
        score -= 1.5
    if _EPHEMERAL.search(body):
        score -= 1.5
    words = _WORD.findall(body)
    if len(words) < 6:
        score -= 2.0
    elif len(words) > 70:
        score -= 1.0
    if body and len(_CODE_CHARS.findall(body)) / len(body) > 0.12 and len(words) < 10:
        score -= 2.0
    if kind == "note" and (_WARNING.search(body) or _DECISION.search(body)):
        kind = "warning" if _WARNING.search(body) else "decision"
    return score, kind


def judge(text: str, *, after_error: bool = False) -> Verdict:
    score, kind = gate_score(text, after_error=after_error)
    body, _ = _strip_marker(text.strip())
    return Verdict(score >= GATE_THRESHOLD, score, kind, body)


def content_stems(text: str) -> set[str]:
    return {s for s in stems_of(text) if s not in STOP_WORDS and len(s) > 1}


def overlap(a: str, b: str) -> float:
    """Share of the shorter text's content stems that the other text holds (0..1)."""
    sa, sb = content_stems(a), content_stems(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / min(len(sa), len(sb))


def redundant(text: str, existing: Iterable[str]) -> bool:
    """True when ``text`` says what one of ``existing`` already says."""
    return any(overlap(text, other) >= DUP_THRESHOLD for other in existing)
