"""One packet of tshark's JSON (`-T json --no-duplicate-keys`) as a `Datagram`.

tshark 4.0 nests a datagram's layers as `{"frame": ..., "ip": ..., "udp": ..., "quic": ...,
"http3": ...}`. A key that repeats becomes a list (`--no-duplicate-keys`): `quic` is a list
when packets are coalesced, `quic.frame` when a packet has several frames, and so on, so every
read goes through `each`. A 1-RTT packet's header fields sit under `quic.short`; the TLS
handshake messages a CRYPTO frame completes under its `tls` key, their extensions under keys
named after them ("Extension: key_share (len=38)"). Booleans print as "1"/"0" (or "True")."""

from __future__ import annotations

from typing import Any, Iterator

from .model import (
    ACK,
    ACK_ECN,
    CONNECTION_CLOSE,
    CONNECTION_CLOSE_APP,
    CRYPTO,
    LONG_TYPES,
    NEW_CONNECTION_ID,
    ONE_RTT,
    PATH_CHALLENGE,
    PATH_RESPONSE,
    RETRY,
    STREAM_TYPES,
    V1,
    VERSION_NEGOTIATION,
    Datagram,
    Frame,
    Packet,
    TlsMessage,
)


def each(value: Any) -> list:
    """A value tshark printed once or several times, as a list."""
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _int(value: Any, default: int | None = None) -> int | None:
    if isinstance(value, list):  # a field repeated where one was expected: its first
        value = value[0] if value else None
    if value is None or value == "":
        return default
    if value in ("True", "False"):
        return int(value == "True")
    return int(value, 16) if value.startswith(("0x", "0X")) else int(value)


def _hex(value: Any) -> str:
    return "".join(each(value)[:1]).replace(":", "")


def tls_message(hs: dict) -> TlsMessage:
    offered = hs.get("tls.handshake.ciphersuites") or {}
    extensions = tuple(
        _int(e.get("tls.handshake.extension.type"))
        for key, value in hs.items()
        if key.startswith("Extension: ")
        for e in each(value)
        if isinstance(e, dict) and "tls.handshake.extension.type" in e
    )
    return TlsMessage(
        type=_int(hs.get("tls.handshake.type"), -1),
        cipher_suite=_int(hs.get("tls.handshake.ciphersuite")),
        cipher_suites=tuple(_int(c) for c in each(offered.get("tls.handshake.ciphersuite"))),
        extensions=extensions,
        parameters=_transport_parameters(hs),
        random=_hex(hs.get("tls.handshake.random")).lower(),
    )


def _transport_parameters(hs: dict) -> tuple[tuple[int, str], ...]:
    """The quic_transport_parameters extension's parameters, each under a key named after it
    ("Parameter: max_idle_timeout (len=4) 60000 ms"); a parameter without a value
    (disable_active_migration) has none."""
    found = []
    for key, value in hs.items():
        if not key.startswith("Extension: "):
            continue
        for e in each(value):
            if not isinstance(e, dict):
                continue
            for k, v in e.items():
                if not k.startswith("Parameter: "):
                    continue
                for param in each(v):
                    if isinstance(param, dict) and "tls.quic.parameter.type" in param:
                        found.append(
                            (_int(param["tls.quic.parameter.type"]), _hex(param.get("tls.quic.parameter.value")))
                        )
    return tuple(found)


def _tls(frame: dict) -> tuple[TlsMessage, ...]:
    return tuple(
        tls_message(hs)
        for t in each(frame.get("tls"))
        for hs in each(t.get("tls.handshake"))
        if isinstance(hs, dict) and "tls.handshake.type" in hs
    )


def ack_ranges(f: dict) -> tuple[tuple[int, int], ...]:
    """The packet numbers an ACK frame acknowledges (RFC 9000 19.3.1), as (low, high) ranges."""
    high = _int(f.get("quic.ack.largest_acknowledged"))
    first = _int(f.get("quic.ack.first_ack_range"))
    if high is None or first is None:
        return ()
    ranges = [(high - first, high)]
    for gap, length in zip(each(f.get("quic.ack.gap")), each(f.get("quic.ack.ack_range"))):
        high = ranges[-1][0] - int(gap) - 2
        ranges.append((high - int(length), high))
    return tuple(ranges)


def frame(f: dict) -> Frame:
    t = _int(f.get("quic.frame_type"), -1)
    if t in STREAM_TYPES:
        data = f.get("quic.stream_data")
        length = _int(f.get("quic.stream.length"), (len(data) + 1) // 3 if isinstance(data, str) else 0)
        sid, offset = _int(f.get("quic.stream.stream_id")), _int(f.get("quic.stream.offset"), 0)
        return Frame(t, stream_id=sid, fin=bool(t & 1), length=length, offset=offset)
    if t in (ACK, ACK_ECN):
        ecn = None
        if t == ACK_ECN:
            ecn = tuple(
                _int(f.get(k), 0) for k in ("quic.ack.ect0_count", "quic.ack.ect1_count", "quic.ack.ecn_ce_count")
            )
        return Frame(t, acked=ack_ranges(f), ecn=ecn)
    if t in (PATH_CHALLENGE, PATH_RESPONSE):
        name = "quic.path_challenge.data" if t == PATH_CHALLENGE else "quic.path_response.data"
        return Frame(t, data=_hex(f.get(name)))
    if t == NEW_CONNECTION_ID:
        return Frame(t, cid=_hex(f.get("quic.nci.connection_id")))
    if t in (CONNECTION_CLOSE, CONNECTION_CLOSE_APP):
        return Frame(t, error=_int(f.get("quic.cc.error_code", f.get("quic.cc.error_code.app"))))
    if t == CRYPTO:
        return Frame(t, tls=_tls(f))
    return Frame(t)


def packet(q: dict) -> Packet:
    header = q.get("quic.short")
    frames = tuple(frame(f) for f in each(q.get("quic.frame")) if isinstance(f, dict))
    if header is not None:  # a short header: 1-RTT
        return Packet(
            ONE_RTT,
            dcid=_hex(header.get("quic.dcid")),
            number=_int(header.get("quic.packet_number")),
            key_phase=_int(header.get("quic.key_phase")),
            decrypted=bool(frames),
            frames=frames,
        )
    version = _int(q.get("quic.version"))
    if version == 0:
        kind = VERSION_NEGOTIATION
    else:
        v1_bits, v2_bits = q.get("quic.long.packet_type"), q.get("quic.long.packet_type_v2")
        bits = _int(v1_bits if v1_bits is not None else v2_bits, 0)
        kind = LONG_TYPES.get(version, LONG_TYPES[V1])[bits & 3]
    return Packet(
        kind,
        dcid=_hex(q.get("quic.dcid")),
        scid=_hex(q.get("quic.scid")),
        version=version,
        number=_int(q.get("quic.packet_number")),
        token=_hex(q.get("quic.retry_token" if kind == RETRY else "quic.token")),
        decrypted=bool(frames) or kind in (RETRY, VERSION_NEGOTIATION),
        frames=frames,
    )


def _is_packet(q: dict) -> bool:
    """Not the padding tshark lists after a datagram's last packet (a "quic" entry with only
    an expert note in it)."""
    return "quic.short" in q or "quic.header_form" in q or "quic.version" in q


def _http3(layer: Any) -> Iterator[int]:
    for h in each(layer):
        if isinstance(h, dict):
            yield from (int(t) for t in each(h.get("http3.frame_type")))


def _connection(quic: list) -> int | None:
    for q in quic:
        info = q.get("QUIC Connection information") if isinstance(q, dict) else None
        if isinstance(info, dict) and "quic.connection.number" in info:
            return _int(info["quic.connection.number"])
    return None


def address(layers: dict) -> tuple[str, str, int]:
    """Source, destination and the ECN codepoint of the datagram's IP header."""
    ip = each(layers.get("ip"))
    if ip:
        h = ip[0]
        ecn = _int((h.get("ip.dsfield_tree") or {}).get("ip.dsfield.ecn"), 0)
        return h.get("ip.src", ""), h.get("ip.dst", ""), ecn
    h = (each(layers.get("ipv6")) or [{}])[0]
    ecn = _int((h.get("ipv6.tclass_tree") or {}).get("ipv6.tclass.ecn"), 0)
    return h.get("ipv6.src", ""), h.get("ipv6.dst", ""), ecn


def epoch(layers: dict) -> tuple[int, int]:
    """When the datagram was captured, as whole seconds and nanoseconds (a float of the
    epoch keeps only microseconds)."""
    seconds, _, fraction = (layers.get("frame") or {}).get("frame.time_epoch", "0").partition(".")
    return int(seconds), int((fraction + "000000000")[:9])


def datagram(layers: dict, t0: tuple[int, int], segment: int = 0) -> Datagram:
    """The datagram of one tshark packet; `t0` is the capture's first datagram's `epoch`."""
    f = layers.get("frame") or {}
    seconds, nanos = epoch(layers)
    udp = (each(layers.get("udp")) or [{}])[0]
    src, dst, ecn = address(layers)
    quic = [q for q in each(layers.get("quic")) if isinstance(q, dict) and _is_packet(q)]
    return Datagram(
        number=_int(f.get("frame.number"), 0),
        time=(seconds - t0[0]) + (nanos - t0[1]) / 1e9,
        src=src,
        sport=_int(udp.get("udp.srcport"), 0),
        dst=dst,
        dport=_int(udp.get("udp.dstport"), 0),
        ecn=ecn,
        packets=tuple(packet(q) for q in quic),
        http3=tuple(_http3(layers.get("http3"))),
        connection=_connection(quic),
        segment=segment,
        size=max(0, _int(udp.get("udp.length"), 8) - 8),
    )
