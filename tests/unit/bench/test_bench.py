"""The bench package without a testbed: the limit model, the one row type and its JSON, the
`longlook bench stacks` command."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

from longlook.bench.limit import physical_limit_ms
from longlook.bench.row import BenchRow, print_rows, title
from longlook.bench.stacks import stacks_document


def test_physical_limit_full_pipe_and_slow_start():
    # a window that fills the pipe at once: handshake + request/last byte + size / rate
    assert physical_limit_ms(1_000_000, 8.0, 10.0, "h3", 10**9, 1.0) == pytest.approx(20 + 1000)
    assert physical_limit_ms(1_000_000, 8.0, 10.0, "h2", 10**9, 1.0) == pytest.approx(30 + 1000)
    # 10 kB doubling at 1 MB/s over 100 ms: four rounds (10, 20, 40, 80 kB), then line rate
    assert physical_limit_ms(1_000_000, 8.0, 100.0, "h3", 10_000, 1.0) == pytest.approx(200 + 400 + 850)


def _row(**kw) -> BenchRow:
    args = dict(
        stack="ours",
        version="ours",
        cc="cubic",
        protocol="h3",
        plts=[100.0, 80.0, 90.0],
        effs=[0.9, 0.95, 0.8],
        size_bytes=1_000_000,
        initial_window=10**9,
        rate_mbit=8.0,
        rtt_ms=10.0,
    )
    return BenchRow.of_runs(**{**args, **kw})


def test_row_of_runs_judges_the_medians():
    r = _row()
    assert (r.runs, r.plt_ms_median, r.efficiency) == (3, 90.0, 0.9)
    assert r.goodput_mbit_median == pytest.approx(1_000_000 * 8 / 90 / 1e3)
    assert r.limit_ms == pytest.approx(physical_limit_ms(1_000_000, 8.0, 10.0, "h3", 10**9, 0.9))
    assert r.share == pytest.approx(r.limit_ms / 90.0)


def test_each_bench_keeps_its_json_fields():
    r = _row()
    assert list(r.endpoint_json()) == [
        "protocol",
        "runs",
        "plt_ms_median",
        "goodput_mbit_median",
        "efficiency",
        "initial_window_bytes",
        "limit_ms",
        "ratio",
    ]
    assert r.endpoint_json()["ratio"] == r.share
    doc = stacks_document([r], "10m", 100.0, 36.0)
    assert list(doc) == ["size", "rate_mbit", "rtt_ms", "rows"]
    assert list(doc["rows"][0]) == [
        "stack",
        "version",
        "cc",
        "runs",
        "plt_ms_median",
        "goodput_mbit_median",
        "efficiency",
        "initial_window_bytes",
        "limit_ms",
        "share",
    ]


def test_print_rows(capsys):
    print_rows([_row(), _row(protocol="h2")], title("1m", 8.0, 10.0, 3))
    out = capsys.readouterr().out
    assert "1m over 8 Mbit/s, 10 ms RTT, median of 3" in out and "h3" in out and "h2" in out


def test_bench_stacks_command_writes_the_report_json(tmp_path, monkeypatch):
    import longlook.bench.stacks
    from longlook.commands import bench

    asked = []
    monkeypatch.setattr(
        longlook.bench.stacks,
        "bench_stacks",
        lambda specs, *a: asked.append((specs, a)) or [_row(stack="quic-go", version="v0.64.1")],
    )
    app = typer.Typer()
    app.callback()(lambda: None)
    bench.register(app)
    out = tmp_path / "stacks-bench.json"
    result = CliRunner().invoke(app, ["bench", "stacks", "quic-go", "--runs", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert asked == [(["quic-go"], ("10m", 100.0, 36.0, 2))]
    doc = json.loads(out.read_text())
    assert doc["rows"][0]["stack"] == "quic-go" and doc["size"] == "10m"


def test_constant_trace_carries_its_rate(tmp_path):
    from longlook.bench.link import constant_trace
    from longlook.traces import load_mahimahi, rate_profile

    for rate in (100, 250, 1000):
        per_s = rate_profile(load_mahimahi(constant_trace(tmp_path / f"{rate}.trace", rate)), 1000)
        assert per_s.mean() == pytest.approx(rate, rel=0.002)


def test_ceiling_tolerance_judges_a_trace_like_a_rate():
    from longlook.bench.link import within_tolerance
    from longlook.testbed.linkcheck import Row, Tolerances

    rows = [
        Row("down", "TCP goodput, probe", "Mbit/s", 470.0, 482.7),  # a trace: no band
        Row("down", "UDP delivered (IP)", "Mbit/s", 498.0, 500.0),
    ]
    assert within_tolerance(rows, Tolerances()) == (True, "")
    rows[1].measured = 470.0
    ok, why = within_tolerance(rows, Tolerances())
    assert not ok and "UDP delivered" in why
    # a sender that reached only 471 Mbit/s: judged on what it sent
    assert within_tolerance(rows, Tolerances(), udp_sent_mbit=471.0)[0]
    # a trace's RTT, unjudged by the self-check, is judged here (opportunity waits allowed)
    rtt = Row("both", "RTT median", "ms", 41.6, 40.0)
    assert within_tolerance([rtt], Tolerances())[0]
    rtt.measured = 75.1
    assert not within_tolerance([rtt], Tolerances())[0]


def test_bench_link_command_passes_ceiling(monkeypatch):
    import longlook.bench.link
    from longlook.commands import bench

    asked = []
    monkeypatch.setattr(longlook.bench.link, "run_bench", lambda **kw: asked.append(kw) or {"ok": 1})
    app = typer.Typer()
    app.callback()(lambda: None)
    bench.register(app)
    result = CliRunner().invoke(app, ["bench", "link", "--quick", "--ceiling", "--json"])
    assert result.exit_code == 0, result.output
    assert asked == [{"quick": True, "ceiling": True, "datapaths": (), "disciplines": ()}]
    assert json.loads(result.output) == {"ok": 1}
    result = CliRunner().invoke(app, ["bench", "link", "--datapath", "nfqueue", "--datapath", "afpacket", "--json"])
    assert result.exit_code == 0 and asked[-1]["datapaths"] == ("nfqueue", "afpacket"), result.output
    result = CliRunner().invoke(app, ["bench", "link", "--datapath", "xdp"])
    assert result.exit_code != 0 and "xdp" in result.output
    result = CliRunner().invoke(app, ["bench", "link", "--aqm", "codel", "--aqm", "fq_codel", "--json"])
    assert result.exit_code == 0 and asked[-1]["disciplines"] == ("codel", "fq_codel"), result.output
    result = CliRunner().invoke(app, ["bench", "link", "--aqm", "red"])
    assert result.exit_code != 0 and "red" in result.output
