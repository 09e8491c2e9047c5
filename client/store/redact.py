"""Secret redaction: applied to content, keywords and reasons before they are stored.

Each rule finds one kind of credential and replaces the secret part with
``[REDACTED:<type>]``.  Callers get back the cleaned text and the *types* found,
never the secrets themselves, so warnings and logs are safe to show.

Rules run in order, most specific first (an Anthropic key also looks like an
OpenAI key; a JWT may sit inside a bearer header), and never match text that
an earlier rule already redacted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["RULES", "Redacted", "Rule", "redact", "redact_all", "warning_for"]


@dataclass(frozen=True)
class Rule:
    """``pattern`` finds a secret; group ``secret`` (or the whole match) is replaced."""

    type: str
    label: str
    pattern: re.Pattern[str]
    cues: tuple[str, ...] = ()
    """Lower-case substrings every match contains: a text holding none skips the rule."""


def _rule(type_: str, label: str, pattern: str, flags: int = 0, cues: tuple[str, ...] = ()) -> Rule:
    return Rule(type_, label, re.compile(pattern, flags), cues)


_PLACEHOLDER = r"(?![\[<{$*]|x{4}|\.\.\.)"  # not already redacted, a placeholder or a $VAR

RULES: tuple[Rule, ...] = (
    _rule(
        "gcp_private_key",
        "GCP service-account private key",
        r"(?P<pre>\"private_key\"\s*:\s*\")" + _PLACEHOLDER + r"(?P<secret>(?:[^\"\\]|\\.)+)(?=\")",
        cues=("private_key",),
    ),
    _rule(
        "pem_private_key",
        "PEM private key block",
        r"(?P<secret>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z))",
        re.DOTALL,
        cues=("private key",),
    ),
    _rule(
        "anthropic_api_key", "Anthropic API key", r"(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}",
        cues=("sk-ant-",),
    ),
    _rule(
        "openai_api_key", "OpenAI API key", r"(?<![\w-])sk-(?!ant-)[A-Za-z0-9_-]{20,}",
        cues=("sk-",),
    ),
    _rule(
        "github_token", "GitHub token", r"(?<!\w)(?:gh[pousr]_[A-Za-z0-9]{30,})(?!\w)",
        cues=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _rule(
        "github_token", "GitHub token", r"(?<!\w)github_pat_[A-Za-z0-9_]{22,}",
        cues=("github_pat_",),
    ),
    _rule(
        "slack_token", "Slack token", r"(?<![\w-])xox[abposrce]-[A-Za-z0-9-]{10,}",
        cues=("xox",),
    ),
    _rule(
        "stripe_key", "Stripe secret key", r"(?<!\w)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        cues=("_live_", "_test_"),
    ),
    _rule(
        "aws_access_key_id",
        "AWS access key id",
        r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])",
        cues=("akia", "asia"),
    ),
    _rule(
        "aws_secret_access_key",
        "AWS secret access key",
        r"(?P<pre>aws_secret_access_key[\"']?\s*[=:]\s*[\"']?)" + _PLACEHOLDER +
        r"(?P<secret>[A-Za-z0-9/+=]{30,})",
        re.IGNORECASE,
        cues=("aws_secret_access_key",),
    ),
    _rule(
        "jwt",
        "JSON Web Token",
        r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        cues=("eyj",),
    ),
    _rule(
        "url_password",
        "password in a URL",
        r"(?P<pre>\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)" + _PLACEHOLDER +
        r"(?P<secret>[^\s@/]+)(?=@)",
        re.IGNORECASE,
        cues=("://",),
    ),
    _rule(
        "bearer_token",
        "bearer token",
        r"(?P<pre>\bbearer\s+)" + _PLACEHOLDER + r"(?P<secret>[A-Za-z0-9._~+/=-]{16,})",
        re.IGNORECASE,
        cues=("bearer",),
    ),
    _rule(
        "basic_auth",
        "HTTP basic credentials",
        r"(?P<pre>\bauthorization\s*:\s*basic\s+)(?P<secret>[A-Za-z0-9+/=]{8,})",
        re.IGNORECASE,
        cues=("authorization",),
    ),
    _rule(
        "password",
        "password assignment",
        r"(?P<pre>\b(?:password|passwd|pwd|passphrase)[\"']?\s*[=:]\s*[\"']?)" + _PLACEHOLDER +
        r"(?P<secret>[^\s\"',;]{4,})",
        re.IGNORECASE,
        cues=("password", "passwd", "pwd", "passphrase"),
    ),
    _rule(
        "secret",
        "secret assignment",
        r"(?P<pre>\b(?:api[_-]?key|apikey|secret[_-]?key|client[_-]?secret|auth[_-]?token|"
        r"access[_-]?token|private[_-]?token)[\"']?\s*[=:]\s*[\"']?)" + _PLACEHOLDER +
        r"(?P<secret>[^\s\"',;]{8,})",
        re.IGNORECASE,
        cues=("api", "secret", "token"),
    ),
)  # fmt: skip


@dataclass(frozen=True)
class Redacted:
    """Cleaned text and how many secrets of each type were replaced."""

    text: str
    found: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.found)


def _replacer(rule: Rule, counts: Counter[str]) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        counts[rule.type] += 1
        groups = match.groupdict()
        pre = groups.get("pre") or ""
        if groups.get("secret") is None:
            return f"[REDACTED:{rule.type}]"
        return f"{pre}[REDACTED:{rule.type}]"

    return replace


# The non-ASCII letters that re.IGNORECASE matches to an ASCII one (dotted capital I,
# dotless i, long s, Kelvin sign): folded before the cue check, or "paſſword=..."
# would skip the rule its pattern matches.
_CASE_TWINS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def redact(text: str) -> Redacted:
    """Replace every secret the rules recognise in ``text``."""
    counts: Counter[str] = Counter()
    lowered = text.lower() if text.isascii() else text.translate(_CASE_TWINS).lower()
    for rule in RULES:
        if rule.cues and not any(cue in lowered for cue in rule.cues):
            continue  # cheap: most texts hold no secret and skip every pattern
        text = rule.pattern.sub(_replacer(rule, counts), text)
    return Redacted(text, dict(counts))


def redact_all(texts: Iterable[str]) -> tuple[list[str], dict[str, int]]:
    """Redact several texts; return them and the summed counts per type."""
    total: Counter[str] = Counter()
    out: list[str] = []
    for text in texts:
        result = redact(text)
        out.append(result.text)
        total.update(result.found)
    return out, dict(total)


_LABELS = {rule.type: rule.label for rule in RULES}


def warning_for(found: dict[str, int], where: str = "content") -> list[str]:
    """One warning per secret type found, naming the type and count, never the secret."""
    return [
        f"redacted {count} {_LABELS.get(type_, type_)}{'s' if count > 1 else ''} from the "
        f"{where} (replaced with [REDACTED:{type_}]); keep secrets in a secret manager, "
        "not in memories"
        for type_, count in sorted(found.items())
    ]
