"""The checkpoint's verdict and re-signing rule, as pure functions over a trusted state
(accept and refuse cases are the ``checkpoint-*`` vectors)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sealmem.crypto import SUITE
from sealmem.protocol import reasons
from sealmem.protocol.checkpoint import accept_checkpoint, build_checkpoint, judge, needs_resign
from sealmem.protocol.errors import Rejected
from sealmem.protocol.state import TrustedState
from sealmem.protocol.verify import accept_keyring, accept_roster
from tests.protocol.vectorgen.generate import ALICE, BASE, NOW, ROOT, TEAM

HOUR = 3_600_000


def _state() -> TrustedState:
    state = TrustedState.pin(SUITE, TEAM, ROOT.sign_public)
    for kind, data in BASE:
        state, _ = {"roster": accept_roster, "keyring": accept_keyring}[kind](SUITE, state, data)
    return state


def test_fresh_then_warn_then_stop_by_the_checkpoint_age() -> None:
    state = _state()
    cp = build_checkpoint(SUITE, state, seq=1, now_ms=NOW)
    at = {h: judge(state, cp, now_ms=NOW + h * HOUR, me=ALICE.kid).level for h in (1, 25, 169)}
    assert at == {1: "ok", 25: "warn", 169: "stop"}
    assert judge(state, None, now_ms=NOW + 1000 * HOUR, me=ALICE.kid).level == "ok"


def test_a_cited_roster_the_reader_lacks_stops_at_once_and_names_the_citer() -> None:
    state = _state()
    cp = build_checkpoint(SUITE, state, seq=1, now_ms=NOW)
    verdict = judge(state, cp, 2, now_ms=NOW, me=ALICE.kid, cited_by=ALICE.kid)
    assert verdict.level == "stop"
    assert verdict.cause.startswith(
        f"frozen: the manifest of alice ({ALICE.kid[:8]}) cites roster v2"
    )
    assert f"an admin can revoke alice ({ALICE.kid[:8]})" in verdict.fix
    ahead = replace(cp, roster_version=3)
    assert (
        "the admins' checkpoint cites roster v3"
        in judge(state, ahead, 2, now_ms=NOW, me=ALICE.kid).cause
    )


def test_a_withheld_keyring_stops_only_a_member_who_may_read_it() -> None:
    state = _state()
    cp = build_checkpoint(SUITE, state, seq=1, now_ms=NOW)
    lacking = state.evolve(keyrings={})
    assert judge(lacking, cp, now_ms=NOW, me=ALICE.kid).level == "stop"
    assert judge(lacking, cp, now_ms=NOW, me="a" * 26).level == "ok"  # no read grant


def test_an_admin_re_signs_when_the_state_moved_or_half_the_warn_age_passed() -> None:
    state = _state()
    assert needs_resign(SUITE, state, None, now_ms=NOW)
    cp = build_checkpoint(SUITE, state, seq=1, now_ms=NOW)
    assert not needs_resign(SUITE, state, cp, now_ms=NOW + HOUR)
    assert needs_resign(SUITE, state, cp, now_ms=NOW + 13 * HOUR)
    assert needs_resign(SUITE, state, replace(cp, roster_version=2), now_ms=NOW + HOUR)


def test_a_checkpoint_from_an_admin_whose_clock_runs_ahead_names_the_admin() -> None:
    state = _state()
    ahead = build_checkpoint(SUITE, state, seq=1, now_ms=NOW + 3 * 24 * HOUR).sign(ROOT)
    with pytest.raises(Rejected) as caught:
        accept_checkpoint(SUITE, state, ahead, None, now_ms=NOW)
    assert caught.value.reason == reasons.CLOCK_AHEAD
    name = state.roster.member(ROOT.kid).name  # type: ignore[union-attr]
    assert f"{name} ({ROOT.kid[:8]})" in caught.value.detail
    assert "clock" in caught.value.detail.split("ahead", 1)[1]  # and what to fix
