"""s2n-quic (AWS; crates.io): stacks/adapters/s2nquic/crate/ is a small Rust binary (its own crate and
Cargo.lock) with a file server and a page-load client, built once per s2n-quic version.

HTTP/3 is hyperium's `h3` bound to s2n-quic by `h3-util` (crates.io), which carries a copy of
s2n-quic's own binding: `s2n-quic-h3` is a proof of concept whose every crates.io release is
yanked. TLS is rustls (s2n-quic's `provider-tls-rustls`). Congestion control: cubic
(s2n-quic's default), bbr (its BBRv2). s2n-quic writes no qlog: its event `Subscriber`
writes one JSON-SEQ file per connection (packets with their frames, metrics, losses, the
peer's transport parameters, BBR's states as `congestion_state_updated`; Cubic's states are
derived from the metrics). The client writes a key log through rustls ($SSLKEYLOGFILE).

ChaCha20: the client offers s2n-quic-rustls' DEFAULT_CIPHERSUITES (AES-128-GCM, AES-256-GCM,
ChaCha20-Poly1305, aws-lc-rs'); its `--chacha20` offers TLS_CHACHA20_POLY1305_SHA256 alone. The
rustls provider's `client::Builder` has no setting for the suites, so with the flag the client
makes the rustls `ClientConfig` the builder would (TLS 1.3, the --ca roots, ALPN h3, the key
log) on a `CryptoProvider` holding that one suite, and hands it to s2n-quic whole
(`s2n_quic::provider::tls::rustls::Client::from`, through s2n-quic-rustls' deprecated rustls
re-export, so it is the rustls s2n-quic is built with). Seen over loopback against s2n-quic's
server: the ClientHello lists 0x1303 alone (0x1301, 0x1302, 0x1303 without the flag), and the
ServerHello chose it."""

from __future__ import annotations

from pathlib import Path

from ...base import CaseCalls, ClientCall
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
    # its client (crate/src/fetch.rs) is asked for these by its flags (case_calls)
    client_cases = ("chacha20",)
    server_case_flags = {"retry": ("--retry",)}  # crate/src/serve.rs: an in-flight handshake limit of 0
    # from s2n-quic 1.91.0's sources (s2n-quic-transport 0.91.0): what its client cannot be
    # asked for here
    unsupported_as_client = {
        "v2": "QUIC v1 only (src/endpoint/version.rs: SUPPORTED_VERSIONS = [0x1])",
        "keyupdate": "updates keys on its own at the AEAD limits only (space/application.rs: KeySet with "
        "limited::Limits::default()); no call starts one",
        "resumption": "rustls keeps the session tickets in the process's memory (ClientConfig::resumption); this "
        "client makes one connection per process",
        "zerortt": "no ticket kept across processes (see resumption)",
        "connection-migration": "no call moves a client's connection (its client's path migration validator is "
        "unreachable!(): src/client/providers.rs)",
    }

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        """chacha20: `--chacha20`, the client's rustls config offering TLS_CHACHA20_POLY1305_SHA256
        alone, a fetch flag like the rest."""
        if case == "chacha20":
            return CaseCalls(warmup=None, measured=call.with_flags("--chacha20"))
        return None
