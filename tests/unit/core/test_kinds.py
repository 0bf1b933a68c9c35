"""What the core asks of its kinds, without a testbed: an arm that measures something else
counts by status and audit, and a run whose receivers dropped datagrams is flagged. A kind
defined in tests/ run through `longlook run`: tests/testbed/core/test_kinds_testbed.py."""

from __future__ import annotations


def test_an_arm_that_measures_something_else_is_not_short_of_its_rounds():
    """The conformance kind's fingerprint arm stores no throughput: its runs count by status
    and audit, so a run summary does not say "fingerprint has 0 of 3 rounds counted"."""
    import pandas as pd

    from longlook.core.status import completion, shortfalls
    from longlook.kinds.conformance import KIND

    runs = pd.DataFrame(
        [
            {
                "run_id": f"{a}{r}",
                "cell_id": "c",
                "arm": a,
                "round": r,
                "status": "ok",
                "protocol_requested": None,
                "protocol_negotiated": None,
                "audit_flagged": False,
                "mbit": 4.5 if a == "alone" else None,
            }
            for a in ("alone", "fingerprint")
            for r in range(3)
        ]
    )
    before = shortfalls(completion(runs, "mbit"), {"c": ["alone", "fingerprint"]}, need=2)
    assert before == ["c: fingerprint has 0 of 3 rounds counted"]
    done = completion(runs, "mbit", metric_free_arms=KIND.metric_free_arms)
    assert shortfalls(done, {"c": ["alone", "fingerprint"]}, need=2) == []
    failed = runs.assign(status=["ok"] * 3 + ["failed"] * 3)  # a failed fingerprint run still does not count
    assert shortfalls(
        completion(failed, "mbit", metric_free_arms=KIND.metric_free_arms), {"c": ["alone", "fingerprint"]}, need=2
    ) == ["c: fingerprint has 0 of 3 rounds counted"]


def test_a_failed_round_is_no_shortfall_where_failures_are_outcomes():
    """A download the NAT's rebinding resets: with failures = "outcome" its rounds are
    outcomes (the timeout), so the run summary does not call the cell short of runs."""
    import pandas as pd

    from longlook.core.status import completion, shortfalls

    runs = pd.DataFrame(
        [
            {
                "run_id": f"{a}{r}",
                "cell_id": "c",
                "arm": a,
                "round": r,
                "attempt": 0,
                "status": "ok" if a == "h3" else "failed",
                "protocol_requested": a,
                "protocol_negotiated": a if a == "h3" else None,
                "audit_flagged": False,
                "plt_ms": 1750.0 if a == "h3" else None,
            }
            for a in ("h3", "h2")
            for r in range(5)
        ]
    )
    done = completion(runs, "plt_ms")
    assert shortfalls(done, {"c": ["h3", "h2"]}, need=2) == ["c: h2 has 0 of 5 rounds counted"]
    outcomes = completion(runs, "plt_ms", failures_as_outcomes=True)
    assert shortfalls(outcomes, {"c": ["h3", "h2"]}, need=2) == []


def test_receiver_drops_flag_a_run_and_count_only_readable_namespaces():
    from longlook.core.audit import Audit, _udp_drops
    from longlook.core.spec import Fidelity

    before = {"client": {"InErrors": 3, "RcvbufErrors": 3}, "server": {"InErrors": 0}}
    after = {"client": {"InErrors": 10, "RcvbufErrors": 10}, "server": {"InErrors": 1}}
    assert _udp_drops(before, after) == 8
    assert _udp_drops({}, {}) is None  # nothing readable: not measured, never 0
    assert _udp_drops(before, {"client": after["client"]}) is None
    a = Audit(receiver_drops=8).judge(Fidelity())
    assert a.flagged and "8 UDP datagrams dropped by the receiving hosts' sockets" in a.reasons[0]
    assert not Audit(receiver_drops=8).judge(Fidelity(max_receiver_drops=10)).flagged
    assert not Audit(receiver_drops=None).judge(Fidelity()).flagged
