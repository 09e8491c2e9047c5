"""Witnessed heads, and how a delta manifest lists them against its base (SPEC.md
"Witness encoding").

A full manifest carries every head its writer accepted; a ``sealmem/manifest/v3`` delta
carries only the heads that differ from its base's (``heads_changed``), the slots its base
lists and it no longer does (``heads_removed``), and :func:`heads_root` of the whole set.
A reader rebuilds the set from the base (:func:`rebuild_heads`) before it reads any head,
so every rule on heads (equivocation, witnessed floors) sees the same set as with a full
manifest, and a witness costs what changed, not the team's size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from . import reasons
from .encoding import HEX_HASH_RE, exact_keys, need_int, need_kid, need_list, need_str
from .errors import Rejected
from .record import PROJECT_RE
from .suite import Suite

__all__ = ["MAX_HEADS", "Head", "HeadsDelta", "heads_against", "heads_root", "rebuild_heads"]

MAX_HEADS = 16384

Slot = tuple[str, str]  # (writer, project)


@dataclass(frozen=True, slots=True)
class Head:
    """A (writer, project) chain position: the last accepted ``seq`` and manifest hash."""

    writer: str
    project: str
    seq: int
    hash: str

    def to_wire(self) -> dict[str, Any]:
        return {"writer": self.writer, "project": self.project, "seq": self.seq, "hash": self.hash}


def heads_root(suite: Suite, heads: Iterable[Head]) -> str:
    """The hash a v3 delta signs over its whole rebuilt head set:
    ``hex(BLAKE2b-256(b"sealmem/v1/hash/heads\\x00" || lines))``, one ASCII line
    ``"{writer} {project} {seq} {hash}\\n"`` per head, ascending by (writer, project)."""
    ordered = sorted(heads, key=lambda h: (h.writer, h.project))
    lines = "".join([f"{h.writer} {h.project} {h.seq} {h.hash}\n" for h in ordered])
    return suite.blake2b(b"sealmem/v1/hash/heads\x00" + lines.encode(), size=32).hex()


@dataclass(frozen=True, slots=True)
class HeadsDelta:
    """What a v3 delta lists instead of its ``heads``."""

    changed: tuple[Head, ...]  # ascending by (writer, project)
    removed: tuple[Slot, ...]  # ascending
    root: str  # heads_root of the rebuilt set

    def to_wire(self) -> dict[str, Any]:
        return {
            "heads_changed": [h.to_wire() for h in self.changed],
            "heads_removed": [{"writer": w, "project": p} for w, p in self.removed],
            "heads_root": self.root,
        }


def heads_against(suite: Suite, heads: Iterable[Head], base: Iterable[Head]) -> HeadsDelta:
    """The full head set ``heads`` listed against the base's ``base``."""
    new = {(h.writer, h.project): h for h in heads}
    old = {(h.writer, h.project): h for h in base}
    return HeadsDelta(
        changed=tuple(new[s] for s in sorted(new) if old.get(s) != new[s]),
        removed=tuple(s for s in sorted(old) if s not in new),
        root=heads_root(suite, new.values()),
    )


def rebuild_heads(
    suite: Suite, base: Iterable[Head], delta: HeadsDelta, where: str
) -> tuple[Head, ...]:
    """The base's heads minus ``delta.removed``, with ``delta.changed`` put in, ascending;
    ``tampered`` when a removed slot is not in the base or the set does not hash to
    ``delta.root``, ``too-large`` past ``MAX_HEADS``."""
    heads = {(h.writer, h.project): h for h in base}
    for slot in delta.removed:
        if heads.pop(slot, None) is None:
            raise Rejected(
                reasons.TAMPERED, f"{where} removes the head of {slot[0]}/{slot[1]}, which its "
                "base does not list",
            )  # fmt: skip
    for h in delta.changed:
        heads[(h.writer, h.project)] = h
    if len(heads) > MAX_HEADS:
        raise Rejected(reasons.TOO_LARGE, f"{where} witnesses {len(heads)} heads")
    rebuilt = tuple(heads[s] for s in sorted(heads))
    if heads_root(suite, rebuilt) != delta.root:
        raise Rejected(
            reasons.TAMPERED,
            f"{where}: the heads rebuilt from its base do not hash to its heads_root "
            "(the base or the delta is not what the writer signed)",
        )
    return rebuilt


def _bad(detail: str) -> Rejected:
    return Rejected(reasons.MALFORMED, f"manifest {detail}")


def parse_head(value: object, path: str) -> Head:
    obj = exact_keys(value, {"writer", "project", "seq", "hash"}, path)
    return Head(
        writer=need_kid(obj["writer"], f"{path}.writer"),
        project=need_str(obj["project"], f"{path}.project", pattern=PROJECT_RE),
        seq=need_int(obj["seq"], f"{path}.seq", minimum=1),
        hash=need_str(obj["hash"], f"{path}.hash", pattern=HEX_HASH_RE),
    )


def parse_heads(value: object, own: Slot) -> tuple[Head, ...]:
    """A full manifest's ``heads``: each (writer, project) once, never ``own``."""
    heads = tuple(
        parse_head(h, f"manifest.heads[{i}]")
        for i, h in enumerate(need_list(value, "manifest.heads", max_len=MAX_HEADS))
    )
    keys = [(h.writer, h.project) for h in heads]
    if len(set(keys)) != len(keys) or own in keys:
        raise _bad("heads must name each (writer, project) once, and not the manifest's own")
    return heads


def parse_heads_delta(obj: Mapping[str, Any], own: Slot) -> HeadsDelta:
    """A v3 delta's ``heads_changed``, ``heads_removed`` and ``heads_root``: both lists
    strictly ascending by (writer, project), disjoint, never naming ``own``."""
    changed = tuple(
        parse_head(h, f"manifest.heads_changed[{i}]")
        for i, h in enumerate(
            need_list(obj["heads_changed"], "manifest.heads_changed", max_len=MAX_HEADS)
        )
    )
    removed: list[Slot] = []
    items = need_list(obj["heads_removed"], "manifest.heads_removed", max_len=MAX_HEADS)
    for i, item in enumerate(items):
        path = f"manifest.heads_removed[{i}]"
        slot = exact_keys(item, {"writer", "project"}, path)
        removed.append(
            (
                need_kid(slot["writer"], f"{path}.writer"),
                need_str(slot["project"], f"{path}.project", pattern=PROJECT_RE),
            )
        )
    slots = [(h.writer, h.project) for h in changed]
    if slots != sorted(set(slots)) or removed != sorted(set(removed)):
        raise _bad("heads_changed and heads_removed must be strictly ascending by slot")
    if own in slots or own in removed or not set(slots).isdisjoint(removed):
        raise _bad("a head slot is both changed and removed, or is the manifest's own")
    root = need_str(obj["heads_root"], "manifest.heads_root", pattern=HEX_HASH_RE)
    return HeadsDelta(changed, tuple(removed), root)
