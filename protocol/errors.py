"""Every error sealmem raises on purpose.

The tree::

    SealmemError                      root: catch this to catch everything expected
    ├── InputError (ValueError)       a caller passed a bad value (size, format, unknown id)
    │   └── NotFoundError (KeyError)  the thing named does not exist
    ├── StoreError                    the local store is unusable (corrupt, locked, too new)
    ├── CryptoError                   a cryptographic operation failed
    │   ├── BadSignatureError         a signature did not verify
    │   ├── DecryptionError           ciphertext or associated data was tampered, or wrong key
    │   └── KeyFileError              a key file is unreadable, or its passphrase is wrong
    ├── ProtocolError                 an object broke a protocol rule
    │   └── Rejected                  a verifier refused an object; ``.reason`` names the rule
    └── TransportError                a folder or hub could not be reached or answered badly

Messages say what was refused, why, and how to fix it.  Foreign exceptions are
translated at the boundary with ``raise ... from exc``.
"""

from __future__ import annotations

__all__ = [
    "BadSignatureError",
    "CryptoError",
    "DecryptionError",
    "InputError",
    "KeyFileError",
    "NotFoundError",
    "ProtocolError",
    "Rejected",
    "SealmemError",
    "StoreError",
    "TransportError",
]


class SealmemError(Exception):
    """Root of every error sealmem raises on purpose."""


class InputError(SealmemError, ValueError):
    """A caller passed a value that cannot be accepted."""


class NotFoundError(InputError, KeyError):
    """The memory, member or object named does not exist."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want the sentence.
        return str(self.args[0]) if self.args else "not found"


class StoreError(SealmemError):
    """The local store cannot be used as it is."""


class CryptoError(SealmemError):
    """A cryptographic operation failed."""


class BadSignatureError(CryptoError):
    """A signature did not verify against the expected key and context."""


class DecryptionError(CryptoError):
    """Authenticated decryption failed: tampered data, wrong key or wrong context."""


class KeyFileError(CryptoError):
    """A key file could not be read, or its passphrase is wrong."""


class ProtocolError(SealmemError):
    """An object broke a rule of the sealmem protocol."""


class Rejected(ProtocolError):
    """A verifier refused an object.

    ``reason`` is one of the short names listed in ``protocol/SPEC.md``
    (``bad-signature``, ``rollback``, ``fork``, ...); ``detail`` is a sentence
    for people.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class TransportError(SealmemError):
    """A folder or hub could not be reached, or answered with something unusable."""
