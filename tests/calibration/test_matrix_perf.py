"""Null calibration of the QUIC matrix's performance verdicts (`longlook matrix --perf`,
analyses/matrix/perf.py `pair_verdicts`): when no client differs from ours with the same
server and no pair from kernel TCP, how often does the grid show any pair faster or slower?

The data are what one rate's experiment gives: clients x servers pairs and the TCP arm, each
with the grid's few rounds (3 or 5) of lognormal load times; some runs flagged by their path
audit (not counted) and some failed, at random. Two nulls: every arm, TCP's too, draws from
one distribution (neither verdict may fire); or each server has its own median (servers
differ, which no verdict compares) and only the verdicts against our client with the same
server are counted (against TCP they are then true differences). Each trial judges the
whole grid, as the command does: its comparisons are one Holm family at alpha 0.01, so the
grid's chance of showing any false "faster" or "slower" is what must stay within alpha
(without the family, 60 comparisons at 0.01 would show one about half the time).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from longlook.analyses.matrix.perf import ALPHA, TCP_ARM, pair_verdicts

from .harness import calibrates, check_rate

PRODUCER = "matrix.perf"
CELL = "link=100mbit-20ms|wl=bulk-50m"


def _grid(rng, stacks: int, rounds: int, sigma: float, lost: float, server_step: float) -> pd.DataFrame:
    names = ["ours"] + [f"s{i}" for i in range(1, stacks)]
    arms = [(c, s) for c in names for s in names] + [(TCP_ARM, "ours")]
    rows = []
    for client, server in arms:
        median = 4000.0 if client == TCP_ARM else 4000.0 * (1 + server_step * names.index(server))
        for rnd in range(rounds):
            fate = rng.random()
            rows.append(
                {
                    "cell_id": CELL,
                    "arm": TCP_ARM if client == TCP_ARM else f"{client}_{server}",
                    "round": rnd,
                    "options": {"client": "native" if client in ("ours", TCP_ARM) else client, "server": server},
                    "status": "failed" if fate < lost / 2 else "ok",
                    "protocol_requested": "h2" if client == TCP_ARM else "h3",
                    "protocol_negotiated": "h2" if client == TCP_ARM else "h3",
                    "audit_flagged": lost / 2 <= fate < lost,
                    "plt_ms": float(median * np.exp(rng.normal(0, sigma))),
                }
            )
    return pd.DataFrame(rows)


@calibrates(PRODUCER)
@pytest.mark.parametrize(
    "stacks, rounds, sigma, lost, server_step, trials",
    [(6, 3, 0.1, 0.0, 0.0, 400), (6, 3, 0.4, 0.2, 0.0, 400), (4, 5, 0.2, 0.1, 0.0, 400), (6, 3, 0.2, 0.1, 0.3, 400)],
)
def test_a_grid_of_identical_clients_shows_no_pair_faster_or_slower_beyond_alpha(
    stacks, rounds, sigma, lost, server_step, trials
):
    rng = np.random.default_rng(stacks * 100 + rounds * 10 + int(10 * sigma) + int(10 * server_step))
    false = 0
    for _ in range(trials):
        verdicts = pair_verdicts(_grid(rng, stacks, rounds, sigma, lost, server_step))
        judged = [pair[0] for pair in verdicts.values()] + ([] if server_step else [p[1] for p in verdicts.values()])
        false += any(a is not None and a.verdict in ("faster", "slower") for a in judged)
    counted = "both verdicts" if not server_step else f"servers {server_step:.0%} apart, against ours only"
    what = f"{stacks}x{stacks} pairs + TCP, {rounds} rounds, sigma {sigma:g}, {lost:.0%} not counted, {counted}"
    check_rate(PRODUCER, f"any pair faster or slower ({what})", false, trials, ALPHA)
