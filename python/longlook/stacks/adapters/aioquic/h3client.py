"""aioquic's HTTP/3 as a longlook client: one page load (the HTML, then every `src` in it,
all at once) or one bulk download, written as the fetch JSON of `endpoint fetch`
(docs/interfaces.md). Standard library and aioquic only (it runs in the stack's virtualenv).
Exit 0 ok, 3 if the server chose another protocol than h3, 1 otherwise."""

import argparse
import asyncio
import json
import os
import pickle
import re
import socket
import sys
import time
from urllib.parse import urlsplit

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.logger import QuicFileLogger
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import CipherSuite

SRC = re.compile(rb'src="([^"]+)"')


class Transfer:
    def __init__(self, path: str, t0: float, keep: bool, sample: list | None):
        self.path, self.t0, self.keep, self.sample = path, t0, keep, sample
        self.start_ms = self.ms()
        self.first_byte_ms = self.end_ms = None
        self.status, self.bytes, self.body = None, 0, bytearray()
        self.done = asyncio.get_running_loop().create_future()

    def ms(self) -> float:
        return (time.monotonic() - self.t0) * 1000

    def row(self) -> dict:
        return {
            "path": self.path,
            "status": self.status,
            "bytes": self.bytes,
            "start_ms": self.start_ms,
            "first_byte_ms": self.first_byte_ms,
            "end_ms": self.end_ms,
        }


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http = H3Connection(self._quic)
        self.transfers: dict[int, Transfer] = {}
        self.total = 0

    def quic_event_received(self, event) -> None:
        for ev in self.http.handle_event(event):
            t = self.transfers.get(getattr(ev, "stream_id", None))
            if t is None:
                continue
            if isinstance(ev, HeadersReceived):
                t.status = int(dict(ev.headers).get(b":status", b"0"))
                t.first_byte_ms = t.ms()
            elif isinstance(ev, DataReceived):
                t.bytes += len(ev.data)
                self.total += len(ev.data)
                if t.keep:
                    t.body += ev.data
                if t.sample is not None and (not t.sample or t.ms() - t.sample[-1][0] >= 10):
                    t.sample.append([t.ms(), self.total])
            if getattr(ev, "stream_ended", False) and not t.done.done():
                t.end_ms = t.ms()
                t.done.set_result(None)

    async def get(self, authority: str, path: str, run_id: str, t0: float, keep=False, sample=None) -> Transfer:
        sid = self._quic.get_next_available_stream_id()
        t = self.transfers[sid] = Transfer(path, t0, keep, sample)
        self.http.send_headers(
            sid,
            [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", authority.encode()),
                (b":path", path.encode()),
                (b"x-longlook-run", run_id.encode()),
            ],
            end_stream=True,
        )
        self.transmit()
        await t.done
        return t


def _ticket_saver(path: str):
    """Keep the server's session ticket for a later connection (resumption, 0-RTT)."""

    def save(ticket) -> None:
        with open(path, "wb") as f:
            pickle.dump(ticket, f)

    return save


def _update_keys(c) -> None:
    c._quic.request_key_update()
    c.transmit()


async def _migrate(c, to: str, doc: dict, t0: float) -> None:
    """Move the connection to a socket on the client's address `to`: from then on it sends
    from there and the server's packets come there. A new path takes a connection ID not used
    before (RFC 9000 9.5), one the server issued; the server validates the path and aioquic
    answers its PATH_CHALLENGE. aioquic itself has no call for this: the socket is the
    application's (connect() made the first one the same way, dual-stack)."""
    move = doc["migration"]
    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(("::ffff:" + to, 0, 0, 0))
        await asyncio.get_running_loop().create_datagram_endpoint(lambda: c, sock=sock)  # c now sends through it
    except OSError as e:
        sock.close()
        move["not_moved"] = f"binding a socket on {to}: {e}"
        return
    c._quic.change_connection_id()  # (none spare: the old one stays, and the wire shows it)
    c.transmit()
    host, port = sock.getsockname()[:2]
    move["at_ms"], move["to"] = (time.monotonic() - t0) * 1000, f"{host.removeprefix('::ffff:')}:{port}"


def _plan_move(a, c, doc: dict, t0: float) -> None:
    doc["migration"] = {"planned_at_ms": a.migrate_at_ms, "at_ms": None, "to": None, "not_moved": None}
    delay = max(0.0, a.migrate_at_ms / 1000 - (time.monotonic() - t0))
    asyncio.get_running_loop().call_later(delay, lambda: asyncio.ensure_future(_migrate(c, a.migrate_to, doc, t0)))


async def load(a, doc: dict) -> int:
    url = urlsplit(a.url)
    path = url.path + (f"?{url.query}" if url.query else "")
    config = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        congestion_control_algorithm=a.cc,
        server_name=url.hostname,
        quic_logger=QuicFileLogger(a.qlog_dir) if a.qlog_dir else None,
        # NSS key log lines, flushed as written (the process may be killed)
        secrets_log_file=open(a.keylog, "a", buffering=1) if a.keylog else None,
    )
    if a.chacha20:  # the only suite offered (the Initial packets stay AES-128-GCM: RFC 9001)
        config.cipher_suites = [CipherSuite.CHACHA20_POLY1305_SHA256]
    if a.quic_v2:  # a v1 Initial that offers v2: compatible version negotiation (RFC 9368)
        config.original_version = QuicProtocolVersion.VERSION_1
        config.supported_versions = [QuicProtocolVersion.VERSION_2, QuicProtocolVersion.VERSION_1]
    if a.session_ticket and os.path.exists(a.session_ticket):  # a first connection's ticket
        with open(a.session_ticket, "rb") as f:
            config.session_ticket = pickle.load(f)
    early = config.session_ticket is not None and a.early_data  # the first request before the handshake ends: in 0-RTT
    config.load_verify_locations(a.ca)
    t0 = time.monotonic()
    doc["started_unix_ms"] = int(time.time() * 1000)
    async with connect(
        url.hostname,
        url.port or 443,
        configuration=config,
        create_protocol=Client,
        wait_connected=not early,
        session_ticket_handler=_ticket_saver(a.session_ticket) if a.session_ticket else None,
    ) as c:
        doc["zero_rtt"]["attempted"] = early
        keep, sample = a.mode == "page", doc["goodput"] if a.mode == "bulk" else None
        if early:
            first_task = asyncio.ensure_future(c.get(url.netloc, path, a.run_id, t0, keep=keep, sample=sample))
            await c.wait_connected()
            doc["zero_rtt"]["accepted"] = bool(c._quic.tls.early_data_accepted)
        doc["handshake_ms"] = (time.monotonic() - t0) * 1000
        if a.key_update_after_ms is not None:  # this side starts a key update during the transfer
            asyncio.get_running_loop().call_later(a.key_update_after_ms / 1000, _update_keys, c)
        if a.migrate_at_ms is not None:  # to the second path, timed from the connection's start
            _plan_move(a, c, doc, t0)
        doc["protocol"] = c._quic.tls.alpn_negotiated
        host, port = c._transport.get_extra_info("sockname")[:2]
        doc["local_addr"] = f"{host}:{port}"
        if doc["protocol"] != "h3":
            doc["error"] = f"negotiated {doc['protocol']}, not h3"
            return 3
        first = await (first_task if early else c.get(url.netloc, path, a.run_id, t0, keep=keep, sample=sample))
        transfers = [first]
        doc["ttfb_ms"] = first.first_byte_ms
        if a.mode == "page" and first.status == 200:
            srcs = [m.decode() for m in SRC.findall(bytes(first.body))]
            transfers += await asyncio.gather(*(c.get(url.netloc, s, a.run_id, t0) for s in srcs))
        doc["plt_ms"] = (time.monotonic() - t0) * 1000
        doc["objects"] = [t.row() for t in transfers]
        doc["bytes"] = c.total
        doc["goodput_mbit"] = c.total * 8 / 1000 / doc["plt_ms"] if doc["plt_ms"] else None
        bad = [t.path for t in transfers if t.status != 200]
        if bad:
            doc["error"] = f"status other than 200 for {', '.join(bad[:3])}"
            return 1
        doc["ok"] = True
        return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--ca", required=True)
    ap.add_argument("--mode", default="page", choices=("page", "bulk"))
    ap.add_argument("--run-id", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout-s", type=float, default=60)
    ap.add_argument("--qlog-dir")
    ap.add_argument("--cc", default="reno", choices=("reno", "cubic"))
    ap.add_argument("--keylog", help="append the TLS secrets here (NSS key log format)")
    ap.add_argument("--session-ticket", help="resume with the ticket in this file, if any; keep the new one there")
    ap.add_argument("--early-data", action="store_true", help="with a ticket: the first request in 0-RTT")
    ap.add_argument("--chacha20", action="store_true", help="offer ChaCha20-Poly1305 only")
    ap.add_argument("--quic-v2", action="store_true", help="prefer QUIC v2 (RFC 9369), from a v1 Initial")
    ap.add_argument("--key-update-after-ms", type=float, help="start a key update this long after the handshake")
    ap.add_argument("--migrate-at-ms", type=float, help="move to --migrate-to this long after the fetch started")
    ap.add_argument("--migrate-to", help="the client's (IPv4) address on the path it moves to")
    a = ap.parse_args()
    if (a.migrate_at_ms is None) != (a.migrate_to is None):
        ap.error("--migrate-at-ms and --migrate-to go together")
    doc = {
        "run_id": a.run_id,
        "url": a.url,
        "mode": a.mode,
        "protocol_requested": "h3",
        "protocol": None,
        "ok": False,
        "error": None,
        "started_unix_ms": None,
        "plt_ms": None,
        "handshake_ms": None,
        "ttfb_ms": None,
        "bytes": 0,
        "objects": [],
        "zero_rtt": {"attempted": False, "accepted": False},
        "local_addr": None,
        "goodput": [],
        "goodput_mbit": None,
        "stopped_early": False,
    }
    try:
        code = asyncio.run(asyncio.wait_for(load(a, doc), a.timeout_s))
    except (asyncio.TimeoutError, TimeoutError):
        doc["error"], code = f"no result within {a.timeout_s:.0f} s", 1
    except Exception as e:  # a connection error is this run's outcome, in the JSON
        doc["error"], code = f"{type(e).__name__}: {e}", 1
    with open(a.out, "w") as f:
        json.dump(doc, f)
    return code


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # the result is written: never hang in the event loop's or interpreter's teardown
