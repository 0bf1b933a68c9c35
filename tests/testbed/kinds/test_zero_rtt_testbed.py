"""The fingerprint's 0-RTT on the real testbed (a few seconds per stack): our client resumes
against each stack's server, and each gets the label its server really earns there. Ours
accepts 0-RTT (and its own client sends it); quic-go's server (Allow0RTT, as longlook builds
it), aioquic's (which keeps the tickets it issues) and quiche's (early data enabled, as
longlook builds it) accept it too; no stack's client here resumes (one connection per
process)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from testbed_helpers import needs_testbed

from longlook.core.execute import Runner
from longlook.core.spec import parse_scenario
from longlook.core.store import Store
from longlook.kinds.conformance.params import zero_rtt as z
from longlook.kinds.conformance.sections import fingerprint_html
from longlook.stacks.registry import resolve

STACKS = ("quic-go", "aioquic", "quiche")
SCENARIO = """
kind = "conformance"
name = "zero-rtt"
rounds = 1
timeout_s = 20
object_size = "1m"
include = ["fingerprint"]
stacks = [
  { stack = "ours", ccs = ["cubic"] },
  { stack = "quic-go" },
  { stack = "aioquic", ccs = ["cubic"] },
  { stack = "quiche", ccs = ["cubic"] },
]
[[links]]
rate_mbit = 20
rtt_ms = 30
"""


def _stacks_installed():
    missing = [s for s in STACKS if not resolve(s).installed()]
    if missing and not os.environ.get("CI"):
        return pytest.mark.skip(reason=f"not installed: {', '.join(missing)} (longlook stacks install NAME)")
    return lambda f: f


@needs_testbed("linkem", "endpoint")
@_stacks_installed()
def test_server_side_zero_rtt_of_four_stacks(tmp_path: Path):
    Runner(parse_scenario(SCENARIO), tmp_path / "exp", link_check=False).run()
    with Store.open(tmp_path / "exp", read_only=True) as store:
        fp = store.table("fingerprint")
        html = "\n".join(fingerprint_html(store))
    rows = fp[fp["field"] == "zero_rtt"]
    got = {(r.stack, r.side): r for r in rows.itertuples()}
    assert got[("ours", "server")].label == z.ACCEPTS, got[("ours", "server")].note
    assert got[("ours", "client")].label == "sent, accepted"
    for stack in STACKS:
        assert got[(stack, "server")].label == z.ACCEPTS, got[(stack, "server")].note
        assert got[(stack, "client")].label == z.CLIENT_CANNOT_RESUME
    assert "0-RTT, server (our client resuming)" in html
