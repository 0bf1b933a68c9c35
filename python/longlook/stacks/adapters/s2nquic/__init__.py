"""s2n-quic (AWS; crates.io): stacks/adapters/s2nquic/crate/ is a small Rust binary (its own crate and
Cargo.lock) with a file server and a page-load client, built once per s2n-quic version.

HTTP/3 is hyperium's `h3` bound to s2n-quic by `h3-util` (crates.io), which carries a copy of
s2n-quic's own binding: `s2n-quic-h3` is a proof of concept whose every crates.io release is
yanked. TLS is rustls (s2n-quic's `provider-tls-rustls`). Congestion control: cubic
(s2n-quic's default), bbr (its BBRv2). s2n-quic writes no qlog: its event `Subscriber`
writes one JSON-SEQ file per connection (packets with their frames, metrics, losses, the
peer's transport parameters, BBR's states as `congestion_state_updated`; Cubic's states are
derived from the metrics). The client writes a key log through rustls ($SSLKEYLOGFILE)."""

from __future__ import annotations

from ...builds.rust_crate import RustCrateStack
from ...release_registry import Registry


class S2nQuic(RustCrateStack):
    name = "s2n-quic"
    release_registry = Registry("crates", "s2n-quic")
    versions = ("1.91.0",)
    any_version = True  # another crates.io release with the same API: Cargo.toml's pin is rewritten
    ccs = ("cubic", "bbr")
    crate = "s2n-quic"
    binary_name = "longlook-s2n-quic"
    library = "s2n-quic"
