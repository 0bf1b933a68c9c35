"""quiche (crates.io, BoringSSL vendored in boring-sys; bindgen needs Debian's libclang-dev):
stacks/adapters/quiche/crate/ is a small Rust binary (its own crate and Cargo.lock, outside the main
workspace) with a file server and a page-load client on quiche's HTTP/3, built once per
quiche version under the build directory. Congestion control: cubic (default), reno, bbr2
(quiche's gcongestion BBRv2). qlog: JSON-SEQ per connection, with `congestion_state_updated`
(quiche's names, mapped onto Table 3 by qlog/dialects.py)."""

from __future__ import annotations

from pathlib import Path

from ...base import CaseCalls, ClientCall
from ...builds.rust_crate import RustCrateStack
from ...release_registry import Registry


class Quiche(RustCrateStack):
    name = "quiche"
    release_registry = Registry("crates", "quiche")
    # BoringSSL builds through cmake, its bindings through bindgen (libclang)
    apt_needs = ("cmake", "libclang-dev")
    versions = ("0.30.0",)
    any_version = True  # another crates.io release with the same API: Cargo.toml's pin is rewritten
    ccs = ("cubic", "reno", "bbr2")
    crate = "quiche-h3"
    binary_name = "longlook-quiche"
    library = "quiche"
    build_hint = "needs cmake and libclang-dev (scripts/setup.sh)"
    # its client (crate/src/main.rs) is asked for these by its flags (case_calls); to migrate
    # by the runner's --migrate-at-ms/--migrate-to (quiche's migrate_source)
    client_cases = ("resumption", "zerortt", "connection-migration")
    server_case_flags = {"retry": ("--retry", "always")}  # crate/src/main.rs: quiche::retry, its token checked
    # from quiche 0.30.0's source: what its API cannot be asked for, as a client or a server
    unsupported_as_client = {
        "keyupdate": "quiche follows the peer's key phase but has no call to start an update",
        "chacha20": "BoringSSL picks the TLS 1.3 suite itself (no TLS 1.3 cipher setting in quiche's Config)",
        "v2": "QUIC v1 only (PROTOCOL_VERSION_V1; no RFC 9369 version)",
    }
    unsupported_as_server = {
        "connection-migration": "its server announces disable_active_migration (crate/src/main.rs), as quiche's "
        "own example server does unless --enable-active-migration: a client must not move to it",
    }

    def case_calls(self, case: str, call: ClientCall, state_dir: Path) -> CaseCalls | None:
        """A first connection keeps its TLS session (`--session-file`, quiche's Connection::session),
        the measured one resumes it (set_session), with its requests in 0-RTT for zerortt; a
        move needs nothing more than the runner's flags."""
        if case == "connection-migration":
            return CaseCalls(warmup=None, measured=call)
        if case not in ("resumption", "zerortt"):
            return None
        state_dir.mkdir(parents=True, exist_ok=True)
        session = ("--session-file", str(state_dir / "session.bin"))
        early = ("--early-data", "on") if case == "zerortt" else ()
        return CaseCalls(warmup=call.with_flags(*session), measured=call.with_flags(*session, *early))
