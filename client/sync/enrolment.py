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
from ...protocol.device_invite import DEVICE_INVITE_PREFIX, DeviceInvite, parse_device_invite
from ...protocol.encoding import b64d
from ...protocol.errors import CryptoError, InputError, ProtocolError, Rejected
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
    invite = _saved_invite(path)
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


def _saved_invite(path: Path) -> DeviceInvite:
    """The invite kept at ``path``: its base64url, or the whole line ``device add`` printed
    (so that the fix for a damaged file is to paste that line into it).  A file that cannot
    be read or parsed is an ``InputError`` naming the file and the fix, never a traceback."""
    try:
        text = path.read_text(encoding="ascii").strip()
        return parse_device_invite(SUITE, b64d(text.removeprefix(DEVICE_INVITE_PREFIX)))
    except (OSError, ValueError, ProtocolError, CryptoError) as exc:
        if isinstance(exc, Rejected):
            why = exc.detail
        elif isinstance(exc, OSError):
            why = exc.strerror or "unreadable"
        else:
            why = "not a device invite"
        raise InputError(
            f"the saved device invite {path} is damaged ({why}); nothing was published. "
            "Paste into it the line 'sealmem device add' printed on your other device (or "
            "run 'sealmem device add NAME' there again and paste the new line), then run "
            "'sealmem sync' again"
        ) from exc
