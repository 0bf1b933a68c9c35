//! longlook-msquic: msquic (Microsoft's C QUIC library) with HTTP/3 as a longlook stack
//! (docs/interfaces.md, "Other QUIC stacks").
//!
//!   longlook-msquic serve --listen 0.0.0.0:4433 --cert C --key K --root DIR --qlog-dir D --cc cubic|bbr
//!   longlook-msquic fetch --url URL --ca PEM --mode page|bulk --run-id ID --out FILE
//!                         --timeout-s S --qlog-dir D --cc cubic|bbr [--keylog FILE] [--chacha20]
//!
//! msquic is built from the C sources inside the `msquic` crate (cmake), with the quictls
//! (OpenSSL 3 with the QUIC API) those sources carry, linked statically. HTTP/3 is hyperium's
//! `h3` over `msquic-async` through `h3-msquic-async`. msquic writes no qlog: `--qlog-dir` is
//! accepted and left empty. The client's key log comes from msquic's TLS secrets
//! (QUIC_PARAM_CONN_TLS_SECRETS, set on the connection before it starts, by msquic-async).

mod config;
mod fetch;
mod serve;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flags = config::Flags::parse(args.get(2..).unwrap_or(&[]), config::SWITCHES);
    // one thread for our side, as the other stacks' adapters; msquic runs its own workers
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
            eprintln!("usage: longlook-msquic serve|fetch --flag value ...");
            2
        }
    };
    // msquic's registration, configuration and connections are never closed (closing a
    // registration waits for every connection of it), and the process ends without running
    // its exit handlers: the msquic crate's one calls MsQuicClose, which with them still open
    // aborts now and then. Everything is written by now (files unbuffered, stdout by line).
    // SAFETY: _exit takes no pointers and does not return.
    unsafe { libc::_exit(code) }
}
