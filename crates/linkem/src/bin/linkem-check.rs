//! linkem-check: validate link configs exactly as linkem will load them (config, ranges,
//! middlebox numbers, trace contents), without NFQUEUE or root. longlook runs it when a
//! scenario is validated, so a link linkem would refuse stops before the first run.
//!
//!   linkem-check --name LABEL < config.toml     exit 0: ok; 2: the error on stderr

use std::io::Read;
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = match args.as_slice() {
        [] => "<stdin>".to_string(),
        [flag, name] if flag == "--name" => name.clone(),
        _ => {
            eprintln!("usage: linkem-check [--name LABEL] < config.toml");
            std::process::exit(2);
        }
    };
    let mut text = Vec::new();
    let limit = linkem::userfile::CONFIG_LIMIT;
    if let Err(e) = std::io::stdin().take(limit + 1).read_to_end(&mut text) {
        eprintln!("{name}: cannot read the config: {e}");
        std::process::exit(2);
    }
    let Ok(text) = String::from_utf8(text) else {
        eprintln!("{name}: the config is not UTF-8 text");
        std::process::exit(2);
    };
    if text.len() as u64 > limit {
        eprintln!("{name}: the config is more than {limit} bytes");
        std::process::exit(2);
    }
    // relative trace paths: against the working directory (longlook writes them absolute)
    match linkem::config::LinkConfig::parse(&text, &name, Path::new(".")) {
        Ok(_) => println!("ok"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
}
