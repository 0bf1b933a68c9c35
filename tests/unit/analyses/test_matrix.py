"""The QUIC matrix (commands/matrix.py, analyses/matrix): its scenario has one arm per
client x server pair, and its grid says per pair and case what the runs' captures showed."""

from __future__ import annotations

import ipaddress

from longlook.analyses.matrix import Cell, Matrix, markdown, pair_of
from longlook.commands.matrix import scenario_toml
from longlook.kinds.pageload import Scenario


def test_the_scenario_runs_every_pair_with_a_full_capture():
    sc = Scenario.from_toml(scenario_toml(["ours", "quic-go"], rounds=2, rate_mbit=20, rtt_ms=20))
    pairs = {(a.client or "native", a.server or "ours") for a in sc.arms}
    assert pairs == {("native", "ours"), ("native", "quic-go"), ("quic-go", "ours"), ("quic-go", "quic-go")}
    assert all(a.protocol == "h3" for a in sc.arms)
    assert sc.capture.pcap == "full" and sc.capture.keylog and sc.rounds == 2
    assert pair_of({"options": {"client": "native", "server": "quic-go"}}) == ("ours", "quic-go")
    # our client also resumes with 0-RTT against each server: one more arm each
    resumed = [a for a in sc.arms if a.zero_rtt]
    assert [(a.label, a.server or "ours") for a in resumed] == [
        ("ours_ours_0rtt", "ours"),
        ("ours_quic-go_0rtt", "quic-go"),
    ]
    (cell,) = sc.cells()
    assert cell.run_options(resumed[1]).zero_rtt and not cell.run_options(sc.arms[0]).zero_rtt


def test_a_pair_passes_only_when_every_judged_run_did_and_a_failure_keeps_its_evidence():
    cell = Cell()
    cell.add({"verdict": "passed", "evidence": "ok"})
    cell.add({"verdict": "failed", "evidence": "no FIN on stream 4"})
    cell.add({"verdict": "passed", "evidence": "ok"})
    assert (cell.verdict, cell.passed, cell.judged, cell.evidence) == ("failed", 2, 3, "no FIN on stream 4")
    hidden = Cell()
    hidden.add({"verdict": "not measurable", "evidence": "not decrypted"})
    assert hidden.verdict == "not measurable"
    m = Matrix(["ours", "quic-go"], ["ours"], ("transfer",))
    m.cells[("ours", "ours", "transfer")] = Cell("passed", 1, 1, "ok")
    m.cells[("quic-go", "ours", "transfer")] = cell
    text = markdown(m)
    assert "| ours | ✓ 1/1 |" in text and "| quic-go | ✗ 2/3 |" in text
    assert "quic-go → ours, transfer: failed: no FIN on stream 4" in text


def test_a_resumed_run_is_judged_for_resumption_and_0rtt_and_the_others_for_the_page(monkeypatch, tmp_path):
    import pandas as pd

    from longlook.analyses import matrix

    asked = []

    def fake(experiment, run, cases):
        asked.append((run["arm"], cases))
        return {c: {"verdict": "passed", "evidence": "seen"} for c in cases}

    monkeypatch.setattr(matrix, "judge_cases", fake)
    runs = pd.DataFrame(
        [
            {"arm": "ours_quic-go", "options": {"client": "native", "server": "quic-go", "zero_rtt": False}},
            {"arm": "ours_quic-go_0rtt", "options": {"client": "native", "server": "quic-go", "zero_rtt": True}},
        ]
    )
    m = matrix.judge(tmp_path, runs)
    assert asked == [("ours_quic-go", matrix.PAGE_CASES), ("ours_quic-go_0rtt", matrix.RESUMED_CASES)]
    assert m.cells[("ours", "quic-go", "zerortt")].verdict == "passed"
    assert m.cells[("ours", "quic-go", "handshake")].verdict == "passed"


def test_the_performance_scenario_has_every_pair_kernel_tcp_and_the_page_at_its_lowest_rate():

    from longlook.commands.matrix import perf_scenario_toml, perf_size

    sc = Scenario.from_toml(perf_scenario_toml(["ours", "quic-go"], rate_mbit=1000, rounds=3, rtt_ms=20))
    assert [w.label for w in sc.workloads] == ["bulk-200m"] and not sc.server_logs and sc.rounds == 3
    assert not sc.client_logs  # no party pays for a log the others do not write
    labels = [a.label for a in sc.arms]
    assert labels == ["ours_ours", "ours_quic-go", "quic-go_ours", "quic-go_quic-go", "tcp"]
    assert sc.arms[-1].protocol == "h2" and not sc.fidelity.retry_flagged
    low = Scenario.from_toml(
        perf_scenario_toml(["ours"], rate_mbit=10, rounds=3, rtt_ms=20, clients=["chromium"], page=True)
    )
    assert [w.label for w in low.workloads] == ["bulk-5m", "100x10k"] and low.fidelity.retry_flagged
    assert [a.label for a in low.arms] == ["ours_ours", "chromium_ours", "tcp"]
    # Chromium fetch()es a bulk object from a page of its origin: a bulk-only grid takes it too
    bulk = Scenario.from_toml(perf_scenario_toml(["ours"], rate_mbit=100, rounds=3, rtt_ms=20, clients=["chromium"]))
    assert [a.label for a in bulk.arms] == ["ours_ours", "chromium_ours", "tcp"]
    assert perf_size(10) == "5m" and perf_size(40) == "20m"


def _perf_run(client, server, plt_ms, server_share=0.5, *, flagged=False, arm=None, rnd=0, cell="wl=bulk-200m"):
    return {
        "cell_id": cell,
        "arm": arm or f"{client}_{server}",
        "round": rnd,
        "options": {"client": "native" if client == "ours" else client, "server": server},
        "status": "ok",
        "protocol_requested": "h2" if arm == "tcp" else "h3",
        "protocol_negotiated": "h2" if arm == "tcp" else "h3",
        "audit_flagged": flagged,
        "audit_reasons": "machine stalled 20.4 ms (limit 5 ms); 40 UDP datagrams dropped" if flagged else None,
        "plt_ms": plt_ms,
        "bytes": 200_000_000,
        "client_cpu_share": 0.2,
        "server_cpu_share": server_share,
        "router_cpu_share": 0.4,
        "client_cpu_s_per_mb": 0.01,
        "server_cpu_s_per_mb": 0.02,
    }


def test_the_performance_grid_names_each_pair_s_regime():
    import pandas as pd

    from longlook.analyses.matrix.perf import perf_grid, perf_markdown, regime

    assert regime(900, 1000, {"client": 0.3, "server": 0.9, "emulator": 0.5}) == "path"
    assert regime(500, 1000, {"client": 0.3, "server": 0.95, "emulator": 0.5}) == "CPU: server"
    assert regime(500, 1000, {"client": 0.3, "server": 0.5, "emulator": 0.5}) == "other"
    runs = pd.DataFrame(
        [
            _perf_run("ours", "ours", 1800),
            _perf_run("ours", "quic-go", 3600, 0.97),
            _perf_run("ours", "quic-go", 100, 0.1, flagged=True, rnd=1),
            _perf_run("ours", "aioquic", 900, 0.9, flagged=True),
            {**_perf_run("chromium", "ours", None), "status": "failed", "error": "navigation failed: net::ERR_ABORTED"},
        ]
    )
    grid = perf_grid(runs, 1000)["bulk-200m"]
    assert grid[("ours", "ours")].regime == "path" and round(grid[("ours", "ours")].goodput_mbit) == 889
    assert grid[("ours", "quic-go")].regime == "CPU: server" and grid[("ours", "quic-go")].runs == 1
    assert grid[("ours", "quic-go")].flagged == 1
    assert grid[("chromium", "ours")].regime == "failed: navigation failed: net::ERR_ABORTED"
    aioquic = grid[("ours", "aioquic")]
    assert aioquic.runs == 0 and aioquic.regime == "emulator-limited: machine stalled 20.4 ms (limit 5 ms)"
    text = perf_markdown({1000.0: {"bulk-200m": grid}}, ["ours"], ["ours", "quic-go", "aioquic"])
    assert "| ours | 888.9 path (n=1) | 444.4 CPU: server (n=1) | emulator-limited: machine stalled" in text


def test_a_slow_pair_without_a_busy_cpu_says_what_held_its_server_back(tmp_path):
    import json

    import pandas as pd

    from longlook.analyses.matrix.limits import CACHE, sender_regimes
    from longlook.analyses.matrix.perf import perf_grid, regime, slow_pairs
    from longlook.commands.matrix import perf_scenario_toml
    from longlook.core.spec import parse_scenario

    assert regime(500, 1000, {"server": 0.5}, "window") == "window"
    assert regime(900, 1000, {"server": 0.5}, "window") == "path"  # at the path, whatever the log says
    # the grid's runs keep no server log: a slow pair with no busy CPU is "other", and gets one
    # more run with server logs, alone with the TCP reference, to say why
    grid = perf_grid(pd.DataFrame([_perf_run("aioquic", "quic-go", 3600, rnd=r) for r in range(2)]), 1000)
    assert grid["bulk-200m"][("aioquic", "quic-go")].regime == "other"
    slow = slow_pairs(grid)
    assert slow == {("aioquic", "quic-go")}
    why = parse_scenario(perf_scenario_toml(["aioquic", "quic-go"], rate_mbit=1000, rounds=1, rtt_ms=20, why=slow))
    assert [a.label for a in why.arm_list()] == ["aioquic_quic-go", "tcp"] and why.rounds == 1
    assert why.server_logs and why.client_logs and [w.label for w in why.workloads] == ["bulk-200m"]
    # that run's server qlogs: two show a full window, one does not
    runs, events = (
        [],
        {
            "full": [(t, 100_000, 99_000) for t in range(0, 50, 5)],
            "idle": [(t, 1_000_000, 50_000) for t in range(0, 50, 5)],
        },
    )
    for rnd, kind in enumerate(("full", "full", "idle")):
        run_dir = tmp_path / "runs" / f"r{rnd}"
        run_dir.mkdir(parents=True)
        lines = [{"qlog_format": "JSON-SEQ"}]
        for t, cwnd, in_flight in events[kind]:
            lines.append(
                {
                    "time": t,
                    "name": "recovery:metrics_updated",
                    "data": {"congestion_window": cwnd, "bytes_in_flight": in_flight},
                }
            )
            lines.append({"time": t + 1, "name": "transport:packet_sent", "data": {"header": {}}})
        (run_dir / "server.sqlog").write_bytes(b"".join(b"\x1e" + json.dumps(x).encode() + b"\n" for x in lines))
        runs.append(
            {
                **_perf_run("aioquic", "quic-go", 3600, rnd=rnd),
                "run_id": f"r{rnd}",
                "artifacts": json.dumps({"qlog": f"runs/r{rnd}/server.sqlog"}),
            }
        )
    frame = pd.DataFrame(runs)
    senders = sender_regimes(tmp_path, frame)
    assert senders == {"r0": "window", "r1": "window", "r2": "flow control or application"}
    assert (tmp_path / "runs" / "r0" / CACHE).is_file()  # kept beside the run: it travels when carried
    (tmp_path / "runs" / "r0" / "server.sqlog").write_bytes(b"")  # the kept answer is read, not the log
    assert sender_regimes(tmp_path, frame)["r0"] == "window"
    grid = perf_grid(frame, 1000, senders={("bulk-200m", ("aioquic", "quic-go")): "window"})["bulk-200m"]
    assert grid[("aioquic", "quic-go")].regime == "window"


def test_each_pair_is_judged_against_our_client_with_its_server_and_against_kernel_tcp():
    import pandas as pd

    from longlook.analyses.matrix.perf import perf_grid, perf_markdown

    rows = []
    for rnd in range(4):
        jitter = 10 * rnd
        rows += [
            _perf_run("ours", "quic-go", 2000 + jitter, rnd=rnd),
            _perf_run("quic-go", "quic-go", 4000 + jitter, rnd=rnd),  # much slower than ours
            _perf_run("aioquic", "quic-go", 2005 + 3 * jitter, rnd=rnd),  # the same as ours
            _perf_run("ours", "ours", 1000 + jitter, arm="tcp", rnd=rnd),
        ]
    rows.append(_perf_run("kwik", "quic-go", 2000))  # one counted run: no test
    grid = perf_grid(pd.DataFrame(rows), 1000)["bulk-200m"]
    slow = grid[("quic-go", "quic-go")]
    assert slow.vs_ours.verdict == "slower" and slow.vs_ours.reference == "ours_quic-go"
    assert -101 < slow.vs_ours.percent < -98 and slow.vs_ours.n == 4 and slow.vs_ours.n_reference == 4
    assert slow.vs_tcp.verdict == "slower" and slow.vs_tcp.reference == "tcp"
    assert grid[("aioquic", "quic-go")].vs_ours.verdict == "no difference shown"
    assert grid[("kwik", "quic-go")].vs_ours.mark == "n<2"
    assert grid[("ours", "quic-go")].vs_ours is None and grid[("ours", "quic-go")].vs_tcp.verdict == "slower"
    assert ("kernel TCP", "kernel TCP") in grid
    text = perf_markdown({1000.0: {"bulk-200m": grid}}, ["quic-go"], ["quic-go"])
    assert "| quic-go | 398.5 other (n=4): ours -99%, TCP -296% |" in text
    assert "Kernel TCP (h2, Cubic): 1576.4 path (n=4)" in text


def test_a_reference_that_lost_a_round_to_the_path_audit_is_marked_lost_not_too_few():
    import pandas as pd

    from longlook.analyses.matrix.perf import perf_grid

    # our client's round 1 flagged: two counted runs against three, enough for a test, but the
    # missing one could reverse it, so the mark must say that and not that n is below 2
    rows = [_perf_run("ours", "ngtcp2", 4236 + r, flagged=r == 1, rnd=r) for r in range(3)]
    rows += [_perf_run("aioquic", "ngtcp2", 4300 + r, rnd=r) for r in range(3)]
    got = perf_grid(pd.DataFrame(rows), 10)["bulk-200m"][("aioquic", "ngtcp2")].vs_ours
    assert (got.n, got.n_reference, got.outcome, got.mark) == (3, 2, "survivorship", "lost")
    assert "missing" in got.verdict


def test_chromium_is_a_client_row_against_every_server():
    sc = Scenario.from_toml(scenario_toml(["ours", "quic-go"], rounds=1, rate_mbit=20, rtt_ms=20, clients=["chromium"]))
    chromium = [(a.label, a.server or "ours") for a in sc.arms if a.client == "chromium" and not a.server_case]
    assert chromium == [("chromium_ours", "ours"), ("chromium_quic-go", "quic-go")]
    # and meets each server's Retry
    retried = [(a.label, a.server or "ours") for a in sc.arms if a.client == "chromium" and a.server_case]
    assert retried == [("chromium_ours_retry", "ours"), ("chromium_quic-go_retry", "quic-go")]
    assert pair_of({"options": {"client": "chromium", "server": "quic-go"}}) == ("chromium", "quic-go")


def test_a_declared_case_is_unsupported_not_failed_unless_it_passed(monkeypatch, tmp_path):
    """msquic's server declares it sends no session ticket: our client's resumed run against it
    is "unsupported" with the declaration, shown apart from the failures; a declaration a run
    contradicts (it passed) leaves the pass."""
    import pandas as pd

    from longlook.analyses import matrix

    verdicts = {"msquic": "failed", "quic-go": "passed"}

    def fake(experiment, run, cases):
        server = run["options"]["server"]
        return {c: {"verdict": verdicts[server], "evidence": "no NewSessionTicket"} for c in cases}

    monkeypatch.setattr(matrix, "judge_cases", fake)
    runs = pd.DataFrame(
        [
            {"arm": "ours_msquic_0rtt", "options": {"client": "native", "server": "msquic", "zero_rtt": True}},
            {"arm": "ours_quic-go_0rtt", "options": {"client": "native", "server": "quic-go", "zero_rtt": True}},
        ]
    )
    m = matrix.judge(tmp_path, runs)
    cell = m.cells[("ours", "msquic", "resumption")]
    assert cell.verdict == "unsupported" and cell.evidence.startswith("msquic: msquic sends a session ticket only")
    assert m.cells[("ours", "quic-go", "resumption")].verdict == "passed"
    text = matrix.markdown(m)
    assert "| ours | – 0/1 | ✓ 1/1 |" in text
    assert "### Declared unsupported" in text and "ours → msquic, resumption: failed" not in text


def test_a_pair_that_cannot_connect_is_not_run_and_every_case_says_why():
    """gm-quic's server declares it completes no handshake without SNI: no arm runs another
    stack's client against it (no run waits out a timeout), its own client is run, and the
    grid says "unsupported" for every case of the pairs left out, the handshake's reason given."""
    from longlook.analyses.matrix import Matrix, mark_unsupported
    from longlook.commands.matrix import pair_arms

    text = "\n".join(pair_arms(["ours", "gm-quic"]))
    assert 'label = "gm-quic_gm-quic"' in text and 'label = "ours_ours"' in text
    assert 'label = "ours_gm-quic"' not in text and 'label = "gm-quic_ours"' in text
    m = Matrix(["gm-quic", "ours"], ["gm-quic", "ours"], ("handshake", "transfer", "resumption"))
    mark_unsupported(m)
    assert m.cells[("ours", "gm-quic", "handshake")].verdict == "unsupported"
    transfer = m.cells[("ours", "gm-quic", "transfer")]
    assert transfer.verdict == "unsupported" and transfer.evidence.startswith("no handshake: its server serves no")
    assert m.cells[("ours", "ours", "transfer")].verdict == "no run"


def test_a_stack_client_is_asked_for_each_case_its_adapter_can_ask_and_judged_by_it(monkeypatch, tmp_path):
    import pandas as pd

    from longlook.analyses import matrix
    from longlook.stacks.registry import resolve

    from longlook.stacks.endpoint import MOVING_CLIENT_CASES

    sc = Scenario.from_toml(scenario_toml(["ours", "aioquic"], rounds=1, rate_mbit=20, rtt_ms=20))
    asked_arms = [a for a in sc.arms if a.client_case]
    # (a moving case is asked on the migration scenario's handover only)
    assert {(a.label, a.client_case) for a in asked_arms} == {
        (f"{client}_{server}_{case}", case)
        for client, cases in (("aioquic", resolve("aioquic").client_cases), ("ours", ("keyupdate", "chacha20")))
        for case in cases
        if case not in MOVING_CLIENT_CASES
        for server in ("ours", "aioquic")
    }
    assert {a.client for a in asked_arms if a.label.startswith("ours_")} == {"native"}
    (cell,) = sc.cells()
    assert cell.run_options(asked_arms[0]).client_case == asked_arms[0].client_case  # recorded with the run

    seen = []

    def fake(experiment, run, cases):
        seen.append((run["arm"], cases))
        return {c: {"verdict": "passed", "evidence": "seen"} for c in cases}

    monkeypatch.setattr(matrix, "judge_cases", fake)
    options = {"client": "aioquic", "server": "ours", "zero_rtt": False}
    runs = pd.DataFrame(
        [
            {"arm": "aioquic_ours_keyupdate", "options": {**options, "client_case": "keyupdate"}},
            {"arm": "aioquic_ours_zerortt", "options": {**options, "client_case": "zerortt"}},
        ]
    )
    m = matrix.judge(tmp_path, runs)
    assert seen == [("aioquic_ours_keyupdate", ("keyupdate",)), ("aioquic_ours_zerortt", ("resumption", "zerortt"))]
    assert m.cells[("aioquic", "ours", "keyupdate")].verdict == "passed"
    assert m.cells[("aioquic", "ours", "chacha20")].verdict == matrix.NO_RUN


def test_a_case_is_asked_only_of_a_client_that_can_be_asked_for_it():
    import pytest

    base = 'name = "x"\n[[arms]]\nlabel = "a"\n'
    for arm, why in (
        ('protocol = "h3"\nclient_case = "keyupdate"', "name it in client"),
        ('protocol = "h3"\nclient = "quic-go"\nclient_case = "keyupdate"', "cannot be asked for keyupdate"),
        ('protocol = "h3"\nclient = "ngtcp2"\nclient_case = "retry"', "client_case must be one of"),
        (
            'protocol = "h3"\nclient = "native"\nclient_case = "v2"',
            "native client can be asked for keyupdate, chacha20",
        ),
        ('protocol = "h2"\nclient = "native"\nclient_case = "chacha20"', "not chacha20 over h2"),
    ):
        with pytest.raises(Exception, match=why):
            Scenario.from_toml(base + arm + "\n")


def test_the_adapters_say_how_their_clients_are_asked():
    from pathlib import Path

    from longlook.stacks.base import ClientCall
    from longlook.stacks.registry import resolve

    state = Path("/nonexistent/state")
    ng = resolve("ngtcp2").case_calls("chacha20", ClientCall(["gtlsclient", "-q", "h", "1"], {}), state)
    assert ng.warmup is None and ng.measured.argv[1].endswith("-CIPHER-ALL:+CHACHA20-POLY1305")
    aio = resolve("aioquic")
    assert aio.case_calls("v2", ClientCall(["py", "h3client.py"], {}), state).measured.argv[-1] == "--quic-v2"
    assert resolve("quic-go").case_calls("keyupdate", ClientCall(["x"], {}), state) is None


def test_quiche_s_client_resumes_its_first_connection_s_session_with_early_data_when_asked(tmp_path):
    from longlook.stacks.base import ClientCall
    from longlook.stacks.registry import resolve

    quiche = resolve("quiche")
    assert quiche.client_cases == ("resumption", "zerortt", "connection-migration")
    session = ["--session-file", str(tmp_path / "session.bin")]
    resumed = quiche.case_calls("resumption", ClientCall(["q", "fetch"], {}), tmp_path)
    assert resumed.warmup.argv[-2:] == session and resumed.measured.argv[-2:] == session
    early = quiche.case_calls("zerortt", ClientCall(["q", "fetch"], {}), tmp_path)
    assert early.warmup.argv[-2:] == session and early.measured.argv[-4:] == [*session, "--early-data", "on"]
    assert quiche.case_calls("keyupdate", ClientCall(["q"], {}), tmp_path) is None


def test_kwik_s_client_resumes_from_its_first_connection_s_ticket(tmp_path):
    from longlook.stacks.base import ClientCall
    from longlook.stacks.registry import resolve

    kwik = resolve("kwik")
    assert set(kwik.client_cases) == {"resumption", "keyupdate", "chacha20", "v2"} and "zerortt" in (
        kwik.unsupported_as_client
    )
    calls = kwik.case_calls("resumption", ClientCall(["java", "fetch"], {}), tmp_path / "state")
    ticket = str(tmp_path / "state" / "ticket.bin")
    assert calls.warmup.argv[-2:] == ["--ticket-file", ticket] and calls.measured.argv[-2:] == ["--ticket-file", ticket]
    assert (tmp_path / "state").is_dir()
    assert kwik.case_calls("chacha20", ClientCall(["j"], {}), tmp_path).measured.argv[-2:] == ["--cipher", "chacha20"]
    assert kwik.case_calls("zerortt", ClientCall(["j"], {}), tmp_path) is None


def test_a_stack_built_here_stays_in_the_grid_after_its_adapter_changed(monkeypatch, tmp_path):
    """installed() is false until the run rebuilds a stack whose adapter changed; the default
    list keeps it (the run builds it first) and leaves out one never built here."""
    from types import SimpleNamespace

    from longlook.commands import matrix as cmd
    from longlook.stacks import registry

    (tmp_path / "changed").mkdir()
    stacks = {
        "built": SimpleNamespace(installed=lambda: True, build_dir=tmp_path / "built"),
        "changed": SimpleNamespace(installed=lambda: False, build_dir=tmp_path / "changed"),
        "never": SimpleNamespace(installed=lambda: False, build_dir=tmp_path / "never"),
    }
    monkeypatch.setattr(registry, "resolve", lambda name: stacks[name])
    monkeypatch.setattr(registry.STACKS, "names", lambda: list(stacks))
    assert cmd.installed_stacks() == ["ours", "built", "changed"]


def test_a_release_joins_the_grid_and_a_pair_s_change_between_releases_shows():
    from longlook.analyses.matrix import Matrix
    from longlook.analyses.matrix.history import changes, history_markdown
    from longlook.commands.matrix import scenario_toml

    sc = Scenario.from_toml(scenario_toml(["ours", "quic-go", "quic-go@v0.64.1"], rounds=1, rate_mbit=20, rtt_ms=20))
    arms = {a.label: a for a in sc.arms}
    assert arms["quic-go+v0.64.1_ours"].client == "quic-go@v0.64.1" and arms["ours_quic-go+v0.64.1"].server

    specs = ["ours", "quic-go", "quic-go@v0.64.1"]
    m = Matrix(specs, specs, ("handshake", "keyupdate"))
    for spec in specs:
        for other in specs:
            m.cell(spec, other, "handshake").add({"verdict": "passed", "evidence": "ok"})
    m.cell("quic-go@v0.64.1", "ours", "keyupdate").add({"verdict": "passed", "evidence": "both phases"})
    m.cell("quic-go", "ours", "keyupdate").add({"verdict": "failed", "evidence": "no key phase 1 from the client"})
    found, compared = changes(m)
    assert [(c.stack, c.role, c.partner, c.case) for c in found] == [("quic-go", "client", "ours", "keyupdate")]
    assert [v for v, _ in found[0].cells] == ["v0.64.1", "v0.65.0"]  # oldest release first
    assert compared == 3  # handshake as client, as server, and keyupdate as client
    text = history_markdown(m)
    assert "### quic-go: v0.64.1, v0.65.0" in text and "| client | ours | keyupdate | ✓ 1/1 | ✗ 0/1 |" in text
    assert "quic-go@v0.65.0 as client, ours, keyupdate: no key phase 1 from the client" in text
    assert history_markdown(Matrix(["ours"], ["ours"], ("handshake",))) == ""


def test_a_release_on_the_command_line_is_checked_first():
    from typer.testing import CliRunner

    from longlook.cli import app

    for bad, why in (("quic-go", "NAME@VERSION"), ("nosuch@1.0", "unknown stack")):
        r = CliRunner().invoke(app, ["matrix", "--out", "/nonexistent/x", "--stack", "ours", "--release", bad])
        assert r.exit_code != 0 and why in str(r.exception), r.exception


def test_every_server_that_can_send_a_retry_is_started_for_it_and_its_runs_are_judged_by_it(monkeypatch, tmp_path):
    import pandas as pd

    from longlook.analyses import matrix

    sc = Scenario.from_toml(scenario_toml(["ours", "quic-go", "gm-quic"], rounds=1, rate_mbit=20, rtt_ms=20))
    retried = [a for a in sc.arms if a.server_case]
    # gm-quic's server declares it sends no Retry, and its handshake needs its own client
    assert {(a.client or "native", a.server or "ours") for a in retried} == {
        (c, s) for c in ("native", "quic-go", "gm-quic") for s in ("ours", "quic-go")
    }
    assert all(a.server_case == "retry" and a.label.endswith("_retry") for a in retried)
    (cell,) = sc.cells()
    assert cell.run_options(retried[0]).server_case == "retry"  # recorded with the run

    def fake(experiment, run, cases):
        return {c: {"verdict": "passed", "evidence": "Retry seen"} for c in cases}

    monkeypatch.setattr(matrix, "judge_cases", fake)
    runs = pd.DataFrame(
        [
            {"arm": "ours_quic-go_retry", "options": {"client": "native", "server": "quic-go", "server_case": "retry"}},
            {"arm": "gm-quic_gm-quic", "options": {"client": "gm-quic", "server": "gm-quic"}},
        ]
    )
    m = matrix.judge(tmp_path, runs)
    assert matrix.cases_of(runs.iloc[0].to_dict()) == ("retry",)
    assert m.cells[("ours", "quic-go", "retry")].verdict == "passed"
    assert m.cells[("ours", "quic-go", "handshake")].verdict == matrix.NO_RUN  # judged on the page's runs
    gm = m.cells[("gm-quic", "gm-quic", "retry")]
    assert gm.verdict == matrix.UNSUPPORTED and "gen_retry_token" in gm.evidence


def test_a_server_case_is_asked_only_of_a_server_that_can_be_started_for_it():
    import pytest

    base = 'name = "x"\n[[arms]]\nlabel = "a"\n'
    for arm, why in (
        ('protocol = "h3"\nserver = "gm-quic"\nserver_case = "retry"', "gm-quic's server cannot be started for retry"),
        ('protocol = "h3"\nserver_case = "keyupdate"', "server_case must be one of retry"),
        ('protocol = "h2"\nserver_case = "retry"', "needs protocol"),
    ):
        with pytest.raises(Exception, match=why):
            Scenario.from_toml(base + arm + "\n")
    from longlook.kinds.pageload.spec import Arm

    assert Arm(label="a", protocol="h3", server_case="retry").server_case == "retry"


def test_each_server_is_started_for_a_retry_by_its_own_switch(tmp_path):
    from longlook.stacks.base import ServerCall
    from longlook.stacks.endpoint import ServerOptions
    from longlook.stacks.registry import resolve

    call = ServerCall(["server", "--listen", "0.0.0.0:4433"], {"QLOGDIR": "/q"}, prints_ready=True)
    switches = {
        "aioquic": ["--retry"],
        "quic-go": ["--retry"],
        "go-x-net": ["--retry"],
        "ngtcp2": ["--validate-addr"],
        "tquic": ["--enable-retry"],
        "quiche": ["--retry", "always"],
        "kwik": ["--retry", "always"],
        "s2n-quic": ["--retry"],
        "msquic": ["--retry"],
    }
    for name, flags in switches.items():
        asked = resolve(name).server_case_call("retry", call)
        assert asked.argv == call.argv + flags and asked.env == call.env and asked.prints_ready, name
    assert resolve("gm-quic").server_case_call("retry", call) is None
    assert "--retry" in ServerOptions(retry=True).argv() and "--retry" not in ServerOptions().argv()
    # one server per case: a Retry to every new address is no way to serve the other runs
    ours, quicgo = resolve("ours"), resolve("quic-go")
    assert ours.server_key(None, None, "retry") != ours.server_key(None, None)
    assert quicgo.server_key(None, None, "retry") != quicgo.server_key(None, None)


def test_every_pair_crosses_a_nat_rebinding_and_our_client_a_handover_each_run_judged_by_its_move(
    monkeypatch, tmp_path
):
    import pandas as pd

    from longlook.analyses import matrix
    from longlook.commands.matrix import migration_toml, nat_moves_toml

    stacks = ["ours", "quic-go", "gm-quic"]
    nat = Scenario.from_toml(nat_moves_toml(stacks, rounds=1, clients=["chromium"]))
    assert {a.client or "native" for a in nat.arms} == {"native", "quic-go", "gm-quic", "chromium"}
    port, address = nat.cells()
    assert (port.link.nat.rebind_to, address.link.nat.rebind_to) == ("port", "address")
    # the client's public addresses have a unicast scope (a server may refuse a move between
    # addresses of none, as those of the benchmarking range 198.18.0.0/15 are)
    shared = ipaddress.ip_network("100.64.0.0/10")
    moved_to = (port.link.nat.public, address.link.nat.public, address.link.nat.rebind_public)
    assert all(ipaddress.ip_address(a) in shared for a in moved_to), moved_to
    moving = Scenario.from_toml(migration_toml(stacks, rounds=1, clients=["chromium"]))
    # our client moves on every handover; quic-go's is told to (its adapter can), gm-quic's
    # cannot be, and gm-quic's server takes no other client
    assert [(a.client, a.server or "ours", a.client_case) for a in moving.arms] == [
        (None, "ours", None),
        (None, "quic-go", None),
        ("quic-go", "ours", "connection-migration"),
        ("quic-go", "quic-go", "connection-migration"),
    ]
    # the plain grid asks no client to move: its link stays put
    plain = Scenario.from_toml(scenario_toml(stacks, rounds=1, rate_mbit=20, rtt_ms=20))
    assert not any(a.client_case == "connection-migration" for a in plain.arms)
    (handover,) = moving.cells()
    assert handover.link.handover is not None
    # and each of its paths is behind a NAT of its own: the server sees the client move
    # between two scoped addresses
    moved_between = (handover.link.nat.public, handover.link.handover.public)
    assert all(ipaddress.ip_address(a) in shared for a in moved_between) and len(set(moved_between)) == 2
    toml = handover.link.to_linkem_toml(tmp_path)
    assert '[nat]\npublic = "100.64.0.1"' in toml and 'public = "100.64.0.2"' in toml.split("[handover]")[1]

    seen = []

    def fake(experiment, run, cases):
        seen.append((experiment.name, run["arm"], cases))
        return {c: {"verdict": "passed", "evidence": "moved"} for c in cases}

    monkeypatch.setattr(matrix, "judge_cases", fake)
    pair = {"client": "quic-go", "server": "ours"}
    nat_runs = pd.DataFrame(
        [
            {"arm": "quic-go_ours", "cell_id": port.id, "options": pair},
            {"arm": "quic-go_ours", "cell_id": address.id, "options": pair},
        ]
    )
    moved_runs = pd.DataFrame(
        [{"arm": "ours_ours", "cell_id": handover.id, "options": {"client": "native"}, "details": {}}]
    )
    page = pd.DataFrame([{"arm": "quic-go_ours", "options": pair}])
    m = matrix.judge(
        tmp_path / "experiment",
        page,
        moved=(
            (tmp_path / "rebinding", nat_runs, nat.cells()),
            (tmp_path / "migration", moved_runs, moving.cells()),
        ),
    )
    assert seen[1:] == [
        ("rebinding", "quic-go_ours", ("rebind-port",)),
        ("rebinding", "quic-go_ours", ("rebind-addr",)),
        ("migration", "ours_ours", ("connection-migration",)),
    ]
    assert m.cells[("quic-go", "ours", "rebind-addr")].verdict == "passed"
    assert m.cells[("ours", "ours", "connection-migration")].verdict == "passed"
    assert m.cells[("quic-go", "ours", "connection-migration")].verdict == matrix.NO_RUN


def test_a_move_or_an_asked_case_passes_only_when_the_download_went_on_to_its_end():
    from longlook.analyses.matrix import completed

    seen = {"verdict": "passed", "evidence": "PATH_CHALLENGE to the new port at #12, answered at #14"}
    stalled = completed("rebind-port", {"status": "failed", "error": "timed out after 20 s"}, seen)
    assert stalled["verdict"] == "failed" and "timed out after 20 s" in stalled["evidence"]
    assert "PATH_CHALLENGE" in stalled["evidence"]
    assert completed("rebind-port", {"status": "ok"}, seen) == seen
    # ngtcp2 1.11.0's client against quic-go's server: 0-RTT accepted, the page never came
    early = {"verdict": "passed", "evidence": "2 0-RTT packets from the client; the server accepted them"}
    broke = completed("zerortt", {"status": "timeout", "error": "unfinished: /obj/20k/0.jpg"}, early)
    assert broke["verdict"] == "failed" and "but the download did not complete (unfinished" in broke["evidence"]
    for case in ("resumption", "keyupdate", "chacha20", "v2", "retry"):
        assert completed(case, {"status": "failed", "error": "x"}, seen)["verdict"] == "failed", case
    # the page's cases are judged on what the wire shows, whatever became of the page
    assert completed("handshake", {"status": "failed", "error": "x"}, seen) == seen
