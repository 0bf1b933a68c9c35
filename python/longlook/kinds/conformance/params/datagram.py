"""Datagram size: the largest packet the sender sent, against the path: a QUIC datagram is
at least 1200 bytes (RFC 9000 §14) and at most what a 1500-byte MTU carries (1472 bytes of
UDP payload over IPv4); a TCP segment at most the MSS of that MTU (1460, 1448 with
timestamps)."""

from __future__ import annotations

from .result import ParamResult, judged, not_measurable, within
from .trace import QUIC_MIN_DATAGRAM, ConnTrace

PARAMETER = "max_datagram"
UNIT = "bytes"
PATH_MTU = 1500


def reference(tcp: bool, mtu: int = PATH_MTU) -> float:
    return float(mtu - 40) if tcp else float(mtu - 28)


def bound(reference: float, tcp: bool = False) -> tuple[float, float]:
    """What conforms: a TCP segment at most the MSS of the MTU, a QUIC datagram from 1200
    bytes to what the MTU carries (`reference`)."""
    return (-float("inf") if tcp else float(QUIC_MIN_DATAGRAM)), reference


def datagram_size(tr: ConnTrace, mtu: int = PATH_MTU) -> ParamResult:
    ref = reference(tr.is_tcp, mtu)
    if tr.is_tcp:
        mss = tr.mss
        if not mss:
            return not_measurable(PARAMETER, UNIT, "the TCP log has no MSS", ref)
        return judged(
            PARAMETER,
            mss,
            ref,
            UNIT,
            within(mss, bound(ref, tcp=True)),
            f"at most {ref:.0f} (MTU {mtu})",
            "the sender's MSS (TCP_INFO)",
        )
    sizes = tr.sent["size"].dropna()
    if sizes.empty:
        return not_measurable(PARAMETER, UNIT, "the log has no packet sizes", ref)
    biggest = float(sizes.max())
    tol = f"{QUIC_MIN_DATAGRAM}-{ref:.0f} (MTU {mtu})"
    full = sizes[sizes >= QUIC_MIN_DATAGRAM]
    share = len(full) / len(sizes)
    return judged(
        PARAMETER,
        biggest,
        ref,
        UNIT,
        within(biggest, bound(ref)),
        tol,
        f"{len(sizes)} packets, {share:.0%} of them ≥ {QUIC_MIN_DATAGRAM} B",
    )
