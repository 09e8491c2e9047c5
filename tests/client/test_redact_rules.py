"""The rule set: its version, the gitleaks data, the prefilter, the labelled corpus, and
rules that must not backtrack on hostile text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealmem.client.store import redaction
from sealmem.client.store.redaction import RULES_VERSION, cues, gitleaks, redact
from sealmem.client.store.redaction.rules import RULES
from tests.fixtures.redaction import corpus


def test_rules_version_names_the_rule_set_and_follows_every_change() -> None:
    name, _, fingerprint = RULES_VERSION.partition("@")
    assert f"gitleaks-{gitleaks.GITLEAKS_VERSION}" in name
    assert fingerprint == redaction.rules_fingerprint(), (
        "a rule or gitleaks.toml changed: set RULES_VERSION's fingerprint to "
        f"{redaction.rules_fingerprint()} (and bump the sealmem-N part for a behaviour change)"
    )


def test_every_gitleaks_rule_compiles_under_python() -> None:
    specs, _ = gitleaks.specs()
    assert len(specs) >= 200
    for spec in specs:
        assert spec.pattern.pattern  # compiles; a Go-only construct would raise here
        assert spec.keywords, spec.id  # every rule has a prefilter cue
        assert all(k.isascii() for k in spec.keywords), spec.id  # the prefilter scans bytes


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"(?i)abc", r"(?i)abc"),
        (r"ab(?i)cd", r"ab(?i:cd)"),
        (r"(x(?i)y|z)w", r"(x(?i:y)|(?i:z))w"),
        (r"a\zb", r"a\Zb"),
        (r"[(?i)]x", r"[(?i)]x"),
        (r"[]a](?i)b", r"[]a](?i:b)"),
        (r"\((?i)q\)", r"\((?i:q\))"),
    ],
)
def test_go_regex_rewrites_inline_flags_and_end_of_text(go: str, python: str) -> None:
    assert gitleaks.go_regex(go) == python
    re.compile(python)


def test_go_case_insensitive_tail_matches_like_go() -> None:
    pattern = re.compile(gitleaks.go_regex(r"\b(SG\.(?i)[a-z]{4})x|(?-i:Q)"), re.ASCII)
    assert pattern.fullmatch("SG.AbCdx")
    assert not pattern.fullmatch("sg.abcdx")  # the prefix stays case-sensitive
    assert pattern.fullmatch("Q")


def test_the_prefilter_finds_overlapping_and_nested_cue_words() -> None:
    index = cues.cue_index()
    found = cues.cues_in("x sk-ant-api03 y", index)
    assert {"sk-", "sk-ant-"} <= found  # the Anthropic rule and the OpenAI rule both wake
    assert cues.cues_in("nothing to see in these words", index) == set()


def test_the_generic_rule_gate_holds_for_every_generic_match() -> None:
    """The gate is a necessary condition: on every corpus line the rule matches, it does."""
    (spec,) = [s for s in gitleaks.specs()[0] if s.id == "generic-api-key"]
    assert spec.gate is not None
    matched = 0
    for line in corpus.load():
        if spec.pattern.search(line.text):
            matched += 1
            assert spec.gate.search(line.text), line.text
    assert matched > 20


def test_non_ascii_text_is_scanned_like_ascii() -> None:
    secret = "glpat-" + "xK3mP9qR2tV5wY8zA1bC"
    result = redact(f"Schlüssel für GitLab: {secret} \ud800 ende")
    assert secret not in result.text
    assert result.found == {"gitlab-pat": 1}


def test_text_without_a_cue_word_is_returned_as_is() -> None:
    text = "We moved the build to a faster runner and the tests now finish in time."
    assert cues.cues_in(text.lower(), cues.cue_index()) == set()
    assert redact(text).text is text


def test_labelled_corpus_precision_and_recall() -> None:
    """The floor the rules keep on the corpus (bench_redact.py prints the figures)."""
    lines = corpus.load()
    assert len(lines) >= 300
    result = corpus.score(lambda text: redact(text).text, lines)
    assert result.false_positives == []
    assert result.recall() >= 0.98, [m.text for m in result.missed]
    for family in result.total:
        if family not in ("clean", "password"):
            assert result.recall(family) == 1.0, family


def test_redacting_the_corpus_twice_changes_nothing() -> None:
    for line in corpus.load():
        once = redact(line.text).text
        assert redact(once).text == once, line.text


_TOKEN = st.text(alphabet="abcdefghijkLMNOPQRS0123456789_-./=:'\" \n", max_size=60)


@settings(max_examples=300, deadline=None)
@given(head=_TOKEN, tail=_TOKEN)
def test_redaction_is_idempotent_and_keeps_the_text_around(head: str, tail: str) -> None:
    secret = "glpat-" + "xK3mP9qR2tV5wY8zA1bC"
    result = redact(f"{head} {secret} {tail}")
    assert secret not in result.text
    assert redact(result.text).text == result.text


def test_curl_rules_still_catch_credentials_on_one_or_several_lines() -> None:
    secret = "Zq3xV8mN2pL5tR7wK9yB4c"
    for text in [
        f"curl -u admin:{secret} https://api.example.com",
        f"notes\ncurl https://api.example.com \\\n  -u admin:{secret}\n",
    ]:
        result = redact(text)
        assert secret not in result.text, text
        assert "curl-auth-user" in result.found


class _CountingPattern:
    """Wraps a compiled pattern and counts how the engine uses it."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.calls: list[tuple[str, int]] = []

    def match(self, text: str, pos: int = 0, endpos: int = 2**31) -> re.Match[str] | None:
        self.calls.append(("match", min(endpos, len(text)) - pos))
        return self.pattern.match(text, pos, endpos)

    def finditer(self, text: str) -> object:
        self.calls.append(("finditer", len(text)))
        return self.pattern.finditer(text)


def test_a_quadratic_rule_is_tried_only_near_its_first_keywords(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``curl '`` x 2,000 took 1.7 s (each start scanned the rest of the line)."""
    (spec,) = [s for s in gitleaks.specs()[0] if s.id == "curl-auth-user"]
    counting = _CountingPattern(spec.pattern)
    monkeypatch.setitem(spec.__dict__, "pattern", counting)
    hostile = ("curl '" * 2000)[:10_000]
    assert list(spec.finditer(hostile)) == []
    assert len(counting.calls) <= gitleaks.MAX_STARTS
    assert all(kind == "match" and size <= 1024 for kind, size in counting.calls)


def test_a_url_rule_match_never_begins_inside_a_scheme() -> None:
    """``a-`` x 32,000 then ``://`` took 30 s: a match was tried at every ``\\b`` of the
    run and each scanned the rest of it.  A scheme now begins where its run begins, so
    each character is scanned once; no match may start inside the run."""
    (pattern,) = [rule.pattern for rule in RULES if rule.type == "url_password"]
    text = "x-y-z.w+v" + "://app:hunter2Xq9@db"
    assert pattern.match(text, 0) is not None
    starts = [k for k in range(1, text.index("://")) if pattern.match(text, k) is not None]
    assert starts == []


def test_a_bitbake_only_allowlist_does_not_let_secrets_through_elsewhere() -> None:
    """gitleaks allows ``LICENSE...="..."`` and ``SRC...="..."`` lines only in BitBake
    files (paths AND regexes); a memory has no path, so the list must not apply at all."""
    for text in ['SRC_ACCESS="k3JqP0xz9Lm2Wv"', 'LICENSE="MIT" BUILD_ACCESS="k3JqP0xz9Lm2Wv"']:
        result = redact(text)
        assert "k3JqP0xz9Lm2Wv" not in result.text, text
        assert result.found == {"generic-api-key": 1}


def test_every_gitleaks_allowlist_kept_can_hold_without_a_path() -> None:
    for spec in gitleaks.specs()[0]:
        for allow in spec.allowlists:
            assert allow.regexes or allow.stopwords, spec.id
