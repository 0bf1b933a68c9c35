//! linkem: a userspace link emulator for the longlook router namespace.
//!
//! Packets reach it through NFQUEUE (one queue per direction) and leave by delayed verdicts;
//! the kernel keeps routing. See README.md for the models and docs/interfaces.md for the
//! command-line, config and stats contract.

/// `eprintln!` that never panics: on a full disk the stderr file cannot take the line, and
/// a link emulator must keep the link up rather than die over a log message.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod afpacket;
pub mod cadence;
pub mod config;
pub mod datapath;
pub mod engine;
pub mod flows;
pub mod model;
pub mod nfqueue;
pub mod packet;
pub mod pcap;
pub mod rng;
pub mod sojourn;
pub mod stats;
pub mod sys;
pub mod trace;
pub mod userfile;
