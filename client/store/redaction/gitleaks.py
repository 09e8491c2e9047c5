"""The gitleaks default rules, read from ``gitleaks.toml`` (data, MIT licence) and run here.

The file is the upstream rule set unchanged; this module gives it gitleaks'
meaning: a rule runs only when the lower-cased text holds one of its
``keywords``; the secret is the first non-empty capture group (else the whole
match); a rule with ``entropy`` needs a secret at least that random, and the
``generic-*`` rules need a digit in it (as gitleaks does); a finding is dropped
when an allowlist of the rule (or the global one) matches it: ``regexes``
against the secret, the match or the line (``regexTarget``), ``stopwords``
contained in the secret, combined by ``condition`` (OR unless AND).  Path
allowlists and path-only rules do not apply to memories and are skipped.

Go's regular expressions differ from Python's in two ways these rules use: a
``(?i)`` in mid-pattern (Go: case-insensitive to the end of the group) and
``\\z``.  :func:`go_regex` rewrites both.  Patterns compile with ``re.ASCII``, as
Go's classes are ASCII.  Each rule compiles the first time its keywords show up,
so a process that never meets one pays nothing for it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .rules import entropy

__all__ = ["GITLEAKS_VERSION", "Allowlist", "Spec", "go_regex", "specs"]

GITLEAKS_VERSION = "8.30.0"
"""The gitleaks release whose default rules ``gitleaks.toml`` holds (see its header)."""


GATES = {
    # generic-api-key: every match has an operator (=, >, :, ||, ,), at most five of
    # `'"= or blanks, then a secret of at least 10 characters of [\w.=-] or [a-z0-9+/].
    # Prose wakes this rule at every "key" or "token"; this search skips most of it.
    "generic-api-key": r"[=>:|,][\x60'\"\s=]{0,5}[\w.=+/-]{10}",
}
"""Per rule id, a pattern that every match of the rule contains, searched first."""

BOUNDED = {"curl-auth-header": 1024, "curl-auth-user": 1024}
"""Rules whose ``.*`` runs make Python's backtracking engine quadratic (Go's engine is
linear): 10,000 characters of ``curl '`` took 1.7 s.  Each begins with its keyword, so
it is tried only where the keyword stands (the first :data:`MAX_STARTS` places), over
at most this many characters."""
MAX_STARTS = 32


@dataclass(frozen=True)
class Allowlist:
    regexes: tuple[str, ...]  # Python syntax (go_regex)
    target: str  # "secret", "match" or "line"
    stopwords: tuple[str, ...]
    all_of: bool  # condition = "AND"

    def allows(self, secret: str, match: str, line: str) -> bool:
        subject = {"match": match, "line": line}.get(self.target, secret)
        checks: list[bool] = []
        if self.regexes:
            checks.append(any(rx.search(subject) for rx in self.patterns))
        if self.stopwords:
            low = secret.lower()
            checks.append(any(word in low for word in self.stopwords))
        if not checks:
            return False
        return all(checks) if self.all_of else any(checks)

    @functools.cached_property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        """Compiled on first use: most texts never hold a finding to allow."""
        return tuple(re.compile(rx, re.ASCII) for rx in self.regexes)


@dataclass(frozen=True)
class Spec:
    """One gitleaks rule as written in the data file; :meth:`pattern` compiles it."""

    id: str
    description: str
    regex: str
    keywords: tuple[str, ...]
    min_entropy: float
    allowlists: tuple[Allowlist, ...]

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(_anchor_name(go_regex(self.regex)), re.ASCII)

    @functools.cached_property
    def gate(self) -> re.Pattern[str] | None:
        """A cheap necessary condition of :attr:`pattern` (see :data:`GATES`), if any."""
        source = GATES.get(self.id)
        return None if source is None else re.compile(source, re.ASCII)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """The matches of :attr:`pattern` in ``text`` (bounded for :data:`BOUNDED` rules)."""
        limit = BOUNDED.get(self.id)
        if limit is None:
            yield from self.pattern.finditer(text)
            return
        starts = sorted(
            m.start()
            for keyword in self.keywords
            for m in re.finditer(re.escape(keyword), text, re.IGNORECASE | re.ASCII)
        )
        done = 0
        for start in starts[:MAX_STARTS]:
            if start < done:
                continue
            match = self.pattern.match(text, start, min(len(text), start + limit))
            if match is not None:
                done = match.end()
                yield match

    def accepts(self, secret: str, match: str, line: str, global_allow: Allowlist) -> bool:
        """Whether a match of this rule is a finding (gitleaks' entropy and allowlists)."""
        if self.min_entropy and entropy(secret) < self.min_entropy:
            return False
        if self.id.startswith("generic") and not any(c.isdigit() for c in secret):
            return False
        if global_allow.allows(secret, match, line):
            return False
        return not any(allow.allows(secret, match, line) for allow in self.allowlists)


def go_regex(source: str) -> str:
    """``source`` (Go RE2 syntax) as a Python pattern with the same meaning.

    ``(?i)`` after the start becomes ``(?i:`` closed at the end of its group (and
    around each ``|`` alternative that follows it in that group); ``\\z`` becomes ``\\Z``.
    """
    out: list[str] = []
    opened = [0]  # per open group: how many "(?i:" this level has open
    in_class = False
    i, n = 0, len(source)
    while i < n:
        char = source[i]
        if char == "\\":
            pair = source[i : i + 2]
            out.append("\\Z" if pair == "\\z" and not in_class else pair)
            i += 2
        elif in_class:
            in_class = char != "]"
            out.append(char)
            i += 1
        elif char == "[":
            in_class = True
            out.append(char)
            i += 1
            for literal in ("^", "]"):  # "[^]...]" and "[]...]": a first ] is literal
                if source.startswith(literal, i):
                    out.append(literal)
                    i += 1
        elif i > 0 and source.startswith("(?i)", i):
            out.append("(?i:")
            opened[-1] += 1
            i += 4
        elif char == "(":
            opened.append(0)
            out.append(char)
            i += 1
        elif char == ")":
            out.append(")" * opened.pop() + ")")
            i += 1
        elif char == "|" and opened[-1]:
            out.append(")" * opened[-1] + "|" + "(?i:" * opened[-1])
            i += 1
        else:
            out.append(char)
            i += 1
    out.append(")" * opened.pop())
    return "".join(out)


_NAME_PREFIX = re.compile(r"^((?:\(\?i\))?)(\[\\w\.-\]\{0,\d+\}\?)")


def _anchor_name(pattern: str) -> str:
    """Start a leading ``[\\w.-]{0,50}?`` (the name before a keyword) at a name's start.

    Unanchored, the engine retries the lazy run at every character of a text (about
    50 steps each); anchored, only where a name begins.  A match changes only when
    the name before the keyword is longer than the run allows.
    """
    return _NAME_PREFIX.sub(lambda m: m.group(1) + r"(?<![\w.-])" + m.group(2), pattern, count=1)


def _allowlist(entry: dict[str, Any]) -> Allowlist:
    return Allowlist(
        regexes=tuple(go_regex(rx) for rx in entry.get("regexes", ())),
        target=str(entry.get("regexTarget", "secret")),
        stopwords=tuple(str(w).lower() for w in entry.get("stopwords", ())),
        all_of=str(entry.get("condition", "OR")).upper() == "AND",
    )


def _applies(entry: dict[str, Any]) -> bool:
    """Whether an allowlist can hold for a memory, which has no path: not one of paths
    only, nor one that needs a path *and* its regexes (``condition = "AND"``, as the
    generic rule's ``LICENSE...=`` list for BitBake files: applied to every text, it
    would let a secret through on any line that names a LICENSE or SRC)."""
    if not set(entry) - {"paths", "description"}:
        return False
    return not (entry.get("paths") and str(entry.get("condition", "OR")).upper() == "AND")


@functools.cache
def specs() -> tuple[tuple[Spec, ...], Allowlist]:
    """The rules of the data file (those with a pattern) and its global allowlist."""
    import tomllib  # here: only a process that redacts reads the data file
    from importlib import resources

    data = tomllib.loads(resources.files(__package__).joinpath("gitleaks.toml").read_text("utf-8"))
    rules = tuple(
        Spec(
            id=str(rule["id"]),
            description=str(rule.get("description", rule["id"])),
            regex=str(rule["regex"]),
            keywords=tuple(str(k).lower() for k in rule.get("keywords", ())),
            min_entropy=float(rule.get("entropy", 0)),
            allowlists=tuple(_allowlist(a) for a in rule.get("allowlists", ()) if _applies(a)),
        )
        for rule in data["rules"]
        if "regex" in rule
    )
    return rules, _allowlist(data.get("allowlist", {}))
