"""The periods a team sets (SPEC.md "Team settings"): carried in roster v2, pure.

An admin sets, for every member, how many days a member approved later stays in
``review`` (``review_days``) and after how many days without a confirmation a memory
is stale (``stale_days``).  They travel in the roster's optional ``settings`` object,
so they are admin-signed, versioned and chain-verified like the rest of the roster; a
reader that finds no value uses the default.  A person may still set either period on
their own machine; that local choice wins (the client decides that, not this module).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import reasons
from .encoding import need_dict, need_int
from .errors import Rejected

__all__ = ["BOUNDS", "DEFAULTS", "NO_SETTINGS", "TeamSettings", "malformed_roster"]

DEFAULTS: Mapping[str, int] = {"review_days": 7, "stale_days": 180}
"""What a reader uses for a period no roster sets."""
BOUNDS: Mapping[str, tuple[int, int]] = {"review_days": (0, 365), "stale_days": (1, 3650)}
"""Inclusive bounds of each period; a value outside is ``malformed``."""


def malformed_roster(detail: str) -> Rejected:
    """A roster refused as ``malformed``, saying what is wrong."""
    return Rejected(reasons.MALFORMED, f"roster {detail}")


@dataclass(frozen=True, slots=True)
class TeamSettings:
    """The team's periods in days; None where the roster sets none."""

    review_days: int | None = None
    stale_days: int | None = None

    def __post_init__(self) -> None:
        for name, value in self.values().items():
            low, high = BOUNDS[name]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise malformed_roster(f"settings.{name} {value!r} is outside {low}..{high} days")

    def values(self) -> dict[str, int]:
        """The periods set, by name (those left unset are absent)."""
        pairs = (("review_days", self.review_days), ("stale_days", self.stale_days))
        return {name: value for name, value in pairs if value is not None}

    def effective(self, name: str) -> int:
        """The period ``name`` a reader applies: the team's value, else the default."""
        return self.values().get(name, DEFAULTS[name])

    def __bool__(self) -> bool:
        return bool(self.values())

    def to_wire(self) -> dict[str, Any]:
        return dict(self.values())

    @classmethod
    def from_wire(cls, value: object, path: str = "roster.settings") -> TeamSettings:
        """Parse a ``settings`` object: one or both periods, each within its bounds."""
        obj = need_dict(value, path)
        unknown = sorted(set(obj) - set(BOUNDS))
        if unknown or not obj:
            raise malformed_roster(
                f"{path} must hold one or both of {sorted(BOUNDS)}; it holds {sorted(obj)}"
            )
        found = {name: need_int(obj[name], f"{path}.{name}") for name in obj}
        return cls(**found)


NO_SETTINGS = TeamSettings()
"""A roster without ``settings`` (every v1 roster, a v2 roster that sets none)."""
