"""linkem's datapath, chosen without a testbed: AF_PACKET by default, NFQUEUE by the
caller or LONGLOOK_DATAPATH, anything else refused. Both datapaths on real namespaces:
tests/testbed/testbed/test_datapaths_testbed.py."""

from __future__ import annotations

import pytest

from longlook.testbed.host import TestbedError, linkem_datapath


def test_the_datapath_is_named_or_refused(monkeypatch):
    monkeypatch.delenv("LONGLOOK_DATAPATH", raising=False)
    assert linkem_datapath() == "afpacket"
    monkeypatch.setenv("LONGLOOK_DATAPATH", "nfqueue")
    assert linkem_datapath() == "nfqueue"
    assert linkem_datapath("afpacket") == "afpacket"  # the caller's choice over the environment
    monkeypatch.setenv("LONGLOOK_DATAPATH", "xdp")
    with pytest.raises(TestbedError, match="not a datapath linkem has"):
        linkem_datapath()
