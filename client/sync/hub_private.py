"""A member's private space over the hub (SPEC.md "Private memories and trust follow
the member"): the paths of a private view of :class:`~.hub.HubTransport` (its chain
methods then work on the member's devices' private chains) and the calls only a private
space has (its chains, member keyrings, trust decisions)."""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from ...protocol import hubapi
from ...protocol.encoding import KID_RE
from ...protocol.errors import InputError, Rejected
from ...protocol.manifest import peek

__all__ = ["PRIVATE_PATHS", "PrivateSpaceCalls"]

#: The team chain's paths and their private-space twins (a private view maps each); the
#: private templates map to themselves.
PRIVATE_PATHS = {
    hubapi.WRITER_MANIFESTS: hubapi.PRIVATE_MANIFESTS,
    hubapi.MANIFEST: hubapi.PRIVATE_MANIFEST,
    hubapi.CHUNK: hubapi.PRIVATE_CHUNK,
    hubapi.PRIVATE_CHAINS: hubapi.PRIVATE_CHAINS,
    hubapi.PRIVATE_KEYRINGS: hubapi.PRIVATE_KEYRINGS,
    hubapi.PRIVATE_KEYRING: hubapi.PRIVATE_KEYRING,
    hubapi.PRIVATE_TRUST: hubapi.PRIVATE_TRUST,
}


class _Hub(Protocol):
    _member: str | None

    def _path(self, template: str, **values: str | int) -> str: ...

    def _json(self, method: str, path: str, what: str, **kw: Any) -> dict[str, Any]: ...

    def _blobs(self, value: object, what: str) -> list[bytes]: ...

    def _send(self, method: str, path: str, what: str, **kw: Any) -> Any: ...


class PrivateSpaceCalls:
    """The calls of a private view (a team view has no private space: empty answers)."""

    def chain_projects(self: _Hub, writer: str) -> list[str]:
        if self._member is None or KID_RE.fullmatch(writer) is None:
            return []
        path = self._path(hubapi.PRIVATE_CHAINS, writer=writer)
        doc = self._json("GET", path, f"read the private chains of {writer}")
        out = set()
        for data in self._blobs(doc.get("manifests"), "manifests"):
            with contextlib.suppress(Rejected):  # the reader refuses it by name later
                out.add(peek(data).project)
        return sorted(out)

    def member_keyrings(self: _Hub) -> list[bytes]:
        if self._member is None:
            return []
        doc = self._json("GET", self._path(hubapi.PRIVATE_KEYRINGS), "read member keyrings")
        return self._blobs(doc.get("keyrings"), "keyrings")

    def trust(self: _Hub, writer: str) -> bytes | None:
        if self._member is None or KID_RE.fullmatch(writer) is None:
            return None
        doc = self._json("GET", self._path(hubapi.PRIVATE_TRUST, writer=writer), "read trust")
        found = doc.get("trust")
        return None if not isinstance(found, str) else self._blobs([found], "trust")[0]

    def put_trust(self: _Hub, writer: str, data: bytes) -> None:
        if self._member is None:
            raise InputError("trust decisions go into a member's private space")
        path = self._path(hubapi.PRIVATE_TRUST, writer=writer)
        self._send("PUT", path, "publish trust decisions", body=data)

    def put_member_keyring(self: _Hub, epoch: int, data: bytes, *, new: bool) -> None:
        del new  # the hub accepts with the member keyring rules: a second new key is 409 fork
        if self._member is None:
            raise InputError("a member keyring goes into a member's private space")
        path = self._path(hubapi.PRIVATE_KEYRING, epoch=epoch)
        self._send("PUT", path, f"publish member keyring {epoch}", body=data)
