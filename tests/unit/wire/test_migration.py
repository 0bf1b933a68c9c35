"""The migration fingerprint (wire.migration) on hand-made captures: each item is what the
capture shows, and None where it cannot show it (packets not decrypted, no move)."""

from __future__ import annotations

from dataclasses import replace

from longlook.wire.migration import fingerprint
from longlook.wire.model import ENCRYPTED_EXTENSIONS, HANDSHAKE, TlsMessage

from .synth import CLIENT, CERT, FINISHED, c, capture, challenge, completed, new_cid, one, response, s, stream

NEW_ADDR = ("192.0.2.7", 50000)
NEW_PORT = (CLIENT[0], 50001)
OTHER_CID = "0d" * 8


def ee_with(*parameters: tuple[int, str]) -> TlsMessage:
    return TlsMessage(ENCRYPTED_EXTENSIONS, extensions=(16, 57), parameters=parameters)


def moving(new=NEW_ADDR, *, dcid: str | None = OTHER_CID, old_challenge=False, probe=False, data=True, hidden=False):
    """A handshake whose server announces a limit of 4 CIDs, one NEW_CONNECTION_ID, then the
    client's datagrams come from `new` (with `dcid`), the server challenges it (and the old
    address when asked), the client answers, and data follows."""
    kw = {"dcid": dcid} if dcid else {}
    after = [c(one(stream(0, 10), **kw), frm=new)]
    if probe:
        after.append(c(one(challenge("22" * 8), **kw), frm=new))
    after.append(s(one(challenge("11" * 8), decrypted=not hidden), to=new))
    if old_challenge:
        after.append(s(one(challenge("33" * 8))))
    after.append(c(one(response("11" * 8), **kw), frm=new))
    if data:
        after.append(s(one(stream(0, 500, fin=True), decrypted=not hidden), to=new))
    server_msgs = (ee_with((14, "04")), CERT, FINISHED)
    return capture(*completed(server_msgs=server_msgs), s(one(new_cid(OTHER_CID))), c(one(stream(4, 10))), *after)


def test_an_active_migration_is_read_item_by_item():
    f = fingerprint(moving(old_challenge=True))
    assert (f.moved, f.disable_active_migration, f.server_cid_limit, f.client_cid_limit) == ("address", False, 4, 2)
    assert (f.cids_issued, f.new_dcid, f.client_probed, f.old_path_challenged) == (1, True, False, True)
    # datagrams are 1 ms apart (synth.capture): the move, the challenge 1 ms later, the old
    # path's challenge, the response, data
    assert (f.challenge_ms, f.response_ms, f.data_ms, f.old_path_last_ms) == (1.0, 3.0, 4.0, 2.0)
    assert f.hidden == 0


def test_a_rebinding_keeps_the_old_dcid_and_changes_only_the_port():
    f = fingerprint(moving(NEW_PORT, dcid=None))
    assert (f.moved, f.new_dcid, f.old_path_challenged, f.old_path_last_ms) == ("port", False, False, None)


def test_a_client_that_probes_and_a_server_that_sends_no_data_there():
    f = fingerprint(moving(probe=True, data=False))
    assert (f.client_probed, f.data_ms) == (True, None)


def test_what_was_not_decrypted_is_not_said():
    f = fingerprint(moving(hidden=True))
    assert (f.challenge_ms, f.response_ms, f.data_ms, f.hidden) == (None, None, None, 2)


def test_the_server_that_forbids_migration_says_so_even_when_nobody_moved():
    msgs = (ee_with((12, ""), (14, "08")), CERT, FINISHED)
    f = fingerprint(capture(*completed(server_msgs=msgs), c(one(stream(0, 10)))))
    assert (f.moved, f.disable_active_migration, f.server_cid_limit) == (None, True, 8)


def test_a_handshake_not_decrypted_announces_nothing():
    cap = moving()
    hidden_hs = tuple(
        replace(
            d, packets=tuple(replace(p, frames=(), decrypted=False) if p.type == HANDSHAKE else p for p in d.packets)
        )
        for d in cap.datagrams
    )
    f = fingerprint(replace(cap, datagrams=hidden_hs))
    assert (f.disable_active_migration, f.server_cid_limit, f.client_cid_limit) == (None, None, 2)
