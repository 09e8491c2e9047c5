"""A new device's first sync as a member (SPEC.md "Enrolling a device", step 2).

A pending key reads only roster v1, so the new device checks the rest of its
device invite once approved: the roster chain it accepted must hold the roster
the invite cited, and the invite's signer must be a device of the member there;
otherwise it stops before publishing anything.  ``device join`` keeps the invite
in the home (:data:`ENROLMENT_FILE`) until that check passes.
"""

from __future__ import annotations

from pathlib import Path

from ...crypto import SUITE
from ...protocol import reasons
from ...protocol.device_invite import parse_device_invite
from ...protocol.encoding import b64d
from ...protocol.errors import Rejected
from ...protocol.state import TrustedState

__all__ = ["ENROLMENT_FILE", "check_enrolment"]

ENROLMENT_FILE = "device-invite"
"""The device invite this home joined with, until its first sync as a member."""


def check_enrolment(home_dir: Path, state: TrustedState) -> None:
    """The first sync of a device as a member: the roster chain must hold the roster
    the invite cited (``fork``), and the invite's signer must be a device of the member
    there (``signer-mismatch``); then the kept invite is removed.  Raises ``Rejected``."""
    path = Path(home_dir) / ENROLMENT_FILE
    if not path.exists():
        return
    data = b64d(path.read_text(encoding="ascii").strip())
    invite = parse_device_invite(SUITE, data)
    cited = state.rosters.get(invite.roster_version)
    if cited is None or cited.hash(SUITE) != invite.roster_hash:
        raise Rejected(
            reasons.FORK,
            f"the team's roster chain does not hold roster v{invite.roster_version} as the "
            "device invite cited it: the transport shows this device another history than "
            "the one your other device saw; nothing was published",
        )
    signer = cited.member(SUITE.kid_from_public(invite.signer_public))
    if signer is None or signer.id != invite.member:
        raise Rejected(
            reasons.SIGNER_MISMATCH,
            "the device invite was not signed by a device of the member it names; "
            "nothing was published",
        )
    path.unlink()
