"""The HTML report from a store of synthetic runs with known differences."""

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from longlook.commands import report as report_cmds
from longlook.report import build_report
from longlook.render.layout import choose_layout
from longlook.kinds.pageload import Scenario
from longlook.core.record import new_run_id
from longlook.core.store import Store, environment_versions
from longlook.kinds.pageload import record_from_fetch
from repo_paths import ROOT

SCENARIO = """
name = "report-test"
description = "synthetic runs with known differences"
rounds = 10
[workloads]
object_size = ["5k", "1m", "10m"]
[[links]]
rate_mbit = [10, 50]
rtt_ms = 36
buffer_bytes = 30000
"""

# QUIC's PLT relative to TCP's, by object size: 30% faster, the same, 20% slower
QUIC_FACTOR = {5000: 0.7, 1_000_000: 1.0, 10_000_000: 1.2}
EXPECTED_CLASS = {5000: "verdict-a-faster", 1_000_000: "verdict-inconclusive", 10_000_000: "verdict-b-faster"}


def _record(store, cell, rnd, pos, arm, proto_used, plt, requested=None):
    zero_rtt = arm == "h3-0rtt"
    f = {
        "protocol_requested": requested or arm,
        "protocol": proto_used,
        "ok": True,
        "plt_ms": plt,
        "zero_rtt": {"attempted": zero_rtt, "accepted": zero_rtt and rnd > 0},
        "objects": [
            {
                "path": "/obj/x/0.jpg",
                "bytes": cell.workload.object_size,
                "start_ms": 1.0,
                "first_byte_ms": 2.0,
                "end_ms": plt,
            }
        ],
    }
    store.record_run(record_from_fetch(f, run_id=new_run_id(), cell_id=cell.id, round=rnd, position=pos, arm=arm))


def make_experiment(directory: Path, toml: str = SCENARIO, factor=QUIC_FACTOR) -> Scenario:
    sc = Scenario.from_toml(toml)
    rng = np.random.default_rng(42)
    with Store.open(directory) as st:
        st.start_experiment(sc, environment_versions(endpoint="endpoint 0.1.0", linkem="linkem 0.1.0"))
        for cell in sc.cells():
            base = 100 + cell.workload.object_size * 8 / (cell.link.rate_mbit * 1000)
            for rnd in range(sc.rounds):
                order = sc.round_order(cell, rnd)
                st.record_round_order(cell.id, rnd, [a.label for a in order])
                for pos, arm in enumerate(order):
                    f = (
                        factor(cell, arm)
                        if callable(factor)
                        else (factor[cell.workload.object_size] if arm.label == "h3" else 1.0)
                    )
                    _record(
                        st,
                        cell,
                        rnd,
                        pos,
                        arm.label,
                        arm.protocol,
                        base * f * rng.normal(1, 0.01),
                        requested=arm.protocol,
                    )
        # a QUIC run that fell back to TCP with an absurd PLT: must be excluded, not counted
        _record(st, sc.cells()[0], 3, 0, "h3", "h2", 99999.0)
        first, *others = sc.links
        # linkcheck.LinkCheckResult.to_dict() form
        rows = [
            {
                "direction": "both",
                "quantity": "RTT mean",
                "unit": "ms",
                "measured": 36.21,
                "expected": 36.0,
                "low": 35.5,
                "high": 36.5,
                "note": "2000/2000 probes",
                "ok": True,
            },
            {
                "direction": "down",
                "quantity": "TCP goodput",
                "unit": "Mbit/s",
                "measured": 8.1,
                "expected": 9.57,
                "low": 8.6,
                "high": 9.8,
                "note": "",
                "ok": False,
            },
        ]
        st.record_link_check(
            first.name,
            first.model_dump(exclude_none=True),
            {"profile": first.name, "ok": False, "rows": rows, "raw": {}},
            passed=False,
            detail="down TCP goodput: measured 8.1 Mbit/s",
        )
        for link in others:  # any dicts: shown side by side
            st.record_link_check(
                link.name,
                {"rate_mbit": link.rate_mbit, "rtt_ms": link.rtt_ms()},
                {"rate_mbit": link.rate_mbit * 0.96, "rtt_ms": link.rtt_ms() + 0.2},
                passed=True,
            )
        st.finish_experiment()
    return sc


class Cells(HTMLParser):
    """Collects heatmap tables and their <td> attributes."""

    def __init__(self):
        super().__init__()
        self.tables, self.tds, self._table = [], [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "heatmap" in (a.get("class") or ""):
            self.tables.append(a)
            self._table = a["id"]
        elif tag == "td" and self._table and "data-cell-id" in a:
            self.tds.append({**a, "table": self._table})

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    d = tmp_path_factory.mktemp("exp")
    sc = make_experiment(d)
    html = build_report(d).read_text()
    return d, sc, html


def test_heatmap_has_the_right_verdict_per_cell(experiment):
    d, sc, html = experiment
    p = Cells()
    p.feed(html)
    assert [t["id"] for t in p.tables] == ["heatmap-0-0"]
    by_id = {td["data-cell-id"]: td for td in p.tds}
    assert set(by_id) == {c.id for c in sc.cells()}
    for cell in sc.cells():
        td = by_id[cell.id]
        assert td["class"] == EXPECTED_CLASS[cell.workload.object_size], cell.id
        bg = td["style"].split("background: ")[1][:7]
        r, g, b = (int(bg[i : i + 2], 16) for i in (1, 3, 5))
        if td["class"] == "verdict-a-faster":
            assert r > b + 50  # red: QUIC significantly faster
        elif td["class"] == "verdict-b-faster":
            assert b > r + 50  # blue: TCP significantly faster
        else:
            assert (r, g, b) == (255, 255, 255)  # white: no significant difference


def test_heatmap_axes_are_rate_by_object_size(experiment):
    _, _, html = experiment
    table = html[html.index('id="heatmap-0-0"') :]
    table = table[: table.index("</table>")]
    assert re.findall(r"<th>([^<]+)</th>", table) == ["5KB", "1MB", "10MB"]
    assert re.findall(r'<th class="rowhead">([^<]+)</th>', table) == ["10 Mbit/s", "50 Mbit/s"]
    assert "+30" in table or "+29" in table or "+31" in table  # the 5k cells: ~30% faster


def test_report_sections(experiment):
    _, sc, html = experiment
    assert "report-test" in html and "Welch's t-test" in html and "p &lt; 0.01" in html
    # the fallback run is listed with its reason and not counted (n = 10 per side everywhere)
    assert "asked for h3, got h2" in html and "protocol_mismatch" in html
    assert "n=10/10" in html and "n=11/" not in html
    assert "99999" not in html.split('id="excluded"')[0]
    # link self-check, distributions, parameters
    checks = html[html.index('id="link-checks"') : html.index('id="excluded"')]
    assert "passed" in checks and "48" in checks  # generic form: 50 * 0.96
    assert "FAILED" in checks and "down TCP goodput" in checks and "8.6 .. 9.8" in checks
    assert "36.21 ms" in checks and "2000/2000 probes" in checks
    header = html[: html.index('id="heatmaps"')]
    assert "Link self-check failed for 10mbit-36ms,loss=0" in header
    assert "1 run used another protocol than requested and is not counted" in header
    assert html.count('<svg id="distributions-0"') == 1
    assert "rate_mbit = [10, 50]" in html and "endpoint 0.1.0" in html


def test_report_is_self_contained(experiment):
    _, _, html = experiment
    assert "<script" not in html and "<link" not in html and "<img" not in html
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "@import" not in html


def test_holm_and_test_overrides(experiment, tmp_path):
    d, _, _ = experiment
    html = build_report(d, tmp_path / "r.html", test="mannwhitney", holm=True).read_text()
    assert "Mann-Whitney U" in html and "Holm-corrected" in html and "p_adj" in html


def test_facets_and_count_columns(tmp_path):
    toml = SCENARIO.replace(
        '[workloads]\nobject_size = ["5k", "1m", "10m"]',
        'workloads = ["1x1m", "2x500k", "200x5k"]\n[options]\nquic_cc = ["cubic", "bbr"]',
    )
    toml = toml.replace("rounds = 10", "rounds = 4")
    make_experiment(tmp_path, toml, factor=lambda cell, arm: 0.8 if arm.label == "h3" else 1.0)
    html = build_report(tmp_path).read_text()
    p = Cells()
    p.feed(html)
    assert [t["id"] for t in p.tables] == ["heatmap-0-0", "heatmap-0-1"]
    assert "QUIC CC = cubic" in html and "QUIC CC = bbr" in html
    assert "workload (count x size)" in html and "<th>200x5k</th>" in html
    assert {td["class"] for td in p.tds} == {"verdict-a-faster"}


def test_zero_rtt_arms(tmp_path):
    toml = ROOT.joinpath("scenarios", "kakhki-fig7-zero-rtt.toml").read_text()
    toml = toml.replace("rounds = 10", "rounds = 3").replace("rate_mbit = [5, 10, 50, 100]", "rate_mbit = [10]")
    toml = toml.replace(
        'object_size = ["5k", "10k", "100k", "200k", "500k", "1m", "10m"]', 'object_size = ["5k", "10m"]'
    )
    make_experiment(
        tmp_path,
        toml,
        factor=lambda cell, arm: 0.5 if arm.label == "h3-0rtt" and cell.workload.object_size == 5000 else 1.0,
    )
    html = build_report(tmp_path).read_text()
    assert "h3-0rtt vs h3-1rtt" in html and "h3-0rtt faster" in html
    assert "h3-0rtt: accepted in 4 of 6 attempts (6 counted runs)" in html  # rounds 1-2 of 2 cells
    p = Cells()
    p.feed(html)
    assert [td["class"] for td in p.tds] == ["verdict-a-faster", "verdict-inconclusive"]


def test_analysis_frame_for_notebooks(experiment):
    from longlook.core.experiment_stats import analyse

    d, sc, _ = experiment
    with Store.open(d, read_only=True) as st:
        df = analyse(st).frame()
    assert len(df) == len(sc.cells())
    by_size = df.groupby("object_size")["verdict"].agg(set).to_dict()
    assert by_size == {5000: {"a_faster"}, 1_000_000: {"inconclusive"}, 10_000_000: {"b_faster"}}
    assert set(df.rate_mbit) == {10.0, 50.0} and (df.n_a == 10).all()


def test_layout_choice():
    dims = lambda **kw: {
        "link": kw.get("link", "l"),
        "rate_mbit": 10,
        "rtt_ms": 36,
        "loss": 0.0,
        "trace": None,
        "workload": kw.get("workload", "w"),
        "object_count": 1,
        "object_size": 5000,
        "mode": "page",
        "quic_cc": "cubic",
        **kw,
    }
    fig6a = [dims(rate_mbit=r, object_size=s, link=str(r), workload=str(s)) for r in (5, 10) for s in (5000, 10000)]
    assert (choose_layout(fig6a).row, choose_layout(fig6a).col, choose_layout(fig6a).facets) == (
        "rate_mbit",
        "object_size",
        [],
    )
    fig6b = [dims(object_count=n, object_size=s, workload=f"{n}x{s}") for n, s in ((1, 1000), (2, 500))]
    assert choose_layout(fig6b).col == "workload" and choose_layout(fig6b).row is None
    buffers = [dims(link=f"b{i}") for i in range(2)]  # links differing only in buffer
    assert choose_layout(buffers).row == "link"
    cc = [dims(rate_mbit=r, quic_cc=q, link=str(r)) for r in (5, 10) for q in ("cubic", "bbr")]
    assert (choose_layout(cc).row, choose_layout(cc).col) == ("rate_mbit", "quic_cc")


def test_report_command(experiment, tmp_path):
    d, _, _ = experiment
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    report_cmds.register(app)
    out = tmp_path / "sub" / "x.html"
    result = CliRunner().invoke(app, ["report", str(d), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>")


CHROMIUM = "/usr/bin/chromium"


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="headless Chromium not installed (apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(experiment, tmp_path):
    import matplotlib.image as mpimg

    d, _, _ = experiment
    png = tmp_path / "report.png"
    subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={png}",
            "--window-size=1200,2000",
            (d / "report.html").as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert png.stat().st_size > 50_000
    img = mpimg.imread(png)[:, :, :3]
    assert img.shape[:2] == (2000, 1200)
    # the heatmap is drawn: strongly red and strongly blue cells are on screen
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    red = ((r > 0.7) & (g < 0.5) & (b < 0.5)).sum()
    blue = ((b > 0.6) & (r < 0.5)).sum()
    assert red > 2000 and blue > 2000, (red, blue)
    shutil.copy(png, d / "report-screenshot.png")  # for a human to look at


AQM_SCENARIO = """
name = "aqm-test"
rounds = 4
workloads = ["1x1m"]
[[links]]
rate_mbit = 10
rtt_ms = 36
[[links]]
rate_mbit = 10
rtt_ms = 36
down = { aqm = { discipline = "codel", ecn = true } }
"""


def test_the_queue_section_shows_each_cells_queue_where_a_link_has_an_aqm(tmp_path: Path):
    sc = Scenario.from_toml(AQM_SCENARIO)
    with Store.open(tmp_path) as st:
        st.start_experiment(sc, environment_versions(endpoint="endpoint 0.1.0", linkem="linkem 0.1.0"))
        for i, cell in enumerate(sc.cells()):
            aqm = cell.link.resolved("down").aqm is not None
            for rnd in range(sc.rounds):
                for pos, arm in enumerate(sc.round_order(cell, rnd)):
                    f = {"protocol_requested": arm.label, "protocol": arm.label, "ok": True, "plt_ms": 1000.0 + rnd}
                    rec = record_from_fetch(
                        f, run_id=new_run_id(), cell_id=cell.id, round=rnd, position=pos, arm=arm.label
                    )
                    down = {"sojourn_ms_mean": 4.0 if aqm else 80.0 + rnd, "packets": 700}
                    down |= {"dropped_buffer": 0 if aqm else 3, "dropped_aqm": 0, "ce_marked": 5 if aqm else 0}
                    rec.details["queue"] = {"down": down}
                    st.record_run(rec)
        st.finish_experiment()
    html = build_report(tmp_path).read_text()
    queue = html[html.index('id="queue"') :]
    queue = queue[: queue.index("</section>")]
    assert "drop-tail" in queue and "codel+ecn" in queue
    assert "81.5" in queue and "4.0" in queue  # the median of the runs' mean sojourns
    assert "3.0 / –" in queue and "5.0 / –" in queue  # tail drops, CE marks per run (down / up)
    # a scenario without an AQM link has no such section
    assert 'id="queue"' not in build_report(make_experiment_dir(tmp_path / "plain")).read_text()


def make_experiment_dir(directory: Path) -> Path:
    make_experiment(directory)
    return directory
