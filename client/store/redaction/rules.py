"""sealmem's own redaction rules: credentials and phrasings the gitleaks rules miss.

Each rule finds one kind of credential; its group ``secret`` (or the whole match)
is what gets replaced.  Rules run before the gitleaks rules and win where both
match, so these type names (``[REDACTED:password]``, ...) stay stable.

Three rules are not about one vendor's format:

- ``password`` and ``secret`` are *keyword* rules: an assignment to a name that
  ends in a secret word (``DB_PASSWORD=``, ``db_password = '...'``,
  ``API_SECRET:``), and the prose "the password is ...".  The keyword is preceded
  by anything but a letter or digit, so ``_`` counts as a boundary (``\\b`` does
  not hold between ``_`` and ``P``).  ``DB_PASS=``, ``pass=``, ``mysql ... -pSECRET`` and a
  ``--password VALUE`` flag count too.  A quoted value is taken up to its closing
  quote (a passphrase has spaces), a bare one up to the first blank.
- ``secret`` also takes the prose "the token is ...", "the API key for staging
  was ...", "our client secret is ...": only a value shaped like a credential
  (:func:`_spoken_token`), so that "the token is refreshed hourly" or "the token
  is base64url-encoded" stay as they are.
- ``high_entropy_secret`` is the *entropy* rule: a token of 16+ characters mixing
  upper case, lower case and digits, with Shannon entropy >= 3.5 bits a
  character, at most 40 characters after a secret word.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["RULES", "Rule", "entropy"]


@dataclass(frozen=True)
class Rule:
    """``pattern`` finds a secret; group ``secret`` (or the whole match) is replaced."""

    type: str
    label: str
    source: str
    flags: int = 0
    cues: tuple[str, ...] = ()
    """Lower-case substrings every match contains: a text holding none skips the rule."""
    accept: Callable[[str], bool] | None = None
    """Given the secret, False drops the match (a placeholder, code, a plain word)."""
    needs: tuple[str, ...] = ()
    """Substrings one of which every text the rule finds a secret in holds, once
    lower-cased as the cue check lower-cases it (``"=" in text``: the cheapest check)."""
    gate: str | None = None
    """A pattern every such lower-cased text holds, searched after :attr:`needs`.

    Both are necessary conditions of a finding, checked before the rule's own costlier
    pattern, so that prose naming a cue word ("rotate the deploy token") skips it.
    They never change what the rule finds (tests hold them so over the corpus and
    over generated look-alikes)."""

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: a process that never redacts (a hook) never pays for it."""
        return re.compile(self.source, self.flags)

    @functools.cached_property
    def gate_pattern(self) -> re.Pattern[str] | None:
        return None if self.gate is None else re.compile(self.gate)

    def holds_gate(self, lowered: str) -> bool:
        """Whether a lower-cased text holds :attr:`gate` (True when there is none); the
        run-of-16 gate of ASCII text is looked for without the regular expression
        (:func:`run_of_16`: the same answer, a quarter of the time)."""
        gate = self.gate
        if gate is None:
            return True
        if gate is _RUN_OF_16 and lowered.isascii():
            return run_of_16(lowered)
        return self.gate_pattern.search(lowered) is not None  # type: ignore[union-attr]

    def holds_needs(self, lowered: str) -> bool:
        """Whether a lower-cased text holds one of :attr:`needs` (True when there are
        none): one substring search in C per part, ``memchr``-fast, and no Python step
        between them (``map`` and ``any`` run in C; a regular expression alternation of
        the parts tests every character against it, three to four times slower here)."""
        return not self.needs or any(map(lowered.__contains__, self.needs))


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


_PLACEHOLDER = r"(?![\[<{$*%]|x{4}|\.\.\.)"  # not already redacted, a placeholder or a $VAR

# A value that is code, not a secret: ``os.environ["X"]``, ``settings.db_password``,
# ``get_secret()``, ``process.env.API_SECRET``, a ``{{ template }}``.
_CODE_VALUE = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*(?:[(\[].*)?|.*[{}].*", re.ASCII)
_WORDS_ONLY = re.compile(r"[A-Za-z][a-z]*(?:[ _-][A-Za-z][a-z]*)*", re.ASCII)
_VALUE_WORDS = frozenset({
    "none", "null", "true", "false", "undefined", "required", "changeme", "raise", "return",
    "self", "this", "str", "string", "bytes", "optional", "secretstr", "await", "lambda",
})  # fmt: skip


def _assigned_value(secret: str) -> bool:
    """An assigned value is a secret unless it is code, a constant or a plain word."""
    bare = secret.strip("\"'`")
    if bare.lower() in _VALUE_WORDS:
        return False
    if any(ch.isdigit() for ch in bare) and "(" not in bare and "[" not in bare:
        return True
    code = _CODE_VALUE.fullmatch(bare) is not None
    return not (code and any(mark in bare for mark in ".([{"))


def _spoken_password(secret: str) -> bool:
    """After "the password is": quoted text, or a word with a digit or a symbol."""
    if secret[:1] in "\"'`":
        return True
    return not _WORDS_ONLY.fullmatch(secret) and not secret.startswith(("http", "/", "$"))


_PART_SEPARATORS = re.compile(r"[-_./+=~]")
_UNIT = re.compile(r"[0-9]+[a-z]{3,}")  # 15minutes, 256bits, 64chars
_VERSIONED = re.compile(r"[A-Za-z]+[0-9]*(?:\.[0-9]+)+")  # python3.12, node18.2.0


def _spoken_token(secret: str) -> bool:
    """After "the token/API key/secret is": quoted text, or a credential's shape.

    A bare value must be 8+ characters with a part (between ``-_./+=~``) that mixes
    letters and digits, and no part that is a lower-case word of 4+ letters or a
    number with a unit: ``hunter2xyz``, ``tok_8HqZ2mK9``, a hex or UUID key pass;
    ``refreshed``, ``base64url-encoded``, ``HS256-signed``, ``AES-256-GCM``,
    ``15minutes``, ``python3.12`` do not.
    """
    if secret[:1] in "\"'`":
        return True
    if len(secret) < 8 or _VERSIONED.fullmatch(secret):
        return False
    parts = _PART_SEPARATORS.split(secret)
    for part in parts:
        if _UNIT.fullmatch(part) or (len(part) >= 4 and part.isalpha() and part.islower()):
            return False
    return any(any(c.isdigit() for c in part) and any(c.isalpha() for c in part) for part in parts)


_TOKEN_CHARS = "A-Za-z0-9+/=_-"  # noqa: S105 (a character class, not a password)
_HEX_OR_UUID = re.compile(r"[0-9a-fA-F-]+")


def _random_token(secret: str) -> bool:
    """Mixed case and digits, high entropy; not a hash, a UUID, a path or an assignment."""
    if _HEX_OR_UUID.fullmatch(secret) or secret.count("/") > 1 or "=" in secret.rstrip("="):
        return False
    kinds = (
        any(c.islower() for c in secret),
        any(c.isupper() for c in secret),
        any(c.isdigit() for c in secret),
    )
    return all(kinds) and entropy(secret) >= 3.5


_ASSIGN_MARKS = ("=", ":")  # every _ASSIGN holds one
# A run of 16 token characters, in one pass: shorter runs and what separates them are
# taken possessively (no retry at each character, as a plain search would).
_RUN_OF_16 = r"\A(?:[a-z0-9+/=_-]{0,15}+[^a-z0-9+/=_-]++)*+[a-z0-9+/=_-]{16}"
# Each byte of an ASCII text as "t" (a token character of _RUN_OF_16) or a space
_TOKEN_OR_SPACE = bytes(
    ord("t") if chr(i) in "abcdefghijklmnopqrstuvwxyz0123456789+/=_-" else 32 for i in range(256)
)


def run_of_16(lowered: str) -> bool:
    """Whether an ASCII text holds a run of 16 token characters, :data:`_RUN_OF_16`'s
    search: its bytes mapped to "t" or a space (a table lookup per byte), then one
    substring search, where the expression steps through every character."""
    return b"t" * 16 in lowered.encode("ascii").translate(_TOKEN_OR_SPACE)


_KEY_START = r"(?<![A-Za-z0-9])"  # a boundary that holds after "_": DB_PASSWORD, API_SECRET
_ASSIGN = r"[\"']?\s*(?:=|:=|:|=>)\s*[\"'`]?"


def _value(least: int) -> str:
    """An assigned value: inside quotes, all of it up to the closing quote on its line
    (a passphrase has spaces: ``'correct horse battery staple'``); else one word."""
    quoted = "|".join(f"(?<={q})[^{q}\\n]{{{least},}}(?={q})" for q in ('"', "'", "`"))
    return f"(?P<secret>{quoted}|[^\\s\"'`,;]{{{least},}})"


# DB_PASS, SMTP_PASS, db.pass, and pass= (not the word "pass" in prose: "second pass: ...")
_PASS = r"(?<=[A-Za-z0-9][_.-])pass(?![A-Za-z0-9])|" + _KEY_START + r"pass(?=[\"']?\s*:?=)"

# vendor formats, (type, label, cues, pattern): found as they stand, whole
_TOKENS = (
    ("anthropic_api_key", "Anthropic API key", ("sk-ant-",),
     r"(?<![\w-])sk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai_api_key", "OpenAI API key", ("sk-",), r"(?<![\w-])sk-(?!ant-)[A-Za-z0-9_-]{20,}"),
    ("github_token", "GitHub token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
     r"(?<!\w)(?:gh[pousr]_[A-Za-z0-9]{30,})(?!\w)"),
    ("github_token", "GitHub token", ("github_pat_",), r"(?<!\w)github_pat_[A-Za-z0-9_]{22,}"),
    ("slack_token", "Slack token", ("xox",), r"(?<![\w-])xox[abposrce]-[A-Za-z0-9-]{10,}"),
    ("stripe_key", "Stripe secret key", ("_live_", "_test_"),
     r"(?<!\w)(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("aws_access_key_id", "AWS access key id", ("akia", "asia"),
     r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
)  # fmt: skip

RULES: tuple[Rule, ...] = (
    Rule(
        "gcp_private_key",
        "GCP service-account private key",
        r"(?P<pre>\"private_key\"\s*:\s*\")" + _PLACEHOLDER + r"(?P<secret>(?:[^\"\\]|\\.)+)(?=\")",
        cues=("private_key",),
    ),
    Rule(
        "pem_private_key",
        "PEM private key block",
        r"(?P<secret>-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|.*\Z))",
        re.DOTALL,
        cues=("private key",),
    ),
    *(Rule(type_, label, pattern, cues=cues) for type_, label, cues, pattern in _TOKENS),
    Rule(
        "aws_secret_access_key",
        "AWS secret access key",
        r"(?P<pre>aws_secret_access_key[\"']?\s*[=:]\s*[\"']?)" + _PLACEHOLDER +
        r"(?P<secret>[A-Za-z0-9/+=]{30,})",
        re.IGNORECASE,
        cues=("aws_secret_access_key",),
    ),
    Rule(
        "azure_storage_key",
        "Azure storage account key",
        r"(?P<pre>(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey)\s*=\s*)" + _PLACEHOLDER +
        r"(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
        re.IGNORECASE,
        cues=("accountkey", "sharedaccesskey"),
    ),
    Rule(
        "discord_webhook",
        "Discord webhook URL",
        r"(?P<pre>(?:https?://)?(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/(?:v\d{1,3}/)?"
        r"webhooks/\d+/)" +
        _PLACEHOLDER + r"(?P<secret>[A-Za-z0-9_-]{20,})",
        re.IGNORECASE,
        cues=("discord",),
    ),
    Rule(
        "jwt",
        "JSON Web Token",
        r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        cues=("eyj",),
    ),
    Rule(
        "url_password",
        "password in a URL",
        r"(?P<pre>(?<![a-z0-9+.-])[a-z][a-z0-9+.-]*://[^\s:/@]*:)" + _PLACEHOLDER +
        r"(?P<secret>[^\s@/]+)(?=@)",
        re.IGNORECASE,
        cues=("://",),
    ),
    Rule(
        "bearer_token",
        "bearer token",
        r"(?P<pre>\bbearer\s+)" + _PLACEHOLDER + r"(?P<secret>[A-Za-z0-9._~+/=-]{16,})",
        re.IGNORECASE,
        cues=("bearer",),
    ),
    Rule(
        "basic_auth",
        "HTTP basic credentials",
        r"(?P<pre>\bauthorization\s*:\s*basic\s+)(?P<secret>[A-Za-z0-9+/=]{8,})",
        re.IGNORECASE,
        cues=("authorization",),
    ),
    Rule(
        "password",
        "password assignment",
        r"(?P<pre>(?:" + _KEY_START + r"(?:pwd|pw)|password|passwd|passphrase|" + _PASS + r")" +
        _ASSIGN + r")" + _PLACEHOLDER + _value(4),
        re.IGNORECASE,
        cues=("pass", "pw"),
        accept=_assigned_value,
        needs=_ASSIGN_MARKS,
        gate=r"(?:pw|pwd|pass|passwd|password|passphrase)[\"']?\s*[=:]",
    ),
    Rule(
        "password",
        "password assignment",
        r"(?P<pre>(?<![\w-])mysql(?:dump|admin|sh|import)?\b[^\n]{0,200}?\s(?-i:-p))" +
        r"(?P<secret>\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"'`-][^\s\"'`]{3,})",
        re.IGNORECASE,
        cues=("mysql",),
    ),
    Rule(
        "password",
        "password assignment",
        r"(?P<pre>(?<![\w-])--(?:[a-z0-9]+-)*(?:password|passwd|passphrase|pass)\s+[\"'`]?)" +
        _PLACEHOLDER + r"(?!-)" + _value(4),
        re.IGNORECASE,
        cues=("pass",),
        accept=_assigned_value,
        needs=("--",),
    ),
    Rule(
        "password",
        "password assignment",
        r"(?P<pre>" + _KEY_START + r"(?:password|passwd|passphrase)(?:\s+for\s+[^\s:]{1,40})?"
        r"(?:\s+(?:is|was|is set to)\s*+:?|\s*:)\s*+)" + _PLACEHOLDER +
        r"(?P<secret>\"[^\"\n]{4,}\"|'[^'\n]{4,}'|`[^`\n]{4,}`|[^\s\"'`]{3,}[^\s\"'`.,;:!?)\]])",
        re.IGNORECASE,
        cues=("password", "passwd", "passphrase"),
        accept=_spoken_password,
        gate=r"pass(?:word|wd|phrase)(?:\s+(?:for|is|was)|\s*:)",
    ),
    Rule(
        "secret",
        "secret assignment",
        r"(?P<pre>" + _KEY_START + r"(?:api[_-]?key|apikey|secret(?:[_-]?key)?|client[_-]?secret|"
        r"auth[_-]?token|access[_-]?token|private[_-]?token|api[_-]?token)" + _ASSIGN + r")" +
        _PLACEHOLDER + _value(8),
        re.IGNORECASE,
        cues=("api", "secret", "token"),
        accept=_assigned_value,
        needs=_ASSIGN_MARKS,
        gate=r"(?:key|secret|token)[\"']?\s*[=:]",
    ),
    Rule(
        "high_entropy_secret",
        "high-entropy token near a secret word",
        r"(?P<pre>" + _KEY_START + r"(?:secret|token|api[_ -]?key|key|password|passwd|passphrase|"
        r"credentials?|creds)[^\n]{0,40}?)"
        r"(?<![" + _TOKEN_CHARS + r"])" + r"(?P<secret>[" + _TOKEN_CHARS + r"]{16,})"
        r"(?![" + _TOKEN_CHARS + r"])",
        re.IGNORECASE,
        cues=("secret", "token", "key", "passw", "passphrase", "cred"),
        accept=_random_token,
        needs=tuple("0123456789"),  # _random_token wants a digit
        gate=_RUN_OF_16,
    ),
    Rule(
        "secret",
        "secret assignment",
        r"(?P<pre>" + _KEY_START + r"(?:api[_ -]?key|apikey|token|secret(?:[_ -]?key)?|"
        r"client[_ -]?secret)(?:\s+for\s+[^\s:]{1,40})?\s+(?:is|was)(?![A-Za-z0-9_])"
        r"(?:\s+set\s+to)?\s*+:?\s*+)" + _PLACEHOLDER +
        r"(?P<secret>\"[^\"\n]{8,}\"|'[^'\n]{8,}'|`[^`\n]{8,}`|"
        r"[A-Za-z0-9_+/=~-]++(?:\.[A-Za-z0-9_+/=~-]++)*+)",
        re.IGNORECASE,
        cues=("api", "token", "secret"),
        accept=_spoken_token,
        needs=("is", "was"),
        gate=r"(?:key|token|secret)(?:\s+for\s+\S{1,40})?\s+(?:is|was)(?![a-z0-9_])",
    ),
)  # fmt: skip
