"""Hostile input, one test per class: a damaged experiment directory, output
paths, files that are not regular files, numbers out of range, link profiles Python and
linkem must agree on, grid sizes. Each is one clear error, before any work starts."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
from typer.testing import CliRunner

from longlook.cli import app
from longlook.core.record import new_run_id
from longlook.core.store import DB_FILE, Store
from longlook.errors import LonglookError
from longlook.kinds.pageload import record_from_fetch

SMALL = """
name = "hostile"
rounds = 3
workloads = ["1x10k"]
[[links]]
rate_mbit = 10
rtt_ms = 36
"""


def _invoke(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args])


def _one_clear_error(result, *words: str) -> str:
    e = result.exception
    assert isinstance(e, LonglookError), f"{type(e).__name__}: {e}\n{result.output}"
    for w in words:
        assert w in str(e), str(e)
    return str(e)


def fill(directory: Path, sc) -> None:
    """Synthetic ok runs of every arm in every cell and round."""
    rng = np.random.default_rng(1)
    with Store.open(directory) as st:
        st.start_experiment(sc, {"endpoint": "endpoint 0.1.0"})
        for cell in sc.cells():
            for rnd in range(sc.rounds):
                for pos, arm in enumerate(sc.round_order(cell, rnd)):
                    f = {
                        "protocol_requested": arm.protocol,
                        "protocol": arm.protocol,
                        "ok": True,
                        "plt_ms": 1000 * rng.normal(1, 0.02),
                        "handshake_ms": 40,
                        "ttfb_ms": 80,
                        "objects": [],
                    }
                    st.record_run(
                        record_from_fetch(
                            f, run_id=new_run_id(), cell_id=cell.id, round=rnd, position=pos, arm=arm.label
                        )
                    )
        st.finish_experiment()


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    from longlook.kinds.pageload import Scenario

    d = tmp_path_factory.mktemp("good") / "exp"
    fill(d, Scenario.from_toml(SMALL))
    return d


DAMAGE = [  # (what, SQL on a copy of a good store, words the error must contain)
    ("runs dropped", "DROP TABLE runs", "no table 'runs'"),
    ("metrics dropped", "DROP TABLE metrics", "no table 'metrics'"),
    ("a column dropped", "ALTER TABLE runs DROP COLUMN status", "lacks column(s) status"),
    ("no experiment row", "DELETE FROM experiments", "no experiment recorded"),
    ("experiment without versions", "UPDATE experiments SET versions = NULL", "has no versions"),
    ("scenario_toml NULL", "UPDATE experiments SET scenario_toml = NULL", "has no scenario_toml"),
    (
        "malformed details",
        "UPDATE runs SET details = '{oops' WHERE run_id = (SELECT min(run_id) FROM runs)",
        "column details is not valid JSON",
    ),
    ("malformed dims", "UPDATE cells SET dims = '[1,'", "column dims is not valid JSON"),
    ("versions not an object", "UPDATE experiments SET versions = '[1]'", "column versions is not a JSON object"),
    ("a newer schema", "UPDATE longlook_schema SET version = 99", "newer longlook"),
]


@pytest.mark.parametrize("case", DAMAGE, ids=[c[0] for c in DAMAGE])
def test_every_reader_of_a_damaged_experiment_directory_gives_one_clear_error(good, tmp_path, case):
    _, sql, words = case
    d = tmp_path / "damaged"
    shutil.copytree(good, d)
    con = duckdb.connect(str(d / DB_FILE))
    con.execute(sql)
    con.close()
    for args in (
        ["compare", good, d],
        ["report", d, "--out", tmp_path / "r.html"],
        ["analyze", "fallback", d, "--out", tmp_path / "fb"],
        ["states", d],
        ["states", "diff", good, d],
    ):
        _one_clear_error(_invoke(*args), str(d), words)
    with pytest.raises(LonglookError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Store.open(d, read_only=True)


def test_reproduce_no_run_refuses_another_scenarios_store(tmp_path):
    from longlook.analyses.reproduce import NOT_RUN, SCENARIOS, reproduce
    from longlook.core.spec import load_scenario

    shipped = SCENARIOS["kakhki-fig2-macw"]
    short = load_scenario(shipped.path, shipped.short)
    other = load_scenario(shipped.path, {**shipped.short, "rounds": short.rounds + 1})
    fill(tmp_path / short.name, other)
    result = reproduce(tmp_path, budget="short", only=["kakhki-fig2"], execute=False)
    row = result.rows[0]
    assert row.outcome.verdict == NOT_RUN, row.outcome
    assert "another scenario" in row.scenario.detail and "rounds" in row.scenario.detail


def test_output_paths_are_checked_before_any_work(good, tmp_path):
    a_file = tmp_path / "afile"
    a_file.write_text("mine")
    a_dir = tmp_path / "adir"
    a_dir.mkdir()
    bad_files = [
        (a_dir, "is a directory"),
        (a_file / "x.json", "which is a file"),
        ("/dev/null", "under /dev"),
        ("/proc/longlook/x.json", "under /proc"),
    ]
    for path, words in bad_files:
        for option in ("--json", "--junit", "--html"):
            _one_clear_error(_invoke("compare", good, good, option, path), option, words)
        _one_clear_error(_invoke("report", good, "--out", path), "--out", words)
        _one_clear_error(_invoke("trace", "generate", "incr", "--out", path), "--out", words)
    for path, words in [(a_file, "is a file"), (a_file / "sub", "which is a file"), ("/sys/x", "under /sys")]:
        _one_clear_error(_invoke("states", good, "--out", path), "--out", words)
        _one_clear_error(_invoke("analyze", "fallback", good, "--out", path), "--out", words)
        _one_clear_error(_invoke("reproduce", "--no-run", "--only", "kakhki-fig2", "--out", path), "--out", words)
    _one_clear_error(
        _invoke("compare", "--history", good, good, "--plot", tmp_path / "h.xyz"),
        "--plot",
        "unknown extension '.xyz'",
        ".svg",
    )
    assert a_file.read_text() == "mine" and not any(a_dir.iterdir())


def _returns_within(seconds: float, fn):
    """fn() in a thread; fails (instead of hanging the suite) when it does not return."""
    import threading

    box: dict = {}

    def call():
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=call, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"did not return within {seconds} s"
    return box


def test_files_that_are_not_regular_or_too_large_are_refused_without_reading(tmp_path):
    import os
    from longlook.core.spec import load_scenario
    from longlook.linkprofile import load_link_profile
    from longlook.traces import load_mahimahi

    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.toml"
    with open(huge, "wb") as f:
        f.truncate(300 << 20)  # sparse: large without using the disk
    for reader in (load_scenario, load_link_profile, load_mahimahi):
        for path, words in [
            (fifo, "not a regular file"),
            ("/dev/zero", "not a regular file"),
            ("/dev/urandom", "not a regular file"),
            (huge, "more than"),
        ]:
            box = _returns_within(10, lambda: reader(path))
            assert isinstance(box.get("error"), LonglookError), box
            assert words in str(box["error"]) and str(path) in str(box["error"])
    (tmp_path / "sup.trace").write_text("1\n\u00b2\n")  # a Unicode digit is no timestamp
    with pytest.raises(LonglookError, match="sup.trace:2"):
        load_mahimahi(tmp_path / "sup.trace")


def test_the_endpoint_reads_no_fifo_or_device_as_ca_certificate_or_race_state(tmp_path):
    import os
    import subprocess
    from longlook.binaries import find_binary

    try:
        endpoint = str(find_binary("endpoint"))
    except LonglookError:
        pytest.skip("endpoint is not built")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    fetch = [endpoint, "fetch", "--url", "https://127.0.0.1:9/", "--timeout-s", "5"]
    for path in (fifo, "/dev/zero", "/dev/urandom"):
        for args in (
            ["--proto", "h2", "--ca", str(path)],
            ["--proto", "race", "--insecure", "--race-state", str(path)],
        ):
            p = subprocess.run(fetch + args, capture_output=True, text=True, timeout=20)
            assert p.returncode != 101 and "not a regular file" in p.stdout + p.stderr, (args, p.stdout, p.stderr)
    certs = tmp_path / "certs"
    certs.mkdir()
    os.mkfifo(certs / "cert.pem")
    os.mkfifo(certs / "key.pem")
    p = subprocess.run(
        [endpoint, "serve", "--cert-dir", str(certs), "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert p.returncode != 0 and "not a regular file" in p.stderr, p.stderr


def test_numbers_out_of_range_are_refused(good, tmp_path):
    for args, words in [
        (["analyze", "fallback", good, "--alpha", "5"], "--alpha: must be > 0 and < 1"),
        (["analyze", "fallback", good, "--alpha", "nan"], "--alpha"),
        (["analyze", "fallback", good, "--tcp-arm", "nosuch"], "--tcp-arm nosuch"),
        (["report", good, "--alpha", "2", "--out", tmp_path / "r.html"], "--alpha"),
        (["states", good, "--alpha", "-1"], "--alpha"),
        (["compare", "--history", good, good, "--pvalue", "7"], "--pvalue"),
        (["trace", "generate", "incr", "--out", tmp_path / "t", "--hold", "inf"], "--hold"),
        (["trace", "generate", "incr", "--out", tmp_path / "t", "--hold", "1e-12"], "--hold"),
        (["trace", "generate", "incr", "--out", tmp_path / "t", "--duration", "inf"], "--duration"),
        (["trace", "generate", "incr", "--out", tmp_path / "t", "--duration", "1e308"], "--duration"),
    ]:
        box = _returns_within(30, lambda: _invoke(*args))
        _one_clear_error(box["value"], *words.split(" ", 1)[:1])
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "t").exists()
    for body, words in [
        ('rounds = {min = 4, max = 10, metric = "nosuch"}', "rounds.metric: 'nosuch'"),
        ("rounds = {min = 4, max = 1000000000}", "max"),
        ("[statistics]\nbootstrap_resamples = -5", "bootstrap_resamples"),
        ("[statistics]\nbootstrap_resamples = 1000000000000", "bootstrap_resamples"),
    ]:
        path = tmp_path / "s.toml"
        path.write_text(SMALL + "\n" + body if body.startswith("[") else SMALL.replace("rounds = 3", body))
        _one_clear_error(_invoke("scenario", "validate", path), words)


LINK_CASES = [  # (what, the link's middlebox or trace, words the error must contain)
    ("packets 1e30", "[links.up.middlebox]\nblock_udp_after_packets = 1e30", "block_udp_after_packets"),
    ("datagram beyond u64", "[links.up.middlebox]\nmax_udp_datagram = 18446744073709551616", "max_udp_datagram"),
    ("infinite UDP rate", "[links.up.middlebox]\nudp_rate_mbit = inf", "udp_rate_mbit"),
    ("infinite schedule", "[links.down.middlebox]\nactive_from_s = inf", "active_from_s"),
    ("boolean as a string", '[links.up.middlebox]\nblock_udp = "false"', "block_udp"),
    ("boolean as a number", "[links.up.middlebox]\ndrop_quic_initial = 1", "drop_quic_initial"),
    ("loss as a string", '[links.up.gilbert_elliott]\np = "0.1"\nr = 0.5', "gilbert_elliott.p"),
    ("bad state that never ends", "[links.up.gilbert_elliott]\np = 0.1\nr = 0", "gilbert_elliott.r"),
]
TRACE_CASES = [
    ("empty", b"", "empty"),
    ("garbage", b"12\nhello\n", ":2"),
    ("not UTF-8", b"1\n\xff\xfe\n", "UTF-8"),
    ("all zeros", b"0\n0\n0\n", "0 ms"),
    ("decreasing", b"5\n3\n", "earlier"),
    ("beyond linkem's u64 nanoseconds", b"1\n288230376151711744\n", ""),
]


def _linkem_check_built() -> bool:
    from longlook.binaries import find_binary

    try:
        find_binary("linkem-check")
        return True
    except LonglookError:
        return False


@pytest.mark.parametrize("case", LINK_CASES + TRACE_CASES, ids=[c[0] for c in LINK_CASES + TRACE_CASES])
def test_links_linkem_would_refuse_are_refused_at_validation(tmp_path, case):
    what, body, words = case
    path = tmp_path / "s.toml"
    if isinstance(body, bytes):
        (tmp_path / "t.trace").write_bytes(body)
        path.write_text(SMALL.replace("rate_mbit = 10", 'trace = "t.trace"'))
    else:
        path.write_text(SMALL + body + "\n")
    linkem_only = what in (
        "datagram beyond u64",
        "infinite UDP rate",
        "infinite schedule",
        "bad state that never ends",
        "beyond linkem's u64 nanoseconds",
    )
    if linkem_only and not _linkem_check_built():
        pytest.skip("linkem-check is not built (cargo build --release -p linkem)")
    for command in ("show", "validate"):
        _one_clear_error(_invoke("scenario", command, path), words)


def test_grid_size_is_stated_and_bounded_before_expansion(tmp_path):
    import time

    path = tmp_path / "s.toml"
    path.write_text(SMALL)
    out = _invoke("scenario", "validate", path).output
    assert "1 cells x 3 rounds x 2 arms = 6 runs (at most" in out, out
    rates = "rate_mbit = [" + ", ".join(str(10 + i) for i in range(1000)) + "]"
    rtts = "rtt_ms = [" + ", ".join(str(10 + i) for i in range(2000)) + "]"
    sizes = "[workloads]\nobject_size = [" + ", ".join(f'"{i + 1}k"' for i in range(100)) + "]"
    for text, words in [
        (SMALL.replace("rate_mbit = 10", rates).replace("rtt_ms = 36", rtts), "2,000,000 combinations"),
        (
            SMALL.replace("rounds = 3", "rounds = 10000").replace('workloads = ["1x10k"]', sizes),
            "2,000,000 runs, more than the 1,000,000",
        ),
        (SMALL.replace('workloads = ["1x10k"]', 'workloads = ["1x10k"]\nproxy = []'), "proxy: empty"),
        (SMALL.replace('workloads = ["1x10k"]', 'workloads = ["1x10k"]\n[options]\nquic_cc = []'), "empty"),
        ('kind = ["pageload", "video"]\n' + SMALL, "kind: must be one kind's name"),
        (SMALL.replace('name = "hostile"', f'name = "{"n" * 100_000}"'), "name"),
    ]:
        path.write_text(text)
        started = time.monotonic()
        for command in ("validate", "show"):
            _one_clear_error(_invoke("scenario", command, path), words)
            assert time.monotonic() - started < 20
    arm = SMALL + f'\n[[arms]]\nlabel = "{"a" * 5000}"\nprotocol = "h3"\n[[arms]]\nlabel = "h2"\nprotocol = "h2"\n'
    path.write_text(arm)
    _one_clear_error(_invoke("scenario", "show", path), "label")


def test_endpoint_serve_never_overwrites_a_certificate_without_its_key(tmp_path):
    import subprocess
    from longlook.binaries import find_binary

    try:
        endpoint = str(find_binary("endpoint"))
    except LonglookError:
        pytest.skip("endpoint is not built")
    (tmp_path / "cert.pem").write_text("mine")
    p = subprocess.run(
        [endpoint, "serve", "--cert-dir", str(tmp_path), "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert p.returncode != 0 and "has cert.pem but no key.pem" in p.stderr, p.stderr
    assert (tmp_path / "cert.pem").read_text() == "mine" and not (tmp_path / "key.pem").exists()


def test_a_proxy_segment_with_a_trace_in_one_direction_is_a_clear_error(tmp_path):
    (tmp_path / "t.trace").write_text("1\n2\n")
    path = tmp_path / "p.toml"
    path.write_text(
        'name = "p"\nworkloads = ["1x10k"]\n[[arms]]\nlabel = "h3"\nprotocol = "h3"\n[[arms]]\n'
        'label = "h2"\nprotocol = "h2"\n[[links]]\nrtt_ms = 20\nlink_a = { rate_mbit = 10 }\n'
        'link_b = { up = { rate_mbit = 10 }, down = { trace = "t.trace" } }\n'
    )
    _one_clear_error(_invoke("scenario", "show", path), "links[0].link_b.down.trace: not supported")


def test_a_boolean_is_no_number_in_the_video_audit_settings(tmp_path):
    path = tmp_path / "v.toml"
    for body, words in [
        ("max_player_cpu = true", "max_player_cpu"),
        ('max_dropped_frames = "0.1"', "max_dropped_frames"),
    ]:
        path.write_text(f'kind = "video"\nname = "v"\n{body}\n[[links]]\nrate_mbit = 10\nrtt_ms = 36\n')
        _one_clear_error(_invoke("scenario", "validate", path), words)


def test_zero_rtt_on_a_racing_arm_is_refused_not_ignored(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(
        SMALL + '[[arms]]\nlabel = "race"\nprotocol = "race"\nzero_rtt = true\n'
        '[[arms]]\nlabel = "h2"\nprotocol = "h2"\n'
    )
    _one_clear_error(_invoke("scenario", "validate", path), 'arm "race": zero_rtt = true is ignored')


ARMS = '[[arms]]\nlabel = "{a}"\nprotocol = "{p}"\n{extra}\n'


@pytest.mark.parametrize(
    "body, words",
    [
        # a sweep of a QUIC knob over TCP arms: four cells, two of them copies
        (
            "[options]\nmax_cwnd_packets = [10, 100]\n"
            + ARMS.format(a="h2", p="h2", extra="")
            + ARMS.format(a="h2-bbr", p="h2", extra='tcp_cc = "bbr"'),
            "options.max_cwnd_packets: no arm uses it: it is read by our endpoint's QUIC server",
        ),
        # the option's only reader sets its own
        (
            '[options]\nquic_cc = "bbr"\n'
            + ARMS.format(a="h3", p="h3", extra='quic_cc = "cubic"')
            + ARMS.format(a="h2", p="h2", extra=""),
            "options.quic_cc: no arm uses it: every arm that reads it sets its own (h3)",
        ),
        # an arm's own option its processes never read
        (
            ARMS.format(a="h3", p="h3", extra="") + ARMS.format(a="h2-bbr", p="h2", extra='quic_cc = "bbr"'),
            'arm "h2-bbr": quic_cc does nothing for this arm',
        ),
        # 0-RTT swept where only Chromium (a fresh profile: no ticket) loads the page
        ('client = "chromium"\n' + SMALL + "[options]\nzero_rtt = [true, false]\n", "options.zero_rtt: no arm uses it"),
        # a stack's server has its own congestion control (server_cc), ours is not in the path
        (
            'server = "quic-go"\n'
            + SMALL
            + '[options]\nquic_cc = "bbr"\n'
            + ARMS.format(a="x", p="h3", extra="")
            + ARMS.format(a="y", p="h3", extra=""),
            "options.quic_cc: no arm uses it",
        ),
    ],
)
def test_options_no_arm_uses_are_refused_naming_the_option_and_the_arms(tmp_path, body, words):
    path = tmp_path / "o.toml"
    path.write_text(body if "name =" in body else SMALL + body)
    _one_clear_error(_invoke("scenario", "validate", path), words)


def test_options_some_arm_uses_still_validate(tmp_path):
    path = tmp_path / "o.toml"
    for body in [
        '[options]\nmax_cwnd_packets = [10, 100]\ntcp_cc = "bbr"\nzero_rtt = true\n',
        # zero_rtt = false is what a client without 0-RTT does anyway: not a knob there
        'client = "chromium"\n' + SMALL + "[options]\nzero_rtt = false\n",
        ARMS.format(a="h3", p="h3", extra='quic_cc = "bbr"') + ARMS.format(a="h2", p="h2", extra=""),
    ]:
        path.write_text(body if "name =" in body else SMALL + body)
        result = _invoke("scenario", "validate", path)
        assert result.exit_code == 0, (body, result.output, result.exception)


@pytest.mark.parametrize(
    "what, profile, trace, words",
    [
        (
            "middlebox number beyond u64",
            "rate_mbit = 10\ndelay_ms = 10\n[up.middlebox]\nmax_udp_datagram = 18446744073709551616\n",
            None,
            "up.middlebox.max_udp_datagram",
        ),
        # Python sized the host buffers from this trace first: a 20 PiB array, MemoryError
        ("trace beyond 30 days", 'trace = "t.trace"\ndelay_ms = 10\n', b"1\n288230376151711744\n", "30 days"),
    ],
)
def test_link_check_asks_linkem_check_before_it_starts_a_testbed(tmp_path, monkeypatch, what, profile, trace, words):
    if not _linkem_check_built():
        pytest.skip("linkem-check is not built (cargo build --release -p linkem)")
    from longlook.testbed import Testbed

    def no_testbed(self):
        raise AssertionError(f"{what}: a testbed was started for a profile linkem refuses")

    monkeypatch.setattr(Testbed, "__enter__", no_testbed)
    if trace is not None:
        (tmp_path / "t.trace").write_bytes(trace)
    path = tmp_path / "p.toml"
    path.write_text(profile)
    _one_clear_error(_invoke("link", "check", path, "--quick"), words, "link p")
