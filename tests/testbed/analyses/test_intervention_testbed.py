"""The interventional fallback experiment on a real testbed: in a video scenario
with [intervention], the treated QUIC-enabled session gets the QUIC-breaking middlebox from
its drawn onset and falls back to TCP, the control session stays on QUIC, the TCP-only arm is
untouched, every QUIC-enabled run records its assignment, and the ATE analysis reads them."""

from __future__ import annotations

from pathlib import Path

from testbed_helpers import needs_ffmpeg, needs_testbed

from longlook.analyses.fallback.intervention import analyze_intervention
from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.video import VideoScenario


SCENARIO = """
kind = "video"
name = "intervention-e2e"
seed = 5
rounds = 2
retries = 1
players = ["native"]
protocols = ["race", "h2"]
timeout_s = 60
[video]
duration_s = 20
segment_s = 2
max_height = 360
cache_dir = "{cache}"
[race]
default_delay_ms = 100
quic_idle_timeout_ms = 3000
[intervention]
middlebox = {{ block_udp = true }}
onset_s = [1.0, 1.5]
[fidelity]
exclude_flagged = false
[[links]]
name = "L"
rate_mbit = 2
rtt_ms = 20
"""


@needs_ffmpeg
@needs_testbed("linkem", "endpoint")
def test_a_treated_session_falls_back_and_a_control_session_stays_on_quic(tmp_path: Path):
    sc = VideoScenario.from_toml(SCENARIO.format(cache=tmp_path / "cache"))
    Runner(sc, tmp_path / "exp", link_check=False).run()
    with Store.open(tmp_path / "exp", read_only=True) as store:
        runs = store.runs_frame()
    race = runs[(runs["arm"] == "quic-enabled") & (runs["status"] == "ok")]
    assert len(race) == 2, runs[["arm", "round", "status", "error"]]
    by = {bool(d["treated"]): r for d, (_, r) in zip(race["intervention"], race.iterrows())}
    assert set(by) == {True, False}  # one of each in two rounds
    treated, control = by[True], by[False]
    assert 1.0 <= treated["intervention"]["onset_s"] <= 1.5
    assert treated["protocol_negotiated"] in ("mixed", "h2"), treated[["protocol_negotiated", "error"]]
    assert control["protocol_negotiated"] == "h3"
    tcp_only = runs[runs["arm"] == "h2"]
    assert tcp_only["intervention"].isna().all() if "intervention" in tcp_only else True
    result = analyze_intervention(tmp_path / "exp", include_flagged=True)
    qoe = result.effects[result.effects["metric"] == "qoe"].iloc[0]
    assert (qoe["n_treated"], qoe["n_control"]) == (1, 1)
    assert result.summary["compliance"] == {"treated_fell_back": 1, "control_fell_back": 0}
    # the experiment's report carries the ATE section
    from longlook.report import build_report

    html = build_report(tmp_path / "exp").read_text()
    assert 'id="intervention"' in html and "Observational vs interventional" in html
