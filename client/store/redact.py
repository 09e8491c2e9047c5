"""Secret redaction, the public entry point: see :mod:`sealmem.client.store.redaction`.

Each rule finds one kind of credential and replaces the secret part with
``[REDACTED:<type>]``.  Callers get back the cleaned text and the *types* found,
never the secrets themselves, so warnings and logs are safe to show.

The rule set loads on the first call, not on import: the store imports this
module, and commands that never write (``list``, ``recall``, the prompt hook)
should not pay for the rules.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .redaction import RULES, RULES_VERSION, Redacted, Rule

__all__ = ["RULES", "RULES_VERSION", "Redacted", "Rule", "redact", "redact_all", "warning_for"]


def redact(text: str) -> Redacted:
    """Replace every secret the rules recognise in ``text``."""
    from .redaction import redact as run

    return run(text)


def redact_all(texts: Iterable[str]) -> tuple[list[str], dict[str, int]]:
    """Redact several texts; return them and the summed counts per type."""
    from .redaction import redact_all as run

    return run(texts)


def warning_for(found: dict[str, int], where: str = "content") -> list[str]:
    """One warning per secret type found, naming the type and count, never the secret."""
    from .redaction import warning_for as run

    return run(found, where)


def __getattr__(name: str) -> Any:
    if name in ("RULES", "RULES_VERSION", "Redacted", "Rule"):
        return getattr(importlib.import_module(".redaction", __package__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
