"""The entries of a roster that name a key or a member (SPEC.md "Roster"): grants,
revocations with their pins, and chain resets.  :mod:`.roster` holds the roster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .encoding import HEX_HASH_RE, exact_keys, need_bool, need_dict, need_int, need_kid, need_str
from .record import PROJECT_RE

__all__ = ["Grant", "Pin", "Reset", "Revocation"]


@dataclass(frozen=True, slots=True)
class Grant:
    kid: str
    project: str
    read: bool = True
    write: bool = True

    def to_wire(self) -> dict[str, Any]:
        return {"kid": self.kid, "project": self.project, "read": self.read, "write": self.write}

    @classmethod
    def from_wire(cls, value: object, path: str) -> Grant:
        obj = exact_keys(value, set(cls.__slots__), path)
        return cls(
            kid=need_kid(obj["kid"], f"{path}.kid"),
            project=need_str(obj["project"], f"{path}.project", pattern=PROJECT_RE),
            read=need_bool(obj["read"], f"{path}.read"),
            write=need_bool(obj["write"], f"{path}.write"),
        )


@dataclass(frozen=True, slots=True)
class Pin:
    """The last manifest of a revoked writer that stays valid, per project."""

    seq: int
    manifest_hash: str


@dataclass(frozen=True, slots=True)
class Revocation:
    kid: str
    at_version: int
    pins: Mapping[str, Pin] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        pins = {
            p: {"seq": pin.seq, "manifest_hash": pin.manifest_hash} for p, pin in self.pins.items()
        }
        return {"kid": self.kid, "at_version": self.at_version, "pins": pins}

    @classmethod
    def from_wire(cls, value: object, path: str) -> Revocation:
        obj = exact_keys(value, {"kid", "at_version", "pins"}, path)
        pins: dict[str, Pin] = {}
        for project, raw in need_dict(obj["pins"], f"{path}.pins").items():
            need_str(project, f"{path}.pins key", pattern=PROJECT_RE)
            pin = exact_keys(raw, {"seq", "manifest_hash"}, f"{path}.pins.{project}")
            pins[project] = Pin(
                seq=need_int(pin["seq"], f"{path}.pins.{project}.seq", minimum=1),
                manifest_hash=need_str(
                    pin["manifest_hash"], f"{path}.pins.{project}.manifest_hash",
                    pattern=HEX_HASH_RE,
                ),
            )  # fmt: skip
        return cls(
            kid=need_kid(obj["kid"], f"{path}.kid"),
            at_version=need_int(obj["at_version"], f"{path}.at_version", minimum=1),
            pins=pins,
        )


@dataclass(frozen=True, slots=True)
class Reset:
    """An admin's permission for ``kid`` to start a new manifest chain in ``project``."""

    kid: str
    project: str
    at_version: int

    def to_wire(self) -> dict[str, Any]:
        return {"kid": self.kid, "project": self.project, "at_version": self.at_version}

    @classmethod
    def from_wire(cls, value: object, path: str) -> Reset:
        obj = exact_keys(value, set(cls.__slots__), path)
        return cls(
            kid=need_kid(obj["kid"], f"{path}.kid"),
            project=need_str(obj["project"], f"{path}.project", pattern=PROJECT_RE),
            at_version=need_int(obj["at_version"], f"{path}.at_version", minimum=1),
        )
