"""Null calibration of the conformance kind's verdicts (kinds/conformance/): a parameter's
"deviates" and "conforms" (judge.py), the share comparison across cells (aggregate.py) and
the envelope's "differs" (envelope_verdict.py).

The data have the shapes real conformance runs give, per run:
- slow-start exit: the RTT rise at the exit, lognormal around 9 ms (sd of the log 0.35:
  the kernel's Cubic measured 8.6 and 14.7 ms on a 36 ms path), not measurable in 10% of the
  runs (the sender never left slow start);
- multiplicative decrease: the median of 2-6 loss episodes each 0.6-0.8 (uniform), not
  measurable in 10% (no loss);
- Cubic's C: lognormal around 0.35 (sd of the log 0.3), not measurable in half the runs (the
  Reno-friendly region);
- the initial window and the datagram size: the same every run;
- pacing bursts and ACK frequency: no kernel value (its TCP log has no packets), the
  stack's own value at the bound's edge;
3-10 rounds. Each trial runs the registered producer on what aggregate.parameter_summary
builds from a store (ParameterInput per parameter, the kernel's values moved into the
stack's specification, both completions; one family per stack, Holm over it).

Checked:
- a stack drawn like the reference: "deviates" on any parameter at most alpha;
- a stack whose median sits on the bound's edge (slow-start exit at 2 eta + 5 ms, decrease
  at 0.75 and at 0.65): "conforms" at most alpha;
- the reference's own row: its interval "outside the bound" when its median sits on the
  edge, at most alpha;
- the verdict does not depend on the order of the runs' rows (it did: the first of tied
  per-run verdicts won);
- 18 identical stack/kernel cells, 3 rounds, shared runs paired, 10% of them failed, the
  scenario's holm on: any cell "faster" or "slower" at most alpha;
- envelopes of one process for stack and kernel (a slow-start ramp and a queue sawtooth of
  random phase, 10 and 20 bins, 4-5 rounds a side): "differs" at most alpha.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from longlook.core.stats import Completion
from longlook.kinds.conformance.aggregate import parameter_summary, share_comparisons
from longlook.kinds.conformance.envelope import Envelope
from longlook.kinds.conformance.envelope_verdict import DIFFERS, envelope_test, overlap_matrix
from longlook.kinds.conformance.judge import (
    CONFORMS,
    DEVIATES,
    OUTSIDE,
    ParameterInput,
    judge_parameters,
    judge_reference,
)
from longlook.kinds.conformance.params import bound_of

from .harness import calibrates, check_rate

ALPHA = 0.05  # the producers take the scenario's alpha; 0.05 makes a rate above it visible in fewer trials
ETA = 4.5  # HyStart++'s eta on a 36 ms path: the slow-start bound is 2 x 4.5 + 5 = 14 ms


def _missing(rng, x: np.ndarray, share: float) -> np.ndarray:
    x = x.copy()
    x[rng.random(x.size) < share] = np.nan
    return x


def _rise(rng, n: int, median: float = 9.0) -> np.ndarray:
    return _missing(rng, median * np.exp(rng.normal(0, 0.35, n)), 0.1)


def _decrease(rng, n: int, centre: float = 0.7) -> np.ndarray:
    episodes = rng.integers(2, 7, n)
    x = np.array([np.median(rng.uniform(centre - 0.1, centre + 0.1, k)) for k in episodes])
    return _missing(rng, x, 0.1)


def _cubic_c(rng, n: int) -> np.ndarray:
    return _missing(rng, 0.35 * np.exp(rng.normal(0, 0.3, n)), 0.5)


def _input(parameter: str, stack: np.ndarray, reference: np.ndarray, ref_value: float) -> ParameterInput:
    """As parameter_summary builds it: the measured values, the completions (rounds with a
    value of the rounds tried), the bound from the stack's reference."""

    def done(x):
        return Completion(int(np.isfinite(x).sum()), int(x.size)) if x.size else None

    return ParameterInput(
        parameter,
        stack[np.isfinite(stack)],
        reference[np.isfinite(reference)],
        bound_of(parameter, ref_value),
        done(stack),
        done(reference),
    )


def _stack_like_the_reference(rng, n_stack: int, n_ref: int) -> list[ParameterInput]:
    """One cell's family: every parameter of a stack drawn like the kernel's (in the stack's
    specification), pacing and ACKs (no kernel values) at their bound's edge."""
    const = np.full
    return [
        _input("initial_window", const(n_stack, 12000.0), const(n_ref, 12000.0), 12000.0),
        _input("slow_start_exit_rtt_rise", _rise(rng, n_stack), _rise(rng, n_ref), ETA),
        _input("multiplicative_decrease", _decrease(rng, n_stack), _decrease(rng, n_ref), 0.7),
        _input("cubic_c", _cubic_c(rng, n_stack), _cubic_c(rng, n_ref), 0.4),
        _input("max_datagram", const(n_stack, 1452.0), const(n_ref, 1452.0), 1472.0),
        # the kernel's log has no packets: the stack against the bound, at its edge
        _input(
            "pacing_burst_p95", _missing(rng, 10.0 * np.exp(rng.normal(0, 0.25, n_stack)), 0.05), np.array([]), 10.0
        ),
        _input("packets_per_ack", 2.5 * np.exp(rng.normal(0, 0.06, n_stack)), np.array([]), 2.0),
    ]


@calibrates("conformance.parameter")
def test_a_stack_like_the_reference_is_not_called_deviant():
    rng = np.random.default_rng(20261127)
    trials, false = 0, 0
    for n in (3, 5, 10):
        for _ in range(300):
            n_ref = n if rng.random() < 0.5 else max(n + int(rng.integers(-1, 2)), 2)
            got = judge_parameters(_stack_like_the_reference(rng, n, n_ref), alpha=ALPHA)
            false += any(v.verdict == DEVIATES for v in got)
            trials += 1
    check_rate("conformance.parameter", "deviates (any parameter) for a stack like the reference", false, trials, ALPHA)


@calibrates("conformance.parameter")
def test_a_stack_on_the_bounds_edge_is_not_called_conforming():
    """Medians exactly on the edge, the worst case of "truly outside"; the kernel's values
    beside them as a real cell has them."""
    rng = np.random.default_rng(7)
    false = {"slow-start exit at 14 ms": 0, "decrease at 0.75": 0, "decrease at 0.65": 0}
    trials = 0
    for n in (3, 5, 10):
        for _ in range(300):
            items = [
                _input("slow_start_exit_rtt_rise", _rise(rng, n, median=2 * ETA + 5), _rise(rng, n), ETA),
                _input("multiplicative_decrease", _decrease(rng, n, centre=0.75), _decrease(rng, n), 0.7),
                _input("multiplicative_decrease", _decrease(rng, n, centre=0.65), _decrease(rng, n), 0.7),
            ]
            for name, v in zip(false, judge_parameters(items, alpha=ALPHA)):
                false[name] += v.verdict == CONFORMS
            trials += 1
    for name, k in false.items():
        check_rate("conformance.parameter", f"conforms, median on the edge: {name}", k, trials, ALPHA)


@calibrates("conformance.parameter")
def test_the_reference_on_the_bounds_edge_is_not_called_outside_it():
    rng = np.random.default_rng(11)
    false, trials = 0, 0
    for n in (3, 5, 10):
        for _ in range(1000):
            x = _rise(rng, n, median=2 * ETA + 5)
            false += judge_reference(x[np.isfinite(x)], bound_of("slow_start_exit_rtt_rise", ETA), ALPHA)[0] == OUTSIDE
            trials += 1
    check_rate("conformance.parameter", "reference outside the bound, median on the edge", false, trials, ALPHA)


def _table(verdicts: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One stack's runs of one parameter with these per-run verdicts (values to match)."""
    value = {"deviates": 0.60, "conforms": 0.70, "not measurable": np.nan}
    rows = [
        {
            "run_id": f"r{i}",
            "stack": "s",
            "version": "v",
            "cc": "cubic",
            "parameter": "multiplicative_decrease",
            "measured": value[v],
            "reference": 0.7,
            "unit": "ratio",
            "verdict": v,
            "tolerance": "",
            "note": "",
            "flow": "stack",
            "arm": "alone",
        }
        for i, v in enumerate(verdicts)
    ]
    runs = pd.DataFrame({"run_id": [r["run_id"] for r in rows], "cell_id": "c1"})
    return pd.DataFrame(rows), runs


@calibrates("conformance.parameter")
def test_the_verdict_does_not_depend_on_the_order_of_the_runs():
    """A tie of per-run verdicts went to whichever came first (deviates, conforms, not
    measurable -> deviates; reversed -> conforms)."""
    order = ["deviates", "conforms", "not measurable"]
    got = {parameter_summary(*_table(o), alpha=0.01).iloc[0]["verdict"] for o in (order, order[::-1])}
    assert len(got) == 1, got
    assert got == {"inconclusive"}  # two runs, 0.60 and 0.70: no interval within 0.65-0.75
    rng = np.random.default_rng(3)
    for _ in range(5):
        table, runs = _table(list(rng.choice(order, 6)))
        first = parameter_summary(table, runs).iloc[0]["verdict"]
        assert parameter_summary(table.iloc[rng.permutation(len(table))], runs).iloc[0]["verdict"] == first


def _shared_runs(rng, cells: int, rounds: int, fail: float) -> pd.DataFrame:
    """Shared runs of identical stacks beside the kernel: the two flows split a 20 Mbit/s
    bottleneck by a share symmetric around 0.5 (logit-normal), the link's rate drifting
    between runs; a failed run loses both flows."""
    n = cells * rounds
    share = 1 / (1 + np.exp(-rng.normal(0, 0.4, n)))
    total = 19.0 * np.exp(rng.normal(0, 0.1, n))
    failed = rng.random(n) < fail
    return pd.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(n)],
            "cell_id": np.repeat([f"c{c}" for c in range(cells)], rounds),
            "round": np.tile(np.arange(rounds), cells),
            "arm": "shared",
            "status": np.where(failed, "failed", "ok"),
            "protocol_requested": None,
            "protocol_negotiated": "h3",
            "mbit": np.where(failed, np.nan, total * share),
            "ref_mbit": np.where(failed, np.nan, total * (1 - share)),
            "share": np.where(failed, np.nan, share),
        }
    )


@calibrates("conformance.share")
def test_identical_cells_share_holm_keeps_any_cell_faster_within_alpha():
    rng = np.random.default_rng(18)
    false, trials = 0, 200
    for _ in range(trials):
        out = share_comparisons(_shared_runs(rng, 18, 3, 0.1), alpha=ALPHA, holm_cells=True)
        false += any(c.verdict.significant for c in out.values())
    check_rate("conformance.share", "any of 18 identical cells faster or slower (holm on)", false, trials, ALPHA)


def _envelope(rng, bins: int) -> np.ndarray:
    """One flow's (Mbit/s, queueing ms) per bin: a slow-start ramp to the 20 Mbit/s link,
    then Cubic's sawtooth in the 36 ms buffer, with a random phase and period."""
    k = np.arange(bins)
    mbit = 19.5 * (1 - np.exp(-(k + rng.uniform(0.3, 1.0)) / 1.2)) + rng.normal(0, 0.8, bins)
    period, phase = rng.uniform(4, 8), rng.uniform(0, 1)
    queue = 18 + 14 * np.sin(2 * np.pi * (k / period + phase)) + rng.normal(0, 3, bins)
    pts = pd.DataFrame({"t_s": k * 0.2, "mbit": mbit, "queue_ms": np.clip(queue, 0, 36)})
    return Envelope(pts).core()


@calibrates("conformance.envelope")
def test_an_identical_stacks_envelope_does_not_differ():
    rng = np.random.default_rng(5)
    false, trials = 0, 0
    for bins, rounds, count in ((10, 5, 150), (20, 4, 150)):
        for _ in range(count):
            cores = [_envelope(rng, bins) for _ in range(2 * rounds)]
            t = envelope_test(overlap_matrix(cores), [False] * rounds + [True] * rounds, alpha=ALPHA)
            false += t.verdict == DIFFERS
            trials += 1
    check_rate("conformance.envelope", "differs for an identical stack", false, trials, ALPHA)
