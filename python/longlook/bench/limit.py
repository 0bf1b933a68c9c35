"""The physical limit of a download over an emulated path of rate R and round-trip time T.

For a transfer of S payload bytes:

    handshake rounds x T           (h3: 1 = QUIC+TLS 1.3; h2: 2 = TCP, then TLS 1.3)
  + T                              (the request's way out and the last byte's way back)
  + slow-start rounds x T          (from the initial window, doubling, until one window
                                    fills the pipe: a round lasts max(T, window / rate))
  + what remains / (R x efficiency)

`efficiency` is payload over IP bytes, measured for each run from linkem's counters of
the downstream direction (so every header, ack-less retransmission and padding counts;
measure.py).
"""

from __future__ import annotations

HANDSHAKE_ROUNDS = {"h3": 1, "h2": 2}


def physical_limit_ms(
    size: int, rate_mbit: float, rtt_ms: float, protocol: str, initial_window: int, efficiency: float
) -> float:
    rate_Bps = rate_mbit * 1e6 / 8 * efficiency  # payload bytes per second at line rate
    t = (HANDSHAKE_ROUNDS[protocol] + 1) * rtt_ms
    remaining, window = float(size), float(initial_window)
    while remaining > 0 and window / rate_Bps * 1e3 < rtt_ms:  # the pipe is not full yet
        sent = min(window, remaining)
        remaining -= sent
        t += rtt_ms if remaining > 0 else sent / rate_Bps * 1e3
        window *= 2
    return t + remaining / rate_Bps * 1e3
