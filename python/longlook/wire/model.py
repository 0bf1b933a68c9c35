"""What a capture holds, as the interop cases read it: datagrams, each with its QUIC packets
(coalesced ones kept apart) and their frames, and the HTTP/3 frames tshark found in it.
Plain frozen dataclasses, so a case is tested on a few hand-made packets as well as on a
recorded capture. Only the fields some case judges are kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

V1 = 0x00000001
V2 = 0x6B3343CF  # RFC 9369

# packet types, one name whatever the version's encoding of the long header type
INITIAL, ZERO_RTT, HANDSHAKE, RETRY, ONE_RTT, VERSION_NEGOTIATION = (
    "Initial", "0-RTT", "Handshake", "Retry", "1-RTT", "Version Negotiation",
)  # fmt: skip
# long header type bits -> type: v1 (RFC 9000 17.2) and v2, which reorders them (RFC 9369 3.2)
LONG_TYPES = {V1: (INITIAL, ZERO_RTT, HANDSHAKE, RETRY), V2: (RETRY, INITIAL, ZERO_RTT, HANDSHAKE)}

# frame types (RFC 9000 19)
PADDING, PING, ACK, ACK_ECN, RESET_STREAM, STOP_SENDING, CRYPTO = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
STREAM_TYPES = range(0x08, 0x10)  # OFF, LEN, FIN in the low three bits
NEW_CONNECTION_ID, RETIRE_CONNECTION_ID = 0x18, 0x19
PATH_CHALLENGE, PATH_RESPONSE = 0x1A, 0x1B
CONNECTION_CLOSE, CONNECTION_CLOSE_APP, HANDSHAKE_DONE = 0x1C, 0x1D, 0x1E

# TLS handshake messages (RFC 8446 4) and extensions
CLIENT_HELLO, SERVER_HELLO, ENCRYPTED_EXTENSIONS, CERTIFICATE = 1, 2, 8, 11
PRE_SHARED_KEY, EARLY_DATA = 41, 42
CIPHER_SUITES = {
    0x1301: "TLS_AES_128_GCM_SHA256",
    0x1302: "TLS_AES_256_GCM_SHA384",
    0x1303: "TLS_CHACHA20_POLY1305_SHA256",
}

# HTTP/3 frame types (RFC 9114 7.2)
H3_DATA, H3_HEADERS, H3_SETTINGS = 0x00, 0x01, 0x04

# the IP header's ECN codepoints (RFC 3168)
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3
ECN_NAMES = {NOT_ECT: "Not-ECT", ECT1: "ECT(1)", ECT0: "ECT(0)", CE: "CE"}


@dataclass(frozen=True)
class TlsMessage:
    """One TLS handshake message carried in CRYPTO frames."""

    type: int
    cipher_suite: int | None = None  # the ServerHello's choice
    cipher_suites: tuple[int, ...] = ()  # the ClientHello's offer
    extensions: tuple[int, ...] = ()
    # QUIC transport parameters (ClientHello, EncryptedExtensions): (id, value bytes in hex)
    parameters: tuple[tuple[int, str], ...] = ()
    random: str = ""  # ClientHello, ServerHello: the 32 random bytes, hex (what a key log names)


@dataclass(frozen=True)
class Frame:
    """One QUIC frame, with the fields the cases read (the others stay None / empty)."""

    type: int
    stream_id: int | None = None
    fin: bool = False
    length: int = 0  # STREAM: bytes of data
    offset: int = 0  # STREAM: where its data starts in the stream
    ecn: tuple[int, int, int] | None = None  # ACK_ECN: ECT(0), ECT(1), CE counts
    acked: tuple[tuple[int, int], ...] = ()  # ACK: acknowledged packet numbers, (low, high) ranges
    data: str | None = None  # PATH_CHALLENGE / PATH_RESPONSE: the 8 bytes, hex
    cid: str | None = None  # NEW_CONNECTION_ID: the connection ID it issues
    error: int | None = None  # CONNECTION_CLOSE: the error code
    tls: tuple[TlsMessage, ...] = ()  # CRYPTO: the handshake messages it completes

    @property
    def is_stream(self) -> bool:
        return self.type in STREAM_TYPES


@dataclass(frozen=True)
class Packet:
    """One QUIC packet; a datagram may coalesce several (RFC 9000 12.2)."""

    type: str
    dcid: str = ""
    scid: str | None = None  # long headers only
    version: int | None = None  # long headers only
    number: int | None = None
    key_phase: int | None = None  # 1-RTT only
    token: str = ""  # Initial: the token it carries; Retry: the token it gives (hex)
    decrypted: bool = True  # frames were read; False: protected and no key for it
    frames: tuple[Frame, ...] = ()

    @property
    def long(self) -> bool:
        return self.type != ONE_RTT

    def has(self, frame_type: int) -> bool:
        return any(f.type == frame_type for f in self.frames)


@dataclass(frozen=True)
class Datagram:
    """One UDP datagram: when and between whom, its IP ECN codepoint, its QUIC packets."""

    number: int  # the capture's frame number (Wireshark's "No.")
    time: float  # seconds since the capture's first datagram
    src: str
    sport: int
    dst: str
    dport: int
    ecn: int = NOT_ECT
    packets: tuple[Packet, ...] = ()
    http3: tuple[int, ...] = ()  # HTTP/3 frame types tshark found in it
    connection: int | None = None  # tshark's QUIC connection number
    segment: int = 0  # >0: the nth segment of a GSO super-datagram split apart (tshark.py)
    size: int = 0  # UDP payload bytes (0: not known)

    @property
    def where(self) -> str:
        """Its place in the capture, as Wireshark numbers it."""
        return f"#{self.number}" + (f".{self.segment}" if self.segment else "")


@dataclass(frozen=True)
class Capture:
    """A capture's datagrams to and from one QUIC server port."""

    datagrams: tuple[Datagram, ...]
    server_port: int
    source: str = ""  # the file it was read from
    notes: tuple[str, ...] = field(default=())  # how it was read (e.g. GSO datagrams split)
    # the client randoms its key log holds secrets for (hex): which ClientHello the secrets are of
    keylog_randoms: frozenset[str] = frozenset()

    @cached_property
    def server(self) -> tuple[str, int] | None:
        """The server's address and port: where the first datagram to the server port went."""
        for d in self.datagrams:
            if d.dport == self.server_port:
                return d.dst, d.dport
            if d.sport == self.server_port:
                return d.src, d.sport
        return None

    def from_server(self, d: Datagram) -> bool:
        return (d.src, d.sport) == self.server

    def from_client(self, d: Datagram) -> bool:
        return (d.dst, d.dport) == self.server
