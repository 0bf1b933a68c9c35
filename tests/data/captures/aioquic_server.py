"""An HTTP/3 server on aioquic that records the wire checker's test captures (SOURCE.md) where
our endpoint cannot: it sends a Retry (--retry) and speaks QUIC v2 (--versions v2,v1). It generates the
endpoint's synthetic content (`/page/<N>x<S>.html`, `/obj/<S>/<i>.jpg`, as bytes of the right
size) and prints `ready` once listening. Runs in aioquic's virtualenv (the stacks cache)."""

import argparse
import asyncio
import re

from aioquic.asyncio import serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated
from aioquic.quic.packet import QuicProtocolVersion

VERSIONS = {"v1": QuicProtocolVersion.VERSION_1, "v2": QuicProtocolVersion.VERSION_2}
UNITS = {"": 1, "k": 1000, "m": 1000_000}


def size(s: str) -> int:
    m = re.fullmatch(r"(\d+)([km]?)", s)
    return int(m[1]) * UNITS[m[2]] if m else 0


def body(path: str) -> bytes:
    if m := re.fullmatch(r"/page/(\d+)x(\w+)\.html", path):
        imgs = "".join(f'<img src="/obj/{m[2]}/{i}.jpg">' for i in range(int(m[1])))
        return f"<!DOCTYPE html><html><body>{imgs}</body></html>\n".encode()
    if m := re.fullmatch(r"/obj/(\w+)/\d+\.jpg", path):
        return b"\xff" * size(m[1])
    return b"not found\n"


class Server(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.http: H3Connection | None = None

    def quic_event_received(self, event) -> None:
        if isinstance(event, ProtocolNegotiated):
            self.http = H3Connection(self._quic)
        if self.http is None:
            return
        for ev in self.http.handle_event(event):
            if isinstance(ev, HeadersReceived):
                data = body(dict(ev.headers).get(b":path", b"/").decode())
                self.http.send_headers(ev.stream_id, [(b":status", b"200"), (b"content-length", b"%d" % len(data))])
                self.http.send_data(ev.stream_id, data, end_stream=True)
                self.transmit()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True, help="HOST:PORT")
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--keylog", required=True)
    ap.add_argument("--retry", action="store_true", help="answer each first Initial with a Retry")
    ap.add_argument("--versions", default="v1,v2", help="the versions it speaks, preferred first (v1, v2)")
    a = ap.parse_args()
    c = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN)
    c.load_cert_chain(a.cert, a.key)
    c.secrets_log_file = open(a.keylog, "a")
    c.supported_versions = [VERSIONS[v] for v in a.versions.split(",")]
    host, port = a.listen.rsplit(":", 1)
    await serve(host, int(port), configuration=c, create_protocol=Server, retry=a.retry)
    print("ready", flush=True)
    await asyncio.Future()


if __name__ == "__main__":
    asyncio.run(main())
