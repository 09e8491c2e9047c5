"""Import redacts a tombstone's reason too, like ``forget`` does before storing it."""

from __future__ import annotations

from sealmem.client import MemoryStore


def test_secret_in_an_imported_delete_reason_is_redacted(store: MemoryStore) -> None:
    memory = store.remember("the staging password rotates monthly").memory
    store.forget(memory.id, reason="superseded")
    doc = store.export()
    token = "ghp_" + "A1b2C3d4" * 5
    doc["memories"][0]["record"]["delete_reason"] = f"moved to vault, old token {token}"
    doc["memories"][0]["record"]["hlc"][0] += 1
    result = store.import_(doc)
    assert result.updated == 1
    assert any("github_token" in w for w in result.warnings)
    reason = store.get(memory.id).record.delete_reason
    assert reason is not None
    assert token not in reason
    assert "[REDACTED:github_token]" in reason
