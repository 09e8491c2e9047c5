"""Secret redaction: applied to content, keywords and reasons before they are stored.

Two rule sets, run as one: sealmem's own rules (:mod:`.rules`: vendor formats,
a keyword rule and an entropy rule) and the gitleaks default rules, loaded as
data (:mod:`.gitleaks`, ``gitleaks.toml``).  :mod:`.engine` prefilters a text in
one pass and runs only the rules whose cue words it holds.

Each match is replaced with ``[REDACTED:<type>]``.  Callers get back the cleaned
text and the *types* found, never the secrets themselves, so warnings and logs
are safe to show.  :mod:`.texts` runs the rules over a memory's texts as every
write path does (keywords also read together, each text cut to its limit).
:data:`RULES_VERSION` names the rule set: text redacted under
the same version need not be redacted again.
"""

from __future__ import annotations

from .engine import (
    Redacted,
    redact,
    redact_many,
    rules_fingerprint,
    secret_spans,
    warning_for,
)
from .gitleaks import GITLEAKS_VERSION
from .rules import RULES, Rule
from .texts import Texts, fit, redact_batch, redact_texts, redact_version

__all__ = [
    "GITLEAKS_VERSION",
    "RULES",
    "RULES_VERSION",
    "Redacted",
    "Rule",
    "Texts",
    "fit",
    "redact",
    "redact_batch",
    "redact_many",
    "redact_texts",
    "redact_version",
    "rules_fingerprint",
    "secret_spans",
    "warning_for",
]

RULES_VERSION = "sealmem-4+gitleaks-8.30.0@d16e99c1461b"
"""The rule set's name and version.  It changes whenever a rule or the data file does
(the part after ``@`` is :func:`rules_fingerprint`; a test holds them equal)."""
