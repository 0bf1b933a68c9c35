//! longlook-gm-quic: gm-quic (Genmeta; crates.io `dquic`) with HTTP/3 as a longlook stack
//! (docs/interfaces.md, "Other QUIC stacks").
//!
//!   longlook-gm-quic serve --listen 0.0.0.0:4433 --cert C --key K --root DIR --qlog-dir D --cc newreno
//!   longlook-gm-quic fetch --url URL --ca PEM --mode page|bulk --run-id ID --out FILE
//!                          --timeout-s S --qlog-dir D --cc newreno [--keylog FILE]
//!
//! HTTP/3 is hyperium's `h3` over gm-quic through `h3-shim` (Genmeta's binding, crates.io).
//! TLS is rustls (gm-quic's own choice) with ring's provider. gm-quic's qevent writes a
//! JSON-SEQ qlog per connection (`<odcid>_<client|server>.sqlog`) into --qlog-dir.

mod config;
mod fetch;
mod serve;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flags = config::Flags::parse(args.get(2..).unwrap_or(&[]), &[]);
    if let Ok(path) = flags.get("keylog") {
        std::env::set_var("SSLKEYLOGFILE", path); // rustls' KeyLogFile reads it
    }
    // gm-quic builds its rustls configurations from the process' default crypto provider
    let _ = rustls::crypto::ring::default_provider().install_default();
    // one thread, as the other stacks' adapters: client and server share the testbed's cores
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let code = match args.get(1).map(String::as_str) {
        Some("serve") => match rt.block_on(serve::serve(&flags)) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("serve: {e}");
                2
            }
        },
        Some("fetch") => rt.block_on(fetch::fetch(&flags)),
        _ => {
            eprintln!("usage: longlook-gm-quic serve|fetch --flag value ...");
            2
        }
    };
    std::process::exit(code);
}
