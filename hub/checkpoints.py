"""The team's checkpoint on the hub (SPEC.md "Checkpoint"): verified like any reader
does, then kept as the team's newest by compare-and-swap on ``seq``.

The hub is a reader of the team's state: it refuses a checkpoint that does not verify
against the rosters it holds, that cites a roster it does not hold (an admin publishes
the roster first), or whose ``seq`` is not the one in the path.
"""

from __future__ import annotations

from ..crypto import SUITE
from ..protocol import hubapi, reasons
from ..protocol.checkpoint import accept_checkpoint
from ..protocol.errors import Rejected
from ..protocol.state import TrustedState
from .errors import Refusal, from_rejected
from .storage import Conflict, Storage

__all__ = ["publish_checkpoint"]


def publish_checkpoint(
    storage: Storage, team: str, state: TrustedState, seq: int, data: bytes, now_ms: int
) -> None:
    """Verify checkpoint ``seq`` against ``state`` and keep it; 409 when a checkpoint with
    that seq or a newer one is held (written meanwhile: read it, sign the next one)."""
    try:
        cp = accept_checkpoint(SUITE, state, data, None, now_ms=now_ms)
    except Rejected as exc:
        raise from_rejected(exc, f"checkpoint {seq}") from exc
    if cp.seq != seq:
        raise Refusal(400, hubapi.BAD_REQUEST, f"checkpoint {cp.seq} was sent as {seq}")
    trusted = state.roster.version if state.roster is not None else 0
    if cp.roster_version > trusted:
        raise Refusal(
            409,
            hubapi.ROSTER_UNKNOWN,
            f"checkpoint {seq} cites roster v{cp.roster_version}; the hub holds v{trusted}: "
            "publish the roster first",
        )
    try:
        with storage.write(team) as tx:
            tx.put_checkpoint(seq, data, now_ms)
    except Conflict as exc:
        raise Refusal(409, reasons.ROLLBACK, f"checkpoint {seq}: {exc}; read it and retry") from exc
