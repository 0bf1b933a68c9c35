"""The fairness kind's latency under load (kinds/fairness: probe_figures): the sparse flow's
RTT over the probes sent in the flows' shared window."""

from __future__ import annotations

from types import SimpleNamespace

from longlook.kinds.fairness import probe_figures


def _probe(samples, lost=0, error=None):
    return SimpleNamespace(samples=lambda: samples, lost=lambda: lost, interval_ms=100.0, error=error)


def test_only_the_probes_sent_in_the_shared_window_count():
    launch = 1000.0  # CLOCK_MONOTONIC s at the first flow's launch
    samples = [(launch + 0.5, 20.0)] + [(launch + 2 + i / 10, 60.0 + i) for i in range(20)] + [(launch + 9.5, 20.0)]
    details: dict = {}
    figures = probe_figures(_probe(samples, lost=3), launch, (2.0, 9.0), details)
    assert figures["probe_rtt_ms"] == 69.5 and 78 < figures["probe_rtt_p95_ms"] < 79, figures
    assert details["probe"] == {"interval_ms": 100.0, "samples_in_window": 20, "lost": 3, "error": None}


def test_a_probe_without_samples_gives_no_figure_and_says_why():
    details: dict = {}
    figures = probe_figures(_probe([], error="the latency probe gave no report: killed"), 0.0, (1.0, 2.0), details)
    assert figures == {"probe_rtt_ms": None, "probe_rtt_p95_ms": None}
    assert details["probe"]["error"].startswith("the latency probe gave no report")


def test_the_report_shows_each_cell_s_probe_and_queue_and_names_its_queue():
    import pandas as pd

    from longlook.kinds.fairness.latency import latency_html, latency_under_load
    from longlook.kinds.fairness.sections import cell_title

    def run(cell, rtt, sojourn, aqm_drops, flagged=False):
        queue = {"down": {"sojourn_ms_mean": sojourn, "dropped_aqm": aqm_drops, "dropped_buffer": 2, "ce_marked": 0}}
        return {
            "cell_id": cell,
            "status": "ok",
            "protocol_requested": "h3",
            "protocol_negotiated": "h3",
            "audit_flagged": flagged,
            "probe_rtt_ms": rtt,
            "probe_rtt_p95_ms": rtt + 5,
            "queue": queue,
        }

    runs = pd.DataFrame(
        [run("dt", 75.0, 36.0, 0), run("dt", 77.0, 38.0, 0), run("fq", 38.0, 10.0, 140), run("fq", 500.0, 90, 0, True)]
    )
    lat = latency_under_load(runs).set_index("cell_id")
    assert lat.loc["dt", "probe_rtt_ms"] == 76.0 and lat.loc["dt", "sojourn_ms"] == 37.0
    assert lat.loc["fq", "n"] == 1 and lat.loc["fq", "aqm_drops"] == 140  # the flagged run does not count
    summary = pd.DataFrame(
        [
            {
                "cell_id": c,
                "matchup": "QUIC vs TCP",
                "start": "simultaneous",
                "quic_cc": "cubic",
                "n_conn": 1,
                "tcp_cc": "cubic",
                "buffer_bytes": 30000,
                "link": link,
            }  # fmt: skip
            for c, link in (("dt", "5mbit-36ms,loss=0"), ("fq", "5mbit-36ms,loss=0,aqm=fq_codel"))
        ]
    )
    html = latency_html(latency_under_load(runs), summary, cell_title)
    assert "queue drop-tail" in html and "queue fq_codel" in html
    assert "<td class='num'>76.0</td>" in html and "<td class='num'>38.0</td>" in html
    assert (
        latency_html(
            latency_under_load(runs.drop(columns=["queue"]).assign(probe_rtt_ms=None, probe_rtt_p95_ms=None)),
            summary,
            cell_title,
        )
        == ""
    )
