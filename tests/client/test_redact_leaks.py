"""The secrets that leaked past redaction (issue 12), and the listed kinds that got
through in another spelling, are redacted, with a warning.

Each fake secret is assembled from a seeded generator, so no real-looking token sits
in the source as one string; none is real.
"""

from __future__ import annotations

import base64
import inspect
import json
import random
import string

import pytest

from sealmem.client import MemoryStore
from sealmem.client.store import redact as redact_module
from sealmem.client.store.redact import redact, warning_for
from sealmem.client.store.redaction import RULES, Redacted

_rng = random.Random(12)


def _rand(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


_PW = "Harbor" + "7731" + "!kQ"
_LEAKS = [
    ("DB_PASSWORD", _PW, "DB_PASSWORD={}"),
    ("db_password quoted", _PW, "db_password = '{}'"),
    ("API_SECRET", _rand(32), "API_SECRET={}"),
    ("the password is", _PW, "for staging the password is {} (ask ops to rotate)"),
    ("POSTGRES_PASSWORD", _PW, "docker run -e POSTGRES_PASSWORD={} postgres:16"),
    ("Google AIza", "AIza" + _rand(35), "maps key {} in the web app"),
    ("GitLab glpat-", "glpat-" + _rand(20), "runner uses {}"),
    ("npm npm_", "npm_" + _rand(36), "//registry.npmjs.org/:_authToken={}"),
    ("Hugging Face hf_", "hf_" + _rand(34, string.ascii_letters), "hf login --token {}"),
    ("SendGrid SG.", "SG." + _rand(22) + "." + _rand(43), "mail goes out with {}"),
    (
        "Azure AccountKey=",
        base64.b64encode(_rng.randbytes(64)).decode(),
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={};EndpointSuffix=x",
    ),
    (
        "Slack webhook",
        "https://hooks.slack.com/services/T" + _rand(8).upper() + "/B" + _rand(8).upper() + "/"
        + _rand(24),
        "alerts post to {}",
    ),
    (
        "Discord webhook",
        _rand(68),
        "https://discord.com/api/webhooks/" + "123456789012345678" + "/{}",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "secret", "template"), _LEAKS, ids=[n for n, _, _ in _LEAKS])
def test_a_leaked_kind_is_redacted(name: str, secret: str, template: str) -> None:
    text = template.format(secret)
    result = redact(text)
    assert secret not in result.text, name
    assert result.changed
    assert "[REDACTED:" in result.text
    assert redact(result.text).text == result.text  # a second pass changes nothing


@pytest.mark.parametrize(("name", "secret", "template"), _LEAKS, ids=[n for n, _, _ in _LEAKS])
def test_a_leaked_kind_is_kept_out_of_the_store_with_a_warning(
    store: MemoryStore, name: str, secret: str, template: str
) -> None:
    result = store.remember(template.format(secret), keywords=["deploy"])
    assert secret not in result.memory.content
    assert result.warnings
    assert any("[REDACTED:" in w for w in result.warnings)
    assert all(secret not in w for w in result.warnings)
    assert secret not in json.dumps(store.export())


def test_prose_about_passwords_and_code_is_left_alone() -> None:
    for text in [
        "We use the password reset flow of the auth service.",
        "The password is hashed with argon2id before it is stored.",
        "password = os.environ['DB_PASSWORD']",
        "client_secret = settings.CLIENT_SECRET",
        "if not password: raise ValueError('password required')",
        "PASSWORD_MIN_LENGTH=12 and PASSWORD_HASHERS=argon2",
    ]:
        assert redact(text) == Redacted(text), text


def test_the_redact_api_callers_use_still_works() -> None:
    """capture, apply, replica, api and transfer call these with these shapes."""
    assert list(inspect.signature(redact).parameters) == ["text"]
    assert list(inspect.signature(warning_for).parameters) == ["found", "where"]
    secret = "DB_PASSWORD=" + _PW
    result = redact(secret)
    assert isinstance(result, Redacted)
    assert isinstance(result.text, str)
    assert result.found == {"password": 1}
    assert result.changed
    assert redact(secret).text == "DB_PASSWORD=[REDACTED:password]"
    assert warning_for({"password": 2}, where="keywords") == [
        "redacted 2 password assignments from the keywords (replaced with "
        "[REDACTED:password]); keep secrets in a secret manager, not in memories"
    ]
    for name in ("redact", "warning_for"):
        assert name in redact_module.__all__
    assert all(rule.type and rule.pattern.pattern for rule in RULES)


SECRET = "hunter2Xq9"


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
