"""Padmé padding (Nikitin et al., "Reducing Metadata Leakage from Encrypted Files and
Communication with PURBs", PETS 2019): at most 12 % overhead, and the set of padded
sizes leaks at most ``O(log log L)`` bits.  The formula and the marker: SPEC.md
"Padding"; :func:`unpad` accepts exactly what :func:`pad` makes.
"""

from __future__ import annotations

from ..protocol.errors import DecryptionError, InputError

__all__ = ["pad", "padme", "unpad"]

_MARKER = 0x80


def padme(length: int) -> int:
    """The Padmé padded length of ``length`` bytes (``padme(L) >= L``)."""
    if length < 0:
        raise InputError(f"padme({length}) refused: a length must not be negative")
    if length < 2:
        return length
    e = length.bit_length() - 1  # floor(log2 L)
    s = e.bit_length()  # floor(log2 E) + 1 (E >= 1 here)
    mask = (1 << (e - s)) - 1
    return (length + mask) & ~mask


def pad(data: bytes) -> bytes:
    """``data`` + ``0x80`` + zero bytes, to ``padme(len(data) + 1)`` bytes."""
    target = padme(len(data) + 1)
    return bytes(data) + bytes([_MARKER]) + bytes(target - len(data) - 1)


def unpad(data: bytes) -> bytes:
    """Undo :func:`pad`; raise :class:`DecryptionError` unless ``data`` is exactly its output."""
    stripped = data.rstrip(b"\x00")
    if not stripped or stripped[-1] != _MARKER:
        raise DecryptionError(
            "padding refused: no 0x80 marker before the trailing zeros "
            "(the plaintext was not produced by pad())"
        )
    body = stripped[:-1]
    if padme(len(body) + 1) != len(data):
        raise DecryptionError(
            f"padding refused: {len(data)} bytes is not the Padmé length for "
            f"{len(body)} bytes of content (non-canonical padding)"
        )
    return body
