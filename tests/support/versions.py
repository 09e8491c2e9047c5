"""Hypothesis strategies for record versions, shared by the merge laws and the store's merge.

Versions come from a small space (four ids, three editors, tiny clocks), so that
ids, clocks and editors collide often and every branch of the merge is hit.
"""

from __future__ import annotations

from hypothesis import strategies as st

from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id

__all__ = ["EDITORS", "IDS", "version_lists", "versions"]

IDS = [new_memory_id(1_700_000_000_000 + i, bytes([i]) * 10) for i in range(4)]
EDITORS = ["alice", "bob", "carol"]


_CONTENTS = ["a", "b", "use uv", "x" * 50, "退款处理 🔥"]  # the last one has grams


@st.composite
def versions(draw: st.DrawFn, ids: list[str] = IDS, project: str = "proj") -> Record:
    """Versions from a small space, so that ids, clocks and editors collide often."""
    rid = draw(st.sampled_from(ids))
    deleted = draw(st.booleans())
    return Record(
        id=rid,
        project=project,
        kind=draw(st.sampled_from(["note", "decision", "warning"])),
        content="" if deleted else draw(st.sampled_from(_CONTENTS)),
        keywords=tuple(draw(st.lists(st.sampled_from(["db", "ci", "uv"]), max_size=2))),
        importance=draw(st.integers(0, 1000)) / 1000,
        author=draw(st.sampled_from(EDITORS)),
        editor=draw(st.sampled_from(EDITORS)),
        created_at=1_700_000_000_000,
        hlc=Hlc(draw(st.integers(0, 4)), draw(st.integers(0, 2))),
        supersedes=tuple(draw(st.lists(st.sampled_from([i for i in ids if i != rid]), max_size=2))),
        deleted=deleted,
        delete_reason=draw(st.sampled_from([None, "obsolete"])) if deleted else None,
        visibility=draw(st.sampled_from(["team", "team", "private"])),
    ).validate()


version_lists = st.lists(versions(), max_size=24)
