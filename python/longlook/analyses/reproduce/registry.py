"""The claims `longlook reproduce` tests, one entry each, and the shipped scenarios they read
with each scenario's reduced (`--budget short`) form. Adding a claim = one `Claim(...)` entry
here (and a `ShippedScenario` if it reads a new scenario file).

Papers: Kakhki et al., "Taking a Long Look at QUIC", IMC'17; Chaudhary
et al., "YouTube over Google's QUIC vs Internet Middleboxes"; the Mininet reproduction of
Kakhki et al. (its verdicts beside each claim, and its own findings as rows).
"""

from __future__ import annotations

from ...errors import LonglookError
from .claims import Claim, Explain, ShippedScenario
from .measured import TCP_MEAN
from .rules import Ate, Cells, GrangerShare, PairShare, Ratio, Shrinks, StateShift, Twins, Value, above, contains

KAKHKI = "Kakhki IMC'17"
ZHANG = "Zhang WWW'24"
LANGLEY = "Langley SIGCOMM'17"
CHAUDHARY = "Chaudhary et al."
MININET = "Mininet reproduction"

# Short budget: a few cells (the ones the claims read first), 2-6 rounds, shorter transfers;
# a run its path audit flags is kept out of the statistics but not measured again (on a busy
# machine those retries would multiply the time), so n can fall below the rounds.
SHORT_FIDELITY = {"fidelity": {"retry_flagged": False}}


# Standard budget: the short budget's cells with the rounds (on top of its overrides) that
# should make >= 80% of the claims conclusive within 4 hours on this 2-core machine; sized from
# the paper's >= 10 rounds and the rounds the short budget's spreads asked for (2026-11-27,
# under load: proxies 6-45, QUIC vs QUIC 23, Langley 10-11); a claim still inconclusive says
# how many rounds it would need. Flagged runs are re-measured as in a full run. Estimated
# 3.3 h (5 of 16 scenarios timed here, the rest assumed).
STANDARD: dict[str, tuple[dict, str]] = {
    "kakhki-fig2-macw": ({"rounds": 10}, "10 rounds"),
    "kakhki-fig6a-object-size": ({"rounds": 10}, "10 rounds"),
    "kakhki-fig6b-object-count": ({"rounds": 10}, "10 rounds"),
    "kakhki-fig7-zero-rtt": ({"rounds": 10}, "10 rounds"),
    "kakhki-fig8a-loss": ({"rounds": 12}, "12 rounds"),
    "kakhki-fig8b-rtt112": ({"rounds": 10}, "10 rounds"),
    "kakhki-sec5-reordering": ({"rounds": 10}, "10 rounds"),
    "kakhki-fluctuating-pageload": ({"rounds": 12}, "12 rounds"),
    "kakhki-table4-fairness": (
        {"rounds": 16, "duration_s": 30},
        "30 s flows; 16 runs (QUIC vs QUIC needed ~23 at 20 s)",
    ),
    "kakhki-video": ({"rounds": 6}, "6 rounds"),
    "zhang-fast-internet": ({"rounds": 8}, "8 rounds"),
    "langley-udp-blocked": ({"rounds": 10}, "10 rounds"),
    "kakhki-mobile": ({"rounds": 10}, "10 rounds"),
    "kakhki-proxy": ({"rounds": 20}, "20 rounds (the short budget's spreads asked 6-45)"),
    "chaudhary-fallback": (
        {
            "rounds": 4,
            "links": [
                {
                    "name": f"{p}/udp-intermittent",
                    "delay_ms": 20,
                    "buffer_packets": 30,
                    "up": {"rate_mbit": 10},
                    "down": {"trace": f"chaudhary-patterns-traces/{p.lower()}-short.mahi"},
                    "middlebox": {"block_udp": True, "active_from_s": 10.0, "on_s": 35.0, "off_s": 25.0},
                }
                for p in ("Incr", "Decr", "DH", "DL", "DVL")
            ],
        },
        "the five patterns with UDP blocked 35 s in 60 s; 4 rounds",
    ),
    "chaudhary-intervention": (
        {
            "rounds": 16,
            "video": {"duration_s": 60},
            "race": {"quic_idle_timeout_ms": 30000},
            "intervention": {"onset_s": [10.0, 40.0]},
        },
        "the shipped file (60 s clip, Chromium's 30 s idle timeout), 16 rounds",
    ),
}


def _short(file: str, overrides: dict, note: str) -> ShippedScenario:
    name = file.removesuffix(".toml")
    standard, standard_note = STANDARD.get(name, (None, ""))
    # the standard budget re-measures flagged runs (the short one's retry_flagged = false is dropped)
    return ShippedScenario(
        file,
        {**overrides, **SHORT_FIDELITY},
        note,
        {**standard, "fidelity": {}} if standard is not None else None,
        standard_note,
    )


SCENARIOS = {
    s.name: s
    for s in (
        _short("kakhki-fig2-macw.toml", {"rounds": 4}, "4 rounds"),
        _short(
            "kakhki-fig6a-object-size.toml",
            {"rounds": 5, "links[*]": {"rate_mbit": [10, 50]}, "workloads": {"object_size": ["10k", "1m"]}},
            "10, 50 Mbit/s x 10 KB, 1 MB; 5 rounds",
        ),
        _short(
            "kakhki-fig6b-object-count.toml",
            {"rounds": 5, "links[*]": {"rate_mbit": [50]}, "workloads": ["1x1m", "100x10k"]},
            "50 Mbit/s x 1x1 MB, 100x10 KB; 5 rounds",
        ),
        _short(
            "kakhki-fig7-zero-rtt.toml",
            {"rounds": 5, "links[*]": {"rate_mbit": [50]}, "workloads": {"object_size": ["5k", "10m"]}},
            "50 Mbit/s x 5 KB, 10 MB; 5 rounds",
        ),
        _short(
            "kakhki-fig8a-loss.toml",
            {"rounds": 6, "links[*]": {"rate_mbit": [10]}, "workloads": {"object_size": ["100k", "1m"]}},
            "10 Mbit/s, 1% loss x 100 KB, 1 MB; 6 rounds",
        ),
        _short(
            "kakhki-fig8b-rtt112.toml",
            {"rounds": 5, "links[*]": {"rate_mbit": [10]}, "workloads": {"object_size": ["10k", "1m"]}},
            "10 Mbit/s, 112 ms x 10 KB, 1 MB; 5 rounds",
        ),
        _short(
            "kakhki-sec5-reordering.toml",
            {"rounds": 5, "links[*]": {"rtt_ms": 36}, "workloads": {"object_size": ["1m"]}},
            "36 ms x none/1%/5% reordering x 1 MB; 5 rounds",
        ),
        _short(
            "kakhki-fluctuating-pageload.toml",
            {
                "rounds": 6,
                "links": [
                    {
                        "name": "random-2-20",
                        "delay_ms": 18,
                        "buffer_bytes": 30000,
                        "up": {"rate_mbit": 10},
                        "down": {"trace": "kakhki-fluctuating-traces/random-2-20mbit-500ms.mahi"},
                    }
                ],
                "workloads": ["1x1m"],
            },
            "random 2-20 Mbit/s trace x 1 MB; 6 rounds",
        ),
        _short(
            "kakhki-table4-fairness.toml",
            {
                "rounds": 3,
                "duration_s": 20,
                "starts": ["simultaneous"],
                "matchups": [{"quic": 1, "tcp": 1}, {"quic": 1, "tcp": 2}, {"quic": 1, "tcp": 4}, {"quic": 2}],
            },
            "QUIC vs TCP, TCPx2, TCPx4, QUIC vs QUIC, simultaneous, 20 s; 3 runs",
        ),
        _short(
            "kakhki-video.toml",
            {"rounds": 3, "players": ["native"], "video": {"duration_s": 20}, "links[*]": {"rate_mbit": [10]}},
            "native player, 20 s clip, 10 Mbit/s with and without 1% loss; 3 rounds",
        ),
        _short(
            "zhang-fast-internet.toml",
            {
                "rounds": 4,
                "links[*]": {"rate_mbit": [100, 1000]},
                "workloads": ["1x50m"],
                "arms": [{"label": "h2", "protocol": "h2"}, {"label": "h3", "protocol": "h3"}],
            },
            "100 and 1000 Mbit/s x 50 MB, our client only; 4 rounds",
        ),
        _short("langley-udp-blocked.toml", {"rounds": 4}, "the four middleboxes as shipped; 4 rounds"),
        _short(
            "kakhki-mobile.toml",
            {
                "rounds": 4,
                "client_cpu": ["unlimited", "phone-2014"],
                "links[*]": {"rate_mbit": [10]},
                "workloads": ["1x1m"],
            },
            "Chromium, unlimited vs a 2014 phone's CPU, 10 Mbit/s x 1 MB; 4 rounds",
        ),
        _short(
            "kakhki-proxy.toml",
            {
                "rounds": 4,
                "links": [
                    {
                        "name": "low-rtt",
                        "rate_mbit": 20,
                        "loss": [0.0, 0.005],
                        "link_a": {"rtt_ms": 18},
                        "link_b": {"rtt_ms": 18},
                    }
                ],
                "workloads": ["10k", "2m"],
            },
            "no proxy, TCP proxy, QUIC proxy x 36 ms, loss 0 and ~1% x 10 KB, 2 MB; 4 rounds",
        ),
        _short(
            "chaudhary-fallback.toml",
            {
                "rounds": 2,
                "links": [
                    {
                        "name": f"{p}/udp-intermittent",
                        "delay_ms": 20,
                        "buffer_packets": 30,
                        "up": {"rate_mbit": 10},
                        "down": {"trace": f"chaudhary-patterns-traces/{p.lower()}-short.mahi"},
                        "middlebox": {"block_udp": True, "active_from_s": 10.0, "on_s": 35.0, "off_s": 25.0},
                    }
                    for p in ("DL", "DH")
                ],
            },
            "DL and DH with UDP blocked 35 s in 60 s (fallback happens); 2 rounds",
        ),
        _short(
            "chaudhary-intervention.toml",
            {
                "rounds": 6,
                "video": {"duration_s": 30},
                "race": {"quic_idle_timeout_ms": 10000},
                "intervention": {"onset_s": [5.0, 12.0]},
            },
            "30 s clip, 10 s idle timeout, onset 5-12 s; 6 rounds (3 treated)",
        ),
        _short(
            "chaudhary-patterns.toml",
            {
                "rounds": 2,
                "video": {"duration_s": 60},
                "links": [
                    {
                        "name": "DL",
                        "delay_ms": 20,
                        "buffer_packets": 30,
                        "up": {"rate_mbit": 10},
                        "down": {"trace": "chaudhary-patterns-traces/dl-short.mahi"},
                    }
                ],
            },
            "the DL pattern 10x compressed, 60 s clip; 2 rounds",
        ),
    )
}

SMALL = [5000, 10000, 100000]

CLAIMS: list[Claim] = [
    Claim(
        "kakhki-fig2",
        KAKHKI,
        "Fig. 2, §4.1",
        "QUIC as configured in the public code release (MACW 107) takes twice as long to download "
        "a large file (10 MB, 100 Mbit/s) as the configuration matching Google's servers (MACW 430).",
        "~2x (PLT, MACW 107 / 430)",
        "kakhki-fig2-macw",
        Ratio("macw107", "macw430", at_least=1.5),
        mininet="agrees in kind: their unmodified Chromium server already matched the adjusted one "
        "(the MACW raise and the slow-start fix are upstream)",
        note="our endpoint (quinn), not gQUIC 34; 'twice' tested as >= 1.5x and significant",
    ),
    Claim(
        "kakhki-fig6a",
        KAKHKI,
        "Fig. 6a",
        "QUIC outperforms TCP in nearly every scenario of object size x rate limit (one object).",
        "most cells significantly in QUIC's favour (p < 0.01)",
        "kakhki-fig6a-object-size",
        Cells("h3", "h2", "a", at_least=0.75),
        mininet="agrees, though 'the difference in performance is minimal'",
    ),
    Claim(
        "kakhki-fig6b-few",
        KAKHKI,
        "Fig. 6b",
        "QUIC outperforms TCP for pages of 1 to 10 objects (1 MB in total) at every rate limit.",
        "QUIC faster (p < 0.01)",
        "kakhki-fig6b-object-count",
        Cells("h3", "h2", "a", where={"object_count": [1, 2, 5, 10]}, at_least=0.75),
        mininet="agrees (QUIC ahead in almost all cells)",
    ),
    Claim(
        "kakhki-fig6b-many-small",
        KAKHKI,
        "Fig. 6b",
        "QUIC outperforms TCP in every scenario except in the case of large numbers of small objects "
        "(100 x 10 KB, 200 x 5 KB) at high rates, where TCP wins.",
        "TCP faster (p < 0.01)",
        "kakhki-fig6b-object-count",
        Cells("h3", "h2", "b", where={"object_count": [100, 200], "rate_mbit": [50, 100]}, at_least=0.5),
        mininet="disagrees: QUIC ahead there too",
        note="buffer: one BDP per rate (the paper tuned its token bucket so flows reach the cap, §3.2). "
        "With the 30 KB buffer used until 2026-11-27 (0.13 BDP at 50 Mbit/s) QUIC won here by 36-38%: "
        "unpaced kernel TCP lost in slow start at cwnd ~88 packets and left Recovery at ssthresh ~47 "
        "(~16 Mbit/s) while paced quinn kept the link full; with one BDP TCP leaves SlowStart by HyStart "
        "without a loss (a 3-round check: TCP faster by 7% for 100 x 10 KB and 26% for 200 x 5 KB at "
        "50 Mbit/s, 34% for 200 x 5 KB at 100 Mbit/s). What multiplexing costs QUIC here: the 101st stream "
        "waits for MAX_STREAMS, which quinn sends only after 13 streams are freed.",
    ),
    Claim(
        "kakhki-fig7-small",
        KAKHKI,
        "Fig. 7",
        "0-RTT gives QUIC a significant gain for small objects.",
        "0-RTT faster (p < 0.01)",
        "kakhki-fig7-zero-rtt",
        Cells("h3-0rtt", "h3-1rtt", "a", where={"object_size": SMALL, "rate_mbit": [10, 50, 100]}, at_least=0.75),
    ),
    Claim(
        "kakhki-fig7-large",
        KAKHKI,
        "Fig. 7",
        "The 0-RTT gain becomes insignificant for large objects (connection setup is a tiny part of the PLT).",
        "no significant difference at 10 MB",
        "kakhki-fig7-zero-rtt",
        Cells("h3-0rtt", "h3-1rtt", "same", where={"object_size": [10000000]}, tolerance_pct=5.0, at_least=0.75),
    ),
    Claim(
        "kakhki-fig8a-loss",
        KAKHKI,
        "Fig. 8a",
        "With 1% loss QUIC outperforms TCP, as without loss (it recovers from loss quickly).",
        "most cells in QUIC's favour (p < 0.01)",
        "kakhki-fig8a-loss",
        Cells("h3", "h2", "a", at_least=0.75),
        mininet="disagrees: TCP ahead in about half the cells",
    ),
    Claim(
        "kakhki-fig8b-rtt",
        KAKHKI,
        "Fig. 8b",
        "At 112 ms RTT QUIC outperforms TCP (0-RTT saves whole round trips).",
        "most cells in QUIC's favour (p < 0.01)",
        "kakhki-fig8b-rtt112",
        Cells("h3", "h2", "a", at_least=0.75),
        mininet="agrees",
    ),
    Claim(
        "kakhki-reordering",
        KAKHKI,
        "§1, §4.2, §5.1",
        "In presence of packet re-ordering, QUIC performs significantly worse than TCP in many "
        "scenarios: re-ordered packets cause high numbers of false losses.",
        "no number in our copy (TCP faster, p < 0.01)",
        "kakhki-sec5-reordering",
        Cells("h3", "h2", "b", where={"link": contains("reorder")}, at_least=0.5),
        note="reordering depth is ours (10 ms early, 1% and 5% of packets)",
    ),
    Claim(
        "kakhki-fluctuating",
        KAKHKI,
        "§1 (key findings)",
        "QUIC outperforms TCP in scenarios with fluctuating bandwidth (no ACK ambiguity: more precise "
        "RTT and bandwidth estimates).",
        "no number in our copy",
        "kakhki-fluctuating-pageload",
        Cells("h3", "h2", "a", at_least=0.75),
        note="fluctuation patterns are ours (scenarios/kakhki-fluctuating-pageload.toml)",
    ),
    Claim(
        "kakhki-table4-tcp",
        KAKHKI,
        "Table 4, Fig. 4a",
        "Competing with one TCP flow, QUIC consumes about twice the bottleneck bandwidth of TCP.",
        "2.71 vs 1.62 Mbit/s (1.67x)",
        "kakhki-table4-fairness",
        Ratio(
            "QUIC",
            "TCP",
            at_least=1.5,
            metric="router_mbit",
            unit="Mbit/s",
            flows=True,
            where={"matchup": "QUIC vs TCP", "start": "simultaneous"},
        ),
        mininet="agrees: 2.51 vs 1.95 Mbit/s (1.29x)",
        explain=Explain("fairness"),
        note="our QUIC is quinn's Cubic with N = 1 (QUIC 37's setting): 2.30 vs 2.68 Mbit/s over 11 counted 30 s "
        "runs. The paper's cause, a gQUIC Cubic that grows faster than the kernel's, is absent: in congestion "
        "avoidance quinn grows 7.0 packets/s against the kernel's 6.5, but its epochs end sooner (0.78 vs "
        "0.90 s; 36 vs 29 Recovery entries per run for about as many drops, 64 vs 61 packets), so its mean "
        "cwnd is 15.7 vs 17.4 packets, as for a paced flow sharing a drop-tail queue with an unpaced one that "
        "fills it in bursts (QUIC's packets dropped at 1.14%, TCP's at 0.91%). With N = 2 (QUIC 34's and "
        "quiche's default) our QUIC takes 2.6x (3.6 vs 1.4 Mbit/s, 2 counted runs).",
    ),
    Claim(
        "kakhki-table4-tcpx2",
        KAKHKI,
        "Table 4, Fig. 4b",
        "Against two TCP flows QUIC still takes more than 50% of the bottleneck (not fair even "
        "assuming 2-connection emulation).",
        "2.8 vs 0.7 and 0.96 Mbit/s",
        "kakhki-table4-fairness",
        Ratio(
            "QUIC",
            TCP_MEAN,
            at_least=2.0,
            metric="router_mbit",
            unit="Mbit/s",
            flows=True,
            where={"matchup": "QUIC vs TCPx2", "start": "simultaneous"},
        ),
        mininet="disagrees: 1.48 vs 1.33 and 1.33 Mbit/s, fair",
        explain=Explain("fairness"),
        note="> 50% of the link = QUIC above 2x the mean TCP flow. As for kakhki-table4-tcp, our QUIC is "
        "quinn's Cubic with N = 1, which takes about a fair share and no more: its state machine enters "
        "Recovery more often per run than each TCP flow's (below)",
    ),
    Claim(
        "kakhki-table4-quic-quic",
        KAKHKI,
        "§5.1 Fairness",
        "Two QUIC flows are fair to each other.",
        "no number (fair)",
        "kakhki-table4-fairness",
        Cells(
            "QUIC 1",
            "QUIC 2",
            "same",
            tolerance_pct=20.0,
            at_least=1.0,
            metric="router_mbit",
            lower_is_better=False,
            flows=True,
            where={"matchup": "QUIC vs QUIC", "start": "simultaneous"},
        ),
        explain=Explain("fairness"),
    ),
    Claim(
        "kakhki-video",
        KAKHKI,
        "§1, §5 (video)",
        "QUIC achieves better quality of experience for video streaming, but only for high-resolution video.",
        "no number in our copy",
        "kakhki-video",
        Cells("h3", "h2", "a", metric="qoe", lower_is_better=False, at_least=0.5),
        note="our 60 s synthetic clip up to 1080p, Pensieve QoE, not YouTube's one-hour video",
        explain=Explain("video", states=False),
    ),
    Claim(
        "chaudhary-tcp-as-good",
        CHAUDHARY,
        "§5, Fig. 8",
        "A TCP-only browser gives better or the same QoE as a QUIC-enabled one in more than 60% of cases.",
        "61% of session pairs (Welch, p < 0.05)",
        "chaudhary-fallback",
        PairShare(quic_arm="quic-enabled", at_least=0.5),
        note="our native player over the racing client (Chromium's rules) vs TCP-only, Table 3 patterns behind "
        "middleboxes that break QUIC (fallback happens), not YouTube",
        explain=Explain("video", states=False),
    ),
    Claim(
        "chaudhary-granger",
        CHAUDHARY,
        "§6, Fig. 12",
        "Fallback to TCP Granger-causes a quality drop or a stall in 70% of the QUIC-enabled sessions "
        "where TCP did better or the same.",
        "70% (B: 20%, S: 60%)",
        "chaudhary-fallback",
        GrangerShare(at_least=0.5),
        note="F(t) = bytes over TCP per second from linkem's flow log",
        explain=Explain("video", states=False, fallback=True),
    ),
    Claim(
        "chaudhary-causal",
        CHAUDHARY,
        "§7 (future work), tested by intervention",
        "Falling back to TCP causes quality drops and stalls (the reading of §6's Granger tests; §7: the "
        "average treatment effect would need interventions).",
        "not measured in the paper",
        "chaudhary-intervention",
        Ate("qoe", "lower"),
        note="QUIC broken at a random onset in a random half of the QUIC-enabled sessions; the effect of the "
        "break and the fallback it forces (analyses/fallback/intervention.py)",
        explain=Explain("video", states=False, fallback=True),
    ),
    Claim(
        "zhang-equal-to-500",
        ZHANG,
        "§4, Fig. 2",
        "Up to 500 Mbit/s QUIC and TCP download a large file equally fast.",
        "477 vs 479 Mbit/s at 500 Mbit/s",
        "zhang-fast-internet",
        Cells("h3", "h2", "same", where={"rate_mbit": [50, 100, 200, 500]}, tolerance_pct=5.0, at_least=0.75),
        note="our endpoint's client (quinn) and HTTP/2 over kernel TCP, 200 MB (50 MB short), 10 ms RTT",
    ),
    Claim(
        "zhang-slower-at-1g",
        ZHANG,
        "§4, Table 2",
        "At 1 Gbit/s QUIC is slower than TCP (cURL h2 939 vs h3 792 Mbit/s; Chrome h2 889-924 vs h3 446-475).",
        "QUIC 16-50% below TCP",
        "zhang-fast-internet",
        Cells("h3", "h2", "b", where={"rate_mbit": [1000]}, at_least=1.0),
        note="on 2 vCPUs the endpoints and linkem share cores: the CPU table names who saturated",
    ),
    Claim(
        "zhang-receiver-cpu",
        ZHANG,
        "§5",
        "QUIC's receiver spends far more CPU per byte than TCP's (more packets, ACKs and decryption "
        "in user space): the cause of its shortfall at 1 Gbit/s.",
        "receiver-side processing (no single factor in our copy)",
        "zhang-fast-internet",
        Ratio("h3", "h2", at_least=1.5, metric="client_cpu_s_per_mb", unit="s/MB", where={"rate_mbit": [1000]}),
        note=(
            "client CPU per MB forwarded, from the client's cgroup; TCP's receive softirq is only partly charged to it"
        ),
        explain=Explain("party-cpu", states=False),
    ),
    Claim(
        "langley-server-cpu",
        LANGLEY,
        "§6.7",
        "QUIC's server CPU per byte is 3.5x that of TLS/TCP (2x after optimisation).",
        "3.5x, then 2x",
        "zhang-fast-internet",
        Ratio(
            "h3", "h2", at_least=2.0, at_most=3.5, metric="server_cpu_s_per_mb", unit="s/MB", where={"rate_mbit": [100]}
        ),
        note="our quinn server vs our HTTP/2 server over kernel TCP, per MB forwarded, at 100 Mbit/s, one "
        "connection, no server logs. Per-MB cost falls with the rate as each wake-up handles more packets "
        "(standard run, medians of the counted runs: QUIC 17.5 ms/MB at 100 Mbit/s, 5.4 at 1 Gbit/s; TCP 1.7 "
        "and 1.55), so one paced connection at 100 Mbit/s is far from a loaded production server (at 1 "
        "Gbit/s the ratio is 3.5x). TCP's server is also undercounted: its ACK-clocked sends run in "
        "softirq, charged to whatever the CPU was running; linkem's CPU per MB is higher under TCP than "
        "under QUIC (9.1 vs 6.3 ms/MB at 1 Gbit/s) though QUIC puts more packets through it",
        explain=Explain("party-cpu", states=False),
    ),
    Claim(
        "langley-high-bandwidth",
        LANGLEY,
        "§6.8",
        "Above 100 Mbit/s QUIC may be slower than TCP, held back by the client's CPU.",
        "no number (a limitation)",
        "zhang-fast-internet",
        Cells("h3", "h2", "b", where={"rate_mbit": [200, 500, 1000]}, at_least=0.5),
        explain=Explain("party-cpu", states=False),
    ),
    Claim(
        "kakhki-table4-tcpx4",
        KAKHKI,
        "Table 4, Fig. 4b",
        "Against four TCP flows QUIC still takes more than 50% of the bottleneck.",
        "2.75 vs 0.36-0.45 Mbit/s (6.6x the mean TCP flow)",
        "kakhki-table4-fairness",
        Ratio(
            "QUIC",
            TCP_MEAN,
            at_least=4.0,
            metric="router_mbit",
            unit="Mbit/s",
            flows=True,
            where={"matchup": "QUIC vs TCPx4", "start": "simultaneous"},
        ),
        explain=Explain("fairness"),
        note="> 50% of the link = QUIC above 4x the mean TCP flow. As for kakhki-table4-tcp, our QUIC is "
        "quinn's Cubic with N = 1, which takes about a fair share and no more: its state machine enters "
        "Recovery more often per run than each TCP flow's (below)",
    ),
    Claim(
        "kakhki-mobile",
        KAKHKI,
        "§1, §5 (mobile)",
        "All of QUIC's performance gains are diminished on phones from 2013 and late 2014 "
        "(application-layer processing and encryption on a slow CPU).",
        "gains diminished (no number in our copy)",
        "kakhki-mobile",
        Shrinks("h3", "h2", "client_cpu", fast="unlimited", slow="phone-2014", at_least=0.5),
        note="headless Chromium under a CFS quota of a quarter core as the 2014 phone, not a Nexus 6",
    ),
    Claim(
        "kakhki-mobile-app-limited",
        KAKHKI,
        "§5.3 (mobile), state machine",
        "On the phone QUIC's sender goes from SlowStart to ApplicationLimited: the client's CPU, not the "
        "network, limits it.",
        "the transition appears on the phone's state machine",
        "kakhki-mobile",
        StateShift("h3", "SlowStart->ApplicationLimited", "client_cpu", fast="unlimited", slow="phone-2014"),
        note="our server's instrumented QUIC congestion controller (server qlog), Chromium as the client",
    ),
    Claim(
        "kakhki-proxy-tcp",
        KAKHKI,
        "§5 (proxies)",
        "A split-connection TCP proxy shrinks TCP's gap to QUIC at low latency and under loss.",
        "no number in our copy",
        "kakhki-proxy",
        Twins("h2", "proxy", "tcp", "none", "a", where={"rtt_ms": [36.0]}),
        note="h2 through the split-connection proxy vs h2 direct over the same two segments, at the lowest "
        "RTT (36 ms), with and without loss",
        explain=Explain(states=False),
    ),
    Claim(
        "kakhki-proxy-quic-large",
        KAKHKI,
        "§5 (proxies)",
        "An unoptimised QUIC proxy helps large objects under loss.",
        "no number in our copy",
        "kakhki-proxy",
        Twins("h3", "proxy", "quic", "none", "a", where={"object_size": [2000000], "loss": above(0)}),
        note="h3 terminated at the proxy vs h3 direct, 2 MB with ~1% loss end to end",
        explain=Explain(states=False),
    ),
    Claim(
        "kakhki-proxy-quic-small",
        KAKHKI,
        "§5 (proxies)",
        "An unoptimised QUIC proxy hurts small objects (no 0-RTT through it).",
        "no number in our copy",
        "kakhki-proxy",
        Twins("h3", "proxy", "quic", "none", "b", where={"object_size": [10000]}),
        note="h3 terminated at the proxy vs h3 direct, 10 KB",
        explain=Explain(states=False),
    ),
    Claim(
        "langley-racing-wait",
        LANGLEY,
        "§3.8",
        "The client races QUIC and TLS/TCP, delaying TLS/TCP by up to 300 ms; when QUIC is blocked, "
        "TCP is used after that wait.",
        "300 ms",
        "langley-udp-blocked",
        Value(
            "quic-enabled",
            "time_to_fallback_ms",
            at_least=300.0,
            at_most=300.0 + 3 * 36 + 20,
            where={"link": contains("block_udp=True")},
        ),
        note="time to fallback = the 300 ms wait + TCP and TLS handshakes (2 RTT of 36 ms); the range allows "
        "3 RTT and 20 ms of scheduling",
    ),
    Claim(
        "langley-udp-blocked",
        LANGLEY,
        "§3.8, §7.2",
        "If QUIC is blocked or its handshake packet exceeds the path MTU, the QUIC handshake fails and the "
        "client falls back to TLS/TCP: the fallback costs the race's wait against a TCP-only client.",
        "no number (4.4% of clients cannot use QUIC)",
        "langley-udp-blocked",
        Cells(
            "quic-enabled",
            "tcp-only",
            "b",
            where={"link": contains("block_udp=True", "max_udp_datagram")},
            at_least=1.0,
        ),
        note="UDP dropped both ways, and datagrams over 1200 IP bytes dropped (no Initial passes)",
    ),
    Claim(
        "langley-blackhole",
        LANGLEY,
        "§7.3",
        "A firewall that lets QUIC's first packets through and black-holes the rest defeats the TCP "
        "fallback logic: the client hits a packet black-hole.",
        "no number (the change was reverted)",
        "langley-udp-blocked",
        Ratio("quic-enabled", "tcp-only", at_least=10.0, where={"link": contains("quic_blackhole")}),
        note="our racing client notices at Chromium's 30 s idle timeout, then retries over TCP",
    ),
    Claim(
        "langley-0rtt-handshake",
        LANGLEY,
        "§6.2, Fig. 7",
        "QUIC's handshake latency stays nearly flat with RTT (0-RTT, 1-RTT at worst) while TLS/TCP "
        "needs 2-3 round trips: QUIC gets its first byte sooner.",
        "88% 0-RTT on desktop; TLS/TCP 2-3 RTT",
        "kakhki-fig8b-rtt112",
        Cells("h3", "h2", "a", metric="ttfb_ms", at_least=0.75),
        note="time to first byte at 112 ms RTT with 0-RTT state kept (TLS 1.3 over TCP: 2 RTT before the "
        "request), our endpoint, not gQUIC",
    ),
    Claim(
        "mininet-unfair-tcp",
        MININET,
        "Table 4 (theirs)",
        "One QUIC flow is unfair when competing with one TCP flow.",
        "2.51 vs 1.95 Mbit/s (1.29x)",
        "kakhki-table4-fairness",
        Ratio(
            "QUIC",
            "TCP",
            at_least=1.2,
            metric="router_mbit",
            unit="Mbit/s",
            flows=True,
            where={"matchup": "QUIC vs TCP", "start": "simultaneous"},
        ),
        explain=Explain("fairness"),
        note="the Mininet ran Chromium's QUIC toy server, whose Cubic emulates N = 2 connections by default "
        "(quiche's kDefaultNumConnections) and which it credits for the 1.29x; the scenario runs N = 1 "
        "(Kakhki's QUIC 37), where quinn gets 0.86x (2.30 vs 2.68 Mbit/s, 11 runs: 36 vs 29 window "
        "reductions per 30 s for about as many drops, see kakhki-table4-tcp). With N = 2 our QUIC takes 2.6x "
        "(3.6 vs 1.4 Mbit/s, 2 counted runs), more than the Mininet's 1.29x.",
    ),
    Claim(
        "mininet-minimal-diff",
        MININET,
        "Fig. 6 top (theirs)",
        "QUIC tends to outperform TCP over object sizes and rates, but the difference in performance is minimal.",
        "light green (small % differences)",
        "kakhki-fig6a-object-size",
        Cells("h3", "h2", "same", tolerance_pct=10.0, at_least=0.5),
        note="'minimal' tested as the whole interval within +-10%. Small objects are the handshake: 0-RTT "
        "QUIC gets the HTML's first byte after one RTT (38-40 ms), TLS 1.3 resumption over TCP after three "
        "(110 ms), less one RTT QUIC gives back on 10 KB because quinn's 12,000-byte initial window of "
        "1,200-byte packets cannot carry it in one flight while TCP's IW10 of 14,480 bytes does (+25% at 10 "
        "and 50 Mbit/s, 2026-11-27); Kakhki's Fig. 6a shows the same 0-RTT gain. The 1 MB cells were "
        "+39% at 50 Mbit/s with the 30 KB buffer used until 2026-11-27 and within 3% with one BDP. The "
        "Mininet text gives no bottleneck buffer for its page loads.",
    ),
    Claim(
        "mininet-rtt112",
        MININET,
        "Fig. 8 with delay (theirs)",
        "QUIC outperformed TCP in environments with high latency (112 ms), most likely due to 0-RTT.",
        "green almost everywhere",
        "kakhki-fig8b-rtt112",
        Cells("h3", "h2", "a", at_least=0.5),
    ),
    Claim(
        "mininet-fair-tcpx2",
        MININET,
        "Table 4 (theirs)",
        "One QUIC flow is fair when competing with two TCP flows.",
        "1.48 vs 1.33 and 1.33 Mbit/s",
        "kakhki-table4-fairness",
        Cells(
            "QUIC",
            TCP_MEAN,
            "same",
            tolerance_pct=25.0,
            at_least=1.0,
            metric="router_mbit",
            lower_is_better=False,
            flows=True,
            where={"matchup": "QUIC vs TCPx2", "start": "simultaneous"},
        ),
        explain=Explain("fairness"),
    ),
    Claim(
        "mininet-loss",
        MININET,
        "Fig. 8 with loss (theirs)",
        "With 1% loss TCP outperformed QUIC in about half the scenarios.",
        "about half the cells",
        "kakhki-fig8a-loss",
        Cells("h3", "h2", "b", at_least=0.5),
    ),
    Claim(
        "mininet-many-small",
        MININET,
        "Fig. 6 bottom (theirs)",
        "QUIC outperforms TCP in almost all object-count scenarios, large numbers of small objects included.",
        "light green almost everywhere",
        "kakhki-fig6b-object-count",
        Cells("h3", "h2", "a", where={"object_count": [100, 200]}, at_least=0.75),
        note="Kakhki's own Fig. 6b has TCP faster with many small objects (kakhki-fig6b-many-small holds on "
        "the same cell). The state machines (below) show where: our QUIC enters Recovery, "
        "TCP stays Open. quinn's Cubic has no delay-based slow-start exit (HyStart), so its slow start "
        "overshoots the buffer, where the kernel's HyStart++ leaves it before the queue fills "
        "(docs/conformance.md: slow-start exit).",
    ),
]


def claims(only: list[str] | None = None) -> list[Claim]:
    """All claims, or those named (ids; a scenario name selects all its claims)."""
    if not only:
        return list(CLAIMS)
    ids = {c.id for c in CLAIMS}
    unknown = [o for o in only if o not in ids and o not in SCENARIOS]
    if unknown:
        raise LonglookError(f"--only: unknown claim {unknown[0]!r}", hint="claims: " + ", ".join(c.id for c in CLAIMS))
    return [c for c in CLAIMS if c.id in only or c.scenario in only]
