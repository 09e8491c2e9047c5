"""Secret redaction: each credential type is replaced, named in warnings, never echoed."""

from __future__ import annotations

import json
import re
import string

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store.redact import redact
from sealmem.client.store.redaction import RULES

# Fake secrets, assembled here so no real-looking token sits in the source as one string.
ALNUM = "A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6S7t8U9v0"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + ALNUM
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + "." + ALNUM[:30]

CASES = [
    ("openai_api_key", "sk-" + "proj-" + ALNUM, "export OPENAI_API_KEY={}"),
    ("openai_api_key", "sk-" + ALNUM, "the key is {} for the bot"),
    ("anthropic_api_key", "sk-" + "ant-api03-" + ALNUM, "ANTHROPIC_API_KEY={}"),
    ("github_token", "ghp" + "_" + ALNUM[:36], "clone with {} as the token"),
    ("github_token", "gho" + "_" + ALNUM[:36], "oauth {}"),
    ("github_token", "github" + "_pat_" + ALNUM + "_" + ALNUM[:20], "pat: {}"),
    ("slack_token", "xox" + "b-1234567890-" + ALNUM[:24], "slack bot {}"),
    ("stripe_key", "sk" + "_live_" + ALNUM[:24], "stripe {}"),
    ("aws_access_key_id", "AKIA" + "IOSFODNN7EXAMPLE", "aws id {} in ci"),
    ("aws_secret_access_key", ALNUM, "aws_secret_access_key = {}"),
    (
        "gcp_private_key",
        "-----BEGIN PRIVATE KEY-----\\n" + PEM_BODY + "\\n-----END PRIVATE KEY-----\\n",
        '{{"type": "service_account", "private_key": "{}", "client_email": "x@y"}}',
    ),
    (
        "pem_private_key",
        "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA PRIVATE KEY-----",
        "key file:\n{}\nend of note",
    ),
    (
        "pem_private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_BODY + "\n-----END OPENSSH PRIVATE KEY-----",
        "{}",
    ),
    ("jwt", JWT, "session cookie {} expired"),
    ("url_password", "s3cr3t-Pa55", "DATABASE_URL=postgres://app:{}@db.internal:5432/shop"),
    ("password", "hunter2hunter2", "the admin password={} on staging"),
    ("password", "Tr0ub4dor&3", 'config: {{"password": "{}"}}'),
    ("bearer_token", ALNUM[:32], "curl -H 'Authorization: Bearer {}' https://api"),
    ("secret", ALNUM[:24], "api_key: {}"),
]


@pytest.mark.parametrize(("kind", "secret", "template"), CASES, ids=[c[0] for c in CASES])
def test_each_secret_type_is_redacted(kind: str, secret: str, template: str) -> None:
    text = template.format(secret)
    result = redact(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert result.found.get(kind) == 1
    assert redact(result.text).text == result.text  # idempotent


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "secret", "template"), CASES, ids=[c[0] for c in CASES])
def test_stored_memory_and_warnings_never_hold_the_secret(
    store: MemoryStore, kind: str, secret: str, template: str
) -> None:
    result = store.remember(template.format(secret), keywords=["creds"])
    assert secret not in result.memory.content
    assert result.warnings
    assert any(f"[REDACTED:{kind}]" in w for w in result.warnings)
    assert all(secret not in w for w in result.warnings)
    dump = json.dumps(store.export())
    assert secret not in dump


def test_plain_text_is_left_alone() -> None:
    text = (
        "Use the password manager; password: $DB_PASSWORD comes from the env. "
        "Run `pytest -k token` and see https://example.com/a:b path. sk-short stays."
    )
    result = redact(text)
    assert result.text == text
    assert result.found == {}


def test_keywords_and_reasons_are_redacted(store: MemoryStore) -> None:
    token = "ghp" + "_" + ALNUM[:36]
    result = store.remember("a memory with a bad keyword", keywords=[token])
    assert result.memory.record.keywords == ("[REDACTED:github_token]",)
    assert any("keywords" in w for w in result.warnings)
    tomb = store.forget(result.memory.id, reason=f"leaked {token}")
    assert token not in (tomb.record.delete_reason or "")


def test_two_secrets_of_a_kind_are_counted() -> None:
    a, b = "AKIA" + "A" * 16, "AKIA" + "B" * 16
    result = redact(f"{a} and {b}")
    assert result.found == {"aws_access_key_id": 2}
    assert a not in result.text
    assert b not in result.text


# More spellings of the case-insensitive rules, so every alternative's cue is exercised.
IGNORECASE_CASES = [
    ("password", "hunter2hunter2", "passwd={}"),
    ("password", "hunter2hunter2", "PWD: {}"),
    ("password", "hunter2hunter2", "passphrase = {}"),
    ("basic_auth", "dXNlcjpwYXNzd29yZA==", "Authorization: Basic {}"),
    ("secret", ALNUM[:24], "APIKEY={}"),
    ("secret", ALNUM[:24], "secret_key: {}"),
    ("secret", ALNUM[:24], "client-secret={}"),
    ("secret", ALNUM[:24], "auth_token={}"),
    ("secret", ALNUM[:24], "access_token={}"),
    ("secret", ALNUM[:24], "private-token={}"),
    ("bearer_token", ALNUM[:32], "BEARER {}"),
    ("aws_secret_access_key", ALNUM, "AWS_SECRET_ACCESS_KEY: {}"),
]


def _case_twins() -> dict[str, list[str]]:
    """Each ASCII letter's non-ASCII characters that ``re.IGNORECASE`` also matches."""
    any_letter = re.compile("[a-z]", re.IGNORECASE)
    twins: dict[str, list[str]] = {}
    for code in range(128, 0x110000):
        char = chr(code)
        if any_letter.fullmatch(char):
            for letter in string.ascii_lowercase:
                if re.fullmatch(letter, char, re.IGNORECASE):
                    twins.setdefault(letter, []).append(char)
    return twins


def test_a_case_twin_letter_does_not_skip_a_rule() -> None:
    """A rule's cues hold for every text its pattern matches, whatever letters spell it.

    Exhaustive over Unicode: any character the regex engine folds to an ASCII letter
    (the long s, the dotless i, the dotted capital I, the Kelvin sign) is put in place of
    that letter, one position at a time and all at once; whenever the rule's own pattern
    still matches, redact must still replace the secret.
    """
    twins = _case_twins()
    assert twins  # the scan found the characters it is meant to test
    by_type = {rule.type: [r for r in RULES if r.type == rule.type] for rule in RULES}
    checked = 0
    for kind, secret, template in CASES + IGNORECASE_CASES:
        text = template.format(secret)
        cut = text.index(secret)
        head = text[:cut]  # vary the words around the secret, not the secret itself
        variants = []
        for i, char in enumerate(head):
            for twin in twins.get(char.lower(), []):
                variants.append(head[:i] + twin + head[i + 1 :])
        for letter, chars in twins.items():
            for twin in chars:
                variants.append(re.sub(letter, twin, head, flags=re.IGNORECASE))
        for variant_head in variants:
            variant = variant_head + text[cut:]
            if not any(rule.pattern.search(variant) for rule in by_type[kind]):
                continue
            checked += 1
            result = redact(variant)
            assert secret not in result.text, (kind, variant_head)
            assert result.found.get(kind) == 1, (kind, variant_head)
    assert checked > 50
