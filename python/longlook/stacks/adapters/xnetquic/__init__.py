"""golang.org/x/net/quic, the Go project's QUIC (Go module), with a minimal HTTP/3 of ours:
`main.go` (server of files under a root, client writing the fetch JSON) and `h3.go` (HTTP/3
framing by hand: x/net keeps its HTTP/3 internal and quic-go's runs over quic-go only; QPACK
by github.com/quic-go/qpack), built per x/net version under the build directory
(builds/go_module.py). Congestion control: NewReno, its only one. qlog: JSON-SEQ through
x/net/quic's slog handler into $QLOGDIR, one file per connection, with
`congestion_state_updated` (slow_start, application_limited, ...).

What the package leaves out (its doc's "Limitations"): 0-RTT and address migration; it sends
no session ticket, updates its keys on its own at its 100th 1-RTT packet, and speaks QUIC v1."""

from __future__ import annotations

from ...builds.go_module import GoModuleStack
from ...release_registry import Registry

MODULE = "golang.org/x/net"
NO_TICKET = "its server sends no session ticket (x/net/quic never asks crypto/tls to send one)"
OWN_KEY_UPDATE = "updates its keys on its own at its 100th 1-RTT packet (quic/packet_protection.go); no call asks"
V1_ONLY = "QUIC v1 only (its Config names no version)"
NO_MIGRATION = "address migration is not supported (x/net/quic's package doc)"


class XNetQuic(GoModuleStack):
    name = "go-x-net"
    module = MODULE
    binary_name = "longlook-xnetquic"
    oldest_note = "the adapter builds against x/net v0.62.0 (golang.org/x/net/quic and its qlog package)"
    release_registry = Registry("go", MODULE)
    versions = ("v0.62.0",)
    any_version = True  # any x/net tag whose quic package main.go compiles against
    tag_prefix = "v"
    ccs = ("newreno",)
    unsupported_as_server = {
        "resumption": NO_TICKET,
        "zerortt": "0-RTT is not supported (x/net/quic's package doc)",
        "v2": V1_ONLY,
        "rebind-addr": NO_MIGRATION,
        "connection-migration": NO_MIGRATION,
    }
    unsupported_as_client = {
        "resumption": "its client keeps no session to resume (no ticket from its own server, no session cache kept)",
        "zerortt": "0-RTT is not supported (x/net/quic's package doc)",
        "keyupdate": OWN_KEY_UPDATE,
        "chacha20": "Go's crypto/tls chooses the TLS 1.3 suite itself (tls.Config.CipherSuites does not apply to 1.3)",
        "v2": V1_ONLY,
        "connection-migration": NO_MIGRATION,
    }

    def version_info(self) -> str:
        return f"{self.spec} (golang.org/x/net/quic {self.version}, HTTP/3 ours, qpack v0.6.0)"
