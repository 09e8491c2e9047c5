"""Secret redaction, the entry point of the store and the hosts: see :mod:`.redaction`.

Each rule finds one kind of credential and replaces the secret part with
``[REDACTED:<type>]``.  Callers get back the cleaned text and the *types* found,
never the secrets themselves, so warnings and logs are safe to show.

The rule set loads on the first call, not on import: the store imports this
module, and commands that never write (``list``, ``recall``, the prompt hook)
should not pay for the rules.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...protocol.record import Record
    from .redaction import Redacted, Texts

__all__ = [
    "redact",
    "redact_batch",
    "redact_reason",
    "redact_texts",
    "redact_version",
    "warning_for",
]


def redact(text: str) -> Redacted:
    """Replace every secret the rules recognise in ``text``."""
    run: Callable[[str], Redacted] = _rules().redact
    return run(text)


def redact_texts(content: str, keywords: Sequence[str] = (), reason: str | None = None) -> Texts:
    """A memory's texts redacted by the one rule of every write path (keywords also read
    together, each text cut to its limit): :func:`.redaction.texts.redact_texts`."""
    run: Callable[[str, Sequence[str], str | None], Texts] = _rules().redact_texts
    return run(content, keywords, reason)


def redact_reason(reason: str) -> str:
    """A forget's reason as a tombstone keeps it (:func:`redact_texts`)."""
    return redact_texts("", (), reason).reason or reason


def redact_version(record: Record) -> tuple[Record, dict[str, int]]:
    """``record`` with its texts redacted (:func:`redact_texts`), and the types found
    (empty: it was clean and ``record`` itself is returned)."""
    run: Callable[[Record], tuple[Record, dict[str, int]]] = _rules().redact_version
    return run(record)


def redact_batch(records: Sequence[Record]) -> list[tuple[Record, dict[str, int]]]:
    """:func:`redact_version` of each record, in order, the contents redacted together
    (:func:`.redaction.texts.redact_batch`)."""
    run: Callable[[Sequence[Record]], list[tuple[Record, dict[str, int]]]]
    run = _rules().redact_batch
    return run(records)


def warning_for(found: dict[str, int], where: str = "content") -> list[str]:
    """One warning per secret type found, naming the type and count, never the secret."""
    run: Callable[[dict[str, int], str], list[str]] = _rules().warning_for
    return run(found, where)


@functools.cache
def _rules() -> ModuleType:
    """The rule set's package, imported on the first call (an ``import`` statement in
    each call above cost a pull about 2 µs a text)."""
    return importlib.import_module(".redaction", __package__)
