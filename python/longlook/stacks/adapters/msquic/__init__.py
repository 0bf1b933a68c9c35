"""msquic (Microsoft's C QUIC library; crates.io): stacks/adapters/msquic/crate/ is a small Rust
binary (its own crate and Cargo.lock) with a file server and a page-load client, built once
per msquic release.

Version: the `msquic` crate is msquic's own release with its Rust bindings (2.5.1-beta: msquic
2.5.1); its default `src` feature builds msquic's C sources, which the crate carries, with
cmake, and `static` links them into the binary (with libnuma, hence Debian's libnuma-dev).
TLS is quictls 3.1.7+quic, the OpenSSL fork with the QUIC API whose sources the crate
carries too (`submodules/quictls`, built by msquic's cmake and linked statically): Debian's
OpenSSL 3.0 is neither needed nor used. The async wrapper `msquic-async` 0.4.1 needs exactly msquic 2.5.1-beta (its
`msquic-2-5` feature), so this is the one version: no other release is built.

HTTP/3 is hyperium's `h3` bound to `msquic-async` by `h3-msquic-async`. The server loads the
PEM certificate and key from files (QUIC_CREDENTIAL_TYPE_CERTIFICATE_FILE). The client
verifies the server's chain against `--ca` alone (msquic's CaCertificateFile, OpenSSL's
X509_verify_cert; another CA fails the handshake with unknown_ca): msquic's OpenSSL path
checks the chain but not the name in the certificate (a certificate for example.org is
taken for 127.0.0.1), and msquic-async passes on no certificate event to check it here.
Congestion control: cubic (msquic's default), bbr (msquic's BBR: v1's Startup, Drain, ProbeBW, ProbeRTT), through
QUIC_SETTINGS.CongestionControlAlgorithm. msquic writes no qlog (its tracing is LTTng/ETW,
left out of this build): `--qlog-dir` is accepted and stays empty, so a run has no qlog
artifact and its states are neither emitted nor derived. The client writes a key log (NSS
format: CLIENT/SERVER_HANDSHAKE_TRAFFIC_SECRET, CLIENT/SERVER_TRAFFIC_SECRET_0, and
CLIENT_EARLY_TRAFFIC_SECRET when there is one) from msquic's QUIC_PARAM_CONN_TLS_SECRETS,
which msquic-async sets on the connection before it starts (`Connection::set_sslkeylog_file`)
and writes out when the handshake completes.

What the interop cases (wire/cases) can see of it, from msquic's and the wrappers' sources:
- resumption, 0-RTT: neither side. The client: msquic-async drops the tickets msquic hands
  over (QUIC_CONNECTION_EVENT_RESUMPTION_TICKET_RECEIVED) and cannot set one on a new
  connection (QUIC_PARAM_CONN_RESUMPTION_TICKET), and our client makes one connection per
  run. The server: msquic sends a session ticket only when the application calls
  ConnectionSendResumptionTicket after the handshake, which neither the msquic crate's
  `Connection` nor msquic-async (no handle of an accepted connection) offers; so its
  ServerResumptionLevel is left at msquic's default (none). Seen on loopback: our client's
  `--zero-rtt` warm-up got no ticket from this server.
- key update: msquic updates keys on its own only after QUIC_SETTINGS.MaxBytesPerKey (2^38
  bytes by default); forcing one (QUIC_PARAM_CONN_FORCE_KEY_UPDATE) needs the connection's
  handle, which msquic-async does not expose. It answers a peer's key update.
- ChaCha20: offered by default (msquic's quictls list: AES-256-GCM, ChaCha20, AES-128-GCM);
  the client's `--chacha20` offers it alone (`CredentialConfig::set_allowed_cipher_suites`
  with `AllowedCipherSuiteFlags::CHACHA20_POLY1305_SHA256`: msquic's tls_quictls.c then hands
  quictls "TLS_CHACHA20_POLY1305_SHA256" through SSL_CTX_set_ciphersuites). Seen over loopback
  against msquic's server: the ClientHello lists 0x1303 alone, and the ServerHello chose it
  (quictls also lists TLS_EMPTY_RENEGOTIATION_INFO_SCSV, 0x00ff, a signal and no suite, with or
  without the flag).
- QUIC v2: msquic speaks it when its version settings list it, a parameter of its own
  (QUIC_PARAM_CONFIGURATION_VERSION_SETTINGS) that the typed Rust API lacks (only the raw
  `Api::set_param` on the configuration could set it); not set here, so v1 only.
- ECN: msquic's EcnEnabled is off by default and left off (the Rust `Settings` could set it).
- active migration: moving the client (QUIC_PARAM_CONN_LOCAL_ADDRESS) needs the connection's
  handle, which msquic-async 0.4 exposes only for its `msquic-seera` fork (`add_path`);
  the server follows a peer's rebinding (msquic's MigrationEnabled, on by default). The
  client, on a UDP socket of its own, uses a zero-length connection ID (msquic's default).
"""

from __future__ import annotations

from pathlib import Path

from ...base import CaseCalls, ClientCall
from ...builds.rust_crate import RustCrateStack
from ...release_registry import Registry


class Msquic(RustCrateStack):
    name = "msquic"
    release_registry = Registry("crates", "msquic")
    # msquic's C sources and quictls build through cmake (and perl: OpenSSL's Configure);
    # the static library links libnuma's archive
    apt_needs = ("cmake", "perl", "libnuma-dev")
    versions = ("2.5.1-beta",)  # msquic-async 0.4.1 takes this release only
    ccs = ("cubic", "bbr")
    writes_qlog = False
    unsupported_as_server = {
        "resumption": "msquic sends a session ticket only when the application calls ConnectionSendResumptionTicket, "
        "which neither the msquic crate nor msquic-async offers for an accepted connection",
        "zerortt": "no session ticket, so no 0-RTT (see resumption)",
    }
    # its client (crate/src/fetch.rs) is asked for these by its flags (case_calls)
    client_cases = ("chacha20",)
    server_case_flags = {"retry": ("--retry",)}  # crate/src/serve.rs: a retry memory limit of 0
    unsupported_as_client = {
        "resumption": "msquic-async drops the tickets msquic hands over and cannot set one on a new connection",
        "zerortt": "no ticket kept, so no 0-RTT (see resumption)",
        "keyupdate": "forcing one (QUIC_PARAM_CONN_FORCE_KEY_UPDATE) needs the connection handle msquic-async hides",
        "v2": "QUIC_PARAM_CONFIGURATION_VERSION_SETTINGS is not in the typed Rust API",
        "connection-migration": "moving the client needs the connection handle msquic-async exposes only in a fork",
    }
    crate = "msquic"
    binary_name = "longlook-msquic"
    library = "msquic"
    build_hint = "needs cmake, perl and libnuma-dev (scripts/setup.sh)"

    def version_info(self) -> str:
        return f"{self.spec} (quictls 3.1.7+quic, msquic-async 0.4.1, h3-msquic-async 0.3.1)"

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        """chacha20: `--chacha20`, the client's credential allowing TLS_CHACHA20_POLY1305_SHA256 alone
        (msquic's CredentialConfig::set_allowed_cipher_suites), a fetch flag like the rest."""
        if case == "chacha20":
            return CaseCalls(warmup=None, measured=call.with_flags("--chacha20"))
        return None
