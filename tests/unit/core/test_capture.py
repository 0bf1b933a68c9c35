"""`[capture]` without a testbed: the scenario field and its errors, linkem's flags, the
sizes a run records, and the report's per-run links to its files (qlog, pcap, key log ...).
The real capture and its decryption by tshark: tests/testbed/core/test_capture_testbed.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from longlook.core.capture import KEYLOG_FILE, PCAP_FILE, Capture, capture_artifacts, capture_sizes
from longlook.core.record import new_run_id
from longlook.core.store import Store, environment_versions
from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario, record_from_fetch
from longlook.report import build_report
from longlook.report.sections.runs import artifact_links

BASE = """
name = "cap"
rounds = 1
workloads = ["1x10k"]
[[links]]
rate_mbit = 10
rtt_ms = 20
"""


def test_capture_is_off_by_default_and_validated():
    assert Scenario.from_toml(BASE).capture == Capture()
    sc = Scenario.from_toml(BASE + '[capture]\npcap = "full"\nkeylog = true\nmax_mb = 5\n')
    assert (sc.capture.pcap, sc.capture.keylog, sc.capture.max_bytes) == ("full", True, 5_000_000)
    with pytest.raises(LonglookError, match=r"capture\.pcap: Input should be 'off', 'headers' or 'full', got 'yes'"):
        Scenario.from_toml(BASE + '[capture]\npcap = "yes"\n')
    with pytest.raises(LonglookError, match=r"capture\.max_mb"):
        Scenario.from_toml(BASE + "[capture]\nmax_mb = 0\n")
    with pytest.raises(LonglookError, match=r"capture\.keylogs: unknown field"):
        Scenario.from_toml(BASE + "[capture]\nkeylogs = true\n")


def test_linkem_flags_and_key_log_path(tmp_path: Path):
    assert Capture().linkem_args(tmp_path / PCAP_FILE) == []
    assert Capture(pcap="headers", max_mb=1).linkem_args(tmp_path / "p") == [
        "--pcap",
        str(tmp_path / "p"),
        "--copy-bytes",
        "128",
        "--pcap-max-bytes",
        "1000000",
    ]
    assert "1500" in Capture(pcap="full").linkem_args(tmp_path / "p")  # a whole packet of the MTU
    assert Capture().keylog_path(tmp_path) is None
    assert Capture(keylog=True).keylog_path(tmp_path) == tmp_path / KEYLOG_FILE


def test_sizes_say_when_the_pcap_reached_its_cap(tmp_path: Path):
    (tmp_path / PCAP_FILE).write_bytes(b"x" * 999_000)
    (tmp_path / KEYLOG_FILE).write_text("CLIENT_TRAFFIC_SECRET_0 00 00\n")
    sizes = capture_sizes(tmp_path, Capture(pcap="full", keylog=True, max_mb=1))
    assert sizes == {"pcap_bytes": 999_000, "keylog_bytes": 30, "pcap_capped": True}
    assert capture_sizes(tmp_path, Capture(pcap="full", max_mb=2))["pcap_capped"] is False
    assert capture_artifacts(tmp_path) == {"pcap": PCAP_FILE, "keylog": KEYLOG_FILE}


def test_each_run_row_links_to_its_files(tmp_path: Path):
    sc = Scenario.from_toml(BASE)
    cell = sc.cells()[0]
    with Store.open(tmp_path) as st:
        st.start_experiment(sc, environment_versions(endpoint="endpoint 0", linkem="linkem 0"))
        for rnd, (arm, ok) in enumerate((("h3", True), ("h2", False))):
            run_id = new_run_id()
            run_dir = tmp_path / "runs" / run_id
            run_dir.mkdir(parents=True)
            names = {"qlog": "h3.sqlog", "pcap": PCAP_FILE, "keylog": KEYLOG_FILE, "har": "page.har"}
            for name in names.values():
                (run_dir / name).write_text("x")
            arts = {k: f"runs/{run_id}/{v}" for k, v in names.items()}
            arts["client_qlog"] = f"runs/{run_id}/client.sqlog"  # recorded, since deleted: no link
            r = record_from_fetch(
                {"protocol": arm, "ok": ok, "plt_ms": 100.0 if ok else None},
                run_id=run_id,
                cell_id=cell.id,
                round=rnd,
                position=0,
                arm=arm,
            )
            r.artifacts = arts
            r.details["capture"] = {"pcap_bytes": 104_741, "keylog_bytes": 938, "pcap_capped": False}
            st.record_run(r)
        st.finish_experiment()
    html = build_report(tmp_path).read_text()
    runs = html[html.index('<section id="runs">') :]
    assert runs.count('href="runs/') == 8  # 2 runs x (qlog, pcap, key log, HAR)
    assert ">key log</a>" in runs and ">pcap</a>" in runs and "client qlog" not in runs
    assert "pcap 104.7 kB, key log 938 B" in runs
    excluded = html[html.index('<section id="excluded">') : html.index('<section id="runs">')]
    assert excluded.count('href="runs/') == 4  # the failed run's row links too


def test_links_are_escaped_and_known_files_come_first(tmp_path: Path):
    for name in ("a&b.log", "q.sqlog"):
        (tmp_path / name).write_text("x")
    html = artifact_links({"zz_other": "a&b.log", "qlog": "q.sqlog"}, tmp_path)
    assert html == '<a href="q.sqlog">qlog</a> <a href="a&amp;b.log">zz other</a>'
