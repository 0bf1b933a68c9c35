//! endpoint: longlook's instrumented HTTP/3 (quinn) + HTTP/2-over-TLS (hyper) server and client.

mod args;
mod cc;
mod cli;
mod client;
mod content;
mod ecn_switch;
mod proxy;
mod qlog;
mod request_end;
mod run;
mod server;
mod tcp_trace;
mod tcpinfo;
mod tls;
mod transport;
mod userfile;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    // before any TLS config is built: every config of the process then logs its secrets
    let keylog = match &cli.command {
        cli::Command::Serve(a) => a.keylog.as_deref(),
        cli::Command::Fetch(a) => a.keylog.as_deref(),
        _ => None,
    };
    if let Some(path) = keylog {
        if let Err(e) = tls::set_key_log(path) {
            eprintln!("error: {e:#}");
            std::process::exit(2);
        }
    }
    let code = match cli.command {
        cli::Command::Spki { cert } => match tls::load_certs(&cert).and_then(|c| tls::spki_sha256_b64(&c[0])) {
            Ok(s) => {
                println!("{s}");
                0
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                1
            }
        },
        cli::Command::Serve(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
            match rt.block_on(server::serve(args)) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    2
                }
            }
        }
        cli::Command::Proxy(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
            match rt.block_on(proxy::run(args)) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    2
                }
            }
        }
        cli::Command::Fetch(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
            rt.block_on(client::fetch_main(args))
        }
    };
    std::process::exit(code);
}
