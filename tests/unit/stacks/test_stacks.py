"""QUIC stacks as adapters, without a testbed: the registry and its errors, scenario
arms naming stacks, the content on disk, and other stacks' qlogs in our vocabulary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longlook.qlog import read_qlog
from longlook.qlog.dialects import derive_states, load_any, normalise, state_name, translate
from longlook.analyses.states.trace import StateTrace
from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario
from longlook.stacks.content import ensure_content, jpeg_bytes, page_html
from longlook.stacks.adapters.ngtcp2 import object_paths
from longlook.stacks.qlog_fetch import fetch_document
from longlook.stacks.registry import STACKS, require_servers, resolve


# ---- registry and its one clear error -------------------------------------------------------


def test_every_registered_stack_resolves_with_a_default_version_and_ccs():
    for name in STACKS:
        s = resolve(name)
        assert s.spec == f"{name}@{s.versions[0]}" and s.ccs
        assert s.build_dir.name == f"{name}-{s.version}"


def test_two_versions_of_one_stack_build_side_by_side():
    a, b = resolve("quic-go@v0.65.0"), resolve("quic-go@v0.64.1")
    assert a.build_dir != b.build_dir and a.build_dir.parent == b.build_dir.parent


def test_unknown_stack_names_the_known_ones_and_the_install_command():
    with pytest.raises(LonglookError) as e:
        resolve("picoquic")
    assert "picoquic" in str(e.value) and "longlook stacks install" in str(e.value)


def test_a_congestion_control_the_stack_lacks_is_one_clear_error():
    with pytest.raises(LonglookError) as e:
        resolve("quic-go").cc("cubic")
    text = str(e.value)
    assert "quic-go" in text and "newreno" in text and "longlook stacks install quic-go" in text


def test_a_missing_build_names_the_stack_and_its_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGLOOK_STACKS_DIR", str(tmp_path))
    with pytest.raises(LonglookError) as e:
        require_servers([("aioquic", None)])
    assert "aioquic@" in str(e.value) and "longlook stacks install aioquic@" in str(e.value)


# ---- scenario arms ---------------------------------------------------------------------------

BASE = """
name = "s"
[link]
rate_mbit = 10
rtt_ms = 20
[workloads]
object_count = 10
object_size = "10k"
"""


def _scenario(arms: str) -> Scenario:
    return Scenario.from_toml(BASE + arms)


def test_arms_name_server_and_client_stacks_and_default_to_ours():
    sc = _scenario("""
[[arms]]
label = "quic-go"
protocol = "h3"
server = "quic-go@v0.64.1"
client = "quic-go"
[[arms]]
label = "ours"
protocol = "h3"
""")
    (cell,) = sc.cells()
    a, b = (cell.run_options(arm) for arm in sc.arms)
    assert (a.server, a.client, a.server_cc) == ("quic-go@v0.64.1", "quic-go", None)
    assert (b.server, b.client) == ("ours", "native")


@pytest.mark.parametrize(
    "arm, words",
    [
        ('server = "picoquic"\nprotocol = "h3"', "unknown stack 'picoquic'"),
        ('server = "quic-go"\nprotocol = "h2"', "h3 only"),
        ('client = "aioquic"\nprotocol = "h2"', "h3 only"),
        ('server_cc = "bbr2"\nprotocol = "h3"', "quic_cc"),
        ('server = "quic-go@v9.9.9x"\nprotocol = "h3"', "has no such release"),  # the registry lists no such tag
    ],
)
def test_bad_stack_arms_are_refused_with_the_reason(arm, words, tmp_path, monkeypatch):
    monkeypatch.setenv("LONGLOOK_CACHE", str(tmp_path))  # quic-go's listing, fresh: no network
    (tmp_path / "releases").mkdir()
    (tmp_path / "releases" / "quic-go.json").write_text("v0.64.0\nv0.64.1\nv0.65.0\n")
    toml = f'[[arms]]\nlabel = "a"\n{arm}\n[[arms]]\nlabel = "b"\nprotocol = "h3"\n'
    if words is None:
        _scenario(toml)
        return
    with pytest.raises(LonglookError) as e:
        _scenario(toml)
    assert words in str(e.value)


def test_a_scenario_wide_stack_server_refuses_the_default_h2_arm():
    with pytest.raises(LonglookError) as e:
        Scenario.from_toml('server = "ngtcp2"\n' + BASE)
    assert "h3 only" in str(e.value)


# ---- content on disk -------------------------------------------------------------------------


def test_content_has_the_endpoints_paths_and_sizes(tmp_path: Path):
    page = ensure_content(tmp_path, "page", 3, 10_000)
    assert page == tmp_path / "page" / "3x10k.html"
    assert page.read_text() == page_html(3, "10k")
    assert [p for p in object_paths("/page/3x10k.html")] == ["/obj/10k/0.jpg", "/obj/10k/1.jpg", "/obj/10k/2.jpg"]
    for i in range(3):
        body = (tmp_path / "obj" / "10k" / f"{i}.jpg").read_bytes()
        assert len(body) == 10_000 and body[:2] == b"\xff\xd8" and b"\xff\xd9" in body
    bulk = ensure_content(tmp_path, "bulk", 1, 1_000_000)
    assert bulk == tmp_path / "bulk" / "1m" and bulk.stat().st_size == 1_000_000


@pytest.mark.parametrize("size", [10, 159, 160, 161, 162, 163, 65537 + 159, 65537 + 161, 2 * 65537 + 161, 1_000_000])
def test_jpeg_bodies_are_exactly_the_size_asked(size):
    assert len(jpeg_bytes(size)) == size


# ---- qlogs in our vocabulary -----------------------------------------------------------------


def _ev(t, name, **data):
    return {"time": t, "name": name, "data": data}


def test_emitted_states_are_mapped_onto_table_3():
    events = [
        _ev(10, "recovery:congestion_state_updated", old="slow_start", new="application_limited"),
        _ev(20, "recovery:congestion_state_updated", old="application_limited", new="recovery"),
        _ev(30, "recovery:metrics_updated", congestion_window=12000),
    ]
    header, out = translate({}, events, stack="quic-go")
    states = [e["data"]["new"] for e in out if e["name"] == "recovery:congestion_state_updated"]
    assert states == ["ApplicationLimited", "Recovery"] and out[0]["time"] == 0
    assert header["trace"]["longlook"]["states"] == "emitted"
    assert state_name("bbr_startup") == "SlowStart" and state_name("weird") == "weird"
    assert state_name("conservative_slow_start") == "SlowStart"


def test_states_are_derived_from_metrics_where_the_stack_emits_none():
    events = [
        _ev(0, "recovery:metrics_updated", cwnd=12000),  # aioquic's name for the window
        _ev(5, "recovery:metrics_updated", cwnd=24000),
        _ev(9, "recovery:packet_lost"),
        _ev(10, "recovery:metrics_updated", cwnd=12000, ssthresh=12000),
        _ev(11, "recovery:metrics_updated", cwnd=12000, ssthresh=12000),
        _ev(20, "recovery:metrics_updated", cwnd=13200, ssthresh=12000),
    ]
    header, out = translate({}, events, stack="aioquic")
    derived = [e for e in out if e["name"] == "recovery:congestion_state_updated"]
    assert [e["data"]["new"] for e in derived] == ["SlowStart", "Recovery", "CongestionAvoidance"]
    assert all(e["data"]["derived"] for e in derived)
    assert header["trace"]["longlook"]["states"] == "derived"
    assert all("congestion_window" in e["data"] for e in out if e["name"] == "recovery:metrics_updated")
    assert derive_states([]) == []


def test_derived_states_tell_a_slow_start_exit_from_a_loss_and_follow_each_cut():
    """ngtcp2 (HyStart++): ssthresh set at the window is a slow-start exit, not a loss; a
    second cut within Recovery moves the mark the window must outgrow to leave it."""
    events = [
        _ev(0, "recovery:metrics_updated", congestion_window=14000),
        _ev(10, "recovery:metrics_updated", congestion_window=140000),
        _ev(20, "recovery:metrics_updated", congestion_window=143000, ssthresh=143000),  # HyStart exit
        _ev(25, "recovery:packet_lost"),
        _ev(25, "recovery:metrics_updated", congestion_window=100000, ssthresh=100000),
        _ev(30, "recovery:metrics_updated", congestion_window=100000, ssthresh=100000),
        _ev(40, "recovery:metrics_updated", congestion_window=70000, ssthresh=70000),  # cut again
        _ev(50, "recovery:metrics_updated", congestion_window=70010, ssthresh=70000),
        _ev(60, "recovery:metrics_updated", congestion_window=50000, ssthresh=50000),
    ]  # no packet_lost
    derived = derive_states(events)
    assert [(e["time"], e["data"]["new"]) for e in derived] == [
        (0, "SlowStart"),
        (20, "CongestionAvoidance"),
        (25, "Recovery"),
        (50, "CongestionAvoidance"),
        (60, "Recovery"),
    ]


def test_derived_recovery_lasts_at_least_a_round_trip():
    """aioquic grows its window within a round trip of the cut, and reports that episode's
    further losses: one Recovery, left a smoothed RTT after it began."""
    events = [
        _ev(0, "recovery:metrics_updated", cwnd=90000, smoothed_rtt=36.0),
        _ev(100, "recovery:packet_lost"),
        _ev(100, "recovery:metrics_updated", cwnd=60000, ssthresh=60000, smoothed_rtt=40.0),
        _ev(105, "recovery:metrics_updated", cwnd=60050, ssthresh=60000),
        _ev(105, "recovery:packet_lost"),
        _ev(120, "recovery:metrics_updated", cwnd=60100, ssthresh=60000),
        _ev(141, "recovery:metrics_updated", cwnd=60150, ssthresh=60000),
    ]
    derived = derive_states(events)
    assert [(e["time"], e["data"]["new"]) for e in derived] == [
        (0, "SlowStart"),
        (100, "Recovery"),
        (141, "CongestionAvoidance"),
    ]


def test_a_null_ssthresh_keeps_the_window_cut_to_as_its_stand_in():
    """tquic logs `ssthresh: null`: after Recovery the window it was cut to stands for
    ssthresh, so growing on from there is CongestionAvoidance, not a new SlowStart."""
    events = [
        _ev(0, "recovery:metrics_updated", congestion_window=90000, ssthresh=None),
        _ev(10, "recovery:metrics_updated", congestion_window=60000, ssthresh=None),
        _ev(20, "recovery:metrics_updated", congestion_window=61000, ssthresh=None),
        _ev(30, "recovery:metrics_updated", congestion_window=62000, ssthresh=None),
        _ev(40, "recovery:packet_lost"),  # a second episode cuts deeper: its cut is the mark
        _ev(40, "recovery:metrics_updated", congestion_window=40000),
        _ev(50, "recovery:metrics_updated", congestion_window=41000),
        _ev(60, "recovery:metrics_updated", congestion_window=42000),
    ]
    assert [e["data"]["new"] for e in derive_states(events)] == [
        "SlowStart",
        "Recovery",
        "CongestionAvoidance",
        "Recovery",
        "CongestionAvoidance",
    ]


def test_a_json_qlog_becomes_json_seq_that_the_states_analysis_reads(tmp_path: Path):
    raw = tmp_path / "x.qlog"
    raw.write_text(
        json.dumps(
            {
                "qlog_format": "JSON",
                "qlog_version": "0.3",
                "traces": [
                    {
                        "vantage_point": {"type": "server"},
                        "common_fields": {"ODCID": "ab"},
                        "events": [
                            _ev(1_795_000_000_000.0, "transport:packet_sent", raw={"length": 1200}),
                            _ev(1_795_000_000_010.0, "recovery:metrics_updated", cwnd=12000, bytes_in_flight=1200),
                            _ev(1_795_000_000_050.0, "recovery:metrics_updated", cwnd=7000),  # reduced: no event
                            _ev(1_795_000_000_090.0, "recovery:metrics_updated", cwnd=8000),
                        ],
                    }
                ],
            }
        )
    )
    header, events = load_any(raw)
    assert header["qlog_format"] == "JSON" and len(events) == 4
    normalise(raw, tmp_path / "ours.sqlog", stack="aioquic")
    log = read_qlog(tmp_path / "ours.sqlog")
    assert log.protocol == "QUIC" and log.named("transport:packet_sent")
    trace = StateTrace.from_qlog(log, "r")
    assert trace.states == ["Init", "SlowStart", "Recovery", "CongestionAvoidance"]
    assert trace.times_ms[1:] == [10.0, 50.0, 90.0]


def test_bad_qlog_is_a_value_error(tmp_path: Path):
    (tmp_path / "bad").write_text("{not json")
    with pytest.raises(ValueError):
        load_any(tmp_path / "bad")


# ---- ngtcp2's fetch JSON from its qlog -------------------------------------------------------


def test_ngtcp2_fetch_json_is_timed_from_its_stream_frames(tmp_path: Path):
    def pkt(t, name, *frames):
        return _ev(t, name, frames=list(frames))

    events = [
        pkt(0, "transport:packet_sent", {"frame_type": "crypto"}),
        pkt(
            40,
            "transport:packet_sent",
            {"frame_type": "stream", "stream_id": 0},
            {"frame_type": "stream", "stream_id": 4},
        ),
        pkt(
            80,
            "transport:packet_received",
            {"frame_type": "handshake_done"},
            {"frame_type": "stream", "stream_id": 0, "length": 100, "fin": True},
            {"frame_type": "stream", "stream_id": 4, "length": 500},
        ),
        pkt(95, "transport:packet_received", {"frame_type": "stream", "stream_id": 4, "length": 600, "fin": True}),
    ]
    qlog = tmp_path / "client.sqlog"
    qlog.write_bytes(
        b"".join(b"\x1e" + json.dumps(e).encode() + b"\n" for e in [{"qlog_format": "JSON-SEQ", "trace": {}}, *events])
    )
    download = tmp_path / "dl"
    download.mkdir()
    (download / "1x1k.html").write_bytes(b"x" * 90)
    (download / "0.jpg").write_bytes(b"y" * 1000)
    doc = fetch_document(
        qlog,
        url="https://h:1/page/1x1k.html",
        mode="page",
        run_id="r",
        paths=["/page/1x1k.html", "/obj/1k/0.jpg"],
        download=download,
        returncode=0,
        stderr="",
        started_unix_ms=5,
    )
    assert doc["ok"] and doc["protocol"] == "h3" and doc["handshake_ms"] == 80 and doc["plt_ms"] == 95
    assert [(o["start_ms"], o["first_byte_ms"], o["end_ms"], o["bytes"]) for o in doc["objects"]] == [
        (40, 80, 80, 90),
        (40, 80, 95, 1000),
    ]
    missing = fetch_document(
        tmp_path / "none",
        url="u",
        mode="page",
        run_id="r",
        paths=["/"],
        download=download,
        returncode=1,
        stderr="boom",
        started_unix_ms=0,
    )
    assert not missing["ok"] and "no client qlog" in missing["error"]


def test_qlog_04_event_names_read_as_the_03_ones():
    from longlook.qlog.dialects import canonical_name

    assert canonical_name("quic:packet_sent") == "transport:packet_sent"
    assert canonical_name("quic:metrics_updated") == "recovery:metrics_updated"
    assert canonical_name("quic:recovery_metrics_updated") == "recovery:metrics_updated"
    assert canonical_name("quic:congestion_state_updated") == "recovery:congestion_state_updated"
    assert canonical_name("recovery:packet_lost") == "recovery:packet_lost"


def test_a_stack_pinned_by_its_distribution_refuses_other_versions():
    with pytest.raises(LonglookError) as e:
        resolve("ngtcp2@1.0.0")
    assert "ngtcp2" in str(e.value) and "0.12.1" in str(e.value)


@pytest.mark.parametrize("name", [n for n in STACKS if n != "ours"])
def test_a_stack_s_server_with_its_logs_off_is_given_no_qlog(name, tmp_path):
    # a scenario's server_logs = false (the matrix's performance grid): writing a qlog per
    # connection costs the server CPU and time that would count as the stack's
    stack = resolve(name)

    def call(qlog_dir):
        return stack.server_argv(
            port=4433, cert=tmp_path / "c", key=tmp_path / "k", root=tmp_path, qlog_dir=qlog_dir, cc=stack.ccs[0]
        )

    on, off = call(tmp_path / "qlogs"), call(None)
    named = [*on.argv, *on.env.values()]
    assert any(str(tmp_path / "qlogs") in x for x in named), named  # on: where its qlogs go
    assert not any("qlog" in x.lower() for x in [*off.argv, *off.env]), (off.argv, off.env)


@pytest.mark.parametrize("name", [n for n in STACKS if n != "ours"])
def test_a_stack_s_client_with_its_logs_off_is_given_no_qlog_unless_its_run_is_read_from_it(name, tmp_path):
    stack = resolve(name)

    def call(qlog_dir):
        return stack.client_argv(
            url="https://198.18.2.2:4433/page/1x1k.html",
            mode="page",
            ca=tmp_path / "ca",
            run_id="r",
            out=tmp_path / "fetch.json",
            qlog_dir=qlog_dir,
            timeout_s=10.0,
            cc=stack.ccs[0],
        )

    if stack.fetch_from_qlog:  # ngtcp2's and tquic's runs are read from their qlogs: never off
        assert name in ("ngtcp2", "tquic")
        return
    off = call(None)
    assert not any("qlog" in x.lower() for x in [*off.argv, *off.env]), (off.argv, off.env)


def test_the_native_client_s_qlog_follows_the_scenario_s_client_logs():
    from longlook.stacks.registry import client_fetcher

    assert client_fetcher("native", logs=False).keywords == {"qlog": False}
    assert client_fetcher("native") is not None and not getattr(client_fetcher("native"), "keywords", {})
    assert client_fetcher("ours@0.11.19", logs=False).keywords["qlog"] is False
