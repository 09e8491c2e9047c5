"""Redaction under attack: text that made a rule backtrack for seconds, and secrets of the
kinds the daily-use issue lists that got through in another spelling."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sealmem.client.store.redaction import gitleaks, redact
from sealmem.client.store.redaction.rules import RULES

SECRET = "hunter2Xq9"


def _rule(type_: str) -> list[re.Pattern[str]]:
    return [rule.pattern for rule in RULES if rule.type == type_]


def test_a_url_rule_match_never_begins_inside_a_scheme() -> None:
    """``a-`` x 32,000 then ``://`` took 30 s: a match was tried at every ``\\b`` of the
    run and each scanned the rest of it.  A scheme now begins where its run begins, so
    each character is scanned once; no match may start inside the run."""
    (pattern,) = _rule("url_password")
    text = "x-y-z.w+v" + f"://app:{SECRET}@db"
    assert pattern.match(text, 0) is not None
    starts = [k for k in range(1, text.index("://")) if pattern.match(text, k) is not None]
    assert starts == []


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        ("redis://:hunter2Xq9@cache:6379/0", SECRET),  # a password with no user name
        ("db_password = 'correct horse battery staple'", "horse battery staple"),
        ('DB_PASSWORD="two words hunter2Xq9"', SECRET),
        ('"api_secret": "hunter2Xq9 and more"', "and more"),
        ("DB_PASS=hunter2Xq9", SECRET),
        ("SMTP_PASS: hunter2Xq9", SECRET),
        ("https://example.com/login?user=bob&pass=hunter2Xq9", SECRET),
        ("pg_dump --password hunter2Xq9 prod", SECRET),
        ("mysql -u root -phunter2Xq9 prod", SECRET),
        ("mysqldump -uroot -p'hunter2Xq9 x' shop", SECRET),
        ('deploy --db-password "hunter2Xq9 x" --yes', SECRET),
        ("discord.com/api/webhooks/123456789012345678/zQ3xV8mN2pL5tR7wK9yB4cH6jD1fG0s", "zQ3xV8"),
        (
            "https://discord.com/api/v10/webhooks/123456789012345678/zQ3xV8mN2pL5tR7wK9yB4cH6jD1f",
            "zQ3xV8",
        ),
    ],
)
def test_another_spelling_of_a_listed_kind_is_redacted(text: str, leaked: str) -> None:
    result = redact(text)
    assert leaked not in result.text
    assert result.found


def test_a_bitbake_only_allowlist_does_not_let_secrets_through_elsewhere() -> None:
    """gitleaks allows ``LICENSE...="..."`` and ``SRC...="..."`` lines only in BitBake
    files (paths AND regexes); a memory has no path, so the list must not apply at all."""
    for text in ['SRC_ACCESS="k3JqP0xz9Lm2Wv"', 'LICENSE="MIT" BUILD_ACCESS="k3JqP0xz9Lm2Wv"']:
        result = redact(text)
        assert "k3JqP0xz9Lm2Wv" not in result.text, text
        assert result.found == {"generic-api-key": 1}


@pytest.mark.parametrize(
    "text",
    [
        "second pass: we rerun the flaky tests",
        "def close(self):\n    pass\n",
        "the bypass=on flag skips the cache",
        "run it with --no-password --verbose",
        "keep it in --password-file /run/secrets/db",
        "git clone https://github.com/org/repo.git",
        "the passport photo is in the drive",
        "mysql -h db -P3306 -u app -p",
        "mysql -u root -p prod",
    ],
)
def test_prose_and_code_near_the_new_spellings_is_left_alone(text: str) -> None:
    assert redact(text).text == text


def test_every_gitleaks_allowlist_kept_can_hold_without_a_path() -> None:
    for spec in gitleaks.specs()[0]:
        for allow in spec.allowlists:
            assert allow.regexes or allow.stopwords, spec.id


SPOKEN = [
    "the token is",
    "token was set to",
    "the api key for prod was",
    "the password is",
    "password for staging was",
]


def test_a_spoken_secret_word_before_a_run_of_blanks_is_read_in_one_pass(tmp_path: Path) -> None:
    """ "the token is" (or "the password is") then 64 KiB of blanks took 130-200 s on one
    core: the blanks between "is" and the value were split between two ``\\s*`` every
    way there is.  Run in a child process that must finish; a hang guard with a wide
    margin (the shapes take milliseconds), not a measure of speed
    (tests/bench/bench_redos.py measures)."""
    size = 64 * 1024
    texts = [lead + blank * (size - len(lead)) for lead in SPOKEN for blank in (" ", "\n")]
    texts += [(lead + " " * 600 + "hunter2Xq9 ") * 50 for lead in SPOKEN]
    path = tmp_path / "texts.txt"
    path.write_text("\0".join(texts), encoding="utf-8")
    code = (
        "import sys\n"
        "from sealmem.client.store.redaction import redact\n"
        "texts = open(sys.argv[1], encoding='utf-8').read().split('\\0')\n"
        "print(sum(len(redact(t).found) > 0 for t in texts))\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            timeout=90,
            check=True,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("redacting 64 KiB of blanks after a spoken secret word did not finish")
    # the blanks hide nothing; the value after each blank run is still found
    assert done.stdout.split() == [str(len(SPOKEN))]
