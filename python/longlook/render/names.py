"""What an arm is called on a page: h3 is QUIC, h2 is TCP, any other label is itself."""

from __future__ import annotations

DISPLAY_NAMES = {"h3": "QUIC", "h2": "TCP"}


def display_name(label: str) -> str:
    return DISPLAY_NAMES.get(label, label)
