"""The public surface of sealmem.client is what api.md promises, and ``__all__`` is complete."""

from __future__ import annotations

import importlib
import inspect

import pytest

import sealmem.client

MODULES = [
    "paths",
    "recall.context",
    "recall.api",
    "store.api",
    "store.connection",
    "store.derived",
    "store.health",
    "store.inputs",
    "store.memory",
    "store.migrations",
    "store.prebaseline",
    "store.redact",
    "store.rows",
    "store.schema",
    "store.terms",
    "store.transfer",
    "store.writer",
    "store.writes",
]


def test_contract_names_are_exported() -> None:
    for name in [
        "MemoryStore",
        "Memory",
        "Hit",
        "RememberResult",
        "Provenance",
        "ImportResult",
        "Check",
        "SHARED_PROJECT",
        "DEFAULT_PROJECT",
    ]:
        assert name in sealmem.client.__all__
        assert getattr(sealmem.client, name) is not None
    assert sealmem.client.SHARED_PROJECT == "shared"
    assert sealmem.client.DEFAULT_PROJECT == "default"


def test_memory_store_signatures() -> None:
    store = sealmem.client.MemoryStore
    params = inspect.signature(store.remember).parameters
    assert list(params) == [
        "self", "content", "kind", "keywords", "importance", "project", "supersedes",
        "private", "origin", "new_kind", "source",
    ]  # fmt: skip
    assert list(inspect.signature(store.recall).parameters) == [
        "self", "query", "k", "project", "all_projects", "include_history", "kinds",
        "related_within",
    ]  # fmt: skip
    assert list(inspect.signature(store.open).parameters) == [
        "path", "author", "clock", "readonly", "migrating",
    ]  # fmt: skip
    for method in ("get", "resolve_id", "recent", "forget", "history", "startup_context", "export",
                   "import_", "stats", "doctor", "close"):  # fmt: skip
        assert callable(getattr(store, method))


@pytest.mark.parametrize("name", MODULES)
def test_all_lists_every_public_name(name: str) -> None:
    module = importlib.import_module(f"sealmem.client.{name}")
    public = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and getattr(value, "__module__", None) == module.__name__
    }
    assert public <= set(module.__all__), public - set(module.__all__)
    for exported in module.__all__:
        assert hasattr(module, exported)
