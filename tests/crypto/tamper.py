"""Tampering helpers for the crypto tests (PyNaCl's ``flip_byte``)."""

from __future__ import annotations

__all__ = ["flip_byte"]


def flip_byte(data: bytes, index: int) -> bytes:
    """``data`` with the byte at ``index`` (negative counts from the end) XORed with 0x01."""
    out = bytearray(data)
    out[index] ^= 0x01
    return bytes(out)
