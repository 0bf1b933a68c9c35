"""A link's NAT in a scenario: what linkem is given, how links are told apart, and the bad
inputs that are one clear error each."""

import tomllib

import pytest

from longlook.binaries import find_binary
from longlook.errors import LonglookError
from longlook.kinds.pageload import Scenario
from longlook.linkprofile import LinkProfile, linkem_refusal

BASE = """
name = "t"
workloads = ["1x1m"]
timeout_s = 30
[[links]]
rate_mbit = 10
rtt_ms = 36
"""


def scenario(text: str) -> Scenario:
    return Scenario.from_toml(text, source="scenarios/x.toml")


def error_of(text: str) -> str:
    with pytest.raises(LonglookError) as e:
        scenario(text)
    return str(e.value)


def test_a_links_nat_reaches_linkem_as_its_nat_table():
    s = scenario(BASE + 'nat = { udp_timeout_s = 30, rebind_at_s = [1.5, 4], rebind_to = "address" }\n')
    toml = tomllib.loads(s.links[0].to_linkem_toml())
    assert toml["nat"]["rebind_at_s"] == [1.5, 4.0]
    assert toml["nat"]["udp_timeout_s"] == 30.0
    assert toml["nat"]["rebind_to"] == "address"
    assert "nat" not in tomllib.loads(scenario(BASE).links[0].to_linkem_toml())


def test_links_with_and_without_a_nat_get_their_own_labels():
    text = BASE + "[[links]]\nrate_mbit = 10\nrtt_ms = 36\nnat = { rebind_at_s = [1.0] }\n"
    s = scenario(text)
    labels = [c.link_label for c in s.cells()]
    assert len(set(labels)) == 2, labels
    assert any("nat=on" in x and "nat-rebind_at_s=1" in x for x in labels), labels


@pytest.mark.parametrize(
    ("nat", "says"),
    [
        ("rebind_at_s = [40.0]", "past the run's timeout_s = 30"),
        ("rebind_every_s = 31", "past the run's timeout_s = 30"),
        ("udp_timeout_s = 0", "udp_timeout_s"),
        ("rebind_at_s = [3.0, 2.0]", "increasing"),
        ('rebind_to = "address"', "no scheduled rebinding"),
        ("rebind_every_s = 0.01", "at least 0.1"),
        ("idle_s = 3", "unknown field"),
    ],
)
def test_bad_nat_settings_are_one_clear_error(nat: str, says: str):
    e = error_of(BASE + f"nat = {{ {nat} }}\n")
    assert says in e and "nat" in e and "Traceback" not in e, e


def test_linkem_refuses_what_python_cannot_see():
    try:
        find_binary("linkem-check")
    except LonglookError:
        pytest.skip("linkem-check is not built")
    for nat, says in [
        ({"public": "198.18.2.7"}, "testbed's own subnets"),
        ({"public": "banana.1"}, "not an IPv4 address"),
        ({"rebind_at_s": [1.0], "rebind_to": "address", "rebind_public": "198.18.5.1"}, "itself"),
    ]:
        link = LinkProfile(rate_mbit=10, nat=nat)
        refusal = linkem_refusal(link)
        assert refusal is not None and says in refusal, (nat, refusal)
    assert linkem_refusal(LinkProfile(rate_mbit=10, nat={"rebind_at_s": [1.0]})) is None
