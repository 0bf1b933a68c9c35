"""linkem's two datapaths on real namespaces: AF_PACKET (the default; linkem forwards itself,
crates/linkem/src/afpacket.rs) and NFQUEUE (the router's kernel forwards, linkem judges).
On each, the link is the one the profile says (the self-check) and the packets took the
datapath's way (the router kernel forwarded none of them, or all). The rest of the suite runs
on the default; here a middlebox's rewrite and the proxy topology also run on NFQUEUE, and an
experiment records the datapath it ran on. The whole suite runs on NFQUEUE with
LONGLOOK_DATAPATH=nfqueue in the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from longlook.core.store import Store
from longlook.linkprofile import LinkProfile
from longlook.testbed.linkcheck import check_link

from testbed.testbed import test_middlebox_testbed as middlebox
from testbed.kinds import test_proxy_testbed as proxy
from testbed_helpers import needs_testbed


@pytest.fixture
def nfqueue(monkeypatch):
    monkeypatch.setenv("LONGLOOK_DATAPATH", "nfqueue")


def _forwarded_by_kernel(tb) -> int:
    """The router kernel's own count of IPv4 packets it forwarded (/proc/net/snmp)."""
    lines = tb.run("router", ["cat", "/proc/net/snmp"], as_party=False).stdout.splitlines()
    names, values = [line.split() for line in lines if line.startswith("Ip:")][:2]
    return int(values[names.index("ForwDatagrams")])


@needs_testbed("linkem", "linkem-probe")
@pytest.mark.parametrize("datapath", ["afpacket", "nfqueue"])
def test_a_link_is_within_tolerance_on_each_datapath_and_its_packets_took_that_way(datapath):
    from longlook.testbed import Testbed

    p = LinkProfile(name=f"{datapath}-10mbit-20ms", rate_mbit=10, delay_ms=10, buffer_bytes=60_000)
    with Testbed(p, datapath=datapath) as tb:
        assert tb.datapath == datapath
        r = check_link(tb, duration_s=2, rtt_count=500, iperf=False)
        stats = tb.linkem_stats()
        forwarded = _forwarded_by_kernel(tb)
    assert r.ok, r.summary()
    packets = 0
    for d in ("up", "down"):
        assert stats["directions"][d]["packets"] > 1000, stats["directions"][d]
        packets += stats["directions"][d]["packets"]
        errors = stats["directions"][d]["errors"]
        assert errors["kernel_queue_dropped"] == 0 and errors["held_overflow"] == 0, errors
    if datapath == "afpacket":
        assert forwarded == 0  # every packet went through linkem, none around it
    else:
        assert forwarded >= packets  # the kernel forwarded each one linkem passed (and its drops)


@needs_testbed("linkem", "endpoint")
def test_a_middlebox_reset_works_through_nfqueue(nfqueue, tmp_path: Path):
    middlebox.test_rst_after_n_bytes_kills_h2_download_not_h3(tmp_path)


@needs_testbed("linkem", "endpoint")
def test_the_proxy_topology_works_through_nfqueue_and_the_experiment_says_so(nfqueue, tmp_path: Path):
    proxy.test_h3_page_load_through_the_quic_proxy(tmp_path)
    with Store.open(tmp_path / "exp", read_only=True) as store:
        assert store.experiment()["versions"]["testbed"]["datapath"] == "nfqueue"
