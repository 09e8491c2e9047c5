"""Secret redaction, the public entry point: see :mod:`sealmem.client.store.redaction`.

Each rule finds one kind of credential and replaces the secret part with
``[REDACTED:<type>]``.  Callers get back the cleaned text and the *types* found,
never the secrets themselves, so warnings and logs are safe to show.
"""

from __future__ import annotations

from .redaction import (
    RULES,
    RULES_VERSION,
    Redacted,
    Rule,
    redact,
    redact_all,
    warning_for,
)

__all__ = ["RULES", "RULES_VERSION", "Redacted", "Rule", "redact", "redact_all", "warning_for"]
