"""Null calibration of the proxy section's verdicts (kinds/pageload/proxy_section.py:
proxy_effects): when the proxy changes nothing, how often does a pair say "proxy faster" or
"proxy slower"?

The grid is kakhki-proxy's shape: proxy {none, tcp, quic} x 3 segmented links x 3 object
sizes, 18 proxied cells, each paired with its direct twin for the arm the proxy carries.
Load times are lognormal (sigma 0.4, each cell its own median) and identical in a proxied
cell and its twin. Runs go to proxy_effects as a store's runs frame (status, protocols,
plt_ms per cell, arm and round), with the scenario, as the report calls it.

Checked against alpha = 0.01:
- 3 rounds, the scenario's `holm = true`: any of the 18 pairs significant, at most alpha
  (without Holm it was 17%);
- 3 rounds, no Holm: each pair's "proxy faster" and "proxy slower", at most alpha/2;
- 10 rounds, the proxied arm's slowest 20-30% of loads timing out (status "timeout"):
  "proxy faster" per pair, at most alpha/2 (survivors alone said it far more often).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from longlook.kinds.pageload import Scenario
from longlook.kinds.pageload.proxied import APPLIES
from longlook.kinds.pageload.proxy_section import proxy_effects

from .harness import calibrates, check_rate

ALPHA = 0.01
PRODUCER = "pageload.proxy_effects"
GRID = """
name = "proxy-null"
rounds = {rounds}
proxy = ["none", "tcp", "quic"]
workloads = ["10k", "100k", "2m"]
[statistics]
holm = {holm}
[[links]]
rate_mbit = 20
loss = [0.0, 0.005]
link_a = {{ rtt_ms = 18 }}
link_b = {{ rtt_ms = 18 }}
[[links]]
rate_mbit = 20
link_a = {{ rtt_ms = 50 }}
link_b = {{ rtt_ms = 50 }}
"""


def _scenario(rounds: int, holm: bool) -> tuple[Scenario, pd.DataFrame]:
    sc = Scenario.from_toml(GRID.format(rounds=rounds, holm=str(holm).lower()))
    cells = pd.DataFrame({"cell_id": [c.id for c in sc.cells()], "dims": [c.dims() for c in sc.cells()]})
    assert sum(d["proxy"] != "none" for d in cells["dims"]) == 18
    return sc, cells


class _Grid:
    """The runs frame's fixed columns (one row per cell, arm and round), built once; each
    trial draws the load times and which loads time out."""

    def __init__(self, cells: pd.DataFrame, rounds: int):
        rows = [
            (cid, arm, r, twin, APPLIES.get(d["proxy"]) == arm)
            for twin, (cid, d) in enumerate(zip(cells["cell_id"], cells["dims"]))
            for arm in ("h3", "h2")
            for r in range(rounds)
        ]
        cid, arm, rnd, _, carried = map(np.array, zip(*rows))
        twins = {}  # a proxied cell and its direct twin share a median
        self.mu = np.array(
            [
                6.0 + 0.3 * twins.setdefault((d["link"], d["workload"]), len(twins) % 7)
                for d in cells["dims"]
                for _ in ("h3", "h2")
                for _ in range(rounds)
            ]
        )
        self.carried = carried.astype(bool)
        self.fixed = {"cell_id": cid, "arm": arm, "round": rnd, "attempt": 1, "protocol_requested": arm}

    def runs(self, rng, fail_quantile: float | None) -> pd.DataFrame:
        latent = rng.normal(self.mu, 0.4)
        ok = np.ones(len(latent), dtype=bool)
        if fail_quantile is not None:  # the proxied arm's slow loads time out
            ok = ~self.carried | (latent <= self.mu + 0.4 * float(sps.norm.ppf(fail_quantile)))
        arm = self.fixed["arm"]
        return pd.DataFrame(
            {
                **self.fixed,
                "status": np.where(ok, "ok", "timeout"),
                "protocol_negotiated": np.where(ok, arm, None),
                "plt_ms": np.where(ok, np.exp(latent), np.nan),
            }
        )


def _verdicts(rng, rounds: int, holm: bool, trials: int, fail=None) -> list[list[str]]:
    sc, cells = _scenario(rounds, holm)
    st = sc.statistics
    grid = _Grid(cells, rounds)
    out = []
    for _ in range(trials):
        q = None if fail is None else float(rng.uniform(*fail))
        effects = proxy_effects(
            grid.runs(rng, q),
            cells,
            sc,
            alpha=st.alpha,
            test=st.test,
            holm=st.holm,
            survivorship_alpha=st.survivorship_alpha,
        )
        assert len(effects) == 18
        out.append([e.verdict for e in effects])
    return out


@calibrates(PRODUCER)
def test_with_holm_no_pair_of_18_identical_ones_is_significant_more_often_than_alpha():
    trials = 400
    v = _verdicts(np.random.default_rng(71), 3, True, trials)
    any_sig = sum(any(x in ("proxy faster", "proxy slower") for x in t) for t in v)
    check_rate(PRODUCER, "any of 18 pairs significant (3 rounds, holm)", any_sig, trials, ALPHA)


@calibrates(PRODUCER)
def test_each_pair_and_side_within_alpha_over_2_without_holm_and_with_timeouts():
    trials = 150
    plain = [x for t in _verdicts(np.random.default_rng(72), 3, False, trials) for x in t]
    failing = [x for t in _verdicts(np.random.default_rng(73), 10, False, trials, fail=(0.7, 0.8)) for x in t]
    for name, vs in (("3 rounds, no holm", plain), ("10 rounds, the proxied arm's slowest 20-30% time out", failing)):
        for side in ("proxy faster", "proxy slower"):
            check_rate(PRODUCER, f"{side} per pair ({name})", sum(x == side for x in vs), len(vs), ALPHA / 2)
