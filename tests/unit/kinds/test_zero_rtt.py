"""The fingerprint's 0-RTT labels (params/zero_rtt.py, fingerprint_run.zero_rtt_rows) on
recorded documents: tests/data/conformance/zero-rtt-fetches.json holds, per stack, the fetch
document (trimmed to the fields read) of our client resuming against that stack's server in
a conformance fingerprint run (20 Mbit/s, 36 ms); `aioquic-without-ticket-store` is aioquic's
server before it kept its tickets."""

from __future__ import annotations

import copy
import json
import math

import pytest

from longlook.kinds.conformance.fingerprint_run import zero_rtt_rows
from longlook.kinds.conformance.params import zero_rtt as z
from repo_paths import DATA

DOCS = json.loads((DATA / "conformance" / "zero-rtt-fetches.json").read_text())


@pytest.mark.parametrize(
    "stack, label, value",
    [
        ("ours", z.ACCEPTS, 1.0),
        ("ngtcp2", z.ACCEPTS, 1.0),
        ("tquic", z.ACCEPTS, 1.0),
        ("aioquic", z.ACCEPTS, 1.0),
        ("quic-go", z.NO_EARLY_DATA, 0.0),
        ("quiche", z.NO_EARLY_DATA, 0.0),
        ("s2n-quic", z.NO_TICKET, 0.0),
        ("aioquic-without-ticket-store", z.NO_TICKET, 0.0),
        ("kwik", z.CLOSES, 0.0),
    ],
)
def test_server_side_label_of_each_recorded_stack(stack, label, value):
    s = z.server_zero_rtt(DOCS[stack])
    assert s["label"] == label and s["value"] == value
    tickets = DOCS[stack]["zero_rtt"]["tickets"]
    assert f"warm-up: {tickets} session ticket(s)" in s["note"]


def test_rejected_early_data_and_a_late_request():
    refused = copy.deepcopy(DOCS["ours"])
    refused["zero_rtt"]["accepted"] = False
    assert z.server_zero_rtt(refused)["label"] == z.REFUSES
    late = copy.deepcopy(DOCS["ngtcp2"])
    late["objects"][0]["start_ms"] = late["handshake_ms"] + 0.1  # the handshake won the race
    r = z.server_zero_rtt(late)
    assert (r["value"], r["label"]) == (1.0, z.LATE)


def test_what_a_document_cannot_say_is_not_guessed():
    old = copy.deepcopy(DOCS["quic-go"])  # a client from before the ticket counts
    del old["zero_rtt"]["tickets"], old["zero_rtt"]["early_data_tickets"]
    assert z.server_zero_rtt(old)["label"] == z.NO_COUNTS
    unused = copy.deepcopy(DOCS["quic-go"])
    unused["zero_rtt"]["early_data_tickets"] = 1
    assert z.server_zero_rtt(unused)["label"] == z.UNUSED_TICKET and math.isnan(z.server_zero_rtt(unused)["value"])
    assert z.server_zero_rtt({"ok": True})["label"] == z.NOT_REPORTED
    timed_out = {**DOCS["ours"], "ok": False, "error": "h3 handshake with 198.18.2.2:4433 timed out after 10s"}
    assert z.server_zero_rtt(timed_out) is None and z.server_zero_rtt(None) is None


def test_rows_of_each_side():
    ours = {(r["side"], r["label"]) for r in zero_rtt_rows(DOCS["ours"], True, True)}
    assert ours == {("server", z.ACCEPTS), ("client", "sent, accepted")}
    quic_go = {r["side"]: r for r in zero_rtt_rows(DOCS["quic-go"], True, False)}
    assert quic_go["server"]["label"] == z.NO_EARLY_DATA and quic_go["server"]["unit"] == "accepted"
    assert quic_go["client"]["label"] == z.CLIENT_CANNOT_RESUME and math.isnan(quic_go["client"]["value"])
    kwik = {r["side"]: r for r in zero_rtt_rows(DOCS["kwik"], False, False)}  # failed by the server's close
    assert kwik["server"]["label"] == z.CLOSES and "aborted by peer" in kwik["server"]["note"]
    # a fetch that failed otherwise measured nothing: only the row no fetch could give
    assert [r["side"] for r in zero_rtt_rows(None, False, False)] == ["client"]
    assert zero_rtt_rows(None, False, True) == []
