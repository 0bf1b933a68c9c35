"""A stack's client asked for connection migration is told where and when to move, as the
native client is (stacks.endpoint.migration_argv), and only on a link with a handover."""

from __future__ import annotations

from types import SimpleNamespace

from longlook.linkprofile import LinkProfile
from longlook.stacks import runner
from longlook.stacks.endpoint import HANDOVER_CLIENT_ADDR
from longlook.stacks.registry import resolve


class Ran(Exception):
    """Stops the fetch once the client's call is known."""


def _fetch(monkeypatch, tmp_path, profile, client="quic-go"):
    stack = resolve(client)
    monkeypatch.setattr(type(stack), "require", lambda self, cc=None: None)
    calls = []

    def run_client(testbed, call, timeout_s):
        calls.append(call.argv)
        raise Ran

    monkeypatch.setattr(runner, "_run_client", run_client)
    fetch = runner.stack_fetcher(stack)
    testbed = SimpleNamespace(profile=profile)
    kw = dict(url="https://198.18.2.2:4433/bulk/4m", protocol="h3", run_id="r", cert_dir=tmp_path)
    kw |= dict(out=tmp_path / "run" / "fetch.json", timeout_s=20, client_case="connection-migration")
    (tmp_path / "run").mkdir()
    try:
        result = fetch(testbed, **kw)
    except Ran:
        return calls[0]
    return result


def test_a_client_asked_to_migrate_is_told_where_and_when_on_a_handover(monkeypatch, tmp_path):
    handover = LinkProfile(rate_mbit=20, handover={"at_s": 1.0, "notice_ms": 20.0, "path": {"rate_mbit": 10.0}})
    argv = _fetch(monkeypatch, tmp_path, handover)
    at = argv.index("--migrate-at-ms")
    assert float(argv[at + 1]) == handover.handover.migrate_at_ms() and argv[at + 3] == HANDOVER_CLIENT_ADDR


def test_a_client_asked_to_migrate_on_a_link_that_stays_put_fails_at_once(monkeypatch, tmp_path):
    still = LinkProfile(rate_mbit=20)
    result = _fetch(monkeypatch, tmp_path, still)
    assert result.status == "failed" and "handover" in result.error


def test_ngtcp2s_client_is_told_when_and_takes_the_routes_address(monkeypatch, tmp_path):
    # gtlsclient's timer counts from the handshake's end and asks the route for its address:
    # it is told to move after the route moved (ROUTE_SETTLE_MS), and the route does move
    from longlook.stacks.adapters.ngtcp2 import ROUTE_SETTLE_MS
    from longlook.stacks.registry import migrates_by_route

    handover = LinkProfile(rate_mbit=20, handover={"at_s": 1.0, "notice_ms": 20.0, "path": {"rate_mbit": 10.0}})
    argv = _fetch(monkeypatch, tmp_path, handover, client="ngtcp2")
    assert f"--change-local-addr={1020 + ROUTE_SETTLE_MS}ms" in argv and "--migrate-to" not in argv
    assert migrates_by_route("ngtcp2") and not migrates_by_route("quic-go") and not migrates_by_route("native")
