"""gm-quic (Genmeta, github.com/genmeta; crates.io `dquic`, called `gm-quic` up to 0.4.0): an
asynchronous Rust QUIC stack. stacks/adapters/gmquic/crate/ is a small Rust binary (its own
crate and Cargo.lock) with a file server and a page-load client, built once per version.

Pinned: dquic 0.5.1 with h3-shim 0.5.0, Genmeta's binding of hyperium's `h3` (0.0.8) to
gm-quic; h3-shim 0.5.0 takes dquic 0.5.x only (dquic 0.6 to 0.8 have no h3-shim), so no other
release is offered. TLS is rustls (TLS 1.3 only) with ring's provider: AES-128/256-GCM and
ChaCha20-Poly1305, the client offering all three. ALPN h3, QUIC v1 only (`QUIC_VERSION` is
rustls' V1 in qconnection; the builders' version lists are marked work in progress and unused).
Congestion control: newreno, gm-quic's only one (qconnection gives every path
`Algorithm::NewReno`; qcongestion's BBR is `todo!()`). qlog: qevent's `LegacySeqLogger`, one
JSON-SEQ file (qlog 0.3, absolute times) per connection, `<odcid>_<client|server>.sqlog`,
with `recovery:metrics_updated` (window, ssthresh, RTTs) and `packet_lost` but no congestion
states (derived, qlog/dialects.py); the crate enables dquic's `telemetry` feature, without
which no event is emitted. The client writes a key log through rustls ($SSLKEYLOGFILE, set by
the binary from `--keylog`).

What its API cannot do, from its source (dquic 0.5.1, qconnection 0.5.2, qbase/qcongestion/
qinterface/qudp 0.5.1):
- its server refuses a ClientHello without SNI: the certificate resolver wrapped around every
  server configuration returns no certificate without one, and the connection is refused
  ("missing SNI in client hello"; on the wire only ACKs of the Initials come back, the client
  times out). Clients send no SNI when the URL names an IP address, as the testbed's do
  (198.18.2.2), so only a client that sends one of the certificate's names (the server
  registers every DNS and IP SAN and the CN as a host) is served;
- ECN: datagrams are sent not-ECT (`Route::ecn` is None on every send) and ACK frames carry
  no ECN counts;
- key update: it follows the peer's key phase but never starts an update, and offers no call
  to start one;
- 0-RTT and resumption: both builders have `enable_0rtt` (the server here enables it), but
  session tickets live in rustls' in-memory cache of one process and our client makes one
  connection per process: no resumption, no 0-RTT from this client;
- ChaCha20 only: its client cannot offer it alone. The cipher suites a rustls client offers are
  those of its config's `CryptoProvider` (every one usable for QUIC, rustls 0.23's client/hs.rs;
  a provider can be given, `QuicClient::builder_with_crypto_provider`), and gm-quic derives the
  Initial keys from that same provider: qconnection's `initial_keys_with` (builder.rs) takes its
  TLS13_AES_128_GCM_SHA256 and panics ("crypto provider does not provide supported cipher
  suite") when it has none, so AES-128-GCM is always offered too. Later keys are rustls' for
  the suite negotiated, so its server should accept a client offering only ChaCha20 (not
  tried here);
- QUIC v2: not implemented;
- active migration: `Connection::add_path`/`del_path` exist (paths per bound interface, its
  multipath), this client does not use them.
Also seen over loopback: it acknowledges 1-RTT packets only after its max_ack_delay (25 ms)
unless they arrive out of order (qcongestion's `RcvdRecords::need_ack`), not every second
packet."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from ...base import ClientCall
from ...builds.rust_crate import RustCrateStack

# a DNS name in the certificate every testbed server presents (stacks/runner.py: localhost and
# the server's addresses)
CERT_DNS_NAME = "localhost"
NO_SNI = (
    "its server serves no ClientHello without SNI, and a client sends none to a URL that names the server by "
    "address, as the testbed's do (only gm-quic's own client here names it by the certificate's DNS name)"
)

H3_SHIM = "0.5.0"
H3 = "0.0.8"


class GmQuic(RustCrateStack):
    name = "gm-quic"
    versions = ("0.5.1",)  # dquic releases h3-shim 0.5.0 builds with (it takes ^0.5.0)
    ccs = ("newreno",)
    crate = "gm-quic"
    binary_name = "longlook-gm-quic"
    library = "dquic"
    unsupported_as_server = {
        "handshake": NO_SNI,
        "ecn": "sends not-ECT and its ACKs carry no ECN counts (no ECN in dquic 0.5.1)",
        "keyupdate": "follows the peer's key phase, never starts an update",
        "v2": "QUIC v1 only",
        "retry": "never sends a Retry: nothing in dquic, qconnection or qbase 0.5 calls TokenProvider::gen_retry_token",
    }
    unsupported_as_client = {
        "ecn": "sends not-ECT and its ACKs carry no ECN counts (no ECN in dquic 0.5.1)",
        "keyupdate": "follows the peer's key phase, never starts an update",
        "v2": "QUIC v1 only",
        "resumption": "session tickets live in one process's memory; this client makes one connection per process",
        "zerortt": "no ticket kept across processes (see resumption)",
        "connection-migration": "add_path/del_path exist (its multipath); this client does not use them",
        "chacha20": "rustls offers every suite of the TLS config's crypto provider, and qconnection derives the "
        "Initial keys from that provider's TLS13_AES_128_GCM_SHA256 (initial_keys_with panics without it)",
    }

    def client_argv(self, **kw) -> ClientCall:
        """Its client names the server by a DNS name of the testbed's certificate (sent as
        SNI) while it connects to the URL's address: gm-quic's own server serves no ClientHello
        without SNI, and the testbed's URLs name the server by address."""
        call = super().client_argv(**kw)
        host = urlsplit(kw["url"]).hostname or ""
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return call
        return ClientCall([*call.argv, "--server-name", CERT_DNS_NAME], call.env)

    def version_info(self) -> str:
        return f"{self.spec} (dquic {self.version}, h3-shim {H3_SHIM}, h3 {H3}, rustls with ring)"
