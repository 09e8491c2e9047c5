"""The rules' gates (``needs``, ``gate``) are necessary conditions: they skip work, never
a secret.  Redaction with them equals redaction without them, on the labelled corpus
and on generated look-alikes (cue words in prose, assignments with odd spacing, flags,
"the password is" phrasing, long tokens)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.client.store.redaction import cues, engine, redact, rules
from sealmem.client.store.redaction.rules import RULES
from tests.fixtures.redaction import corpus

GATED = [rule for rule in RULES if rule.needs or rule.gate]
UNGATED = tuple(dataclasses.replace(rule, needs=(), gate=None) for rule in RULES)

FRAGMENTS = [
    "token", "TOKEN", "api_key", "ApiKey", "secret", "client_secret", "SECRET_KEY",
    "auth-token", "password", "Passwd", "passphrase", "pwd", "pw", "DB_PASS", "pass",
    "--password", "--db-pass", "for prod", " is", " was", " is set to", ":", "=", ":=",
    "=>", '"', "'", "`", " ", "  ", "\t", "\n", "-", "_", ".", "the deploy", "rotate",
    "x9Kf2LmQ7pRt4VwZ", "hunter2x", "Abc123def456GHI789", "s3cr3t-V4lue", "correct horse",
    "ſecret", "\u212aey", "ıs", "0", "7", "QWERTYUIOPASDFGH1", "abcdefghijklmnop",
]  # fmt: skip


def ungated(text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    with monkeypatch.context() as patch:
        patch.setattr(engine, "RULES", UNGATED)
        return redact(text).text


def test_the_gated_rules_are_the_costly_prose_ones() -> None:
    assert {rule.type for rule in GATED} == {"password", "secret", "high_entropy_secret"}


def test_gates_change_nothing_on_the_corpus(monkeypatch: pytest.MonkeyPatch) -> None:
    for line in corpus.load():
        assert redact(line.text).text == ungated(line.text, monkeypatch), line.text


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=14))
def test_gates_change_nothing_on_look_alikes(parts: list[str]) -> None:
    text = "".join(parts)
    with pytest.MonkeyPatch.context() as patch:
        assert redact(text).text == ungated(text, patch)


@pytest.mark.parametrize(
    ("text", "caught"),
    [
        ("rotate the deploy token weekly; the token service owns it", False),
        ("the password reset flow: see the wiki", False),
        ("api_key :  'x9Kf2LmQ7pRt4VwZ'", True),
        ("SECRET_KEY\t=\tx9Kf2LmQ7pRt4VwZ", True),
        ("run it with --db-password 'pa55 word'", True),
        ("the password for prod is hunter2x!", True),
        ("Passphrase: correct-horse-7", True),
        ("the deploy token x9Kf2LmQ7pRt4VwZ expires", True),
        ("token rotation runs nightly at 03:00", False),
    ],
)
def test_look_alikes(text: str, caught: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    assert (redact(text).text != text) is caught
    assert redact(text).text == ungated(text, monkeypatch)


WORDY = [
    *FRAGMENTS, "private key", "private\tkey", "<add key=", "sk-", "ghp_", "s.", "test_",
    "://", "xoxb-", "\u00a0", "\u2003", "\x1c", "\x85", "\u0130", "\u0131", "é", "日本",
    "tokens,", "keyword", "(item 7)", "0", "12ab",
]  # fmt: skip


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(WORDY), min_size=0, max_size=20))
def test_word_lookup_finds_the_cues_one_scan_finds(parts: list[str]) -> None:
    """The prefilter's word-by-word lookup (remembered words) finds exactly the cues a
    scan of the whole text finds: with the words new, and again when remembered."""
    index = cues.cue_index()
    lowered = "".join(parts).translate(engine._CASE_TWINS).lower()
    expected = cues.cues_scan(lowered, index)
    assert cues.cues_in(lowered, index) == expected
    assert cues.cues_in(lowered, index) == expected


def test_word_lookup_on_the_corpus_and_prose() -> None:
    index = cues.cue_index()
    texts = [line.text for line in corpus.load()]
    texts.append("rotate the deploy token weekly; tokens, keys. and passwords: none here")
    for text in texts + texts:
        lowered = text.translate(engine._CASE_TWINS).lower()
        assert cues.cues_in(lowered, index) == cues.cues_scan(lowered, index), text


def test_remembered_words_hold_no_digit_or_are_plain_words() -> None:
    index = cues.cue_index()
    cues.cues_in("deploy token ghp_abc123 hunter2 tokens, password=hunter", index)
    assert "token" in cues._CUED
    assert "deploy" in cues._WORDS
    for word in cues._CUED:
        assert len(word) <= 32
        assert word.strip(cues._PUNCTUATION).isalpha(), word
    for word in cues._WORDS:
        assert len(word) <= 32
        assert not any(ch.isdigit() for ch in word), word
    for word in ("ghp_abc123", "hunter2", "password=hunter"):
        assert word not in cues._WORDS
        assert word not in cues._CUED


_TOKEN_ALPHABET = "abcz09+/=_-"
_OTHER_ALPHABET = " .,:;!?()[]{}\"'`\t\n#@$%^&*<>|~\\"


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(_TOKEN_ALPHABET, max_size=20), st.text(_OTHER_ALPHABET, max_size=3)),
        max_size=12,
    )
)
def test_the_run_of_16_gate_of_ascii_text_answers_as_its_expression(
    parts: list[tuple[str, str]],
) -> None:
    """The run-of-16 gate is looked for in ASCII text by a byte table and a substring
    search; the expression itself says the same of every text (runs of 15, 16 and 17
    token characters, every separator)."""
    text = "".join(run + other for run, other in parts)
    expression = re.compile(rules._RUN_OF_16)
    assert rules.run_of_16(text) == (expression.search(text) is not None), text
    (rule,) = [r for r in rules.RULES if r.gate == rules._RUN_OF_16]
    assert rule.holds_gate(text) == (expression.search(text) is not None)
    assert rule.holds_gate(text + "\u00e9") == (expression.search(text + "\u00e9") is not None)


@pytest.mark.parametrize("length", [15, 16, 17])
def test_a_run_of_exactly_the_bound_on_either_side(length: int) -> None:
    run = ("a0+/=_-z" * 3)[:length]
    for text in (run, f"the token {run}", f"{run}.", f"x {run} y"):
        assert rules.run_of_16(text) == (length >= 16), text
