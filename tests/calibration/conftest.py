"""Prints every calibrated false-verdict rate beside its alpha at the end of the run."""

from __future__ import annotations

from .harness import RATES


def pytest_terminal_summary(terminalreporter):
    if not RATES:
        return
    tr = terminalreporter
    tr.section("null calibration: false-verdict rate vs alpha")
    width = max(len(r.producer) for r in RATES)
    for r in sorted(RATES, key=lambda r: (r.producer, r.verdict)):
        lo, hi = r.interval
        tr.write_line(
            f"{r.producer:<{width}}  {r.rate:7.4f} [{lo:.4f}-{hi:.4f}]  alpha {r.alpha:<6g} "
            f"n {r.trials:<6d} {'ok ' if r.passed else 'HIGH'} {r.verdict}"
        )
