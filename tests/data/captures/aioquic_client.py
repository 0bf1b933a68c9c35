"""An HTTP/3 client on aioquic's sans-I/O API that records the wire checker's test captures
(SOURCE.md): it does on purpose what an interop case looks for, or leaves it out. Runs in
aioquic's virtualenv (the stacks cache), so it imports nothing but the standard library and
aioquic.

The sans-I/O connection lets the client choose the socket each datagram leaves from: moving
to a new socket mid-connection is, seen from the server, a NAT rebinding (new port, or new
address with 127.0.0.2) or, after switching to a new connection ID, a migration."""

import argparse
import pickle
import select
import socket
import time

from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import ConnectionTerminated, HandshakeCompleted
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import CipherSuite


class Client:
    def __init__(self, conn: QuicConnection, server: tuple[str, int], bind: str):
        self.conn = conn
        self.server = server
        self.sock = self._socket(bind)
        self.http: H3Connection | None = None
        self.handshake_done = False
        self.closed = False
        self.received: dict[int, int] = {}  # stream -> body bytes
        self.ended: set[int] = set()

    @staticmethod
    def _socket(bind: str) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((bind, 0))
        return s

    def rebind(self, bind: str) -> None:
        """From now on send from (and receive on) a new socket: a new source port, or address."""
        old, self.sock = self.sock, self._socket(bind)
        old.close()

    def flush(self) -> None:
        for data, addr in self.conn.datagrams_to_send(time.monotonic()):
            self.sock.sendto(data, addr)

    def run_until(self, done, timeout: float = 5.0) -> None:
        end = time.monotonic() + timeout
        self.flush()
        while not done() and not self.closed:
            now = time.monotonic()
            if now > end:
                raise SystemExit("timed out")
            timer = self.conn.get_timer()
            wait = min(end, timer if timer is not None else end) - now
            ready, _, _ = select.select([self.sock], [], [], max(wait, 0))
            if ready:
                data, addr = self.sock.recvfrom(65536)
                self.conn.receive_datagram(data, addr, time.monotonic())
            elif timer is not None and time.monotonic() >= timer:
                self.conn.handle_timer(time.monotonic())
            self._events()
            self.flush()

    def _events(self) -> None:
        while (ev := self.conn.next_event()) is not None:
            if isinstance(ev, HandshakeCompleted):
                self.handshake_done = True
            elif isinstance(ev, ConnectionTerminated):
                self.closed = True
            if self.http is None:
                continue
            for h in self.http.handle_event(ev):
                if isinstance(h, DataReceived):
                    self.received[h.stream_id] = self.received.get(h.stream_id, 0) + len(h.data)
                if isinstance(h, (DataReceived, HeadersReceived)) and h.stream_ended:
                    self.ended.add(h.stream_id)

    def get(self, authority: str, path: str) -> int:
        sid = self.conn.get_next_available_stream_id()
        headers = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority.encode())]
        self.http.send_headers(sid, [*headers, (b":path", path.encode())], end_stream=True)
        return sid

    def close(self) -> None:
        self.conn.close()
        self.flush()
        time.sleep(0.05)  # let the server's answer to the close reach the capture
        self.sock.close()


def configuration(a) -> QuicConfiguration:
    c = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name="localhost")
    c.load_verify_locations(a.ca)
    c.secrets_log_file = open(a.keylog, "a")
    if a.chacha20:
        c.cipher_suites = [CipherSuite.CHACHA20_POLY1305_SHA256]
    if a.v2:  # start in v1, offer v2: compatible version negotiation (RFC 9368) moves to it
        c.original_version = QuicProtocolVersion.VERSION_1
        c.supported_versions = [QuicProtocolVersion.VERSION_2, QuicProtocolVersion.VERSION_1]
    if a.load_ticket:
        with open(a.load_ticket, "rb") as f:
            c.session_ticket = pickle.load(f)
    return c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True, help="HOST:PORT")
    ap.add_argument("--ca", required=True)
    ap.add_argument("--keylog", required=True)
    ap.add_argument("--paths", default="/page/4x5k.html,/obj/5k/0.jpg,/obj/5k/1.jpg,/obj/5k/2.jpg,/obj/5k/3.jpg")
    ap.add_argument("--sequential", action="store_true", help="one request in flight at a time")
    ap.add_argument("--abort-after", type=int, help="close the connection once this many body bytes arrived")
    ap.add_argument("--no-http", action="store_true", help="handshake only: no HTTP/3 at all")
    ap.add_argument("--key-update", action="store_true", help="update the 1-RTT keys after the first response")
    ap.add_argument("--chacha20", action="store_true", help="offer TLS_CHACHA20_POLY1305_SHA256 only")
    ap.add_argument("--v2", action="store_true", help="offer QUIC v2 (RFC 9369) from a v1 Initial")
    ap.add_argument("--save-ticket", help="keep the server's session ticket in this file")
    ap.add_argument("--load-ticket", help="resume the session of this ticket")
    ap.add_argument("--zero-rtt", action="store_true", help="send the requests as 0-RTT (with --load-ticket)")
    ap.add_argument("--rebind", choices=("port", "addr", "migrate"), help="move to a new socket mid-transfer")
    a = ap.parse_args()

    host, port = a.server.rsplit(":", 1)
    tickets = []
    conn = QuicConnection(configuration=configuration(a), session_ticket_handler=tickets.append)
    c = Client(conn, (host, int(port)), "127.0.0.1")
    conn.connect(c.server, time.monotonic())
    paths = a.paths.split(",")
    if not a.no_http:
        c.http = H3Connection(conn)
    if a.zero_rtt:  # before the handshake: these requests leave in 0-RTT packets
        sids = [c.get(a.server, p) for p in paths]
        c.run_until(lambda: len(c.ended) == len(sids))
    else:
        c.run_until(lambda: c.handshake_done)
        if not a.no_http:
            fetch(c, a, paths)
    if a.save_ticket:
        c.run_until(lambda: bool(tickets), timeout=2)
        with open(a.save_ticket, "wb") as f:
            pickle.dump(tickets[-1], f)
    c.close()


def fetch(c: Client, a, paths: list[str]) -> None:
    first = c.get(a.server, paths[0])
    c.run_until(lambda: first in c.ended)
    if a.key_update:
        c.conn.request_key_update()
    if a.rebind:
        if a.rebind == "migrate":
            c.conn.change_connection_id()
        c.rebind("127.0.0.2" if a.rebind == "addr" else "127.0.0.1")
    rest = paths[1:]
    if a.sequential:
        for p in rest:
            sid = c.get(a.server, p)
            c.run_until(lambda: sid in c.ended)
        return
    sids = [c.get(a.server, p) for p in rest]
    if a.abort_after:
        c.run_until(lambda: sum(c.received.values()) >= a.abort_after)
        return
    c.run_until(lambda: all(s in c.ended for s in sids))


if __name__ == "__main__":
    main()
