"""The conformance kind on the real testbed (seconds of traffic each): a deliberately
non-conforming server is reported as deviating on exactly that parameter, and each
extractor family yields its parameter from real runs of our endpoint and the kernel."""

from __future__ import annotations

from pathlib import Path

import pytest
from testbed_helpers import needs_testbed

from longlook.core.execute import Runner
from longlook.core.spec import parse_scenario
from longlook.core.store import Store
from longlook.kinds.conformance.aggregate import parameter_summary
from longlook.report import build_report

IW100 = """
kind = "conformance"
name = "iw100"
rounds = 2                  # a verdict across runs needs two (one run says only inconclusive)
retries = 4
timeout_s = 30
object_size = "2m"
include = ["alone"]
stacks = [{ stack = "ours", ccs = ["cubic"] },
          { stack = "ours", ccs = ["cubic"], initial_window_packets = 100 }]
[[links]]
rate_mbit = 20
rtt_ms = 36
buffer_bytes = 300000       # deep: 100 packets at once fit, so only the window differs
# a 1 s load at the default 5 ms limits: this VM's 5-16 ms stalls flagged every attempt of
# one cell on a fresh CI machine, leaving it no counted run; a 20 ms stall cannot move an
# initial window (a count of packets) and a starved machine is still flagged
[fidelity]
max_stall_ms = 20.0
max_release_late_ms = 20.0
"""

# our Cubic and the kernel's on a path where Cubic's growth leaves the Reno-friendly region
# (80 ms, 5 Mbit/s, a shallow buffer: a few losses, epochs of seconds)
FAMILIES = """
kind = "conformance"
name = "families"
rounds = 1
timeout_s = 40
object_size = "3m"
stacks = [{ stack = "ours", ccs = ["cubic"] }]
[[links]]
rate_mbit = 5
rtt_ms = 80
buffer_bytes = 30000
"""


def run(tmp_path: Path, toml: str):
    out = tmp_path / "exp"
    summary = Runner(parse_scenario(toml), out).run()
    assert summary.ok >= 1, summary
    store = Store.open(out, read_only=True)
    runs = store.runs_frame()
    runs = runs[runs["status"] == "ok"].sort_values("attempt").drop_duplicates(["cell_id", "arm"], keep="last")
    table = store.table("conformance")
    table = table[table["run_id"].isin(runs["run_id"])].merge(runs[["run_id", "cell_id", "arm"]], on=["run_id", "arm"])
    return out, store, runs, table


def _within(a, b, share: float) -> bool:
    return a is not None and b is not None and a == a and b == b and abs(a - b) <= share * max(abs(a), abs(b))


def verdicts(table, cell_id: str, flow: str = "stack") -> dict[str, str]:
    t = table[(table["cell_id"] == cell_id) & (table["flow"] == flow)]
    return dict(zip(t["parameter"], t["verdict"]))


@needs_testbed("linkem", "endpoint")
def test_initial_window_of_100_packets_deviates_on_exactly_that_parameter(tmp_path: Path):
    out, store, runs, table = run(tmp_path, IW100)
    base, iw = verdicts(table, "ours-cubic-buf300000"), verdicts(table, "ours-iw100-cubic-buf300000")
    assert base and base.keys() == iw.keys()
    assert base["initial_window"] == "conforms" and iw["initial_window"] == "deviates"
    # every other verdict agrees, or flipped on a measurement that stayed within 10% (a
    # parameter at its tolerance's edge, e.g. quinn's 2.4-2.5 packets per ACK against 2.5,
    # flips between two runs by noise; the window itself changes tenfold)
    stack = table[table["flow"] == "stack"]
    measured = {(c, p): m for c, p, m in zip(stack["cell_id"], stack["parameter"], stack["measured"])}
    flipped = {p for p in base if base[p] != iw[p]}
    moved = {
        p
        for p in flipped
        if not _within(measured.get(("ours-cubic-buf300000", p)), measured.get(("ours-iw100-cubic-buf300000", p)), 0.1)
    }
    assert moved == {"initial_window"}, (base, iw)
    row = table[(table["cell_id"] == "ours-iw100-cubic-buf300000") & (table["parameter"] == "initial_window")].iloc[0]
    assert (row["measured"], row["reference"]) == (120000, 12000)
    # the verdict across runs (judge.py): the window alone deviates, against the bound
    summary = parameter_summary(store.table("conformance"), store.runs_frame())
    stack = summary[summary["flow"] == "stack"]
    deviating = {c: set(g.loc[g["verdict"] == "deviates", "parameter"]) for c, g in stack.groupby("cell_id")}
    # what the bigger window changed: the window alone (a parameter where our stack already
    # deviates from the bound in both cells, e.g. its slow-start exit, is no change)
    cells = {"ours-cubic-buf300000", "ours-iw100-cubic-buf300000"}
    assert cells <= set(deviating), (store.runs_frame()[["cell_id", "attempt", "status", "audit_reasons"]], summary)
    base_dev, iw_dev = deviating["ours-cubic-buf300000"], deviating["ours-iw100-cubic-buf300000"]
    assert iw_dev - base_dev == {"initial_window"} and not base_dev - iw_dev, stack
    idx = stack.set_index(["cell_id", "parameter"])
    assert idx.loc[("ours-cubic-buf300000", "initial_window"), "verdict"] == "conforms"
    store.close()
    html = build_report(out).read_text()
    assert "Parameters against the specifications" in html


@pytest.fixture(scope="module")
def families(tmp_path_factory):
    out, store, runs, table = run(tmp_path_factory.mktemp("families"), FAMILIES)
    yield out, store, runs, table
    store.close()


def row(table, flow: str, parameter: str):
    t = table[
        (table["flow"] == flow)
        & (table["parameter"] == parameter)
        & (table["arm"] == ("alone" if flow == "stack" else "kernel"))
    ]
    assert len(t) == 1, t
    return t.iloc[0]


@needs_testbed("linkem", "endpoint")
def test_family_initial_window(families):
    table = families[3]
    assert row(table, "stack", "initial_window")["measured"] == 12000  # quinn: 10 x 1200
    k = row(table, "kernel", "initial_window")
    assert (k["measured"], k["verdict"]) == (10 * 1448, "conforms")


@needs_testbed("linkem", "endpoint")
def test_family_multiplicative_decrease(families):
    for flow in ("stack", "kernel"):
        r = row(families[3], flow, "multiplicative_decrease")
        assert r["verdict"] == "conforms" and abs(r["measured"] - 0.7) <= 0.05, r


@needs_testbed("linkem", "endpoint")
def test_family_cubic_growth(families):
    table = families[3]
    fits = [row(table, f, "cubic_c") for f in ("stack", "kernel")]
    # a real epoch outside the Reno-friendly region was fitted for at least one of them (on a
    # loaded machine the fit may explain too little of it to be judged: then not measurable)
    assert any("R²" in r["note"] for r in fits), [r["note"] for r in fits]
    for r in (r for r in fits if r["verdict"] != "not measurable"):
        assert 0.1 < r["measured"] < 2.0 and "R²" in r["note"]


@needs_testbed("linkem", "endpoint")
def test_family_slow_start_exit(families):
    for flow in ("stack", "kernel"):
        r = row(families[3], flow, "slow_start_exit_rtt_rise")
        assert r["verdict"] in ("conforms", "deviates") and r["measured"] >= 0, r
        assert r["reference"] == pytest.approx(10.0, abs=0.5)  # eta = min RTT / 8 at 80 ms


@needs_testbed("linkem", "endpoint")
def test_family_pacing(families):
    r = row(families[3], "stack", "pacing_burst_p95")
    assert r["verdict"] == "conforms" and 1 <= r["measured"] <= 10, r  # quinn paces
    assert row(families[3], "kernel", "pacing_burst_p95")["verdict"] == "not measurable"


@needs_testbed("linkem", "endpoint")
def test_family_ack_frequency(families):
    r = row(families[3], "stack", "packets_per_ack")
    assert 1.0 <= r["measured"] <= 3.0, r  # quinn's client acks about every second packet
    assert "packets with an ACK frame" in r["note"], r  # our server logs its ACK frames


@needs_testbed("linkem", "endpoint")
def test_family_datagram_size(families):
    assert row(families[3], "stack", "max_datagram")["measured"] == 1452  # after quinn's PLPMTUD
    assert row(families[3], "kernel", "max_datagram")["measured"] == 1448


@needs_testbed("linkem", "endpoint")
def test_envelopes_and_share_are_stored(families):
    out, store, runs, table = families
    by_arm = runs.set_index("arm")
    assert 3.5 <= by_arm.loc["alone", "mbit"] <= 5.3 and 3.5 <= by_arm.loc["kernel", "mbit"] <= 5.3
    assert 0.1 <= by_arm.loc["shared", "share"] <= 0.9
    assert by_arm.loc["shared", "ref_mbit"] > 0.5
    s = store.series(by_arm.loc["alone", "run_id"])
    assert {"mbit", "queue_ms", "queue_max_ms", "sender_queue_ms"} <= set(s["name"])


@needs_testbed("linkem", "endpoint")
def test_queueing_delay_is_the_router_s(families):
    """Cubic fills the 30 kB drop-tail buffer of a 5 Mbit/s link: the longest wait linkem saw
    approaches the buffer's drain time, 30000 B x 8 / 5 Mbit/s = 48 ms, and never exceeds it
    (a packet waits behind at most the buffer less itself); no wait is negative."""
    out, store, runs, table = families
    by_arm = runs.set_index("arm")
    drain_ms = 30000 * 8 / 5e6 * 1000
    for arm, flows in (("alone", ["stack"]), ("kernel", ["kernel"]), ("shared", ["stack", "kernel"])):
        s = store.series(by_arm.loc[arm, "run_id"])
        for flow in flows:
            bins = s[s["key"] == flow].pivot_table(index="t_s", columns="name", values="value")
            q, peak = bins["queue_ms"].dropna(), bins["queue_max_ms"].dropna()
            assert len(q) >= 10 and len(peak) == len(q), (arm, flow)
            assert (q >= 0).all() and (peak >= q - 1e-6).all(), (arm, flow)
            assert 0.6 * drain_ms <= peak.max() <= drain_ms + 0.5, (arm, flow, peak.max())
        metric = by_arm.loc[arm, "queue_ms"]
        assert 0 < metric < drain_ms, (arm, metric)


@needs_testbed("linkem", "endpoint")
def test_family_fingerprint_of_our_endpoint(families):
    """Our endpoint's transport parameters (both sides), quinn's ACK frame count, the
    scheduling of a multiplexed page and 0-RTT on a resumed connection (the fingerprint arm)."""
    out, store, runs, table = families
    fp = store.table("fingerprint")
    got = {(r.side, r.field): r for r in fp.itertuples()}
    for side in ("server", "client"):
        assert got[(side, "initial_max_data")].value == 15 * 2**20, side  # the endpoint's default window
        assert got[(side, "max_ack_delay")].value == 25, side
    assert got[("client", "ack_frames")].value > 100
    sched = got[("server", "stream_scheduling")]
    assert sched.label in ("round-robin", "partly interleaved", "sequential") and sched.value >= 1, sched
    assert "client" in sched.note  # quinn logs no STREAM frames: from the client's object timings
    assert got[("client", "zero_rtt")].label == "sent, accepted"
    assert got[("server", "zero_rtt")].label == "accepts 0-RTT"
    html = build_report(out).read_text()
    assert "0-RTT, server (our client resuming)" in html and "sent, accepted" in html


@needs_testbed("linkem", "endpoint")
def test_family_send_clock(families):
    """The pacing-limited rule's figures from a real sender: our endpoint reaches the link, and
    its window allows it, so it is not pacing-limited."""
    from longlook.kinds.conformance.params.send_clock import pacing_limited

    alone = families[2].set_index("arm").loc["alone"]
    assert 3.0 <= alone["send_mbit"] <= 8.0, alone["send_mbit"]  # 5 Mbit/s link, its own log
    assert 0 <= alone["gap_regularity"] <= 1 and alone["window_mbit"] > 3.0
    assert not pacing_limited(
        alone["send_mbit"], alone["gap_regularity"], alone["window_mbit"], alone["inflight_share"], 5.0, 0.9
    )
