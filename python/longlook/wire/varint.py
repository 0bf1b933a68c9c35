"""QUIC's variable-length integers (RFC 9000 16): a two-bit length prefix, then the value."""

from __future__ import annotations


def read(b: bytes, at: int = 0) -> tuple[int, int] | None:
    """The integer at `at`: its value and where it ends; None when `b` ends inside it."""
    if at >= len(b):
        return None
    size = 1 << (b[at] >> 6)
    if at + size > len(b):
        return None
    value = b[at] & 0x3F
    for x in b[at + 1 : at + size]:
        value = (value << 8) | x
    return value, at + size
