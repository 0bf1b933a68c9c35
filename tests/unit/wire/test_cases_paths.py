"""The cases about what travels around the packets, on hand-made captures: ecn (IP marks and
ACK_ECN counts), rebind-port, rebind-addr and connection-migration (the client's address as
the server sees it). Each passes when its feature happened and fails, saying what was
missing, when it did not."""

from __future__ import annotations

from longlook.wire.cases import connection_migration, ecn, rebind_addr, rebind_port
from longlook.wire.model import ECT0, NOT_ECT

from .synth import CLIENT, ack, c, capture, challenge, completed, new_cid, one, response, s, stream

NEW_PORT = (CLIENT[0], 50001)
NEW_ADDR = ("192.0.2.7", 50000)
OTHER_CID = "0d" * 8


def marked(client_counts=(3, 0, 0), client_mark: int = ECT0, server_ack_ecn: bool = True) -> list:
    """The client sends 1-RTT packets 0-3 marked `client_mark`, and the server's ACK of 0-2
    reports `client_counts` for them; the server sends packets 0-1 marked ECT(0), and the
    client's ACK counts (2, 0, 0)."""
    return [
        *completed(),
        c(one(stream(0, 10, fin=True), pn=0), ecn=client_mark),
        c(one(stream(4, 10, fin=True), pn=1), ecn=client_mark),
        c(one(ack((0, 0)), pn=2), ecn=client_mark),
        s(one(ack((0, 2), ecn=client_counts if server_ack_ecn else None), pn=0), ecn=ECT0),
        s(one(stream(0, 100, fin=True), pn=1), ecn=ECT0),
        c(one(ack((0, 1), ecn=(2, 0, 0)), pn=3), ecn=client_mark),
    ]


def test_ecn_passes_when_marks_are_counted_both_ways():
    r = ecn.check(capture(*marked(client_counts=(4, 0, 0))))
    assert r.verdict == "passed", r.evidence
    assert "client to server: 4 of 5 packets ECT(0)" in r.evidence
    assert "server to client: 2 of 3 packets ECT(0)" in r.evidence


def test_ecn_fails_when_the_client_marks_nothing():
    r = ecn.check(capture(*marked(client_mark=NOT_ECT)))
    assert (r.verdict, r.evidence) == (
        "failed",
        "the client marked none of its 5 0-RTT/1-RTT packets ECT (all Not-ECT)",
    )


def test_ecn_fails_when_acks_carry_no_counts():
    r = ecn.check(capture(*marked(server_ack_ecn=False)))
    assert r.verdict == "failed" and "but the server's 1 ACK frames carry no ECN counts" in r.evidence


def test_ecn_fails_when_the_counts_miss_acknowledged_marks():
    r = ecn.check(capture(*marked(client_counts=(0, 0, 0))))
    assert r.verdict == "failed"
    assert "counts 0 (ECT(0) 0, ECT(1) 0, CE 0), but its ACKs acknowledge 3 packets the client marked" in r.evidence


def test_ecn_counts_ce_remarks_as_marks():
    r = ecn.check(capture(*marked(client_counts=(1, 0, 3))))
    assert r.verdict == "passed"


def test_ecn_fails_when_the_counts_exceed_the_marks():
    r = ecn.check(capture(*marked(client_counts=(9, 0, 0))))
    assert r.verdict == "failed" and "more than the 4 packets the client marked" in r.evidence


def moved(new=NEW_PORT, validated: bool = True, answered: bool = True, data: bool = True, dcid: str | None = None):
    """The client's datagrams come from `new` after the handshake; the server may challenge
    the new address, the client may answer, data may follow; `dcid`: the client's DCID there."""
    after = [c(one(stream(0, 10, fin=True), dcid=dcid) if dcid else one(stream(0, 10, fin=True)), frm=new)]
    if validated:
        after.append(s(one(challenge("11" * 8)), to=new))
    if answered:
        after.append(c(one(response("11" * 8)) if dcid is None else one(response("11" * 8), dcid=dcid), frm=new))
    if data:
        after.append(s(one(stream(0, 500, fin=True)), to=new))
    return [*completed(), s(one(new_cid(OTHER_CID))), c(one(stream(4, 10))), *after]


def test_rebind_port_passes_on_a_validated_new_port():
    r = rebind_port.check(capture(*moved()))
    assert r.verdict == "passed"
    assert r.evidence == (
        "the client moved from 192.0.2.1:50000 to 192.0.2.1:50001 at #8; PATH_CHALLENGE at #9, "
        "PATH_RESPONSE at #10, STREAM data to the new address from #11"
    )


def test_rebind_port_fails_when_nothing_moved():
    r = rebind_port.check(capture(*completed()))
    assert (r.verdict, r.evidence) == ("failed", "the client's address and port stayed 192.0.2.1:50000 throughout")


def test_rebind_port_fails_without_path_challenge():
    r = rebind_port.check(capture(*moved(validated=False)))
    assert r.verdict == "failed" and "the server sent no PATH_CHALLENGE to the new address" in r.evidence
    assert r.evidence.endswith(": it sent 1 datagram there unvalidated"), r.evidence  # the data that followed
    r = rebind_port.check(capture(*moved(validated=False, data=False), s(one(stream(0, 500, offset=10)))))
    assert r.evidence.endswith(": it kept sending to the old address (1 datagram after the move)"), r.evidence


def test_rebind_port_fails_without_path_response():
    r = rebind_port.check(capture(*moved(answered=False)))
    assert r.verdict == "failed" and "got no PATH_RESPONSE from there" in r.evidence


def test_rebind_port_fails_when_no_data_follows():
    r = rebind_port.check(capture(*moved(data=False)))
    assert r.verdict == "failed" and r.evidence.endswith("no STREAM data went over it"), r.evidence
    # a server that validated the new path and went on sending to the old one says so
    r = rebind_port.check(capture(*moved(data=False), s(one(stream(0, 500, offset=10))), s(one(ack((1, 1))))))
    assert r.evidence.endswith("the server kept sending to the old address (2 datagrams after it)"), r.evidence


def test_rebind_addr_passes_on_a_validated_new_address():
    r = rebind_addr.check(capture(*moved(new=NEW_ADDR)))
    assert r.verdict == "passed" and "to 192.0.2.7:50000 at #8" in r.evidence


def test_rebind_addr_fails_on_a_new_port_alone():
    r = rebind_addr.check(capture(*moved(new=NEW_PORT)))
    assert r.verdict == "failed" and r.evidence.startswith("the client's address never changed (the client moved")


def test_migration_passes_with_a_new_issued_dcid():
    r = connection_migration.check(capture(*moved(dcid=OTHER_CID)))
    assert r.verdict == "passed"
    assert r.evidence.endswith(f"DCID {'5e' * 8} -> {OTHER_CID}, issued by NEW_CONNECTION_ID")


def test_migration_fails_on_the_old_dcid():
    r = connection_migration.check(capture(*moved()))
    assert r.verdict == "failed" and r.evidence.endswith(f"still with the old path's DCID {'5e' * 8}")


def test_migration_fails_on_a_dcid_nobody_issued():
    r = connection_migration.check(capture(*moved(dcid="ee" * 8)))
    assert r.verdict == "failed" and "which no NEW_CONNECTION_ID from the server issued" in r.evidence


def test_migration_fails_when_nothing_moved():
    r = connection_migration.check(capture(*completed()))
    assert r.verdict == "failed" and "stayed" in r.evidence


def left_behind(resent_to: tuple[str, int] | None = None, acked: bool = False) -> list:
    """A move where the server's packet 7 (stream 0, bytes 1,000-1,500) goes to the old port
    after the client moved; the client acknowledges it (`acked`: it arrived after all), or the
    server sends those bytes again to `resent_to`, or neither."""
    out = moved(data=False)
    out += [
        s(one(stream(0, 500, offset=1000), pn=7)),  # to the old address
        s(one(stream(0, 500, offset=1500, fin=True), pn=8), to=NEW_PORT),
        c(one(ack((8, 8)) if not acked else ack((7, 8))), frm=NEW_PORT),
    ]
    if resent_to:
        out.append(s(one(stream(0, 600, offset=900), pn=9), to=resent_to))
    return out


def test_a_move_says_what_the_server_left_behind_on_the_old_address():
    r = rebind_port.check(capture(*left_behind()))
    assert r.verdict == "passed", r.evidence  # said, not judged: the run's own status judges a stall
    assert r.evidence.endswith(
        "; stream 0: 500 bytes (offsets 1,000-1,500) went to the old address, unacknowledged, and were "
        "not sent again within the capture"
    ), r.evidence


def test_data_sent_again_or_acknowledged_is_not_left_behind():
    assert "old address" not in rebind_port.check(capture(*left_behind(resent_to=NEW_PORT))).evidence
    assert "old address" not in rebind_port.check(capture(*left_behind(acked=True))).evidence
    # sent again, to the old address too, and never acknowledged: still lost
    still = rebind_port.check(capture(*left_behind(resent_to=CLIENT)))
    assert "stream 0: 600 bytes (offsets 900-1,500)" in still.evidence, still.evidence
