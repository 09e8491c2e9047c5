"""Redacting a batch of texts (a pull's or an import's versions) finds what redacting each
alone finds: :func:`engine.redact_many` against :func:`engine.redact`, and
:func:`texts.redact_batch` against :func:`texts.redact_version`, over random texts built
from the labelled corpus (secrets of every family, hard negatives), cue words in prose,
look-alike fragments, numbers, case twins, letters that lower-case to two, and the
sync bench's own words.  The per-text path itself is checked against the whole-text cue
scan (the reference the word lookup replaced)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.client.store.redaction import cues, engine, texts
from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id
from tests.fixtures.redaction import corpus

LINES = [line.text for line in corpus.load()]
FRAGMENTS = [
    "token", "TOKEN", "api_key", "secret", "password", "pw", "pass", "--password", " is",
    " was", ":", "=", " ", "\n", "\t", "the deploy", "x9Kf2LmQ7pRt4VwZ", "hunter2x",
    "Abc123def456GHI789", "ſecret", "\u212aey", "\u0130", "ß", "é", "日本", "12:", "(ticket 7)",
    "https://", "://", "private key", "<add key=", "sk-", "ghp_", "0", "[REDACTED:jwt]",
    "deploy cache schema", "vault proxy gateway", "member 3 note 41:",
]  # fmt: skip
PARTS = st.one_of(st.sampled_from(LINES), st.sampled_from(FRAGMENTS))
TEXTS = st.lists(PARTS, min_size=0, max_size=8).map("".join)
KEYWORDS = st.lists(st.sampled_from(["cache", "token", "password=", "hunter2x", "deploy"]))


def _record(i: int, content: str, keywords: list[str], reason: str | None) -> Record:
    deleted = reason is not None
    return Record(
        id=new_memory_id(1_700_000_000_000 + i, i.to_bytes(10, "big")),
        project="webapp",
        kind="note",
        content="" if deleted else content,
        keywords=() if deleted else tuple(keywords),
        importance=0.5,
        author="alice",
        editor="alice",
        created_at=1_700_000_000_000,
        hlc=Hlc(1_700_000_000_000 + i, 0),
        deleted=deleted,
        delete_reason=reason,
    )


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TEXTS, max_size=12))
def test_a_batch_finds_what_each_text_alone_finds(batch: list[str]) -> None:
    many = engine.redact_many(batch)
    for i, text in enumerate(batch):
        alone = engine.redact(text)
        if alone.changed:
            assert many[i] == alone, text
        else:
            assert i not in many, text


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TEXTS, KEYWORDS, st.none() | TEXTS), max_size=10))
def test_a_batch_of_versions_is_redacted_as_each_version_alone(
    items: list[tuple[str, list[str], str | None]],
) -> None:
    records = [_record(i, *item) for i, item in enumerate(items)]
    assert texts.redact_batch(records) == [texts.redact_version(r) for r in records]


def test_the_corpus_in_one_batch_and_with_the_bench_words() -> None:
    words = "member 2 note 17: deploy token cache (ticket 529)"
    batch = [*LINES, words, *LINES]
    many = engine.redact_many(batch)
    assert {i for i, text in enumerate(batch) if engine.redact(text).changed} == set(many)
    assert all(many[i] == engine.redact(batch[i]) for i in many)


def test_a_letter_that_lower_cases_to_two_keeps_each_text_in_its_place() -> None:
    batch = ["\u0130stanbul deploy notes", "DB_PASSWORD=hunter2x", "the token is x9Kf2LmQ7pRt"]
    many = engine.redact_many(batch)
    assert set(many) == {1, 2}
    assert many[1].text == "DB_PASSWORD=[REDACTED:password]"


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_the_word_lookup_redacts_as_the_whole_text_scan(text: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "cues_in", cues.cues_scan)
        reference = engine.redact(text)
    assert engine.redact(text) == reference


def test_the_word_memo_emptied_alone_still_finds_every_cue() -> None:
    """``bench_redact.py`` empties ``_WORDS`` between rule sets; a word still named in
    ``_CUED`` is then learned again, not looked up in the emptied memo."""
    index = cues.cue_index()
    text = "rotate the deploy token weekly"
    assert cues.cues_in(text, index) == {"token"}
    cues._WORDS.clear()
    assert cues.cues_in(text, index) == {"token"}


@pytest.mark.parametrize("emptied", ["_CUED", "_WORDS"])
def test_a_cue_word_one_memo_lost_is_learned_again_never_taken_as_clean(emptied: str) -> None:
    """The word memo is two structures; one emptied without the other (a thread reading
    between the two writes of another thread's learning, the size bound, a benchmark)
    must never make a known cue word look clean: the secret it wakes a rule for would
    be stored and pushed as it is."""
    secret = "rotate the deploy token x9Kf2LmQ7pRt4VwZ8sYu weekly"
    assert engine.redact(secret).changed  # "token" is learned, with its cue
    index = cues.cue_index()
    getattr(cues, emptied).clear()
    assert cues.cues_in(secret.lower(), index) == {"token"}
    assert engine.redact(secret).changed
    assert engine.redact_many(["deploy notes", secret]).keys() == {1}


_TWISTS = [
    lambda s: s,
    lambda s: s.upper(),
    lambda s: s.swapcase(),
    lambda s: s.replace(" ", "\t"),
    lambda s: s.replace(" ", "\u00a0"),
    lambda s: s.replace("s", "\u017f"),
    lambda s: s.replace("k", "\u212a"),
    lambda s: "\u0130" + s,
]


@pytest.mark.slow
def test_every_corpus_line_twisted_in_one_batch_of_thousands() -> None:
    """A pull's batch is thousands of versions: every line of the corpus, each twisted
    (case, other whitespace, case twins) and each at the end and the start of a text
    that fills the content limit, all in one batch, as each alone."""
    from sealmem.protocol.record import MAX_CONTENT_CHARS

    batch = [twist(line) for line in LINES for twist in _TWISTS]
    filler = "deploy cache schema note " * (MAX_CONTENT_CHARS // 25)
    batch += [filler[: MAX_CONTENT_CHARS - len(line) - 1] + " " + line for line in LINES[:50]]
    batch += [line + " " + filler[: MAX_CONTENT_CHARS - len(line) - 1] for line in LINES[:50]]
    assert len(batch) > 2000
    many = engine.redact_many(batch)
    alone = {i: engine.redact(text) for i, text in enumerate(batch)}
    assert set(many) == {i for i, result in alone.items() if result.changed}
    assert all(many[i] == alone[i] for i in many)
    assert engine.redact_many(batch[:1]) == ({0: alone[0]} if alone[0].changed else {})


_WORDS_OF_LINES = sorted({word for line in LINES for word in line.split()})


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            TEXTS,
            st.lists(st.sampled_from(_WORDS_OF_LINES) | st.sampled_from(FRAGMENTS), max_size=6),
            st.none() | st.sampled_from(LINES),
        ),
        min_size=1,
        max_size=10,
    )
)
def test_secrets_in_keywords_or_the_reason_only_are_found_by_the_batch(
    items: list[tuple[str, list[str], str | None]],
) -> None:
    """The corpus's secrets split into keywords (a secret read across them) or said in a
    delete reason, behind a content with or without cue words."""
    records = []
    for i, (content, words, reason) in enumerate(items):
        words = [w.strip() for w in words if w.strip()][:20]
        words = [w[:64] for w in words]
        records.append(_record(i, content, words, reason))
    assert texts.redact_batch(records) == [texts.redact_version(r) for r in records]
