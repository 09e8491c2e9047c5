"""The join-request inbox: unauthenticated posts, checked for shape and self-signature.

The hub runs the protocol's own check (:func:`sealmem.protocol.invite.read_join_request`):
well formed, for this team, self-signed by the member id it is filed under.
It cannot know the admin's invites, nor tell a real teammate from a stranger:
the admin checks the invite a request names and compares fingerprints out of band.
"""

from __future__ import annotations

from ..crypto import SUITE
from ..protocol.device_invite import check_device_join, is_device_join, read_device_join
from ..protocol.invite import MAX_JOIN_BYTES, read_join_request
from ..protocol.roster import Roster

__all__ = ["MAX_JOIN_BYTES", "join_request_key"]


def join_request_key(team: str, kid: str, data: bytes, roster: Roster | None = None) -> bytes:
    """The signing key a join request (or a device join request, SPEC "Enrolling a
    device") introduces; ``Rejected`` if it is not valid.  With the team's ``roster``, a
    device join request's invite must be signed by an unrevoked device of its member."""
    if is_device_join(data):
        join = read_device_join(SUITE, data, team, filed_as=kid)
        if roster is not None:
            check_device_join(join, roster)
        return join.sign_public
    return read_join_request(SUITE, data, team, filed_as=kid).sign_public
