"""The request streams of a capture (client-initiated bidirectional streams, RFC 9000 2.1:
stream ID mod 4 == 0), as transfer and multiplexing read them: who sent how much on each,
whether each side ended it with a FIN, and where it began and ended."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import STREAM_TYPES, Capture
from . import view


@dataclass
class RequestStream:
    connection: int  # the connection's place in the capture, from 0
    id: int
    opened: int  # index of the client's first STREAM frame's datagram
    client_fin: bool = False
    server_bytes: int = 0
    server_fin: int | None = None  # index of the datagram with the server's FIN

    @property
    def name(self) -> str:
        return f"stream {self.id}" if self.connection == 0 else f"stream {self.id} (connection {self.connection + 1})"


def request_streams(capture: Capture) -> list[RequestStream]:
    found: dict[tuple[int, int], RequestStream] = {}
    index = {id(d): i for i, d in enumerate(capture.datagrams)}
    for n, conn in enumerate(view.connections(capture)):
        for by in (view.CLIENT, view.SERVER):
            for d, _, f in view.frames(conn, by, *STREAM_TYPES):
                if f.stream_id is None or f.stream_id % 4 != 0:
                    continue
                key = (n, f.stream_id)
                if key not in found:
                    if by == view.SERVER:
                        continue  # a response to a request the capture does not show
                    found[key] = RequestStream(n, f.stream_id, opened=index[id(d)])
                s = found[key]
                if by == view.CLIENT:
                    s.client_fin |= f.fin
                else:
                    s.server_bytes += f.length
                    if f.fin and s.server_fin is None:
                        s.server_fin = index[id(d)]
    return sorted(found.values(), key=lambda s: (s.connection, s.opened, s.id))
