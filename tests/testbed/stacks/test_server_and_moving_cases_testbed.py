"""The matrix's server case and its moving cases on the wire. Retry: our server and quic-go's,
each started for it (an arm's `server_case`), send a Retry whose token our client echoes, and
the same servers unasked send none, so the check cannot pass by default. Connection
migration: quic-go's, quiche's and aioquic's clients, asked for it across a handover (their
client case), move to their second address with a new connection ID and the server validates
the new path; asked on a link that stays put, they fail at once. Rebinding: s2n-quic's server
follows a client whose NAT moved it to a new port, between the matrix's public addresses, and
validates a migration between two paths each behind a NAT of its own. A few seconds of
traffic each."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from testbed_helpers import needs_testbed

from longlook.analyses.wire_runs import judge_cases, run_field
from longlook.core.execute import Runner
from longlook.core.store import Store
from longlook.kinds.pageload import Scenario
from longlook.linkprofile import HANDOVER_CLIENT_ADDR
from longlook.stacks.registry import resolve

HEAD = """
name = "{name}"
rounds = 1
workloads = ["{workload}"]
retries = 1
[options]
zero_rtt = false
[fidelity]
exclude_flagged = false
[capture]
pcap = "full"
keylog = true
"""
PLAIN_LINK = "[[links]]\nrate_mbit = 20\nrtt_ms = 20\n"
HANDOVER_LINK = (
    "[[links]]\nrate_mbit = 20\nrtt_ms = 20\nbuffer_bytes = 100000\n"
    "handover = { at_s = 1.0, path = { rate_mbit = 10, rtt_ms = 60, buffer_bytes = 75000 } }\n"
)


def _arm(label: str, **fields: str) -> str:
    return "[[arms]]\n" + f'label = "{label}"\nprotocol = "h3"\n' + "".join(f'{k} = "{v}"\n' for k, v in fields.items())


def _runs(tmp_path: Path, toml: str):
    summary = Runner(Scenario.from_toml(toml), tmp_path, link_check=False).run()
    assert not summary.interrupted, summary
    with Store.open(tmp_path, read_only=True) as store:
        return {r["arm"]: r.to_dict() for _, r in store.runs_frame().iterrows()}


def _needs(*stacks: str) -> None:
    """Skip where a stack is not installed (never in CI: scripts/setup.sh installs them all)."""
    for name in stacks:
        if not resolve(name).installed() and not os.environ.get("CI"):
            pytest.skip(f"{name} is not installed (longlook stacks install {name})")


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
@needs_testbed("linkem", "endpoint")
def test_a_server_started_for_retry_sends_one_and_the_same_server_unasked_does_not(tmp_path: Path):
    _needs("quic-go")
    arms = [
        _arm("ours_retry", server_case="retry"),
        _arm("ours_plain"),
        _arm("quicgo_retry", server="quic-go", server_case="retry"),
        _arm("quicgo_plain", server="quic-go"),
    ]
    toml = HEAD.format(name="retry", workload="1x20k") + PLAIN_LINK + "".join(arms)
    runs = _runs(tmp_path, toml)
    assert all(r["status"] == "ok" for r in runs.values()), {k: r["error"] for k, r in runs.items()}
    verdicts = {arm: judge_cases(tmp_path, run, ("retry",))["retry"] for arm, run in runs.items()}
    for server in ("ours", "quicgo"):
        asked, plain = verdicts[f"{server}_retry"], verdicts[f"{server}_plain"]
        assert asked["verdict"] == "passed" and "token" in asked["evidence"], asked
        assert plain["verdict"] == "failed" and "no Retry" in plain["evidence"], plain


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
@needs_testbed("linkem", "endpoint")
def test_a_stack_s_client_told_to_migrate_moves_with_a_new_connection_id(tmp_path: Path):
    _needs("quic-go", "quiche", "aioquic")
    # (ngtcp2's gtlsclient is asked in the matrix too, and moves its socket, but with the old
    # path down it never sends from there: stacks/adapters/ngtcp2, ROUTE_SETTLE_MS)
    movers = ("quic-go", "quiche", "aioquic")
    # (our client beside them: it moves across every handover by itself)
    arms = "".join(_arm(c, client=c, client_case="connection-migration") for c in movers) + _arm("ours")
    runs = _runs(tmp_path / "handover", HEAD.format(name="moves", workload="bulk:4m") + HANDOVER_LINK + arms)
    for client in movers:
        run = runs[client]
        moved = run_field(run.get("details")).get("migration") or {}
        assert run["status"] == "ok" and moved.get("at_ms"), run
        assert moved.get("to", "").startswith(HANDOVER_CLIENT_ADDR), moved
        verdict = judge_cases(tmp_path / "handover", run, ("connection-migration",))["connection-migration"]
        assert verdict["verdict"] == "passed", (client, verdict)
    # on a link that stays put there is nowhere to go: the run fails at once, saying why
    still = _runs(tmp_path / "still", HEAD.format(name="still", workload="1x20k") + PLAIN_LINK + arms)
    for client in movers:
        assert still[client]["status"] == "failed" and "handover" in still[client]["error"], still[client]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
@needs_testbed("linkem", "endpoint")
def test_s2n_quic_s_server_follows_a_rebinding_between_the_matrix_s_public_addresses(tmp_path: Path):
    # s2n-quic refuses a move between addresses of no unicast scope, as linkem's default public
    # ones (198.18.0.0/15) are; the matrix's NAT uses RFC 6598's (commands/matrix.py)
    from longlook.commands.matrix import NAT_PUBLIC

    _needs("s2n-quic")
    link = (
        f"{PLAIN_LINK}buffer_bytes = 50000\n"
        f'nat = {{ rebind_at_s = [1], rebind_to = "port", public = "{NAT_PUBLIC[0]}" }}\n'
    )
    arms = _arm("s2n", server="s2n-quic") + _arm("ours")  # our server beside it: the same move
    runs = _runs(tmp_path, HEAD.format(name="rebind", workload="bulk:4m") + link + arms)
    for arm in ("s2n", "ours"):
        run = runs[arm]
        assert run["status"] == "ok", (arm, run["error"])
        verdict = judge_cases(tmp_path, run, ("rebind-port",))["rebind-port"]
        assert verdict["verdict"] == "passed" and f"{NAT_PUBLIC[0]}:" in verdict["evidence"], (arm, verdict)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="needs tshark (scripts/setup.sh installs it)")
@needs_testbed("linkem", "endpoint")
def test_s2n_quic_s_server_validates_a_migration_between_two_paths_behind_nats(tmp_path: Path):
    # each path behind a NAT of its own, as the matrix's migration grid has them: the server
    # sees our client move between two scoped addresses, and s2n-quic then validates the move
    from longlook.commands.matrix import NAT_PUBLIC

    _needs("s2n-quic")
    link = HANDOVER_LINK.replace("handover = { ", f'nat = {{ public = "{NAT_PUBLIC[0]}" }}\nhandover = {{ ').replace(
        "at_s = 1.0,", f'at_s = 1.0, public = "{NAT_PUBLIC[1]}",'
    )
    arms = _arm("s2n", server="s2n-quic") + _arm("ours")
    runs = _runs(tmp_path, HEAD.format(name="migrate", workload="bulk:4m") + link + arms)
    for arm in ("s2n", "ours"):
        run = runs[arm]
        assert run["status"] == "ok", (arm, run["error"])
        verdict = judge_cases(tmp_path, run, ("connection-migration",))["connection-migration"]
        moved = f"from {NAT_PUBLIC[0]}:"
        assert verdict["verdict"] == "passed" and moved in verdict["evidence"], (arm, verdict)
        assert f"to {NAT_PUBLIC[1]}:" in verdict["evidence"], (arm, verdict)
