"""Split-connection proxies on a real proxy topology: two linkem segments, the endpoint's
TCP relay and HTTP/3 proxy in the proxy namespace, the page-load kind's runs through them."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario
from longlook.kinds.pageload.proxy_section import proxy_effects
from longlook.core.experiment_stats import analyse

from testbed_helpers import needs_testbed

# The same end-to-end path in every cell (2 x 25 ms RTT, 1% loss on each segment, 20 Mbit/s);
# only whether the h2 arm's TCP is split at the proxy differs.
TCP_PROXY = """
name = "tcp-proxy-lossy"
rounds = 5
retries = 1
timeout_s = 40
seed = 3
proxy = ["none", "tcp"]
workloads = ["bulk:1m"]
[options]
zero_rtt = false
[fidelity]
exclude_flagged = false
[[links]]
rate_mbit = 20
loss = 0.01
link_a = { rtt_ms = 25 }
link_b = { rtt_ms = 25 }
"""

QUIC_PROXY = """
name = "quic-proxy-smoke"
rounds = 1
timeout_s = 30
proxy = "quic"
workloads = ["5x20k"]
[fidelity]
exclude_flagged = false
[[links]]
rate_mbit = 20
link_a = { rtt_ms = 10 }
link_b = { rtt_ms = 10 }
"""


def _plt(runs, cell_ids, arm):
    r = runs[runs["cell_id"].isin(cell_ids) & (runs["arm"] == arm) & (runs["status"] == "ok")]
    return list(r["plt_ms"])


@needs_testbed("linkem", "endpoint")
def test_tcp_proxy_speeds_up_tcp_over_a_lossy_high_rtt_path(tmp_path: Path):
    sc = Scenario.from_toml(TCP_PROXY)
    summary = Runner(sc, tmp_path / "exp", link_check=False).run()
    assert summary.ok >= 16, summary
    with Store.open(tmp_path / "exp") as store:
        a = analyse(store)
        cells = {d["proxy"]: cid for cid, d in zip(a.cells["cell_id"], a.cells["dims"])}
        direct, proxied = _plt(a.runs, [cells["none"]], "h2"), _plt(a.runs, [cells["tcp"]], "h2")
        h2 = a.runs[(a.runs["arm"] == "h2") & (a.runs["status"] == "ok")]
        # recorded with every run: the mode, whether this run was proxied, the proxy's log
        assert set(h2["proxy"]) == {"none", "tcp"}
        assert all(h2["proxied"] == (h2["proxy"] == "tcp"))
        through = h2[h2["proxied"]]
        for _, r in through.iterrows():
            log = [json.loads(x) for x in (tmp_path / "exp" / r["artifacts"]["proxy_log"]).read_text().splitlines()]
            assert log[-1]["mode"] == "tcp" and log[-1]["bytes_down"] >= 1_000_000
        # QUIC's runs in the tcp cell are not proxied
        assert not any(a.runs[(a.runs["arm"] == "h3")]["proxied"])
        effect = next(e for e in proxy_effects(a.runs, a.cells, a.scenario, alpha=0.05, exclude_flagged=False))
    print(f"h2 direct {sorted(direct)} ms; through the TCP proxy {sorted(proxied)} ms; {effect.verdict}")
    assert len(direct) >= 4 and len(proxied) >= 4
    assert statistics.median(proxied) < 0.8 * statistics.median(direct)


@needs_testbed("linkem", "endpoint")
def test_h3_page_load_through_the_quic_proxy(tmp_path: Path):
    sc = Scenario.from_toml(QUIC_PROXY)
    Runner(sc, tmp_path / "exp", link_check=False).run()
    with Store.open(tmp_path / "exp") as store:
        runs = store.runs_frame()
    h3 = runs[runs["arm"] == "h3"].iloc[-1]
    assert h3["status"] == "ok" and h3["protocol_negotiated"] == "h3", h3["error"]
    assert bool(h3["proxied"]) and h3["proxy"] == "quic"
    assert not bool(h3["zero_rtt_accepted"])  # no 0-RTT through the proxy
    log = (tmp_path / "exp" / h3["artifacts"]["proxy_log"]).read_text().splitlines()
    conn = json.loads(log[-1])
    paths = [r["path"] for r in conn["requests"]]
    assert conn["mode"] == "quic" and "/page/5x20k.html" in paths and len(paths) == 6
    assert all(r["status"] == 200 for r in conn["requests"])
    # the origin logged the proxy's connection under the run's id (the header went through)
    assert "qlog" in h3["artifacts"]
