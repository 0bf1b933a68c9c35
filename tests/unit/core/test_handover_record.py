"""What a run records of a handover (core/audit.py: linkem_delta, handover_detail) and what
our client is told to do on such a link (stacks/endpoint.migration_argv)."""

from __future__ import annotations

from types import SimpleNamespace

from longlook.core.audit import handover_detail, linkem_delta
from longlook.linkprofile import LinkProfile
from longlook.stacks.endpoint import migration_argv


def _stats(down_mono_ms, dropped_up, dropped_down):
    return {
        "elapsed_s": 10.0,
        "directions": {"up": {"dropped_path_down": dropped_up}, "down": {"dropped_path_down": dropped_down}},
        "handover": {
            "config": {"client": "198.18.1.3", "at_ns": 1_000_000_000},
            "first_packet_mono_ms": None if down_mono_ms is None else down_mono_ms - 1000.0,
            "first_path_down_mono_ms": down_mono_ms,
        },
    }


def test_a_run_records_when_its_first_path_went_down_and_what_each_direction_lost():
    before, after = _stats(5_000.0, 3, 10), _stats(9_004.0, 5, 38)
    delta = linkem_delta(before, after)
    d = handover_detail(delta["handover"], t0_ms=8_000.0)
    assert d == {"at_s": 1.0, "first_path_down_t_ms": 1004.0, "dropped_path_down": {"up": 2, "down": 28}}
    # a run that never sent on its first path has no handover time
    none = handover_detail(linkem_delta(_stats(None, 0, 0), _stats(None, 0, 0))["handover"], t0_ms=0.0)
    assert none["first_path_down_t_ms"] is None
    assert "handover" not in linkem_delta({}, {"directions": {}})


def test_our_client_moves_on_a_handover_link_and_nowhere_else():
    moving = LinkProfile(rate_mbit=20, handover={"at_s": 1.0, "notice_ms": 20.0, "path": {"rate_mbit": 10.0}})
    tb = SimpleNamespace(profile=moving)
    assert migration_argv(tb, "h3") == ["--migrate-at-ms", "1020", "--migrate-to", "198.18.1.3"]
    assert migration_argv(tb, "h2") == []  # its connection stays, and dies with its path
    retrying = moving.model_copy(update={"handover": moving.handover.model_copy(update={"tcp_reconnect": True})})
    assert migration_argv(SimpleNamespace(profile=retrying), "h2")[:2] == ["--migrate-at-ms", "1020"]
    assert migration_argv(tb, "race") == []
    assert migration_argv(SimpleNamespace(profile=LinkProfile(rate_mbit=20)), "h3") == []
    assert migration_argv(SimpleNamespace(), "h3") == []
