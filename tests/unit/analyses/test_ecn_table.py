"""Each sender's ECN from the wire (analyses/ecn): what a run's linkem counts say about a
sender that marks and validates, one that marks and never validates, and one that never
marks, under a marking queue, a bleaching box and an ECT black hole."""

from __future__ import annotations

import pandas as pd

from longlook.analyses.ecn import Condition, condition_of, ecn_table
from longlook.linkprofile import LinkProfile

CONDITIONS = {
    "clean": Condition(marks=True, fault=None),
    "bleach": Condition(marks=True, fault="bleach"),
    "hole": Condition(marks=True, fault="drop_ect"),
}


def _run(arm: str, cell: str, received: int, ect0: int, ce: int = 0, status: str = "ok", sojourn: float = 4.0):
    down = {"received": received, "ect0_seen": ect0, "ect1_seen": 0, "ce_seen": 0, "ce_marked": ce}
    down.update(dropped_aqm=0, sojourn_ms_mean=sojourn)
    return {"arm": arm, "cell_id": cell, "status": status, "details": {"queue": {"down": down}}}


def test_a_validating_sender_a_stubborn_one_and_one_that_never_marks():
    runs = pd.DataFrame(
        [
            # validates: marks everything, stops after 12 packets behind bleaching, survives the hole
            *[_run("good", "clean", 3000, 3000, ce=20) for _ in range(3)],
            *[_run("good", "bleach", 3000, 12) for _ in range(3)],
            *[_run("good", "hole", 3000, 10) for _ in range(3)],
            # never validates: keeps marking behind bleaching; the hole eats its downloads
            *[_run("stubborn", "clean", 3000, 2990, ce=25) for _ in range(3)],
            *[_run("stubborn", "bleach", 3000, 2990) for _ in range(3)],
            *[_run("stubborn", "hole", 400, 390, status="timeout") for _ in range(3)],
            # never marks
            *[_run("plain", "clean", 3000, 0) for _ in range(3)],
            *[_run("plain", "bleach", 3000, 0) for _ in range(3)],
        ]
    )
    t = ecn_table(runs, CONDITIONS)
    assert t["good"]["sends ECT"].startswith("yes, ECT(0)")
    assert t["good"]["behind bleaching (validation)"].startswith("stops marking: 12 ECT packets")
    assert t["good"]["behind an ECT black hole"].startswith("3 of 3 runs completed")
    assert "marked in 3 of 3 runs: 20 CE marks" in t["good"]["reacts to CE"]
    assert t["stubborn"]["behind bleaching (validation)"].startswith("keeps marking: 100%")
    assert t["stubborn"]["behind an ECT black hole"].startswith("0 of 3 runs completed")
    assert t["plain"]["sends ECT"].startswith("no (0%")
    assert t["plain"]["behind bleaching (validation)"] == "n/a: it sends no ECT"
    assert "behind an ECT black hole" not in t["plain"]  # no run of it there: not said


def test_the_switch_keeps_a_sender_s_settings_apart_and_links_name_their_condition():
    runs = pd.DataFrame([_run("h3", "on", 3000, 3000), _run("h3", "off", 3000, 0)])
    t = ecn_table(runs, {"on": CONDITIONS["clean"], "off": CONDITIONS["clean"]}, {"on": "ecn=on", "off": "ecn=off"})
    assert t["h3, ecn=on"]["sends ECT"].startswith("yes") and t["h3, ecn=off"]["sends ECT"].startswith("no")
    link = LinkProfile(rate_mbit=20, aqm={"discipline": "codel", "ecn": True}, down={"middlebox": {"ecn": "bleach"}})
    assert condition_of(link) == Condition(marks=True, fault="bleach")
    assert condition_of(LinkProfile(rate_mbit=20, aqm={"discipline": "dualpi2"})).marks
    assert not condition_of(LinkProfile(rate_mbit=20)).marks
