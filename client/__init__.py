"""sealmem.client: the local memory store and its Python API.

>>> from sealmem.client import MemoryStore                 # doctest: +SKIP
>>> with MemoryStore.open() as store:
...     store.remember("the CI runs 'bash .ci/check'", kind="fact")

The names below load on first use (PEP 562), so that importing a submodule (the
command line, a hook) does not import the store, SQLite and the recall code first.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .recall.api import MemoryStore
    from .store.memory import (
        DEFAULT_PROJECT,
        SHARED_PROJECT,
        Check,
        Hit,
        ImportResult,
        Memory,
        Provenance,
        RememberResult,
    )

__all__ = [
    "DEFAULT_PROJECT",
    "SHARED_PROJECT",
    "Check",
    "Hit",
    "ImportResult",
    "Memory",
    "MemoryStore",
    "Provenance",
    "RememberResult",
]

_HOME = dict.fromkeys(__all__, ".store.memory") | {"MemoryStore": ".recall.api"}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
