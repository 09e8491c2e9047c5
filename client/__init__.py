"""sealmem.client: the local memory store and its Python API.

>>> from sealmem.client import MemoryStore                 # doctest: +SKIP
>>> with MemoryStore.open() as store:
...     store.remember("the CI runs 'bash .ci/check'", kind="fact")
"""

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
