"""Vectors for who wrote a memory's text and for look-alike names (SPEC.md "Who wrote
the text", "Look-alike names").

``record`` cases read one record's wire object: accepted with the ``source`` a reader
shows (stated, or read from the ``origin`` of a record written before the field), or
refused as ``malformed``.  ``skeleton`` cases say whether two names have one skeleton.
"""

from __future__ import annotations

from typing import Any

from sealmem.protocol.hlc import Hlc
from sealmem.protocol.record import Record, new_memory_id

from .basics import NOW, Vector

__all__ = ["record_vectors", "skeleton_vectors", "writer_vectors"]

_WRITER = "a" * 26


def _wire(**changes: Any) -> dict[str, Any]:
    base = Record(
        id=new_memory_id(NOW, bytes(10)), project="webapp", kind="warning",
        content="never deploy on fridays", keywords=("deploy",), importance=0.5,
        author=_WRITER, editor=_WRITER, created_at=NOW, hlc=Hlc(NOW, 0),
    ).to_wire()  # fmt: skip
    return {**base, **changes}


def record_vectors() -> list[Vector]:
    accepted = [
        ("person", "a record a person typed", {"source": "person"}, "person"),
        ("agent", "a record an agent stored through a tool", {"source": "agent"}, "agent"),
        ("hook", "a record a hook captured from a transcript", {"source": "hook"}, "hook"),
        ("import", "a record an importer wrote", {"source": "import"}, "import"),
        ("stated-over-origin", "a stated source wins over what the origin says",
         {"source": "person", "origin": "mcp:3f2a9c01b7de"}, "person"),
        ("absent-cli", "no source (written before the field), origin cli: a person",
         {"origin": "cli"}, "person"),
        ("absent-mcp", "no source, origin mcp:<session>: an agent",
         {"origin": "mcp:3f2a9c01b7de"}, "agent"),
        ("absent-claude-code", "no source, origin claude-code:<session>: a hook",
         {"origin": "claude-code:7c1e"}, "hook"),
        ("absent-other", "no source, an origin sealmem never wrote: a person",
         {"origin": "mcpx"}, "person"),
    ]  # fmt: skip
    out = [
        Vector(f"record-source-{name}", description, {"kind": "record", "data": _wire(**wire)},
               "accept", {"source": source})
        for name, description, wire, source in accepted
    ]  # fmt: skip
    refused = [
        ("unknown", "a source outside the closed set", {"source": "robot"}),
        ("capitalised", "a source in another case", {"source": "Agent"}),
        ("null", "a null source (absent is the way to state none)", {"source": None}),
        ("number", "a source that is not a string", {"source": 1}),
    ]
    out += [
        Vector(f"record-source-{name}", description, {"kind": "record", "data": _wire(**wire)},
               "malformed")
        for name, description, wire in refused
    ]  # fmt: skip
    return out


def skeleton_vectors() -> list[Vector]:
    cases = [
        ("capital-i", "a capital I for the l of alice", "alice", "aIice", True),
        ("digit-one", "the digit 1 for the l of alice", "alice", "a1ice", True),
        ("digit-zero", "the digit 0 for the o of bob", "bob", "b0b", True),
        ("pipe", "a vertical bar for the l of alice", "alice", "a|ice", True),
        ("capitals", "the same name in capitals", "alice", "ALICE", True),
        ("rn", "rn for the m of mary", "mary", "rnary", True),
        ("vv", "vv for the w of will", "will", "vvill", True),
        ("cyrillic-and-digit", "a Cyrillic a and a digit 1", "alice", "\u0430\u0031ice", True),
        ("digit-five", "the digit 5 for the s of sam", "sam", "5am", True),
        ("digit-eight", "the digit 8 for the b of bob", "bob", "8ob", True),
        ("cl", "cl for the d of dave", "dave", "clave", True),
        ("distinct", "another name", "alice", "alicia", False),
        ("digit-kept", "a digit that looks like no letter", "bob", "bob2", False),
    ]
    return [
        Vector(f"skeleton-{name}", description, {"kind": "skeleton", "names": [a, b]},
               "accept", {"clash": clash})
        for name, description, a, b, clash in cases
    ]  # fmt: skip


def writer_vectors() -> list[Vector]:
    return [*record_vectors(), *skeleton_vectors()]
