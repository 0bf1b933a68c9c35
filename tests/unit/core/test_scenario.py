"""Scenario files: validation messages, grid expansion, shipped scenarios."""

import tomllib

import pytest
import typer
from typer.testing import CliRunner

from longlook.binaries import find_binary
from longlook.commands import scenario as scenario_cmds
from longlook.errors import LonglookError
from longlook.core.spec import load_scenario
from longlook.units import format_size, parse_size
from longlook.kinds.pageload import Scenario
from longlook.linkprofile import LinkProfile, linkem_refusal
from repo_paths import ROOT

SCENARIOS = ROOT / "scenarios"

MINIMAL = """
name = "t"
workloads = ["1x1m"]
[[links]]
rate_mbit = 10
rtt_ms = 36
"""


def linkem_check_built() -> bool:
    """Whether linkem's own reading of a config (linkem-check) can be asked."""
    try:
        find_binary("linkem-check")
    except LonglookError:
        return False
    return True


def skip_without_linkem_check() -> None:
    if not linkem_check_built():
        pytest.skip("linkem-check is not built")


def scenario(text: str) -> Scenario:
    return Scenario.from_toml(text, source="scenarios/x.toml")


def error_of(text: str) -> str:
    with pytest.raises(LonglookError) as e:
        scenario(text)
    return e.value.message


# ---------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    "text,n", [("5k", 5000), ("10K", 10000), ("1m", 1_000_000), ("10MB", 10_000_000), ("1.5m", 1_500_000), (1234, 1234)]
)
def test_parse_size(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize(
    "n,text", [(5000, "5k"), (1_000_000, "1m"), (210_000_000, "210m"), (2_000_000_000, "2000m"), (1234, "1234")]
)
def test_format_size(n, text):
    assert format_size(n) == text


# ---------------------------------------------------------------- grid


def test_quick_scenario_expands_to_its_four_cells_in_file_order():
    s = load_scenario(SCENARIOS / "quick.toml")
    ids = [c.id for c in s.cells()]
    assert ids == [
        "link=10mbit-36ms,loss=0|wl=1x1m|cc=cubic|tcpcc=cubic|macw=default|0rtt=on",
        "link=10mbit-36ms,loss=0|wl=10x100k|cc=cubic|tcpcc=cubic|macw=default|0rtt=on",
        "link=50mbit-36ms,loss=0|wl=1x1m|cc=cubic|tcpcc=cubic|macw=default|0rtt=on",
        "link=50mbit-36ms,loss=0|wl=10x100k|cc=cubic|tcpcc=cubic|macw=default|0rtt=on",
    ]
    c = s.cells()[1]
    assert c.link.rtt_ms() == 36 and c.link.resolved("down").delay_ms == 18
    assert c.link.resolved("up").buffer_bytes == 30000
    assert c.workload.url_path() == "/page/10x100k.html"
    assert s.rounds == 5 and [a.label for a in s.arms] == ["h3", "h2"]
    assert s.total_runs() == 40
    # deterministic: a second load gives the same grid
    assert [c.id for c in load_scenario(SCENARIOS / "quick.toml").cells()] == ids


def test_options_and_links_sweep_as_a_product():
    s = scenario(
        MINIMAL.replace("rate_mbit = 10", "rate_mbit = [5, 10, 50]")
        + '[options]\nquic_cc = ["cubic", "bbr"]\nzero_rtt = ["on", "off"]\n'
    )
    cells = s.cells()
    assert len(cells) == 3 * 2 * 2
    assert len({c.id for c in cells}) == len(cells)
    assert cells[0].id == "link=5mbit-36ms,loss=0|wl=1x1m|cc=cubic|tcpcc=cubic|macw=default|0rtt=on"
    assert cells[1].id.endswith("cc=cubic|tcpcc=cubic|macw=default|0rtt=off")
    assert cells[2].options.quic_cc == "bbr"


def test_links_differing_only_in_buffer_get_distinct_labels():
    s = scenario(MINIMAL.replace("rtt_ms = 36", "rtt_ms = 36\nbuffer_bytes = [30000, 300000]"))
    assert [c.link_label for c in s.cells()] == ["10mbit-36ms,loss=0,buf=30000", "10mbit-36ms,loss=0,buf=300000"]
    assert [l.name for l in s.links] == ["10mbit-36ms,loss=0,buf=30000", "10mbit-36ms,loss=0,buf=300000"]


def test_a_middlebox_is_labelled_by_what_it_sets_not_by_its_defaults():
    s = scenario(MINIMAL + "[[links]]\nrate_mbit = 10\nrtt_ms = 36\nmiddlebox = { udp_rate_mbit = 0.3 }\n")
    assert [c.link_label for c in s.cells()] == ["10mbit-36ms,loss=0", "10mbit-36ms,loss=0,middlebox-udp_rate_mbit=0.3"]


def test_a_middlebox_s_ecn_policy_labels_its_cells_and_reaches_linkem_only_when_set():
    s = scenario(
        MINIMAL
        + '[[links]]\nrate_mbit = 10\nrtt_ms = 36\nmiddlebox = { ecn = "bleach" }\n'
        + '[[links]]\nrate_mbit = 10\nrtt_ms = 36\ndown = { middlebox = { ecn = "ect0_to_ect1" } }\n'
    )
    assert [c.link_label for c in s.cells()] == [
        "10mbit-36ms,loss=0",
        "10mbit-36ms,loss=0,middlebox-ecn=bleach",
        "10mbit-36ms,loss=0,down-middlebox-ecn=ect0_to_ect1",
    ]
    plain, bleach, remark = (tomllib.loads(link.to_linkem_toml()) for link in s.links)
    assert "middlebox" not in plain["up"]
    assert bleach["up"]["middlebox"]["ecn"] == "bleach" and bleach["down"]["middlebox"]["ecn"] == "bleach"
    assert "middlebox" not in remark["up"] and remark["down"]["middlebox"]["ecn"] == "ect0_to_ect1"
    # a middlebox without it writes no ecn key: linkem leaves the field alone
    other = scenario(MINIMAL.replace("rtt_ms = 36", "rtt_ms = 36\nmiddlebox = { block_udp = true }"))
    assert "ecn" not in tomllib.loads(other.links[0].to_linkem_toml())["up"]["middlebox"]
    if not linkem_check_built():
        return
    for link in s.links:  # linkem reads what Python wrote
        assert linkem_refusal(link) is None


def test_an_unknown_middlebox_ecn_policy_is_one_clear_error():
    e = error_of(MINIMAL + 'middlebox = { ecn = "bleech" }\n')
    assert "middlebox.ecn" in e and "Traceback" not in e, e
    for allowed in ("bleach", "drop_ect", "ect0_to_ect1", "ect1_to_ect0", "mark_ce"):
        assert allowed in e, e
    e = error_of(MINIMAL + "middlebox = { ecn = true }\n")
    assert "middlebox.ecn" in e, e


def test_links_with_the_same_rtt_split_differently_are_told_apart():
    s = scenario(
        MINIMAL.replace(
            "rtt_ms = 36\n",
            "delay_ms = 18\n[[links]]\nrate_mbit = 10\nup = { delay_ms = 6 }\ndown = { delay_ms = 30 }\n",
        )
    )
    labels = [c.link_label for c in s.cells()]
    assert len(set(labels)) == 2 and all(l.startswith("10mbit-36ms,loss=0,") for l in labels)


def test_trace_paths_are_relative_to_the_scenario_file(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "lte.mahi").write_text("1\n2\n")
    text = MINIMAL.replace("rate_mbit = 10", 'trace = "traces/lte.mahi"')
    (tmp_path / "s.toml").write_text(text)
    s = load_scenario(tmp_path / "s.toml")
    assert s.base_dir == tmp_path
    assert s.cells()[0].link_label == "trace:lte-36ms,loss=0"
    assert str(tmp_path / "traces" / "lte.mahi") in s.links[0].to_linkem_toml(s.base_dir)
    (tmp_path / "t.toml").write_text(text.replace("lte.mahi", "missing.mahi"))
    with pytest.raises(LonglookError, match="up trace: no such file .*missing.mahi"):
        load_scenario(tmp_path / "t.toml")


def test_cell_lookup():
    s = load_scenario(SCENARIOS / "quick.toml")
    c = s.cells()[3]
    assert s.cell(c.id) == c
    with pytest.raises(KeyError):
        s.cell("nope")


def test_workload_forms():
    s = scenario(
        MINIMAL.replace(
            'workloads = ["1x1m"]', 'workloads = ["200x5k", "bulk:10m", {object_count = [1, 2], object_size = "100k"}]'
        )
    )
    assert [w.label for w in s.workloads] == ["200x5k", "bulk-10m", "1x100k", "2x100k"]
    assert s.workloads[1].url_path() == "/bulk/10m"


def test_round_order_is_reproducible_and_shuffled():
    s = load_scenario(SCENARIOS / "quick.toml")
    cell = s.cells()[0]
    orders = [tuple(a.label for a in s.round_order(cell, r)) for r in range(20)]
    assert orders == [tuple(a.label for a in s.round_order(cell, r)) for r in range(20)]
    assert set(orders) == {("h3", "h2"), ("h2", "h3")}


# ---------------------------------------------------------------- shipped scenarios


def _page_load_scenarios() -> list:
    """Fairness experiments (`kind = "fairness"`) have their own model and tests."""
    return [p for p in sorted(SCENARIOS.glob("*.toml")) if 'kind = "fairness"' not in p.read_text()]


@pytest.mark.parametrize("path", _page_load_scenarios(), ids=lambda p: p.name)
def test_shipped_scenarios_validate(path):
    s = load_scenario(path)
    assert s.cells()
    assert s.toml_text == path.read_text()


def test_kakhki_fig6a_grid_matches_the_paper():
    s = load_scenario(SCENARIOS / "kakhki-fig6a-object-size.toml")
    assert sorted({c.link.rate_mbit for c in s.cells()}) == [5, 10, 50, 100]
    assert [w.object_size for w in s.workloads] == [5000, 10000, 100000, 200000, 500000, 1_000_000, 10_000_000]
    assert all(
        c.link.rtt_ms() == 36 and c.link.resolved("down").buffer_bytes == round(c.link.rate_mbit * 4500)
        for c in s.cells()
    )  # one BDP
    assert all(c.options.max_cwnd_packets == 430 and c.options.zero_rtt for c in s.cells())
    assert s.rounds == 10 and s.statistics.alpha == 0.01 and s.statistics.test == "welch"
    assert s.comparisons() == [("h3", "h2")]


def test_kakhki_fig6b_pages_are_one_megabyte():
    s = load_scenario(SCENARIOS / "kakhki-fig6b-object-count.toml")
    assert [w.object_count for w in s.workloads] == [1, 2, 5, 10, 100, 200]
    assert {w.total_bytes for w in s.workloads} == {1_000_000}


def test_kakhki_fig7_compares_zero_rtt_arms_of_quic():
    s = load_scenario(SCENARIOS / "kakhki-fig7-zero-rtt.toml")
    assert s.comparisons() == [("h3-0rtt", "h3-1rtt")]
    cell = s.cells()[0]
    assert "0rtt" not in cell.id  # set per arm, so not a cell dimension
    assert cell.run_options(s.arm("h3-0rtt")).zero_rtt is True
    assert cell.run_options(s.arm("h3-1rtt")).zero_rtt is False
    assert cell.run_options(s.arm("h3-1rtt")).protocol == "h3"


def test_kakhki_fig8_loss_and_delay():
    loss = load_scenario(SCENARIOS / "kakhki-fig8a-loss.toml")
    assert all(c.link.expected_loss("up") == c.link.expected_loss("down") == 0.01 for c in loss.cells())
    assert "loss=0.01" in loss.cells()[0].id
    rtt = load_scenario(SCENARIOS / "kakhki-fig8b-rtt112.toml")
    assert all(c.link.rtt_ms() == 112 for c in rtt.cells())


# ---------------------------------------------------------------- errors


def test_bad_size_names_the_field_and_the_form():
    msg = error_of(
        MINIMAL.replace('workloads = ["1x1m"]', 'workloads = ["1x1m", {object_count = 2, object_size = "big"}]')
    )
    assert msg.startswith("scenarios/x.toml: workloads[1].object_size: must be a size like 10k, 1m")
    assert msg.endswith('got "big"')


def test_bad_value_in_a_sweep_names_its_position():
    msg = error_of(MINIMAL.replace("rate_mbit = 10", "rate_mbit = [10, -1]"))
    assert "links[0].rate_mbit[1]: Input should be greater than or equal to 0.01, got -1" in msg


def test_unknown_protocol_lists_the_known_ones():
    msg = error_of('protocols = ["h3", "quic"]\n' + MINIMAL)
    assert 'protocols: unknown protocol "quic"; known: h3, h2' in msg


def test_bad_option_lists_allowed_values():
    msg = error_of(MINIMAL + '[options]\nquic_cc = "vegas"\n')
    assert "options.quic_cc[0]: Input should be 'cubic', 'newreno' or 'bbr', got 'vegas'" in msg


def test_unknown_link_field_and_toml_trap():
    assert "links[0].buffer: unknown field" in error_of(MINIMAL + "buffer = 3\n")
    # a top-level key written after [[links]] lands inside the link: say so
    msg = error_of(MINIMAL + "rounds = 3\n")
    assert "links[0].rounds: not a field here" in msg and "above the first [table]" in msg
    msg = error_of(MINIMAL + '[options]\nquic_cc = "bbr"\nseed = 3\n')
    assert "options.seed: not a field here" in msg
    # a link may have a name (also a top-level key): not mistaken for the trap
    assert scenario(MINIMAL + 'name = "lan"\n').links[0].name == "lan"


def test_other_errors():
    assert "rtt_ms or delay_ms, not both" in error_of(MINIMAL + "delay_ms = 5\n")
    assert 'unknown client "safari"' in error_of('client = "safari"\n' + MINIMAL)
    assert "statistics.test: Input should be 'welch' or 'mannwhitney'" in error_of(
        MINIMAL + '[statistics]\ntest = "ttest"\n'
    )
    assert "duplicate cells" in error_of(MINIMAL.replace('["1x1m"]', '["1x1m", "1x1m"]'))
    assert 'baseline: "h1" is not an arm' in error_of('baseline = "h1"\n' + MINIMAL)
    assert "not valid TOML" in error_of("name = ")
    with pytest.raises(LonglookError, match="no such scenario file"):
        load_scenario("/nonexistent.toml")


# ---------------------------------------------------------------- commands


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    scenario_cmds.register(app)
    return app


def test_scenario_show_prints_every_cell():
    result = CliRunner().invoke(_app(), ["scenario", "show", str(SCENARIOS / "quick.toml")])
    assert result.exit_code == 0, result.output
    assert "4 cells x 5 rounds x 2 arms = 40 runs" in result.output
    assert result.output.count("/page/") == 4
    assert "link=50mbit-36ms,loss=0|wl=10x100k" in result.output


def test_scenario_validate(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(MINIMAL.replace("rate_mbit = 10", "rate_mbit = 0"))
    result = CliRunner().invoke(_app(), ["scenario", "validate", str(bad)])
    assert isinstance(result.exception, LonglookError)  # cli.main turns it into exit 2
    assert "links[0].rate_mbit: Input should be greater than or equal to 0.01" in str(result.exception)
    ok = CliRunner().invoke(_app(), ["scenario", "validate", str(SCENARIOS / "quick.toml")])
    assert ok.exit_code == 0 and ": ok: 4 cells" in ok.output


# ---------------------------------------------------------------- server knobs
def test_initial_window_and_n_conn_are_options_like_macw():
    s = scenario(MINIMAL + "[options]\ninitial_window_packets = [10, 40]\nn_conn = 2\n")
    ids = [c.id for c in s.cells()]
    assert ids == [
        "link=10mbit-36ms,loss=0|wl=1x1m|cc=cubic|tcpcc=cubic|macw=default|iw=10|nconn=2|0rtt=on",
        "link=10mbit-36ms,loss=0|wl=1x1m|cc=cubic|tcpcc=cubic|macw=default|iw=40|nconn=2|0rtt=on",
    ]
    c = s.cells()[1]
    assert c.dims()["initial_window_packets"] == 40 and c.dims()["n_conn"] == 2
    from longlook.kinds.pageload.measure import server_options

    so = server_options(c.run_options(s.arms[0]))
    assert (so.initial_window_packets, so.n_conn) == (40, 2)
    argv = " ".join(so.argv())
    assert "--initial-window-packets 40" in argv and "--n-conn 2" in argv


def test_unused_new_options_leave_cell_ids_and_dims_as_they_were():
    (c,) = scenario(MINIMAL).cells()
    assert c.id == "link=10mbit-36ms,loss=0|wl=1x1m|cc=cubic|tcpcc=cubic|macw=default|0rtt=on"
    assert "initial_window_packets" not in c.dims() and "n_conn" not in c.dims()
    assert c.run_options(scenario(MINIMAL).arms[0]).n_conn is None


def test_arms_override_initial_window_and_n_conn():
    s = scenario(
        MINIMAL + '[[arms]]\nlabel = "iw4"\nprotocol = "h3"\ninitial_window_packets = 4\n'
        '[[arms]]\nlabel = "n2"\nprotocol = "h3"\nn_conn = 2\n'
    )
    (c,) = s.cells()
    assert "iw=" not in c.id and "nconn=" not in c.id
    a, b = (c.run_options(arm) for arm in s.arms)
    assert (a.initial_window_packets, a.n_conn) == (4, None) and (b.initial_window_packets, b.n_conn) == (None, 2)


def test_bad_initial_window_or_n_conn_is_one_clear_error():
    assert "positive" in error_of(MINIMAL + "[options]\ninitial_window_packets = 0\n")
    assert "positive" in error_of(MINIMAL + "[options]\nn_conn = [2, -1]\n")
    assert "greater than 0" in error_of(
        MINIMAL + '[[arms]]\nlabel = "a"\nprotocol = "h3"\nn_conn = 0\n[[arms]]\nlabel = "b"\nprotocol = "h2"\n'
    )
    msg = error_of(MINIMAL + '[options]\nquic_cc = "bbr"\nn_conn = 2\n')
    assert 'n_conn = 2 emulates N Cubic connections, but quic_cc = "bbr"' in msg
    msg = error_of(
        MINIMAL + '[[arms]]\nlabel = "a"\nprotocol = "h3"\nquic_cc = "newreno"\nn_conn = 3\n'
        '[[arms]]\nlabel = "b"\nprotocol = "h2"\n'
    )
    assert 'arm "a"' in msg and "quic_cc" in msg


def test_ecn_is_an_option_in_the_cell_id_only_when_set():
    s = scenario(MINIMAL + '[options]\necn = ["on", "off"]\n')
    assert [c.id.rsplit("|", 1)[-1] for c in s.cells()] == ["ecn=on", "ecn=off"]
    assert [c.dims()["ecn"] for c in s.cells()] == [True, False]
    (c,) = scenario(MINIMAL).cells()
    assert "ecn" not in c.id and "ecn" not in c.dims() and c.run_options(scenario(MINIMAL).arms[0]).ecn is None
    from longlook.kinds.pageload.measure import server_options

    on, off = (server_options(c.run_options(s.arms[0])) for c in s.cells())
    assert "--no-ecn" not in on.argv() and "--no-ecn" in off.argv()
    # an unset switch keeps quinn's default: ECT(0)
    assert "--no-ecn" not in server_options(c.run_options(scenario(MINIMAL).arms[0])).argv()


def test_ecn_per_arm_compares_quic_with_and_without_it():
    s = scenario(
        MINIMAL + '[[arms]]\nlabel = "ecn"\nprotocol = "h3"\necn = true\n'
        '[[arms]]\nlabel = "plain"\nprotocol = "h3"\necn = "off"\n'
    )
    (c,) = s.cells()
    assert "ecn=" not in c.id
    assert [c.run_options(a).ecn for a in s.arms] == [True, False]


def test_ecn_on_an_arm_with_another_stacks_quic_is_refused():
    msg = error_of('client = "chromium"\n' + MINIMAL + "[options]\necn = true\n")
    assert 'arm "h3"' in msg and "client chromium" in msg
    msg = error_of(
        MINIMAL + '[options]\necn = false\n[[arms]]\nlabel = "h3"\nprotocol = "h3"\nclient = "chromium"\n'
        '[[arms]]\nlabel = "h2"\nprotocol = "h2"\n'
    )
    assert 'arm "h3"' in msg and "client chromium" in msg and "own ECN" in msg
    # an arm that sets ECN for itself leaves the other arms' stacks alone
    ok = scenario(
        MINIMAL + '[[arms]]\nlabel = "go"\nprotocol = "h3"\nserver = "quic-go"\nclient = "quic-go"\n'
        '[[arms]]\nlabel = "tcp-ecn"\nprotocol = "h2"\necn = true\n'
    )
    (c,) = ok.cells()
    assert [c.run_options(a).ecn for a in ok.arms] == [None, True]


def test_a_buffer_of_one_bdp_fits_every_rate_of_a_sweep():
    sc = scenario(MINIMAL.replace("rate_mbit = 10", "rate_mbit = [10, 50]") + "buffer_bdp = 1\n")
    bufs = [c.link.resolved("down").buffer_bytes for c in sc.cells()]
    assert bufs == [45_000, 225_000]  # rate x 36 ms
    assert "buffer_bdp" not in sc.cells()[0].link.to_linkem_toml()  # linkem gets bytes
    assert [c.link.name for c in sc.cells()] == ["10mbit-36ms,loss=0", "50mbit-36ms,loss=0"]
    half_down = scenario(MINIMAL + "buffer_bytes = 30000\ndown = { buffer_bdp = 0.5 }\n").cells()[0].link
    assert (half_down.resolved("down").buffer_bytes, half_down.resolved("up").buffer_bytes) == (22_500, 30_000)
    assert "buffer_bytes or buffer_bdp, not several" in error_of(MINIMAL + "buffer_bytes = 30000\nbuffer_bdp = 1\n")
    assert "less than one packet" in error_of(MINIMAL.replace("rtt_ms = 36", "rtt_ms = 1") + "buffer_bdp = 1\n")


# ---- a link's NAT -------------------------------------------------------------------------

NAT_BASE = "timeout_s = 30\n" + MINIMAL


def test_a_links_nat_reaches_linkem_as_its_nat_table():
    s = scenario(NAT_BASE + 'nat = { udp_timeout_s = 30, rebind_at_s = [1.5, 4], rebind_to = "address" }\n')
    toml = tomllib.loads(s.links[0].to_linkem_toml())
    assert toml["nat"]["rebind_at_s"] == [1.5, 4.0]
    assert toml["nat"]["udp_timeout_s"] == 30.0
    assert toml["nat"]["rebind_to"] == "address"
    assert "nat" not in tomllib.loads(scenario(NAT_BASE).links[0].to_linkem_toml())


def test_links_with_and_without_a_nat_get_their_own_labels():
    text = NAT_BASE + "[[links]]\nrate_mbit = 10\nrtt_ms = 36\nnat = { rebind_at_s = [1.0] }\n"
    s = scenario(text)
    labels = [c.link_label for c in s.cells()]
    assert len(set(labels)) == 2, labels
    assert any("nat=on" in x and "nat-rebind_at_s=1" in x for x in labels), labels


@pytest.mark.parametrize(
    ("nat", "says"),
    [
        ("rebind_at_s = [40.0]", "past the run's timeout_s = 30"),
        ("rebind_every_s = 31", "past the run's timeout_s = 30"),
        ("udp_timeout_s = 0", "udp_timeout_s"),
        ("rebind_at_s = [3.0, 2.0]", "increasing"),
        ('rebind_to = "address"', "no scheduled rebinding"),
        ("rebind_every_s = 0.01", "at least 0.1"),
        ("idle_s = 3", "unknown field"),
    ],
)
def test_bad_nat_settings_are_one_clear_error(nat: str, says: str):
    e = error_of(NAT_BASE + f"nat = {{ {nat} }}\n")
    assert says in e and "nat" in e and "Traceback" not in e, e


def test_linkem_refuses_what_python_cannot_see():
    skip_without_linkem_check()
    for nat, says in [
        ({"public": "198.18.2.7"}, "testbed's own subnets"),
        ({"public": "banana.1"}, "not an IPv4 address"),
        ({"rebind_at_s": [1.0], "rebind_to": "address", "rebind_public": "198.18.5.1"}, "itself"),
    ]:
        link = LinkProfile(rate_mbit=10, nat=nat)
        refusal = linkem_refusal(link)
        assert refusal is not None and says in refusal, (nat, refusal)
    assert linkem_refusal(LinkProfile(rate_mbit=10, nat={"rebind_at_s": [1.0]})) is None


# ---- a link's AQM -------------------------------------------------------------------------


def test_a_links_aqm_reaches_linkem_per_direction_and_names_its_cells():
    s = scenario(
        MINIMAL
        + 'aqm = { discipline = "codel" }\n'
        + "[[links]]\nrate_mbit = 10\nrtt_ms = 36\n"
        + 'down = { aqm = { discipline = "pie", ecn = true, target_ms = 20 } }\n'
        + "[[links]]\nrate_mbit = 10\nrtt_ms = 36\n"
    )
    first, second, third = (tomllib.loads(link.to_linkem_toml()) for link in s.links)
    assert first["up"]["aqm"] == {"discipline": "codel", "ecn": False}
    assert first["down"]["aqm"] == {"discipline": "codel", "ecn": False}
    assert "aqm" not in second["up"] and second["down"]["aqm"] == {"discipline": "pie", "ecn": True, "target_ms": 20.0}
    assert "aqm" not in third["up"] and "aqm" not in third["down"]
    labels = [c.link_label for c in s.cells()]
    assert len(set(labels)) == 3, labels
    assert any("aqm=codel" in x for x in labels) and any("down-aqm=pie+ecn" in x for x in labels), labels
    for link in s.links:  # linkem reads what Python wrote
        if not linkem_check_built():
            break
        assert linkem_refusal(link) is None


@pytest.mark.parametrize(
    ("aqm", "says"),
    [
        ('discipline = "red"', "discipline"),
        ('discipline = "codel", alpha = 0.2', "alpha: not a setting of CoDel"),
        ('discipline = "pie", interval_ms = 50', "interval_ms: not a setting of PIE"),
        ('discipline = "codel", target_ms = 0', "target_ms"),
        ('discipline = "pie", mark_ecn_threshold = 2', "mark_ecn_threshold"),
        ('discipline = "fq_codel", alpha = 0.1', "alpha: not a setting of FQ-CoDel"),
        ('discipline = "pie", flows = 8', "flows: not a setting of PIE"),
        ('discipline = "codel", quantum_bytes = 3000', "quantum_bytes: not a setting of CoDel"),
        ('discipline = "fq_codel", flows = 0', "flows"),
        ("ecn = true", "discipline"),
        ('discipline = "dualpi2", ecn = true', "DualPI2 always marks"),
        ('discipline = "dualpi2", interval_ms = 100', "interval_ms: not a setting of DualPI2"),
        ('discipline = "codel", coupling_factor = 2', "coupling_factor: not a setting of CoDel"),
        ('discipline = "pie", random_draws = true', "random_draws: not a setting of PIE"),
        ('discipline = "dualpi2", classic_protection = 200', "classic_protection"),
    ],
)
def test_bad_aqm_settings_are_one_clear_error(aqm: str, says: str):
    e = error_of(MINIMAL + f"aqm = {{ {aqm} }}\n")
    assert says in e and "aqm" in e and "Traceback" not in e, e


def test_the_self_check_measures_the_path_without_its_nat_and_aqm():
    plain = LinkProfile(rate_mbit=10)
    assert plain.for_self_check() is plain
    link = LinkProfile(rate_mbit=10, aqm={"discipline": "codel"}, down={"aqm": {"discipline": "pie"}}, nat={})
    checked = link.for_self_check()
    assert checked.nat is None
    assert checked.resolved("up").aqm is None and checked.resolved("down").aqm is None
    assert checked.resolved("down").rate_mbit == 10
    assert "aqm" not in checked.to_linkem_toml() and "aqm" in link.to_linkem_toml()


def test_dualpi2_reaches_linkem_without_an_ecn_key_and_takes_no_reordering():
    ok = scenario(MINIMAL + 'down = { aqm = { discipline = "dualpi2", coupling_factor = 2.5, min_th_ms = 1 } }\n')
    toml = tomllib.loads(ok.links[0].to_linkem_toml())
    assert toml["down"]["aqm"] == {"discipline": "dualpi2", "coupling_factor": 2.5, "min_th_ms": 1}
    e = error_of(MINIMAL + 'aqm = { discipline = "dualpi2" }\nreorder = { probability = 0.01, ahead_ms = 2 }\n')
    assert "dualpi2 and reorder cannot be combined" in e, e
    if not linkem_check_built():
        return
    assert linkem_refusal(ok.links[0]) is None


def test_fq_codel_decides_the_order_so_it_takes_no_reordering():
    e = error_of(MINIMAL + 'aqm = { discipline = "fq_codel" }\nreorder = { probability = 0.01, ahead_ms = 2 }\n')
    assert "fq_codel and reorder cannot be combined" in e, e
    ok = scenario(MINIMAL + 'down = { aqm = { discipline = "fq_codel", quantum_bytes = 300, flows = 64 } }\n')
    toml = tomllib.loads(ok.links[0].to_linkem_toml())
    assert toml["down"]["aqm"] == {"discipline": "fq_codel", "ecn": False, "quantum_bytes": 300, "flows": 64}
    if not linkem_check_built():
        return
    assert linkem_refusal(ok.links[0]) is None


# ---- a client that moves (a handover) -------------------------------------------------------

HANDOVER = "handover = { at_s = 1.0, notice_ms = 50, path = { rate_mbit = 10, rtt_ms = 60, loss = 0.01 } }\n"


def test_a_handover_reaches_linkem_with_its_second_path_and_its_own_label():
    s = scenario(NAT_BASE + "[[links]]\nrate_mbit = 10\nrtt_ms = 36\n" + HANDOVER)
    link = s.links[1]
    toml = tomllib.loads(link.to_linkem_toml())
    assert toml["handover"]["client"] == "198.18.1.3" and toml["handover"]["at_s"] == 1.0
    path = toml["handover"]["path"]
    assert path["up"]["delay_ms"] == 30.0 and path["down"]["loss"] == 0.01 and path["down"]["rate_mbit"] == 10.0
    assert "handover" not in tomllib.loads(s.links[0].to_linkem_toml())
    assert link.handover.migrate_at_ms() == 1050.0  # the client moves when it is told
    assert link.for_self_check().handover is None  # the check's probes stay on the first path
    labels = [c.link_label for c in s.cells()]
    assert any("handover=1s-to-10mbit-60ms" in x for x in labels) and len(set(labels)) == 2, labels


@pytest.mark.parametrize(
    ("handover", "says"),
    [
        ("at_s = 40.0, path = { rate_mbit = 10 }", "past the run's timeout_s = 30"),
        ("at_s = 0, path = { rate_mbit = 10 }", "at_s"),
        ("at_s = 1.0", "path"),
        ("at_s = 1.0, path = { rtt_ms = 10 }", "rate_mbit or trace"),
        ("at_s = 1.0, path = { rate_mbit = 10, nat = {} }", "second path is a link's rate"),
        ("at_s = 1.0, when = 2, path = { rate_mbit = 10 }", "when"),
        ('at_s = 1.0, public = "100.64.0.2", path = { rate_mbit = 10 }', "only with one"),
    ],
)
def test_bad_handover_settings_are_one_clear_error(handover: str, says: str):
    e = error_of(NAT_BASE + f"handover = {{ {handover} }}\n")
    assert says in e and "handover" in e and "Traceback" not in e, e


def test_linkem_takes_the_handover_python_writes():
    skip_without_linkem_check()
    link = scenario(NAT_BASE + HANDOVER).links[0]
    assert linkem_refusal(link) is None


BEHIND_NATS = (
    'nat = { public = "100.64.0.1" }\n'
    'handover = { at_s = 1.0, public = "100.64.0.2", path = { rate_mbit = 10, rtt_ms = 60 } }\n'
)


def test_behind_a_nat_each_path_has_its_own_public_address():
    link = scenario(NAT_BASE + BEHIND_NATS).links[0]
    toml = tomllib.loads(link.to_linkem_toml())
    assert (toml["nat"]["public"], toml["handover"]["public"]) == ("100.64.0.1", "100.64.0.2")
    # a NAT asks a handover's second path for its own public address, and without one refuses it
    e = error_of(NAT_BASE + 'nat = { public = "100.64.0.1" }\n' + HANDOVER)
    assert "handover.public" in e and "Traceback" not in e, e
    # the self-checks run without the NAT, and so without the second path's public address
    assert "public" not in tomllib.loads(link.without_nat().to_linkem_toml())["handover"]
    skip_without_linkem_check()
    assert linkem_refusal(link) is None
    assert linkem_refusal(link.without_nat()) is None
