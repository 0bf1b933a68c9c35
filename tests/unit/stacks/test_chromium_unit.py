"""The Chromium client's parts that need no browser: HAR 1.2 validation (on a HAR Chromium
really produced), the protocol label, the fetch JSON from DevTools events, the command
line, the driver's outcome classification, scenarios with per-arm clients, and the report's
client comparison."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest

from longlook.stacks.clients import KNOWN_CLIENTS, fetcher
from longlook.stacks.clients.chromium import chromium_path, classify, quic_mode
from longlook.stacks.clients.chromium_driver import browser_argv
from longlook.stacks.clients.har import build_har, validate_har
from longlook.stacks.clients.page_load import NetworkLog, fetch_document, protocol_label
from longlook.errors import LonglookError
from longlook.core.experiment_stats import analyse
from longlook.report import build_report
from longlook.kinds.pageload.sections import clients_section as section
from longlook.core.spec import load_scenario
from longlook.kinds.pageload import Scenario
from longlook.core.record import new_run_id
from longlook.core.store import Store, environment_versions
from longlook.kinds.pageload import record_from_fetch
from repo_paths import DATA, ROOT

REAL_HAR = DATA / "chromium-h3-10x100k.har"  # Chromium 156, h3, 10 Mbit/s 36 ms, 10 x 100 KB


# ---------------------------------------------------------------- HAR 1.2


def test_a_real_chromium_har_is_valid_har_1_2_and_its_timings_sum():
    har = json.loads(REAL_HAR.read_text())
    assert validate_har(har) == []
    entries = har["log"]["entries"]
    assert len(entries) == 11 and {e["_protocol"] for e in entries} == {"h3"}
    for e in entries:
        t = e["timings"]
        assert e["time"] == pytest.approx(sum(v for k, v in t.items() if k != "ssl" and v >= 0), abs=0.01)
    # the first request opened the connection (QUIC: connect includes the TLS handshake)
    first = entries[0]["timings"]
    assert first["connect"] > 0 and 0 <= first["ssl"] <= first["connect"]
    # every image arrived whole, and the load event came after the last of them
    assert [e["response"]["content"]["size"] for e in entries[1:]] == [100_000] * 10
    assert har["log"]["pages"][0]["pageTimings"]["onLoad"] >= max(e["time"] for e in entries)


@pytest.mark.parametrize(
    "breakage, expected",
    [
        (lambda h: h["log"].update(version="1.1"), "log.version: expected 1.2"),
        (lambda h: h["log"]["entries"][0]["request"].pop("headers"), "entries[0].request: missing headers"),
        (lambda h: h["log"]["entries"][1]["timings"].update(send=-5), "entries[1].timings.send"),
        (lambda h: h["log"]["entries"][1]["timings"].update(dns=-2), "entries[1].timings.dns"),
        (lambda h: h["log"]["entries"][2].update(time=h["log"]["entries"][2]["time"] + 40), "entries[2].time"),
        (lambda h: h["log"]["entries"][3].update(pageref="page_9"), "no page 'page_9'"),
        (lambda h: h["log"]["entries"][4].update(startedDateTime="yesterday"), "not an ISO 8601 date"),
        (lambda h: h["log"]["entries"][0]["timings"].update(ssl=1e6), "exceeds connect"),
        (lambda h: h["log"]["entries"][0]["response"].update(status="200"), "status: must be an integer"),
    ],
)
def test_validation_finds_what_breaks_the_structure(breakage, expected):
    har = json.loads(REAL_HAR.read_text())
    broken = copy.deepcopy(har)
    breakage(broken)
    problems = validate_har(broken)
    assert any(expected in p for p in problems), problems


# ---------------------------------------------------------------- DevTools events -> fetch JSON


def _events(protocols: list[str], statuses: list[int] | None = None) -> NetworkLog:
    """A page and its images as Chromium reports them (clock in seconds, timings in ms)."""
    log = NetworkLog()
    statuses = statuses or [200] * len(protocols)
    for i, (proto, status) in enumerate(zip(protocols, statuses)):
        rid, t0 = f"r{i}", 100.0 + (0 if i == 0 else 0.2 + 0.001 * i)
        path = "/page/2x10k.html" if i == 0 else f"/obj/10k/{i - 1}.jpg"
        log.on_event(
            "Network.requestWillBeSent",
            {
                "requestId": rid,
                "timestamp": t0,
                "wallTime": 1.7e9 + t0,
                "type": "Document" if i == 0 else "Image",
                "request": {"url": f"https://198.18.2.2:4433{path}", "method": "GET", "headers": {}},
            },
        )
        log.on_event(
            "Network.responseReceived",
            {
                "requestId": rid,
                "response": {
                    "status": status,
                    "protocol": proto,
                    "mimeType": "image/jpeg",
                    "headers": {},
                    "timing": {
                        "requestTime": t0 + 0.001,
                        "dnsStart": -1,
                        "dnsEnd": -1,
                        "connectStart": 0.5 if i == 0 else -1,
                        "connectEnd": 72.5 if i == 0 else -1,
                        "sslStart": 10 if i == 0 else -1,
                        "sslEnd": 72 if i == 0 else -1,
                        "sendStart": 73 if i == 0 else 1,
                        "sendEnd": 73.2 if i == 0 else 1.1,
                        "receiveHeadersEnd": 110 if i == 0 else 40,
                    },
                },
            },
        )
        log.on_event("Network.dataReceived", {"requestId": rid, "dataLength": 10_000})
        log.on_event("Network.loadingFinished", {"requestId": rid, "timestamp": t0 + 0.15, "encodedDataLength": 10_040})
    log.on_event("Page.loadEventFired", {"timestamp": 100.5})
    return log


NAV = {"requestStart": 75.0, "loadEventStart": 498.0, "domContentLoadedEventStart": 170.0}


def test_protocol_label_is_what_every_object_came_over():
    assert protocol_label(_events(["h3", "h3", "h3"]).page_requests()) == "h3"
    assert protocol_label(_events(["h2", "h3", "h3"]).page_requests()) == "mixed"
    assert protocol_label(NetworkLog().page_requests()) is None


def test_fetch_document_times_are_from_navigation_start():
    log = _events(["h3", "h3", "h3"])
    doc = fetch_document(
        log,
        run_id="r",
        url="u",
        mode="page",
        protocol_requested="h3",
        navigation=NAV,
        time_origin_unix_ms=1.7e12,
        error=None,
    )
    assert doc["ok"] and doc["protocol"] == "h3" and doc["plt_ms"] == 498.0
    # navigation start = document send time (100.001 s + 73 ms) - requestStart (75 ms)
    assert doc["objects"][0]["start_ms"] == pytest.approx(1.0, abs=1e-6)
    assert doc["handshake_ms"] == 72.0
    assert doc["bytes"] == 30_000 and [o["protocol"] for o in doc["objects"]] == ["h3"] * 3
    assert doc["last_object_ms"] == max(o["end_ms"] for o in doc["objects"])
    har = build_har(log, browser_version="156", creator_version="0", title="t", navigation=NAV)
    assert validate_har(har) == []
    for e, o in zip(har["log"]["entries"], doc["objects"]):
        assert e["time"] == pytest.approx(o["end_ms"] - o["start_ms"], abs=0.01)


def test_chromiums_reason_for_each_protocol_is_kept():
    log = _events(["h2", "h3"])
    log.requests["r0"].protocol_reason = None  # as when Chromium gives none
    log.on_event(
        "Network.responseReceived",
        {
            "requestId": "r1",
            "response": {"status": 200, "protocol": "h3", "alternateProtocolUsage": "alternativeJobWonRace"},
        },
    )
    doc = fetch_document(
        log,
        run_id="r",
        url="u",
        mode="page",
        protocol_requested="h3",
        navigation=NAV,
        time_origin_unix_ms=None,
        error=None,
    )
    assert [o["protocol_reason"] for o in doc["objects"]] == [None, "alternativeJobWonRace"]
    har = build_har(log, browser_version="156", creator_version="0", title="t", navigation=NAV)
    assert [e.get("_alternateProtocolUsage") for e in har["log"]["entries"]] == [None, "alternativeJobWonRace"]


def test_a_missing_object_fails_the_run():
    doc = fetch_document(
        _events(["h3", "h3", "h3"], [200, 404, 200]),
        run_id="r",
        url="u",
        mode="page",
        protocol_requested="h3",
        navigation=NAV,
        time_origin_unix_ms=None,
        error=None,
    )
    assert not doc["ok"] and doc["error"] == "/obj/10k/0.jpg: HTTP 404"


# ---------------------------------------------------------------- command line and outcomes


def test_browser_flags_per_quic_mode():
    args = dict(url="https://198.18.2.2:4433/page/1x1k.html", spki="PIN", user_data_dir="/tmp/p")
    forced = browser_argv("chromium", quic="forced", **args)
    assert "--origin-to-force-quic-on=198.18.2.2:4433" in forced
    assert "--ignore-certificate-errors-spki-list=PIN" in forced
    assert "--disable-quic" not in forced and "--user-data-dir=/tmp/p" in forced
    off = browser_argv("chromium", quic="off", **args)
    assert "--disable-quic" in off and not any("force-quic" in a for a in off)
    discovery = browser_argv("chromium", quic="discovery", netlog="/x/n.json", **args)
    # the host is allowed QUIC (an unused port names it) but the page's origin is not forced
    assert [a for a in discovery if "quic" in a] == ["--origin-to-force-quic-on=198.18.2.2:9"]
    assert "--log-net-log=/x/n.json" in discovery
    assert quic_mode("h3", "pinned") == "forced" and quic_mode("h2", "pinned") == "off"
    assert quic_mode("h2", "discovery") == "discovery"
    # a first visit: the same browser flags, no unmeasured visit before it (the drivers')
    first = browser_argv("chromium", quic="first-visit", **args)
    assert [a for a in first if "quic" in a] == ["--origin-to-force-quic-on=198.18.2.2:9"]
    assert quic_mode("h3", "first-visit") == "first-visit"


@pytest.mark.parametrize(
    "code, doc, status",
    [
        (0, {"ok": True, "protocol": "h3"}, "ok"),
        (3, {"ok": True, "protocol": "mixed"}, "protocol_mismatch"),
        (0, {"ok": True, "protocol": "h2"}, "protocol_mismatch"),
        (1, {"ok": False, "protocol": None, "error": "navigation failed"}, "failed"),
        (124, {"ok": False, "protocol": "h3", "error": "timeout"}, "timeout"),
        (1, None, "failed"),
    ],
)
def test_driver_outcomes_mean_what_the_native_clients_do(tmp_path, code, doc, status):
    out = tmp_path / "fetch.json"
    if doc is not None:
        out.write_text(json.dumps(doc))
    assert classify(code, out, "boom\n", "h3", 1.0).status == status


def test_missing_chromium_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("LONGLOOK_CHROMIUM", "/nonexistent/chromium")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(LonglookError) as e:
        chromium_path()
    assert "Chromium was not found" in str(e.value) and "apt-get install -y chromium" in e.value.hint
    with pytest.raises(LonglookError):
        fetcher("chromium")  # fails when the runner asks, before any run


def test_fetcher_knows_every_client():
    assert set(KNOWN_CLIENTS) == {"native", "chromium", "chromium-discovery"}
    with pytest.raises(LonglookError, match="unknown client"):
        fetcher("safari")


# ---------------------------------------------------------------- scenarios and the report

ARMS = """
name = "clients"
rounds = 6
workloads = ["1x1m", "10x100k"]
[[links]]
rate_mbit = 10
rtt_ms = 36
[[arms]]
label = "h3-native"
protocol = "h3"
[[arms]]
label = "h3-chromium"
protocol = "h3"
client = "chromium"
[[arms]]
label = "h2-native"
protocol = "h2"
[[arms]]
label = "h2-chromium"
protocol = "h2"
client = "chromium"
"""


def test_arms_choose_their_client():
    sc = Scenario.from_toml(ARMS)
    cell = sc.cells()[0]
    assert {a.label: cell.run_options(a).client for a in sc.arms} == {
        "h3-native": "native",
        "h3-chromium": "chromium",
        "h2-native": "native",
        "h2-chromium": "chromium",
    }
    assert "client" not in cell.id  # the client is a side of the comparison, not a cell
    with pytest.raises(LonglookError, match='unknown client "opera"'):
        Scenario.from_toml(ARMS.replace('client = "chromium"', 'client = "opera"', 1))
    assert Scenario.from_toml('client = "chromium"\n' + ARMS).cells()[0].client == "chromium"


def test_shipped_scenario_compares_both_clients_on_the_same_cells():
    sc = load_scenario(ROOT / "scenarios" / "chromium-vs-native.toml")
    runs = {(a.protocol, sc.cells()[0].run_options(a).client) for a in sc.arms}
    assert runs == {("h3", "native"), ("h2", "native"), ("h3", "chromium"), ("h2", "chromium")}
    assert sc.baseline == "h2-native"


# Chromium 1.2x the native client's PLT; QUIC 20% faster than TCP with the native client only
FACTORS = {"h3-native": 0.8, "h2-native": 1.0, "h3-chromium": 1.2, "h2-chromium": 1.2}


def _experiment(directory: Path) -> Scenario:
    sc = Scenario.from_toml(ARMS)
    rng = np.random.default_rng(7)
    with Store.open(directory) as st:
        st.start_experiment(sc, environment_versions(endpoint="e", linkem="l"))
        for cell in sc.cells():
            for rnd in range(sc.rounds):
                for pos, arm in enumerate(sc.round_order(cell, rnd)):
                    plt = 1000 * FACTORS[arm.label] * rng.normal(1, 0.01)
                    doc = {
                        "protocol_requested": arm.protocol,
                        "protocol": arm.protocol,
                        "ok": True,
                        "plt_ms": plt,
                        "objects": [],
                    }
                    st.record_run(
                        record_from_fetch(
                            doc, run_id=new_run_id(), cell_id=cell.id, round=rnd, position=pos, arm=arm.label
                        )
                    )
        st.finish_experiment()
    return sc


def test_report_shows_each_clients_heatmap_and_the_plt_ratio(tmp_path):
    _experiment(tmp_path)
    with Store.open(tmp_path, read_only=True) as st:
        s = section(st, analyse(st))
    assert s is not None and s.id == "clients"
    html = s.html
    assert "native: QUIC vs TCP" in html and "chromium: QUIC vs TCP" in html
    assert html.count("h3-native faster") == 2  # the native client, both cells
    assert html.count("inconclusive") == 2  # Chromium: h3 and h2 alike, both cells
    ratios = [float(x) for x in re.findall(r"(\d+\.\d\d)×", html)]
    # h3: 1.2 / 0.8 in both cells, then h2: 1.2 / 1.0 in both cells
    assert [round(r, 1) for r in ratios] == [1.5, 1.5, 1.2, 1.2]
    report = build_report(tmp_path)
    assert "Clients compared" in Path(report).read_text()


def test_no_client_section_for_a_single_client(tmp_path):
    sc = Scenario.from_toml(ARMS.replace('client = "chromium"', 'client = "native"'))
    assert len({a.client or sc.client for a in sc.arms}) == 1
    _experiment(tmp_path)  # (runs for the four arms; only the scenario decides)
    with Store.open(tmp_path, read_only=True) as st:
        an = analyse(st)
        an.scenario = sc
        assert section(st, an) is None


def test_chromium_net_errors_name_their_phase():
    from longlook.stacks.clients.chromium import failure_phase

    assert failure_phase("net::ERR_CONNECTION_REFUSED") == "connect"
    assert failure_phase("navigation failed: net::ERR_QUIC_HANDSHAKE_FAILED") == "handshake"
    assert failure_phase("net::ERR_SSL_PROTOCOL_ERROR") == "handshake"
    assert failure_phase("net::ERR_CONNECTION_RESET") == "transfer"
    assert failure_phase("net::ERR_TIMED_OUT") == "request"
    assert failure_phase("something else") is None and failure_phase(None) is None


def _bulk_events(
    status: int = 200, finished: bool = True, protocol: str = "h3", aborted_after: int | None = None
) -> NetworkLog:
    """The page of the object's origin (a 404), then the fetch of a 5 MB object over 2 s."""
    log = NetworkLog()
    page = "https://198.18.2.2:4433/longlook-bulk-page"
    obj = "https://198.18.2.2:4433/bulk/5m"
    timing = {"requestTime": 100.0, "connectStart": 1.0, "connectEnd": 37.0, "receiveHeadersEnd": 60.0}
    log.on_event(
        "Network.requestWillBeSent",
        {"requestId": "d", "request": {"url": page}, "timestamp": 100.0, "type": "Document"},
    )
    log.on_event(
        "Network.responseReceived",
        {"requestId": "d", "response": {"status": 404, "protocol": protocol, "timing": timing}},
    )
    log.on_event("Network.loadingFinished", {"requestId": "d", "timestamp": 100.07})
    log.on_event("Page.loadEventFired", {"timestamp": 100.08})
    log.on_event(
        "Network.requestWillBeSent", {"requestId": "o", "request": {"url": obj}, "timestamp": 100.1, "type": "Fetch"}
    )
    log.on_event(
        "Network.responseReceived",
        {
            "requestId": "o",
            "response": {
                "status": status,
                "protocol": protocol,
                "timing": {"requestTime": 100.1, "receiveHeadersEnd": 20.0},
            },
        },
    )
    if aborted_after is not None:  # Chromium's report of a fetch whose reader took the body
        log.requests["o"].response_headers = {"content-length": "5000000"}
        log.on_event("Network.dataReceived", {"requestId": "o", "dataLength": aborted_after, "timestamp": 102.1})
        log.on_event("Network.loadingFailed", {"requestId": "o", "timestamp": 102.3, "errorText": "net::ERR_ABORTED"})
        return log
    log.on_event("Network.dataReceived", {"requestId": "o", "dataLength": 5_000_000})
    if finished:
        log.on_event("Network.loadingFinished", {"requestId": "o", "timestamp": 102.1})
    return log


def _bulk(log: NetworkLog) -> dict:
    from longlook.stacks.clients.page_load import bulk_document

    url = "https://198.18.2.2:4433/bulk/5m"
    return bulk_document(log, run_id="r", url=url, protocol_requested="h3", time_origin_unix_ms=None, error=None)


def test_a_bulk_object_is_timed_as_on_a_new_connection():
    doc = _bulk(_bulk_events())
    # 2 s from the fetch to its last byte, plus the page's connection set-up (36 ms)
    assert doc["ok"] and doc["mode"] == "bulk" and doc["protocol"] == "h3"
    assert doc["plt_ms"] == pytest.approx(2036.0) and doc["handshake_ms"] == 36.0
    assert doc["ttfb_ms"] == pytest.approx(56.0) and doc["bytes"] == 5_000_000
    assert doc["goodput_mbit"] == pytest.approx(5e6 * 8 / 2036.0 / 1000, rel=1e-3)
    assert [o["path"] for o in doc["objects"]] == ["/bulk/5m"]
    bad = _bulk(_bulk_events(status=404))
    assert not bad["ok"] and bad["error"] == "/bulk/5m: HTTP 404" and bad["plt_ms"] is None
    unfinished = _bulk(_bulk_events(finished=False))
    assert not unfinished["ok"] and "not finished" in unfinished["error"]
    # aborted after its last byte: complete, ending with its last data; aborted short of it: failed
    aborted = _bulk_events(aborted_after=5_000_000)
    whole = _bulk(aborted)
    assert whole["ok"] and whole["plt_ms"] == pytest.approx(2036.0), whole
    assert aborted.requests["o"].failed == "net::ERR_ABORTED"  # the log keeps what Chromium said
    short = _bulk(_bulk_events(aborted_after=4_000_000))
    assert not short["ok"] and short["error"] == "/bulk/5m: net::ERR_ABORTED"
    missing = _bulk(NetworkLog())
    assert not missing["ok"] and "no request for the page" in missing["error"]


def test_a_bulk_fetch_reads_its_body_to_the_end():
    from longlook.stacks.clients.chromium_driver import FETCH_JS

    js = FETCH_JS.format(url=json.dumps("https://h/bulk/5m"))
    assert js.startswith("(async () => {") and "getReader()" in js and "cache: 'no-store'" in js
    assert '"https://h/bulk/5m"' in js
