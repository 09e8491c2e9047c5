"""Vectors for reading one's own chain back (SPEC.md "Restore and copied keys"): kind
``own-chain``.

A case gives ``own`` (the head this store wrote or adopted, or null: a new store),
``recorded`` (every (seq, hash) recorded before sending), ``adopted`` (this device adopted
in an earlier sync), ``transport`` (``T``, the verified head of the chain on the transport,
or null) and ``witnessed`` (``W``, the highest seq teammates witness, 0: none); ``output``
is the ``action`` (``publish``, ``behind-witness``, ``adopt``, ``key-in-use``) and
``next_seq``, the lowest seq the next manifest may take (0 when it publishes nothing).
"""

from __future__ import annotations

from typing import Any

from sealmem.crypto import SUITE
from sealmem.protocol.own_chain import Link, decide

from .basics import Vector

__all__ = ["own_chain_vectors"]


def _h(name: str) -> str:
    return SUITE.blake2b(name.encode(), size=32).hex()


def _link(seq: int, name: str) -> dict[str, Any]:
    return {"seq": seq, "hash": _h(name)}


def _as_link(doc: dict[str, Any] | None) -> Link | None:
    return None if doc is None else Link(int(doc["seq"]), str(doc["hash"]))


def replay(obj: dict[str, Any]) -> dict[str, Any]:
    """The decision a case's inputs give (tests/protocol/test_vectors.py replays it)."""
    step = decide(
        own=_as_link(obj["own"]),
        sent=[Link(int(r["seq"]), str(r["hash"])) for r in obj["recorded"]],
        adopted=bool(obj["adopted"]),
        transport=_as_link(obj["transport"]),
        witnessed=int(obj["witnessed"]),
    )
    return {"action": step.action, "next_seq": step.next_seq}


_CASES: list[tuple[str, str, dict[str, Any], str, int]] = [
    ("normal", "the transport holds our head, teammates witness it: publish above it",
     {"own": _link(3, "m3"), "recorded": [], "adopted": False,
      "transport": _link(3, "m3"), "witnessed": 3}, "publish", 4),
    ("interrupted-push", "a manifest recorded before sending landed, its head not recorded",
     {"own": _link(3, "m3"), "recorded": [_link(4, "m4")], "adopted": True,
      "transport": _link(4, "m4"), "witnessed": 4}, "publish", 5),
    ("restore-adopt", "a store restored from a backup: the transport's head is ahead once",
     {"own": _link(3, "m3"), "recorded": [], "adopted": False,
      "transport": _link(9, "m9"), "witnessed": 8}, "adopt", 10),
    ("new-store-adopt", "a new store beside a key whose chain the transport holds",
     {"own": None, "recorded": [], "adopted": False,
      "transport": _link(9, "m9"), "witnessed": 9}, "adopt", 10),
    ("copy-key-in-use", "the head advanced again without this device, after it adopted",
     {"own": _link(10, "m10"), "recorded": [_link(11, "mine-11")], "adopted": True,
      "transport": _link(11, "theirs-11"), "witnessed": 10}, "key-in-use", 0),
    ("behind-witness", "teammates witness a seq above both the transport's head and ours",
     {"own": _link(3, "m3"), "recorded": [], "adopted": False,
      "transport": _link(5, "m5"), "witnessed": 7}, "behind-witness", 0),
    ("adopt-above-witness", "adopt, then publish above every seq recorded, T and W",
     {"own": _link(3, "m3"), "recorded": [_link(12, "unsent-12")], "adopted": False,
      "transport": _link(9, "m9"), "witnessed": 9}, "adopt", 13),
]  # fmt: skip


def own_chain_vectors() -> list[Vector]:
    out = []
    for name, description, inputs, action, next_seq in _CASES:
        obj = {"kind": "own-chain", **inputs}
        expected = {"action": action, "next_seq": next_seq}
        assert replay(obj) == expected, (name, replay(obj))
        out.append(Vector(f"own-chain-{name}", description, obj, "accept", expected))
    return out
