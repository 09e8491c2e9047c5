"""The hub's collect request, fuzzed: any body a member sends gets 200 or a named 400.

``{"keep": [chunk ids], "grace_ms": n}`` with ``n`` an integer in ``0..2^47``
(the HLC's wall range) is the only accepted shape; a 50-digit grace once reached
SQLite as an ``OverflowError`` and answered 500.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealmem.protocol.hlc import MAX_WALL_MS

from .conftest import IN_PROCESS_URL, PROJECT, TEAM, HubWorld, InProcess, signed

pytestmark = pytest.mark.slow

MAX_GRACE_MS = MAX_WALL_MS + 1  # 2^47
BIG = "9" * 50


@pytest.fixture
def team(tmp_path: Path, inproc: InProcess) -> HubWorld:
    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, IN_PROCESS_URL, inproc.transport)
    w.create()
    w.join("alice")
    w.nodes["alice"].remember("the deploy runs from the release branch")
    w.nodes["alice"].sync()
    return w


def _collect(team: HubWorld, inproc: InProcess, body: bytes) -> tuple[int, str | None]:
    alice = team.nodes["alice"].key
    path = f"/v1/teams/{TEAM}/projects/{PROJECT}/collect/{alice.kid}"
    answer = inproc.client.post(path, headers=signed(alice, "POST", path, body), content=body)
    doc = answer.json()
    return answer.status_code, doc.get("error") if isinstance(doc, dict) else None


def _well_formed(doc: Any) -> bool:
    if not isinstance(doc, dict) or not {"keep", "grace_ms"} <= set(doc):
        return False
    keep, grace = doc["keep"], doc["grace_ms"]
    return (
        isinstance(keep, list)
        and all(isinstance(k, str) for k in keep)
        and type(grace) is int
        and 0 <= grace <= MAX_GRACE_MS
    )


@pytest.mark.parametrize(
    ("body", "status"),
    [
        pytest.param('{"keep": [], "grace_ms": ' + BIG + "}", 400, id="50-digit"),
        pytest.param('{"keep": [], "grace_ms": -' + BIG + "}", 400, id="-50-digit"),
        pytest.param('{"keep": [], "grace_ms": 1e400}', 400, id="float-inf"),
        pytest.param('{"keep": [], "grace_ms": 1.5}', 400, id="float"),
        pytest.param('{"keep": [], "grace_ms": true}', 400, id="bool"),
        pytest.param('{"keep": [], "grace_ms": -1}', 400, id="negative"),
        pytest.param('{"keep": [], "grace_ms": ' + str(MAX_GRACE_MS + 1) + "}", 400, id="2^47+1"),
        pytest.param('{"keep": [], "grace_ms": ' + str(MAX_GRACE_MS) + "}", 200, id="2^47"),
        pytest.param('{"keep": [], "grace_ms": 0}', 200, id="zero"),
        pytest.param('{"keep": {"a": 1}, "grace_ms": 1}', 400, id="keep-object"),
        pytest.param('{"keep": [[]], "grace_ms": 1}', 400, id="keep-nested"),
        pytest.param('{"keep": "abc", "grace_ms": 1}', 400, id="keep-string"),
        pytest.param("[1]", 400, id="array"),
        pytest.param("", 400, id="empty"),
    ],
)
def test_collect_bodies(team: HubWorld, inproc: InProcess, body: str, status: int) -> None:
    code, error = _collect(team, inproc, body.encode())
    assert (code, error) == (status, "bad-request" if status == 400 else None)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
_GRACE = st.integers(min_value=-(10**60), max_value=10**60) | _JSON
_KEEP = st.lists(st.text(max_size=70), max_size=3) | _JSON
_BODY = st.fixed_dictionaries({"keep": _KEEP, "grace_ms": _GRACE}) | _JSON


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(doc=_BODY)
def test_any_collect_body_is_200_or_a_named_400(
    team: HubWorld, inproc: InProcess, doc: Any
) -> None:
    body = json.dumps(doc, allow_nan=True).encode()
    code, error = _collect(team, inproc, body)
    if _well_formed(doc):
        assert (code, error) == (200, None)
    else:
        assert (code, error) == (400, "bad-request")
