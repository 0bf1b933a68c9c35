"""Hand-made captures for the wire cases' tests: a few datagrams between a client and a
server, with just the packets and frames a case reads. `capture(...)` numbers them #1, #2,
... in order, as Wireshark would."""

from __future__ import annotations

from dataclasses import replace

from longlook.wire.model import (
    ACK,
    ACK_ECN,
    CERTIFICATE,
    CLIENT_HELLO,
    CONNECTION_CLOSE,
    CRYPTO,
    ENCRYPTED_EXTENSIONS,
    HANDSHAKE,
    HANDSHAKE_DONE,
    INITIAL,
    NEW_CONNECTION_ID,
    ONE_RTT,
    PATH_CHALLENGE,
    PATH_RESPONSE,
    RETRY,
    SERVER_HELLO,
    V1,
    ZERO_RTT,
    Capture,
    Datagram,
    Frame,
    Packet,
    TlsMessage,
)

CLIENT = ("192.0.2.1", 50000)
SERVER = ("198.18.2.2", 443)
SERVER_CID = "5e" * 8  # the DCID of the client's packets
CLIENT_CID = "c1" * 8


def capture(*datagrams: Datagram) -> Capture:
    return Capture(tuple(replace(d, number=i + 1, time=i / 1000) for i, d in enumerate(datagrams)), SERVER[1])


def c(*packets: Packet, frm: tuple[str, int] = CLIENT, ecn: int = 0, h3=(), conn: int | None = 0) -> Datagram:
    """A datagram from the client (from `frm`) to the server."""
    return Datagram(0, 0.0, *frm, *SERVER, ecn=ecn, packets=packets, http3=tuple(h3), connection=conn)


def s(*packets: Packet, to: tuple[str, int] = CLIENT, ecn: int = 0, h3=(), conn: int | None = 0) -> Datagram:
    """A datagram from the server to the client (at `to`)."""
    return Datagram(0, 0.0, *SERVER, *to, ecn=ecn, packets=packets, http3=tuple(h3), connection=conn)


def initial(*frames: Frame, version: int = V1, token: str = "", dcid: str = SERVER_CID) -> Packet:
    return Packet(INITIAL, dcid=dcid, scid=CLIENT_CID, version=version, token=token, frames=frames)


def handshake(*frames: Frame, version: int = V1, decrypted: bool = True) -> Packet:
    return Packet(HANDSHAKE, dcid=SERVER_CID, scid=CLIENT_CID, version=version, decrypted=decrypted, frames=frames)


def zero_rtt(*frames: Frame, decrypted: bool = True) -> Packet:
    return Packet(ZERO_RTT, dcid=SERVER_CID, version=V1, decrypted=decrypted, frames=frames)


def retry(token: str = "70" * 40) -> Packet:
    return Packet(RETRY, dcid=CLIENT_CID, scid=SERVER_CID, version=V1, token=token)


def one(*frames: Frame, pn: int | None = None, kp: int = 0, dcid: str = SERVER_CID, decrypted: bool = True) -> Packet:
    return Packet(ONE_RTT, dcid=dcid, number=pn, key_phase=kp, decrypted=decrypted, frames=frames if decrypted else ())


def crypto(*messages: TlsMessage) -> Frame:
    return Frame(CRYPTO, tls=messages)


def client_hello(*extensions: int, suites=(0x1301, 0x1302, 0x1303)) -> TlsMessage:
    return TlsMessage(CLIENT_HELLO, cipher_suites=tuple(suites), extensions=(43, 51, *extensions))


def server_hello(*extensions: int, suite: int = 0x1301) -> TlsMessage:
    return TlsMessage(SERVER_HELLO, cipher_suite=suite, extensions=(43, 51, *extensions))


def ee(*extensions: int) -> TlsMessage:
    return TlsMessage(ENCRYPTED_EXTENSIONS, extensions=(16, 57, *extensions))


CERT = TlsMessage(CERTIFICATE)
FINISHED = TlsMessage(20)
DONE = Frame(HANDSHAKE_DONE)
PING = Frame(0x01)


def stream(sid: int, length: int = 100, fin: bool = False, offset: int = 0) -> Frame:
    return Frame(0x0A | int(fin) | (0x04 if offset else 0), stream_id=sid, fin=fin, length=length, offset=offset)


def ack(*ranges: tuple[int, int], ecn: tuple[int, int, int] | None = None) -> Frame:
    return Frame(ACK_ECN if ecn else ACK, acked=ranges or ((0, 0),), ecn=ecn)


def challenge(data: str) -> Frame:
    return Frame(PATH_CHALLENGE, data=data)


def response(data: str) -> Frame:
    return Frame(PATH_RESPONSE, data=data)


def new_cid(cid: str) -> Frame:
    return Frame(NEW_CONNECTION_ID, cid=cid)


def close(error: int) -> Frame:
    return Frame(CONNECTION_CLOSE, error=error)


def hello(conn: int = 0, ch=None, sh=None, server_msgs=(ee(), CERT, FINISHED), version: int = V1) -> list[Datagram]:
    """A client's Initial and the server's Initial + Handshake answer (a full handshake)."""
    return [
        c(initial(crypto(ch or client_hello()), version=V1), conn=conn),
        s(
            initial(crypto(sh or server_hello()), version=version),
            handshake(crypto(*server_msgs), version=version),
            conn=conn,
        ),
    ]


def completed(conn: int = 0, version: int = V1, **kw) -> list[Datagram]:
    """A full handshake that completes: HANDSHAKE_DONE, then 1-RTT both ways."""
    return [
        *hello(conn, version=version, **kw),
        c(handshake(crypto(FINISHED), version=version), conn=conn),
        s(one(DONE), conn=conn),
        c(one(ack()), conn=conn),
    ]
