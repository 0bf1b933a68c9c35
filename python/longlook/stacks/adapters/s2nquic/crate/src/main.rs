//! longlook-s2n-quic: s2n-quic (AWS) with HTTP/3 as a longlook stack (docs/interfaces.md,
//! "Other QUIC stacks").
//!
//!   longlook-s2n-quic serve --listen 0.0.0.0:4433 --cert C --key K --root DIR --qlog-dir D --cc cubic|bbr
//!   longlook-s2n-quic fetch --url URL --ca PEM --mode page|bulk --run-id ID --out FILE
//!                           --timeout-s S --qlog-dir D --cc cubic|bbr [--keylog FILE] [--chacha20]
//!
//! HTTP/3 is hyperium's `h3` over s2n-quic through `h3-util`'s copy of s2n-quic's own h3
//! binding: s2n-quic-h3 itself is a proof of concept whose every crates.io release is yanked.
//! TLS is rustls (s2n-quic's `provider-tls-rustls`; its default s2n-tls would build
//! AWS-LC and s2n-tls from C). Each connection's events become a JSON-SEQ qlog (qlog.rs).

mod config;
mod fetch;
mod qlog;
mod serve;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flags = config::Flags::parse(args.get(2..).unwrap_or(&[]), config::SWITCHES);
    if let Ok(path) = flags.get("keylog") {
        std::env::set_var("SSLKEYLOGFILE", path); // rustls' KeyLogFile reads it
    }
    // AWS-LC (s2n-quic's crypto, and rustls') seeds its random generator from CPU jitter on
    // first use: ~50 ms of CPU per process (measured). A browser pays it once, not per page:
    // paid here, before a fetch's clock starts or a server says it is ready.
    let _ = aws_lc_rs::rand::fill(&mut [0u8; 32]);
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
            eprintln!("usage: longlook-s2n-quic serve|fetch --flag value ...");
            2
        }
    };
    std::process::exit(code);
}
