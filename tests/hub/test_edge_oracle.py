"""A stranger who names a kid learns from the hub's answer nothing about its membership.

A request whose signature does not verify under the key the team holds for its
kid is answered exactly as a request from a kid the team does not hold: 401
``unknown-key``, the same sentence (but for the kid).  Before, a member's kid
got ``bad-signature`` and a stranger's ``unknown-key``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sealmem.crypto import MemberKey

from .conftest import IN_PROCESS_URL, PROJECT, TEAM, HubWorld, InProcess, signed

pytestmark = pytest.mark.slow


@pytest.fixture
def team(tmp_path: Path, inproc: InProcess) -> HubWorld:
    homes = tmp_path / "homes"
    homes.mkdir()
    w = HubWorld(homes, IN_PROCESS_URL, inproc.transport)
    w.create()
    w.join("alice")
    return w


def _forged(inproc: InProcess, method: str, template: str, kid: str) -> tuple[int, dict[str, str]]:
    """A request naming ``kid``, signed by a key the forger made up."""
    target = template.format(kid=kid)
    body = b"\x01" * 100 if method == "PUT" else b""
    headers = signed(MemberKey.generate(), method, target, body)
    headers["sealmem-kid"] = kid
    answer = inproc.client.request(method, target, headers=headers, content=body)
    return answer.status_code, answer.json()


@pytest.mark.parametrize(
    ("method", "template"),
    [
        ("GET", f"/v1/teams/{TEAM}/projects/{PROJECT}/seqs"),
        ("GET", f"/v1/teams/{TEAM}/rosters"),
        ("PUT", f"/v1/teams/{TEAM}/projects/{PROJECT}/manifests/{{kid}}/1"),
        ("PUT", f"/v1/teams/{TEAM}/projects/{PROJECT}/chunks/{{kid}}/{'a' * 64}"),
    ],
)
def test_a_members_kid_and_a_strangers_get_the_same_answer(
    team: HubWorld, inproc: InProcess, method: str, template: str
) -> None:
    member = team.nodes["alice"].key.kid
    stranger = MemberKey.generate().kid
    status_m, doc_m = _forged(inproc, method, template, member)
    status_s, doc_s = _forged(inproc, method, template, stranger)
    assert (status_m, doc_m["error"]) == (status_s, doc_s["error"]) == (401, "unknown-key")
    assert doc_m["detail"].replace(member, "KID") == doc_s["detail"].replace(stranger, "KID")
