"""The congestion controls each side offers: one list, used by scenarios, servers and
reports alike."""

from __future__ import annotations

from typing import Literal

# our endpoint's QUIC controllers (crates/endpoint/src/cc) and Linux's TCP ones we use
QUIC_CC = ("cubic", "newreno", "bbr")
TCP_CC = ("cubic", "bbr", "reno")

QuicCC = Literal["cubic", "newreno", "bbr"]
TcpCC = Literal["cubic", "bbr", "reno"]

assert QuicCC.__args__ == QUIC_CC and TcpCC.__args__ == TCP_CC  # one list, two spellings
