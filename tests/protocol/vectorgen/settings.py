# ruff: noqa: E501  (one case per line: the tables read as the SPEC lists them)
"""Vectors for the periods a team sets (SPEC.md "Team settings"): the ``settings``
object of roster v2.  Each case replays a setup chain (the one of :mod:`.devices`) and
accepts or refuses a roster; an accepted one has as ``output`` the periods a reader
applies from it (``review_days``, ``stale_days``: the team's, else the defaults)."""

from __future__ import annotations

from typing import Any

from sealmem.crypto import SUITE
from sealmem.protocol import admin as edits
from sealmem.protocol.encoding import b64e
from sealmem.protocol.envelope import seal
from sealmem.protocol.roster import Roster

from .basics import NOW
from .devices import ALICE, ROOT, ROOT_LAPTOP, SETUP_UP, SETUP_V1, UP, V2, V4, _doc

__all__ = ["settings_docs"]


def _periods(review: int, stale: int) -> dict[str, int]:
    return {"review_days": review, "stale_days": stale}


def _with(roster: Roster, settings: object) -> dict[str, Any]:
    """The body of ``roster`` with a ``settings`` object as given (unchecked)."""
    return {**roster.to_body(), "settings": settings}


def settings_docs() -> dict[str, dict[str, Any]]:
    v1_setup = [("roster", d) for d in SETUP_V1]
    up_setup = [("roster", d) for d in SETUP_UP]
    setting = edits.setting_periods(review_days=2, stale_days=30)
    set_v = edits.next_roster(SUITE, UP, setting, created_at=NOW + 3)
    upgraded = edits.next_roster(
        SUITE, V2, edits.upgrading(ROOT.kid, {}), setting, created_at=NOW + 2
    )
    review_only = edits.next_roster(
        SUITE, UP, edits.setting_periods(review_days=0), created_at=NOW + 3
    )
    later = edits.next_roster(
        SUITE, set_v, edits.setting_periods(stale_days=90), created_at=NOW + 4
    )
    draft = UP.successor(SUITE, created_at=NOW + 3)
    v1_next = V2.successor(SUITE, created_at=NOW + 2).to_body()

    def body(settings: object) -> bytes:
        return seal(_with(draft, settings), "roster", ROOT)

    cases = {
        "roster-v2-settings": ("an admin sets both periods: review 2 days, stale 30 days", up_setup, set_v.sign(ROOT), "accept", _periods(2, 30)),
        "roster-v2-settings-absent": ("a v2 roster that sets no period: the defaults apply", up_setup, V4.sign(ROOT_LAPTOP), "accept", _periods(7, 180)),
        "roster-v2-settings-one-period": ("an admin sets the review period alone (0: no review); the stale period stays the default", up_setup, review_only.sign(ROOT), "accept", _periods(0, 180)),
        "roster-v2-settings-carried": ("a later version sets the stale period; the review period set before is carried", [*up_setup, ("roster", set_v.sign(ROOT))], later.sign(ROOT), "accept", _periods(2, 90)),
        "roster-v2-settings-in-upgrade": ("the upgrade from v1 and the periods in one version", v1_setup, upgraded.sign(ROOT), "accept", _periods(2, 30)),
        "roster-v2-settings-review-too-long": ("a review period of 366 days (the bound is 365)", up_setup, body({"review_days": 366}), "malformed", None),
        "roster-v2-settings-stale-zero": ("a stale period of 0 days (the bound is 1..3650)", up_setup, body({"stale_days": 0}), "malformed", None),
        "roster-v2-settings-stale-too-long": ("a stale period of 3651 days (the bound is 3650)", up_setup, body({"stale_days": 3651}), "malformed", None),
        "roster-v2-settings-negative": ("a negative review period", up_setup, body({"review_days": -1}), "malformed", None),
        "roster-v2-settings-not-integer": ("a review period given as a string", up_setup, body({"review_days": "2"}), "malformed", None),
        "roster-v2-settings-bool": ("a review period given as true (JSON has no integer booleans)", up_setup, body({"review_days": True}), "malformed", None),
        "roster-v2-settings-unknown-field": ("a settings object with a field this version does not know", up_setup, body({"review_days": 2, "grace_days": 3}), "malformed", None),
        "roster-v2-settings-empty": ("an empty settings object (a roster that sets none has no settings field)", up_setup, body({}), "malformed", None),
        "roster-v1-settings": ("a v1 roster with settings (they need roster v2)", v1_setup, seal({**v1_next, "settings": {"review_days": 2}}, "roster", ROOT), "malformed", None),
        "roster-v2-settings-by-member": ("periods set in a roster signed by a member who is not an admin", up_setup, set_v.sign(ALICE), "not-admin", None),
        "roster-v2-settings-rollback": ("the roster before the periods were set, served again after them", [*up_setup, ("roster", set_v.sign(ROOT))], UP.sign(ROOT), "rollback", None),
    }  # fmt: skip
    return {
        n: _doc(d, setup, {"kind": "roster", "data": b64e(data)}, e, out)
        for n, (d, setup, data, e, out) in cases.items()
    }
