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
