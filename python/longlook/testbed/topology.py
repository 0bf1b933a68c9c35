"""The three namespaces and two links of a testbed (docs/interfaces.md, "Testbed topology").

    ll-<id>-client            ll-<id>-router                    ll-<id>-server
      c0 198.18.1.2/24 ── r0 198.18.1.1/24   r1 198.18.2.1/24 ── s0 198.18.2.2/24

With a proxy (`proxy=True`), a proxy namespace between two emulated segments, each with its
own router (link A: router, link B: router2); client and server keep their addresses:

    client c0 .1.2 ── r0 .1.1 [router] r1 .3.1 ── p0 .3.2 [proxy] p1 .4.2 ── r2 .4.1 [router2] r3 .2.1 ── s0 .2.2
"""

from __future__ import annotations

import json

from ..linkprofile import HANDOVER_CLIENT_ADDR
from .host import sh

CLIENT_ADDR = "198.18.1.2"
SERVER_ADDR = "198.18.2.2"
ROUTER_CLIENT_SIDE = "198.18.1.1"
ROUTER_SERVER_SIDE = "198.18.2.1"
ROLES = ("client", "router", "server")
PROXY_ROLES = ("client", "router", "proxy", "router2", "server")
PROXY_ADDR = "198.18.3.2"  # the proxy on segment A: where clients of the QUIC proxy connect
PROXY_SERVER_SIDE = "198.18.4.2"
NS_PREFIX = "ll-"

# (namespace role, device, address/prefix) for the four veth ends.
_ENDS = (
    ("client", "c0", f"{CLIENT_ADDR}/24"),
    ("router", "r0", f"{ROUTER_CLIENT_SIDE}/24"),
    ("router", "r1", f"{ROUTER_SERVER_SIDE}/24"),
    ("server", "s0", f"{SERVER_ADDR}/24"),
)

# The proxy topology: veth pairs (made in the first namespace, peer put in the second),
# addresses, and routes; the proxy forwards what it does not terminate.
_PROXY_PAIRS = (
    ("router", "r0", "client", "c0"),
    ("router", "r1", "proxy", "p0"),
    ("router2", "r2", "proxy", "p1"),
    ("router2", "r3", "server", "s0"),
)
_PROXY_ENDS = (
    ("client", "c0", f"{CLIENT_ADDR}/24"),
    ("router", "r0", f"{ROUTER_CLIENT_SIDE}/24"),
    ("router", "r1", "198.18.3.1/24"),
    ("proxy", "p0", f"{PROXY_ADDR}/24"),
    ("proxy", "p1", f"{PROXY_SERVER_SIDE}/24"),
    ("router2", "r2", "198.18.4.1/24"),
    ("router2", "r3", f"{ROUTER_SERVER_SIDE}/24"),
    ("server", "s0", f"{SERVER_ADDR}/24"),
)
_PROXY_ROUTES = (
    ("client", "default", ROUTER_CLIENT_SIDE),
    ("router", "default", PROXY_ADDR),
    ("proxy", "198.18.1.0/24", "198.18.3.1"),
    ("proxy", "198.18.2.0/24", "198.18.4.1"),
    ("router2", "default", PROXY_SERVER_SIDE),
    ("server", "default", ROUTER_SERVER_SIDE),
)
# Per emulating router: (device, NFQUEUE number); up = entering from the client's side.
NFQUEUES = {"router": (("r0", "0"), ("r1", "1")), "router2": (("r2", "2"), ("r3", "3"))}

# Super-packets (TSO/GSO/GRO, UDP GSO) would make the router see 64 KB "packets": off.
_OFFLOADS = ("tso", "gso", "gro", "tx-udp-segmentation")

# Namespace-local sysctls. rp_filter off: the router forwards between two subnets and must
# not drop on a reverse-path check; IPv6 off: no ND/MLD chatter on the measured links;
# tcp_no_metrics_save: Linux would otherwise cache each destination's RTT, ssthresh and
# cwnd after a connection and start the next one from them, so runs would not be independent.
_SYSCTLS = (
    "net.ipv4.conf.all.rp_filter=0",
    "net.ipv4.conf.default.rp_filter=0",
    "net.ipv6.conf.all.disable_ipv6=1",
    "net.ipv6.conf.default.disable_ipv6=1",
    "net.ipv4.tcp_no_metrics_save=1",
)
# Recorded with every experiment (core.execute): what the testbed set for independence.
RECORDED_SYSCTLS = {"net.ipv4.tcp_no_metrics_save": 1}


def namespace_names(tb_id: str, proxy: bool = False) -> dict[str, str]:
    return {role: f"{NS_PREFIX}{tb_id}-{role}" for role in (PROXY_ROLES if proxy else ROLES)}


def existing_namespaces() -> list[str]:
    out = sh(["ip", "netns", "list"]).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def create(ns: dict[str, str]) -> None:
    """Namespaces, links, addresses, routes and forwarding. Nothing outside `ns` is touched:
    each veth pair is created inside the router's namespace with its peer placed directly in
    the client's or server's, so no device ever appears in the host's namespace."""
    if "proxy" in ns:
        return _create_proxy(ns)
    for name in ns.values():
        sh(["ip", "netns", "add", name])
    for role, name in ns.items():
        sh(["ip", "netns", "exec", name, "sysctl", "-qw", *_SYSCTLS])
        sh(["ip", "-n", name, "link", "set", "lo", "up"])
    sh(["ip", "-n", ns["router"], "link", "add", "r0", "type", "veth", "peer", "name", "c0", "netns", ns["client"]])
    sh(["ip", "-n", ns["router"], "link", "add", "r1", "type", "veth", "peer", "name", "s0", "netns", ns["server"]])
    for role, dev, addr in _ENDS:
        name = ns[role]
        sh(["ip", "-n", name, "addr", "add", addr, "dev", dev])
        sh(["ip", "netns", "exec", name, "ethtool", "-K", dev, *(x for o in _OFFLOADS for x in (o, "off"))])
        sh(["ip", "netns", "exec", name, "sysctl", "-qw", f"net.ipv4.conf.{dev}.rp_filter=0"])
        sh(["ip", "-n", name, "link", "set", dev, "up"])
    sh(["ip", "-n", ns["client"], "route", "add", "default", "via", ROUTER_CLIENT_SIDE])
    sh(["ip", "-n", ns["server"], "route", "add", "default", "via", ROUTER_SERVER_SIDE])
    sh(["ip", "netns", "exec", ns["router"], "sysctl", "-qw", "net.ipv4.ip_forward=1"])


def second_client_address(client_ns: str, present: bool) -> None:
    """The client's second address (a handover's second path, linkprofile.Handover) on its
    device, or none. A secondary address of the same subnet: sockets that do not bind to it
    keep the first as their source, so only a client that moves uses it."""
    if present:
        sh(["ip", "-n", client_ns, "addr", "replace", f"{HANDOVER_CLIENT_ADDR}/24", "dev", "c0"])
    else:
        sh(["ip", "-n", client_ns, "addr", "del", f"{HANDOVER_CLIENT_ADDR}/24", "dev", "c0"], check=False)


def _create_proxy(ns: dict[str, str]) -> None:
    """The proxy topology, set up as `create` does the plain one (same sysctls, offloads)."""
    for name in ns.values():
        sh(["ip", "netns", "add", name])
        sh(["ip", "netns", "exec", name, "sysctl", "-qw", *_SYSCTLS])
        sh(["ip", "-n", name, "link", "set", "lo", "up"])
    for role, dev, peer_role, peer in _PROXY_PAIRS:
        sh(["ip", "-n", ns[role], "link", "add", dev, "type", "veth", "peer", "name", peer, "netns", ns[peer_role]])
    for role, dev, addr in _PROXY_ENDS:
        name = ns[role]
        sh(["ip", "-n", name, "addr", "add", addr, "dev", dev])
        sh(["ip", "netns", "exec", name, "ethtool", "-K", dev, *(x for o in _OFFLOADS for x in (o, "off"))])
        sh(["ip", "netns", "exec", name, "sysctl", "-qw", f"net.ipv4.conf.{dev}.rp_filter=0"])
        sh(["ip", "-n", name, "link", "set", dev, "up"])
    for role, dst, via in _PROXY_ROUTES:
        sh(["ip", "-n", ns[role], "route", "add", dst, "via", via])
    for role in ("router", "proxy", "router2"):
        sh(["ip", "netns", "exec", ns[role], "sysctl", "-qw", "net.ipv4.ip_forward=1"])


def set_sysctls(name: str, settings: list[str]) -> None:
    """Namespace-local sysctls (`key=value`) in namespace `name`."""
    sh(["ip", "netns", "exec", name, "sysctl", "-qw", *settings])


def tcp_buffer_maxima(name: str) -> tuple[int, int]:
    """(tcp_rmem max, tcp_wmem max) in namespace `name`."""
    out = sh(["ip", "netns", "exec", name, "sysctl", "-n", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"]).stdout.split("\n")
    return int(out[0].split()[-1]), int(out[1].split()[-1])


def add_nfqueue_rules(router_ns: str, queues: tuple[tuple[str, str], ...] = NFQUEUES["router"]) -> None:
    """Hand every forwarded packet to linkem: queue 0 = up (from the client), 1 = down
    (router2 of the proxy topology: 2 and 3).
    No --queue-bypass: with linkem gone the path is dead, never silently unemulated."""
    for dev, queue in queues:
        sh(
            [
                "ip",
                "netns",
                "exec",
                router_ns,
                "iptables",
                "-t",
                "mangle",
                "-A",
                "FORWARD",
                "-i",
                dev,
                "-j",
                "NFQUEUE",
                "--queue-num",
                queue,
            ]
        )


# AF_PACKET datapath, per emulating router: (up, down) as (in device, out device); up =
# from the client's side. Each out device's peer is the next hop whose MAC linkem writes.
AFPACKET_PORTS = {"router": (("r0", "r1"), ("r1", "r0")), "router2": (("r2", "r3"), ("r3", "r2"))}
_PEERS = {
    False: {"r0": ("client", "c0"), "r1": ("server", "s0")},
    True: {"r0": ("client", "c0"), "r1": ("proxy", "p0"), "r2": ("proxy", "p1"), "r3": ("server", "s0")},
}


def mac_address(ns: str, dev: str) -> str:
    return json.loads(sh(["ip", "-n", ns, "-j", "link", "show", "dev", dev]).stdout)[0]["address"]


def afpacket_ports(ns: dict[str, str], router: str) -> tuple[str, str]:
    """linkem's `--afpacket-up` and `--afpacket-down` for `router`: IN,OUT,NEXT_HOP_MAC."""
    peers = _PEERS["proxy" in ns]
    out = []
    for dev_in, dev_out in AFPACKET_PORTS[router]:
        role, peer = peers[dev_out]
        out.append(f"{dev_in},{dev_out},{mac_address(ns[role], peer)}")
    return out[0], out[1]


def add_afpacket_rules(router_ns: str, devices: tuple[str, ...]) -> None:
    """The router's kernel neither forwards nor answers IPv4 on its links: linkem does (its
    packet sockets see each frame before this ingress hook). ARP passes: the kernel still
    answers for the router's addresses, so the endpoints' gateways are as with NFQUEUE."""
    chains = "".join(
        f"chain in_{d} {{ type filter hook ingress device {d} priority 0; meta protocol ip drop; }}; " for d in devices
    )
    sh(["ip", "netns", "exec", router_ns, "nft", f"add table netdev linkem {{ {chains}}}"])


def delete(names: list[str]) -> list[str]:
    """Delete namespaces (their veths go with them); returns the names that existed."""
    present = set(existing_namespaces())
    gone = []
    for name in names:
        if name in present:
            sh(["ip", "netns", "del", name], check=False)
            gone.append(name)
    return gone
