"""A connection's migration fingerprint: what client and server did when the client's address
changed under the connection, read from the capture at the server's side of the NAT (the
router's pcap decrypted with the run's key log), each item a fact of the wire or None when
the capture cannot show it (no move, packets not decrypted).

The interop cases (cases/rebind_*.py, connection_migration.py) say passed or failed; this
says how, so stacks can be set side by side (RFC 9000 §9): did the server announce
disable_active_migration and how many connection IDs it would take (active_connection_id_limit)
and issue; how long after the move its PATH_CHALLENGE went to the new address and the
client's PATH_RESPONSE came back; whether the client probed the path itself; whether it used a
new connection ID (§9.5); when data reached the new address; how many bytes the server sent
there before validation against the 3x limit (§8.2.1, §9.3); how long it kept sending to the
old address; whether it validated the old path too (§9.3.3)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .cases import paths, view
from . import varint
from .model import (
    CLIENT_HELLO,
    ENCRYPTED_EXTENSIONS,
    NEW_CONNECTION_ID,
    PATH_CHALLENGE,
    PATH_RESPONSE,
    Capture,
    Datagram,
)

# RFC 9000 §18.2
DISABLE_ACTIVE_MIGRATION = 0x0C
ACTIVE_CONNECTION_ID_LIMIT = 0x0E


@dataclass(frozen=True)
class Fingerprint:
    moved: str | None = None  # "port", "address", "address and port"; None: no move seen
    move_ms: float | None = None  # the client's first datagram from the new address, from the first datagram
    disable_active_migration: bool | None = None  # announced by the server
    server_cid_limit: int | None = None  # active_connection_id_limit, as each side announced it
    client_cid_limit: int | None = None
    cids_issued: int | None = None  # NEW_CONNECTION_ID frames the server sent before the move
    new_dcid: bool | None = None  # the client used a DCID the server issued, not the old path's
    challenge_ms: float | None = None  # the server's first PATH_CHALLENGE to the new address, after the move
    response_ms: float | None = None  # the client's PATH_RESPONSE to it, from the new address
    client_probed: bool | None = None  # the client sent a PATH_CHALLENGE from the new address
    old_path_challenged: bool | None = None  # the server challenged the old address after the move
    data_ms: float | None = None  # the server's first STREAM data to the new address
    old_path_last_ms: float | None = None  # the server's last datagram to the old address
    unvalidated_sent: int | None = None  # bytes to the new address before validation
    unvalidated_received: int | None = None  # bytes from it in that time
    hidden: int = 0  # server packets to the new address that were not decrypted

    def as_dict(self) -> dict:
        return asdict(self)


def _ms(a: Datagram, b: Datagram | None) -> float | None:
    return None if b is None else round((b.time - a.time) * 1000, 3)


def _varint(hex_value: str) -> int | None:
    """A transport parameter's value (RFC 9000 §16: a variable-length integer)."""
    if not hex_value:
        return None
    read = varint.read(bytes.fromhex(hex_value))
    return None if read is None else read[0]


def _parameters(conn: Capture, by: str, message: int) -> dict[int, str] | None:
    """The transport parameters `by` announced (None: its message was not seen decrypted)."""
    found = view.first(m for _, m in view.tls(conn, by, message))
    return None if found is None else dict(found.parameters)


def _announced(conn: Capture) -> dict:
    server = _parameters(conn, view.SERVER, ENCRYPTED_EXTENSIONS)
    client = _parameters(conn, view.CLIENT, CLIENT_HELLO)
    limit = lambda params: None if params is None else _varint(params.get(ACTIVE_CONNECTION_ID_LIMIT, "02"))  # noqa: E731
    return {
        "disable_active_migration": None if server is None else DISABLE_ACTIVE_MIGRATION in server,
        "server_cid_limit": limit(server),
        "client_cid_limit": limit(client),
    }


def of_connection(conn: Capture) -> Fingerprint:
    """The fingerprint of the connection's first move (only what was announced, when none)."""
    announced = _announced(conn)
    moves = paths.changes(conn)
    if not moves:
        return Fingerprint(**announced)
    change = moves[0]
    at = change.at
    start = conn.datagrams[0]
    after = conn.datagrams[conn.datagrams.index(at) :]
    server_after = [d for d in after if view.sender(conn, d) == view.SERVER]
    to_new = [d for d in server_after if (d.dst, d.dport) == change.new]
    to_old = [d for d in server_after if (d.dst, d.dport) == change.old]
    hidden = sum(not p.decrypted for d in to_new for p in d.packets)

    def first_to(datagrams, wanted) -> tuple[Datagram | None, set]:
        hits = [(d, f.data) for d in datagrams for p in d.packets for f in p.frames if wanted(f)]
        return (hits[0][0] if hits else None), {data for _, data in hits}

    challenge, datas = first_to(to_new, lambda f: f.type == PATH_CHALLENGE)
    old_challenge, _ = first_to(to_old, lambda f: f.type == PATH_CHALLENGE)
    data, _ = first_to(to_new, lambda f: f.is_stream and f.length)
    response = paths.from_new(conn, change, PATH_RESPONSE, datas) if challenge is not None else None
    probe = paths.from_new(conn, change, PATH_CHALLENGE)
    sent = received = None
    if response is not None:
        sent, received = paths.unvalidated_bytes(conn, change, response)
    issued_before = [f for d, _, f in view.frames(conn, view.SERVER, NEW_CONNECTION_ID) if d.time <= at.time and f.cid]
    kind = " and ".join(w for w, moved in (("address", change.addr_changed), ("port", change.port_changed)) if moved)
    return Fingerprint(
        moved=kind or None,
        move_ms=_ms(start, at),
        **announced,
        cids_issued=len(issued_before),
        new_dcid=(change.new_dcid != change.old_dcid and change.new_dcid in paths.issued(conn))
        if change.new_dcid
        else None,
        challenge_ms=_ms(at, challenge),
        response_ms=_ms(at, response),
        client_probed=probe is not None,
        old_path_challenged=old_challenge is not None if all(p.decrypted for d in to_old for p in d.packets) else None,
        data_ms=_ms(at, data),
        old_path_last_ms=_ms(at, to_old[-1]) if to_old else None,
        unvalidated_sent=sent,
        unvalidated_received=received,
        hidden=hidden,
    )


def fingerprint(capture: Capture) -> Fingerprint:
    """The first started connection with a move (or the first started one)."""
    conns = view.started(capture) or [capture]
    prints = [of_connection(c) for c in conns]
    return next((f for f in prints if f.moved), prints[0])
